"""Mutant journals (each breaks one kit requirement, and must be killed by it) and legal variants
(each makes another allowed choice, and must pass every requirement): the journal kit's self-test,
run by ``akc selftest`` beside the suite's own. Each is reachable as
``conformance.journalkit.mutants:<name>`` for ``akc journal --adapter``.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.lowlevel

from reference_kernel.errors import UnknownSessionError
from reference_kernel.journal import MemoryJournal, message_json
from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo
from reference_kernel.sqlite_journal import SqliteJournal


@dataclass(frozen=True)
class JournalEntry:
    kind: Literal["mutant", "variant"]
    name: str
    description: str
    make: Callable[[str], Awaitable[Any]]
    breaks: str | None = None

    @property
    def spec(self) -> str:
        return f"{__name__}:{self.name}"


ENTRIES: dict[str, JournalEntry] = {}


def _register(kind: Literal["mutant", "variant"], name: str, breaks: str | None, cls: type, description: str,
              make: Callable[[type, str], Any]) -> None:
    async def factory(store: str) -> Any:
        return make(cls, store)

    factory.__name__ = name
    ENTRIES[name] = JournalEntry(kind, name, description, factory, breaks)
    setattr(sys.modules[__name__], name, factory)


def _memory(cls: type, store: str) -> Any:
    return cls()


def _sqlite(cls: type, store: str) -> Any:
    journal = cls(Path(store) / "journal.db")
    journal.durable = True

    async def interrupt() -> None:
        journal.close()

    journal.interrupt = interrupt
    return journal


def mutant(breaks: str, make: Callable[[type, str], Any] = _memory) -> Callable[[type], type]:
    def register(cls: type) -> type:
        _register("mutant", _snake(cls.__name__), breaks, cls, (cls.__doc__ or "").strip(), make)
        return cls

    return register


def variant(make: Callable[[type, str], Any] = _memory) -> Callable[[type], type]:
    def register(cls: type) -> type:
        _register("variant", _snake(cls.__name__), None, cls, (cls.__doc__ or "").strip(), make)
        return cls

    return register


def _snake(name: str) -> str:
    import re

    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# --------------------------------------------------------------------------- mutants


@mutant("JKIT-001")
class RandomUuid4Ids(MemoryJournal):
    """Session ids are UUIDv4 (random), not UUIDv7."""

    def __init__(self) -> None:
        super().__init__(ids=lambda: str(uuid.uuid4()))


@mutant("JKIT-001")
class IdsCountingDown(MemoryJournal):
    """Session ids are UUIDv7 whose timestamps go backwards: they do not sort by creation."""

    def __init__(self) -> None:
        counter = iter(range(10**9, 0, -1))
        super().__init__(ids=lambda: str(uuid.UUID(int=(next(counter) * 1000 << 80) | (7 << 76) | (2 << 62) | uuid.uuid4().int & ((1 << 62) - 1))))


@mutant("JKIT-002")
class TitleDropped(MemoryJournal):
    """The session's title is not kept."""

    async def create_session(self, session: NewSession) -> str:
        return await super().create_session(session.model_copy(update={"title": None}))


@mutant("JKIT-002")
class ParentDropped(MemoryJournal):
    """A child session forgets the session it was spawned from."""

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        record = await super().get_session(session_id)
        return record and {**record, "parent_session_id": None}


@mutant("JKIT-002")
class CreateSessionFails(MemoryJournal):
    """create_session raises for a child session (a broken column): one fault, so a requirement
    whose check needs a child session is blocked by JKIT-002, never failed."""

    async def create_session(self, session: NewSession) -> str:
        if session.parent_session_id is not None:
            raise RuntimeError("journal: column 'parent_session_id' does not exist")
        return await super().create_session(session)


@mutant("JKIT-003")
class NewestFirstHistory(MemoryJournal):
    """load_history returns the newest message first."""

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        return list(reversed(await super().load_history(session_id)))


