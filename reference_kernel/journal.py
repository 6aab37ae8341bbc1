"""001's Journal: where the loop records sessions, turns, messages, tool calls (and, our extra,
usage with cost). ``MemoryJournal`` keeps everything in memory, in storage order.

``MemoryJournal`` stores messages and tool-call rows ``marshal``-encoded: encoding is the copy (a
journal never aliases the loop's live objects; what is not plain data is refused on the way in),
and bytes are compact and invisible to the garbage collector, which matters for a journal that
keeps every message of a long run. (marshal, not JSON text: a third of the cost on every
message. It keeps what JSON would turn into something else or refuse, such as tuples, NaN or
a non-string key; the SQLite journal stores JSON text and refuses NaN.) Usage events are
immutable tuples of scalars and are kept as they are. Reads (``load_history``, ``dump``) decode
fresh objects.
"""

from __future__ import annotations

import json
import marshal
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from reference_kernel.errors import UnknownSessionError, UnknownTurnError
from reference_kernel.ids import IdGenerator
from reference_kernel.jsontext import compact_encoder
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


_LEAVES = frozenset({str, int, bool, float, type(None)})


def _check_plain(value: Any) -> None:
    """Raise TypeError for what JSON cannot hold (a set, bytes, an object) that marshal would
    keep. Leaves are skipped without a call: it runs on every message."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) not in _LEAVES:
                raise TypeError(f"key {key!r} is not a JSON key")
            if type(item) not in _LEAVES:
                _check_plain(item)
    elif kind is list or kind is tuple:
        for item in value:
            if type(item) not in _LEAVES:
                _check_plain(item)
    elif kind not in _LEAVES and not isinstance(value, _SCALARS):
        raise TypeError(f"{kind.__name__} {value!r} is not JSON data")


def json_copy(value: Any, what: str) -> Any:
    """A deep copy of JSON data; refuses what cannot be stored as JSON, naming it."""
    try:
        return _plain(value)
    except (TypeError, RecursionError) as exc:
        raise ValueError(f"journal: {what} is not JSON-serialisable: {exc}") from None


#: Compact, UTF-8 kept, NaN and infinities refused (they are not JSON); keys are strings in JSON,
#: so a non-string key is written as ``json.dumps`` writes it.
_encode = compact_encoder(allow_nan=False)


def to_json(value: Any, what: str) -> str:
    """JSON text of ``value``; refuses what cannot be stored as JSON, naming it."""
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"journal: {what} is not JSON-serialisable: {exc}") from None


def _check_role(message: Any) -> None:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise ValueError(f"journal: a message must be a dict with a 'role', got {message!r}")


def _stored(value: Any, what: str) -> bytes:
    """A private copy of plain data (dict, list, str, numbers, ...); refuses any other object."""
    try:
        return marshal.dumps(value)
    except ValueError as exc:
        raise ValueError(f"journal: {what} is not JSON-serialisable data: {exc}") from None


def message_json(message: Any) -> str:
    """A message (a dict with a string ``role``) as JSON text."""
    _check_role(message)
    return to_json(message, "message")


def session_record(session_id: str, session: NewSession) -> dict[str, Any]:
    return {
        "id": session_id,
        "profile_id": session.profile_id,
        "source": session.source,
        "title": session.title,
        "tags": list(session.tags),
        "parent_session_id": session.parent_session_id,
    }


def tool_call_json(turn: TurnInfo, record: ToolCallRecord) -> str:
    """The journal row of a tool call (``{session_id, turn_id, **record}``) as JSON text."""
    row = {"session_id": turn.session_id, "turn_id": turn.turn_id}
    row.update(record.as_dict())
    return to_json(row, f"tool call {record.call_id!r}")


def add_costs(totals: dict[str, float], tags: Iterable[str], cost_usd: float) -> None:
    for tag in set(tags):
        totals[tag] += cost_usd


_TOOL_CALL_FIELDS = ("session_id", "turn_id", *ToolCallRecord._fields)


class MemoryJournal:
    """001's MemoryJournal: everything in memory, for tests and the embedded reference kernel.

    Not locked: it is used from one event loop (no method awaits in the middle of a change).
    """

    def __init__(self, ids: IdGenerator | None = None) -> None:
        self._ids = ids or IdGenerator()
        self._sessions: dict[str, dict[str, Any]] = {}
        self._turns: dict[str, dict[str, Any]] = {}  # turn_id -> {"turn", "status"}
        # Messages in storage order: each one's (session_id, turn_id), one tuple per turn, and
        # its data, side by side (no tuple per message: fewer objects for the collector).
        self._message_turns: list[tuple[str, str]] = []
        self._message_data: list[bytes] = []
        self._turn_keys: dict[str, tuple[str, str]] = {}
        self._history: dict[str, list[bytes]] = {}  # session_id -> its messages, in order
        self._tool_calls: list[bytes] = []  # rows
        self._usage: list[UsageEvent] = []
        self._usage_tags: list[tuple[str, ...]] = []  # each event's turn's tags
        self._last_tags: tuple[list[str], tuple[str, ...]] | None = None  # the last ones, to share

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
        return [marshal.loads(data) for data in self._history[session_id]]

    async def start_turn(self, turn: TurnInfo) -> None:
        self._require_session(turn.session_id)
        if turn.turn_id in self._turns:
            raise ValueError(f"journal: turn {turn.turn_id!r} was already started")
        self._turns[turn.turn_id] = {"turn": turn.as_dict(), "status": None}

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        history = self._history.get(turn.session_id)
        if history is None:
            raise UnknownSessionError(turn.session_id)
        if type(message) is not dict or type(message.get("role")) is not str:
            _check_role(message)  # exact types pass without the call; anything else is checked
        try:
            _check_plain(message)
            data = marshal.dumps(message)
        except (TypeError, RecursionError) as exc:
            raise ValueError(f"journal: message is not JSON-serialisable: {exc}") from None
        except ValueError:
            data = _stored(message, "message")  # raises, naming what was refused
        key = self._turn_keys.get(turn.turn_id)
        if key is None or key[0] != turn.session_id:
            key = self._turn_keys[turn.turn_id] = (turn.session_id, turn.turn_id)
        self._message_turns.append(key)
        self._message_data.append(data)
        history.append(data)

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        if turn.session_id not in self._sessions:
            raise UnknownSessionError(turn.session_id)
        row = (turn.session_id, turn.turn_id, *record)  # decoded with _TOOL_CALL_FIELDS
        try:
            data = marshal.dumps(row)
        except ValueError:  # the message names the call: only built when refused
            data = _stored(row, f"tool call {record.call_id!r}")
        self._tool_calls.append(data)

    async def finish_turn(self, turn: TurnInfo, status: TurnStatus) -> None:
        entry = self._turns.get(turn.turn_id)
        if entry is None:
            raise UnknownTurnError(turn.turn_id)
        entry["status"] = status

    async def record_usage(self, turn: TurnInfo, event: UsageEvent) -> None:
        if event.session_id not in self._sessions:
            raise UnknownSessionError(event.session_id)
        self._usage.append(event)
        tags = self._last_tags
        if tags is None or tags[0] != turn.tags:  # a turn's events share one tuple of its tags
            tags = self._last_tags = (list(turn.tags), tuple(turn.tags))
        self._usage_tags.append(tags[1])

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        record = self._sessions.get(session_id)
        return json_copy(record, "session") if record is not None else None

    async def dump(self) -> dict[str, Any]:
        return {
            "sessions": json_copy(list(self._sessions.values()), "sessions"),
            "turns": json_copy(list(self._turns.values()), "turns"),
            "messages": [
                {"session_id": session_id, "turn_id": turn_id, "message": marshal.loads(data)}
                for (session_id, turn_id), data in zip(self._message_turns, self._message_data)
            ],
            "tool_calls": [dict(zip(_TOOL_CALL_FIELDS, marshal.loads(data))) for data in self._tool_calls],
            "usage": [event.as_dict() for event in self._usage],
        }

    async def cost_by_tag(self) -> dict[str, float]:
        """What CommonBill does: each usage event's cost counted once under each tag of its turn."""
        totals: dict[str, float] = defaultdict(float)
        for event, tags in zip(self._usage, self._usage_tags):
            add_costs(totals, tags, event.cost_usd)
        return dict(totals)
