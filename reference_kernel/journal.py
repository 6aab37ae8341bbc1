"""001's Journal: where the loop records sessions, turns, messages, tool calls (and, our extra,
usage with cost). ``MemoryJournal`` keeps everything in memory, in storage order.

Every message and argument is copied through JSON on the way in, so a journal never aliases the
loop's live objects and the in-memory and SQLite journals behave the same.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Protocol, runtime_checkable

from reference_kernel.errors import UnknownSessionError, UnknownTurnError
from reference_kernel.ids import IdGenerator
from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo, TurnStatus, UsageEvent


@runtime_checkable
class Journal(Protocol):
    async def create_session(self, session: NewSession) -> str: ...
    async def load_history(self, session_id: str) -> list[dict[str, Any]]: ...
    async def start_turn(self, turn: TurnInfo) -> None: ...
    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None: ...
    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None: ...
    async def finish_turn(self, turn: TurnInfo, status: TurnStatus) -> None: ...
    # our extras
    async def record_usage(self, turn: TurnInfo, event: UsageEvent) -> None: ...
    async def get_session(self, session_id: str) -> dict[str, Any] | None: ...
    async def dump(self) -> dict[str, Any]: ...
    async def cost_by_tag(self) -> dict[str, float]: ...


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """Deep copy of JSON data (dict with str keys, list/tuple, scalars); TypeError otherwise.
    A few times faster than a dumps/loads round trip on the small messages of a turn."""
    kind = type(value)
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(f"key {key!r} is not a string")
            out[key] = _plain(item)
        return out
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if isinstance(value, _SCALARS):
        if kind is float and (value != value or value in (float("inf"), float("-inf"))):
            raise TypeError(f"{value!r} is not a JSON number")
        return value
    raise TypeError(f"{kind.__name__} {value!r} is not JSON data")


def json_copy(value: Any, what: str) -> Any:
    """A deep copy of JSON data; refuses what cannot be stored as JSON, naming it."""
    try:
        return _plain(value)
    except (TypeError, RecursionError) as exc:
        raise ValueError(f"journal: {what} is not JSON-serialisable: {exc}") from None


def check_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise ValueError(f"journal: a message must be a dict with a 'role', got {message!r}")
    return json_copy(message, "message")


def session_record(session_id: str, session: NewSession) -> dict[str, Any]:
    return {
        "id": session_id,
        "profile_id": session.profile_id,
        "source": session.source,
        "title": session.title,
        "tags": list(session.tags),
        "parent_session_id": session.parent_session_id,
    }


def tool_call_row(turn: TurnInfo, record: ToolCallRecord) -> dict[str, Any]:
    row = {"session_id": turn.session_id, "turn_id": turn.turn_id}
    row.update(json_copy(record.as_dict(), f"tool call {record.call_id!r}"))
    return row


def add_costs(totals: dict[str, float], tags: list[str], cost_usd: float) -> None:
    for tag in set(tags):
        totals[tag] += cost_usd


class MemoryJournal:
    """001's MemoryJournal: everything in memory, for tests and the embedded reference kernel."""

    def __init__(self, ids: IdGenerator | None = None) -> None:
        self._ids = ids or IdGenerator()
        self._sessions: dict[str, dict[str, Any]] = {}
        self._turns: dict[str, dict[str, Any]] = {}  # turn_id -> {"turn", "status"}
        self._messages: list[dict[str, Any]] = []
        self._history: dict[str, list[dict[str, Any]]] = {}
        self._tool_calls: list[dict[str, Any]] = []
        self._usage: list[tuple[dict[str, Any], list[str]]] = []

    def _require_session(self, session_id: str) -> None:
        if session_id not in self._sessions:
            raise UnknownSessionError(session_id)

    async def create_session(self, session: NewSession) -> str:
        parent = session.parent_session_id
        if parent is not None and parent not in self._sessions:
            raise UnknownSessionError(parent, "parent session")
        session_id = self._ids()
        self._sessions[session_id] = session_record(session_id, session)
        self._history[session_id] = []
        return session_id

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        self._require_session(session_id)
        return json_copy(self._history[session_id], "history")

    async def start_turn(self, turn: TurnInfo) -> None:
        self._require_session(turn.session_id)
        if turn.turn_id in self._turns:
            raise ValueError(f"journal: turn {turn.turn_id!r} was already started")
        self._turns[turn.turn_id] = {"turn": turn.as_dict(), "status": None}

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        self._require_session(turn.session_id)
        stored = check_message(message)
        self._messages.append(
            {"session_id": turn.session_id, "turn_id": turn.turn_id, "message": stored}
        )
        self._history[turn.session_id].append(stored)

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        self._require_session(turn.session_id)
        self._tool_calls.append(tool_call_row(turn, record))

    async def finish_turn(self, turn: TurnInfo, status: TurnStatus) -> None:
        entry = self._turns.get(turn.turn_id)
        if entry is None:
            raise UnknownTurnError(turn.turn_id)
        entry["status"] = status

    async def record_usage(self, turn: TurnInfo, event: UsageEvent) -> None:
        self._require_session(event.session_id)
        self._usage.append((event.as_dict(), list(turn.tags)))

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        record = self._sessions.get(session_id)
        return json_copy(record, "session") if record is not None else None

    async def dump(self) -> dict[str, Any]:
        return json_copy(
            {
                "sessions": list(self._sessions.values()),
                "turns": list(self._turns.values()),
                "messages": self._messages,
                "tool_calls": self._tool_calls,
                "usage": [event for event, _ in self._usage],
            },
            "journal",
        )

    async def cost_by_tag(self) -> dict[str, float]:
        """What CommonBill does: each usage event's cost counted once under each tag of its turn."""
        totals: dict[str, float] = defaultdict(float)
        for event, tags in self._usage:
            add_costs(totals, tags, event["cost_usd"])
        return dict(totals)