def _mojibake(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8").decode("latin-1")
    if isinstance(value, dict):
        return {k: _mojibake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mojibake(v) for v in value]
    return value


@mutant("JKIT-003")
class UnicodeMangled(MemoryJournal):
    """Text is stored as UTF-8 bytes read back as Latin-1 (mojibake)."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        await super().append_message(turn, {**_mojibake(message), "role": message.get("role")})


@mutant("JKIT-003")
class LargePayloadTruncated(MemoryJournal):
    """Strings longer than 64 KiB are cut (a column of fixed size)."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        await super().append_message(turn, {k: v[:65536] if isinstance(v, str) else v for k, v in message.items()})


@mutant("JKIT-004")
class LeakingHistory(MemoryJournal):
    """A history also holds the last message appended to any session."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        await super().append_message(turn, message)
        self._last = message

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        history = await super().load_history(session_id)
        last = getattr(self, "_last", None)
        return history + [last] if last is not None and last not in history else history


@mutant("JKIT-005")
class TurnTagsDropped(MemoryJournal):
    """start_turn records the TurnInfo without its tags."""

    async def start_turn(self, turn: TurnInfo) -> None:
        await super().start_turn(turn.model_copy(update={"tags": []}))


@mutant("JKIT-006")
class StatusNeverFinished(MemoryJournal):
    """finish_turn returns without recording the status."""

    async def finish_turn(self, turn: TurnInfo, status: str) -> None:
        if turn.turn_id not in self._turns:
            await super().finish_turn(turn, status)


@mutant("JKIT-007")
class ApprovalDropped(MemoryJournal):
    """A tool call's approval is not kept."""

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        await super().record_tool_call(turn, record._replace(approval=None))


@mutant("JKIT-007")
class DurationInSeconds(MemoryJournal):
    """A tool call's duration is stored in seconds, not milliseconds."""

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        await super().record_tool_call(turn, record._replace(duration_ms=record.duration_ms / 1000))


@mutant("JKIT-007")
class ErrorFlagDropped(MemoryJournal):
    """A failed tool call is recorded as a success."""

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        await super().record_tool_call(turn, record._replace(is_error=False))


@mutant("JKIT-008")
class LostWriteUnderConcurrency(MemoryJournal):
    """append_message reads the history, yields, then writes back a copy: concurrent appends to
    one session overwrite each other."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        before = list(self._history.get(turn.session_id, []))
        await anyio.lowlevel.checkpoint()
        await super().append_message(turn, message)
        self._history[turn.session_id][:] = before + self._history[turn.session_id][-1:]


class _BufferedSqlite(SqliteJournal):
    """Acknowledges appends at once and writes them five at a time."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        buffer = self.__dict__.setdefault("_buffer", [])
        buffer.append((turn, message))
        if len(buffer) >= 5:
            self.__dict__["_buffer"] = []
            for t, m in buffer:
                await super().append_message(t, m)

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        buffer, self.__dict__["_buffer"] = self.__dict__.get("_buffer", []), []
        for t, m in buffer:
            await super().append_message(t, m)
        return await super().load_history(session_id)


mutant("JKIT-009", _sqlite)(type("AckBeforeDurable", (_BufferedSqlite,), {"__doc__": "A write is acknowledged before it is durable (written five at a time)."}))


@mutant("JKIT-010")
class UnknownSessionAccepted(MemoryJournal):
    """An append to an unknown session creates it silently."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        if turn.session_id not in self._sessions:
            self._sessions[turn.session_id] = {"id": turn.session_id}
            self._history[turn.session_id] = []
        await super().append_message(turn, message)


@mutant("JKIT-011")
class NonJsonHalfStored(MemoryJournal):
    """A message that is not JSON is stored with its bad values as text, then refused."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        try:
            json.dumps(message)
        except (TypeError, ValueError):
            await super().append_message(turn, json.loads(json.dumps(message, default=repr)))
            raise ValueError("journal: message is not JSON-serialisable") from None
        await super().append_message(turn, message)


class _SwallowingSqlite(SqliteJournal):
    """After its connection is gone, an append returns as if stored."""

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        if self._conn is None:
            return
        await super().append_message(turn, message)


mutant("JKIT-012", _sqlite)(type("LostConnectionAcknowledged", (_SwallowingSqlite,), {"__doc__": _SwallowingSqlite.__doc__}))


# --------------------------------------------------------------------------- variants


def _uuid7_plain() -> str:
    """A UUIDv7 without a counter: milliseconds and random bits (RFC 9562 allows it)."""
    import time

    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    return str(uuid.UUID(int=(ms << 80) | (7 << 76) | ((rand >> 62) & 0xFFF) << 64 | (2 << 62) | (rand & ((1 << 62) - 1))))


@variant()
class PlainUuid7Ids(MemoryJournal):
    """Session ids from a UUIDv7 generator without a counter (random bits within a millisecond)."""

    def __init__(self) -> None:
        super().__init__(ids=_uuid7_plain)


@variant()
class ExtraColumns(MemoryJournal):
    """Read-back rows carry columns of the journal's own (timestamps)."""

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        record = await super().get_session(session_id)
        return record and {**record, "created_at": "2026-12-01T00:00:00Z"}

    async def dump(self) -> dict[str, Any]:
        dump = await super().dump()
        for key in ("turns", "tool_calls", "messages"):
            dump[key] = [{**row, "recorded_at": 1} for row in dump[key]]
        return dump


@variant()
class BatchedWrites(MemoryJournal):
    """Writes are queued and applied in a batch before any read (a journal that keeps the contract
    while batching; it claims no durability)."""

    def __init__(self) -> None:
        super().__init__()
        self._queue: list[tuple[str, tuple[Any, ...]]] = []

    async def _flush(self) -> None:
        queue, self._queue = self._queue, []
        for name, args in queue:
            await getattr(super(), name)(*args)

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        if turn.session_id not in self._sessions:
            raise UnknownSessionError(turn.session_id)
        message_json(message)  # refused now, not at the flush
        self._queue.append(("append_message", (turn, json.loads(message_json(message)))))

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        await self._flush()
        return await super().load_history(session_id)

    async def dump(self) -> dict[str, Any]:
        await self._flush()
        return await super().dump()


@variant()
class KeysReordered(MemoryJournal):
    """Messages come back with their keys sorted, as a jsonb column returns them."""

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(m, sort_keys=True)) for m in await super().load_history(session_id)]


def _normal_sqlite(cls: type, store: str) -> Any:
    journal = cls(Path(store) / "journal.db", synchronous="NORMAL")
    journal.durable = True
    return journal


variant(_normal_sqlite)(type("SqliteSynchronousNormal", (SqliteJournal,), {"__doc__": "SQLite with synchronous=NORMAL: survives kill -9 (not a power loss)."}))
