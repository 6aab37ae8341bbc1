"""The harness as a hermes gateway platform: a session's user messages reach hermes through the
gateway's own per-session guard and busy queue, not around it.

Hermes serialises a session's turns in its gateway, not in ``AIAgent``: ``BasePlatformAdapter.
handle_message`` marks a session busy before its turn starts and holds a message that arrives
meanwhile as the session's pending follow-up, which the running turn's task starts once it has
ended (``gateway/platforms/base.py:4762-4983, 5405-5440``). What a busy text does is the
``busy_input_mode`` of the profile's ``config.yaml`` (``gateway/run.py:5321-5360``, synced onto
every adapter as ``_busy_text_mode``, ``gateway/run.py:7659, 9506``): ``queue`` is the setting for
"turns of one session run one after another" (``interrupt``, the default, stops the running
turn). Only in the worker process (it imports hermes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gateway.config import Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, MessageType, SendResult
from gateway.session import SessionSource

#: What a maintainer writes in a profile's config.yaml to have a session's turns queued.
QUEUE_CONFIG = "display:\n  busy_input_mode: queue\n"
#: The one sender of every harness message (hermes merges only a sender's own follow-ups).
_USER = "akc-harness"


class HarnessPlatform(BasePlatformAdapter):
    """A platform whose inbound messages are the scenario's user messages, one chat per session
    label; replies go nowhere (the turn's outcome is read from ``run_conversation``)."""

    def __init__(self, handler: Callable[[MessageEvent], Awaitable[Any]], busy_text_mode: str) -> None:
        super().__init__(PlatformConfig(enabled=True, typing_indicator=False), Platform.LOCAL)
        self._busy_text_mode = busy_text_mode  # what GatewayRunner sets from busy_input_mode
        self.set_message_handler(handler)

    async def connect(self, *, is_reconnect: bool = False) -> bool:
        return True

    async def disconnect(self) -> None:
        pass

    async def send(self, chat_id: str, content: str, reply_to: str | None = None,
                   metadata: dict[str, Any] | None = None) -> SendResult:
        return SendResult(success=True)

    async def get_chat_info(self, chat_id: str) -> dict[str, Any]:
        return {"name": chat_id, "type": "dm"}


def busy_text_mode() -> str:
    """What the gateway makes of a text to a busy session, from the running profile's config.yaml
    as ``GatewayRunner`` reads it (``display.busy_input_mode``: ``queue`` queues, anything else
    interrupts; gateway/run.py:5321-5355), with hermes's own config loader. Not through
    ``GatewayRunner`` itself: importing ``gateway.run`` marks the whole process a gateway
    (``_HERMES_GATEWAY=1``, ``HERMES_EXEC_ASK=1``: gateway/run.py:1408, 1877), which moves approvals
    off the CLI callback the adapter's approver is wired to."""
    from hermes_cli.config import cfg_get, load_config

    mode = str(cfg_get(load_config(), "display", "busy_input_mode", default="") or "").strip().lower()
    return "queue" if mode == "queue" else "interrupt"


def user_message(label: str, text: str, index: int) -> MessageEvent:
    """The harness's user message ``index`` to session ``label`` as a gateway text message."""
    source = SessionSource(platform=Platform.LOCAL, chat_id=label, chat_type="dm", user_id=_USER)
    return MessageEvent(text=text, message_type=MessageType.TEXT, source=source, message_id=str(index))


def carried(event_text: str, waiting: list[str]) -> int:
    """How many of a session's waiting messages (oldest first) one gateway turn carries: hermes
    joins the text of follow-ups that queued behind a busy turn with newlines into one turn
    (``gateway/platforms/base.py:2178-2184, 4444-4448``). At least one."""
    for k in range(len(waiting), 1, -1):
        if "\n".join(waiting[:k]) == event_text:
            return k
    return 1
