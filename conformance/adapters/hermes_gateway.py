"""The harness as a hermes gateway platform: a session's user messages reach hermes through the
gateway's own per-session guard, its runner's busy queue and its drain, not around them.

Hermes serialises a session's turns in its gateway, not in ``AIAgent``: ``BasePlatformAdapter.
handle_message`` marks a session busy before its turn starts and hands a message that arrives
meanwhile to the runner's busy-session handler (``gateway/platforms/base.py:4762-4917``). What
that handler does is the profile's ``config.yaml``: ``display.busy_input_mode: queue`` keeps the
running turn going (``interrupt``, the default, stops it), and the explicit legacy
``display.busy_text_mode: interrupt`` beside it has ``GatewayRunner._handle_active_session_busy_
message`` queue each text itself, "so each follow-up gets its own turn in arrival order"
(``gateway/run.py:5334-5355, 5715-5933``; ``_queue_or_replace_pending_event`` and the FIFO,
``run.py:4742-4756, 5676-5713``) instead of leaving it to the platform, which would join the
queued texts into one turn (``gateway/platforms/base.py:4925-4933, 2178-2184``). After each turn
the runner drains one queued message as the next turn (``_dequeue_pending_event`` +
``_promote_queued_event``, ``gateway/run.py:21697-21704``); :func:`drain` is that step.

Only in the worker process (it imports hermes). Importing ``gateway.run`` marks the process a
gateway (``HERMES_EXEC_ASK=1``, ``_HERMES_GATEWAY=1``: gateway/run.py:1408, 1877), so approvals
take hermes's gateway approval path (``tools/approval.py:2747-2812``), where the harness's approver
answers as the chat's user (:func:`approval_scope`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from gateway.config import Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, MessageType, SendResult
from gateway.session import SessionSource

#: What a maintainer writes in a profile's config.yaml to have each of a session's messages
#: queued as its own turn, one after another (gateway/run.py:5321-5355).
QUEUE_CONFIG = "display:\n  busy_input_mode: queue\n  busy_text_mode: interrupt\n"
#: The one sender of every harness message.
_USER = "akc-harness"


class HarnessPlatform(BasePlatformAdapter):
    """A platform whose inbound messages are the scenario's user messages, one chat per session
    label; replies go nowhere (the turn's outcome is read from ``run_conversation``)."""

    def __init__(self, handler: Callable[[MessageEvent], Awaitable[Any]]) -> None:
        super().__init__(PlatformConfig(enabled=True, typing_indicator=False), Platform.LOCAL)
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


def runner_for(platform: HarnessPlatform) -> Any:
    """A ``GatewayRunner`` of the running profile (its busy modes read from that profile's
    config.yaml) serving ``platform``, as ``GatewayRunner`` wires a connected adapter
    (``set_busy_session_handler``, gateway/run.py:9501). The harness user is on the operator's
    allowlist ``GATEWAY_ALLOWED_USERS`` (gateway/authz_mixin.py:279), which the busy handler checks
    (gateway/run.py:5720). Build it under the profile's scope."""
    from gateway.config import GatewayConfig
    from gateway.run import GatewayRunner

    os.environ["GATEWAY_ALLOWED_USERS"] = _USER
    runner = GatewayRunner(GatewayConfig())
    runner.adapters[Platform.LOCAL] = platform
    platform._busy_text_mode = runner._busy_text_mode  # as GatewayRunner syncs it (gateway/run.py:9506)
    platform.set_busy_session_handler(runner._handle_active_session_busy_message)
    return runner


def session_key(platform: HarnessPlatform, event: MessageEvent) -> str:
    """The gateway's key for the event's session, as ``handle_message`` builds it."""
    from gateway.session import build_session_key

    return build_session_key(event.source,
                             group_sessions_per_user=platform.config.extra.get("group_sessions_per_user", True),
                             thread_sessions_per_user=platform.config.extra.get("thread_sessions_per_user", False))


def drain(runner: Any, platform: HarnessPlatform, key: str) -> MessageEvent | None:
    """The message the runner starts as the session's next turn once a turn has ended, the FIFO's
    next one staged behind it (gateway/run.py:21697-21704); None when nothing waits."""
    from gateway.run import _dequeue_pending_event

    return runner._promote_queued_event(key, platform, _dequeue_pending_event(platform, key))


@contextlib.contextmanager
def approval_scope(key: str, label: str, ask: Callable[[dict[str, Any]], bool]) -> Iterator[None]:
    """Run one turn in the gateway's session context with the approval notify callback
    registered, as the runner does around a turn (gateway/run.py:20860-20923): hermes's gateway
    gate sends the request through it and blocks until ``resolve_gateway_approval`` (the chat's
    ``/approve`` or ``/deny``) answers; here ``ask`` (the harness's approver) answers at once:
    True → ``once``, False → ``deny``. Context variables: enter it in the agent's thread."""
    from gateway.session_context import clear_session_vars, set_session_vars
    from tools.approval import (register_gateway_notify, reset_current_session_key, resolve_gateway_approval,
                                set_current_session_key, unregister_gateway_notify)

    def notify(approval_data: dict[str, Any]) -> None:
        resolve_gateway_approval(key, "once" if ask(approval_data) else "deny")

    tokens = set_session_vars(platform=Platform.LOCAL.value, chat_id=label, user_id=_USER, session_key=key)
    token = set_current_session_key(key)
    register_gateway_notify(key, notify)
    try:
        yield
    finally:
        unregister_gateway_notify(key)
        reset_current_session_key(token)
        clear_session_vars(tokens)


def user_message(label: str, text: str, index: int) -> MessageEvent:
    """The harness's user message ``index`` to session ``label`` as a gateway text message."""
    source = SessionSource(platform=Platform.LOCAL, chat_id=label, chat_type="dm", user_id=_USER)
    return MessageEvent(text=text, message_type=MessageType.TEXT, source=source, message_id=str(index))
