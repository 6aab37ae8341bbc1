"""A durable Journal on stdlib sqlite3: WAL mode, one transaction per append, schema created if
missing. Reopening the same file (in this process or another) sees everything committed.

One connection (``check_same_thread=False``) guarded by a ``threading.Lock``; each async method
runs its blocking call in a worker thread via ``anyio.to_thread.run_sync`` (not cancellable
mid-call, so a write that started always finishes).

Durability: the default ``synchronous="FULL"`` syncs the WAL on every commit, so a committed turn
survives a power loss or an OS crash as well as a kill of the process — what a journal of tool
calls with side effects needs (a lost record means a replayed side effect). ``synchronous="NORMAL"``
is faster (no sync per commit) and still survives a process crash (``kill -9``), but a power loss
can roll back the last committed transactions. WAL mode is checked when the file is opened (a
filesystem that refuses it is an error, never a silent fallback). A failed ``COMMIT`` (a full
disk) is rolled back so the journal is not wedged; a failing ``ROLLBACK`` never hides the first
error.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from reference_kernel.errors import UnknownSessionError, UnknownTurnError
from reference_kernel.ids import IdGenerator
from reference_kernel.journal import (
    add_costs,
    message_json,
    session_record,
    tool_call_json,
)
from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo, TurnStatus, UsageEvent

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn TEXT NOT NULL,
    status TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT,
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, seq);
CREATE TABLE IF NOT EXISTS tool_calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    row TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    event TEXT NOT NULL,
    tags TEXT NOT NULL
);
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class SqliteJournal:
    """001's Journal contract on a SQLite file (same behaviour as ``MemoryJournal``)."""

    def __init__(
        self, path: str | Path, ids: IdGenerator | None = None, synchronous: str = "FULL"
    ) -> None:
        self.path = Path(path)
        self._ids = ids or IdGenerator()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            str(self.path), check_same_thread=False, isolation_level=None, timeout=10.0
        )
        conn = self._conn
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            conn.close()
            raise ValueError(f"sqlite journal: bad synchronous mode {synchronous!r} (FULL, NORMAL or EXTRA)")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        in_memory = str(path) == ":memory:"  # nothing to make durable: sqlite keeps journal_mode=memory
        if not in_memory and (not mode or str(mode[0]).lower() != "wal"):
            conn.close()
            raise RuntimeError(f"sqlite journal {self.path}: WAL mode was not granted (journal_mode is {mode and mode[0]!r})")
        conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        conn.execute("PRAGMA foreign_keys=ON")
        self.synchronous = synchronous.upper()

        def schema(c: sqlite3.Connection) -> None:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)

        self._tx(schema)

    # ------------------------------------------------------------------ plumbing

    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one write transaction (committed on return, rolled back on error)."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise RuntimeError(f"sqlite journal {self.path} is closed")
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException as exc:
                # Also when COMMIT itself failed (a full disk): never leave the transaction open,
                # or every later append fails with "cannot start a transaction within a transaction".
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error as rollback_error:
                        exc.add_note(f"and the ROLLBACK that followed failed too: {rollback_error}")
                raise
            return result

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._tx, fn)

    @staticmethod
    def _require_session(conn: sqlite3.Connection, session_id: str, what: str = "session") -> None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise UnknownSessionError(session_id, what)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SqliteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ 001's trait

    async def create_session(self, session: NewSession) -> str:
        session_id = self._ids()
        record = _dumps(session_record(session_id, session))

        def do(conn: sqlite3.Connection) -> str:
            if session.parent_session_id is not None:
                self._require_session(conn, session.parent_session_id, "parent session")
            conn.execute("INSERT INTO sessions (id, record) VALUES (?, ?)", (session_id, record))
            return session_id

        return await self._run(do)

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        def do(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            self._require_session(conn, session_id)
            rows = conn.execute(
                "SELECT message FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
            return [json.loads(row[0]) for row in rows]

        return await self._run(do)

    async def start_turn(self, turn: TurnInfo) -> None:
        data = _dumps(turn.as_dict())

        def do(conn: sqlite3.Connection) -> None:
            self._require_session(conn, turn.session_id)
            try:
                conn.execute(
                    "INSERT INTO turns (turn_id, session_id, turn, status) VALUES (?, ?, ?, NULL)",
                    (turn.turn_id, turn.session_id, data),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"journal: turn {turn.turn_id!r} was already started") from None

        await self._run(do)

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        data = message_json(message)

        def do(conn: sqlite3.Connection) -> None:
            self._require_session(conn, turn.session_id)
            conn.execute(
                "INSERT INTO messages (session_id, turn_id, message) VALUES (?, ?, ?)",
                (turn.session_id, turn.turn_id, data),
            )

        await self._run(do)

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        data = tool_call_json(turn, record)

        def do(conn: sqlite3.Connection) -> None:
            self._require_session(conn, turn.session_id)
            conn.execute(
                "INSERT INTO tool_calls (session_id, row) VALUES (?, ?)", (turn.session_id, data)
            )

        await self._run(do)

    async def finish_turn(self, turn: TurnInfo, status: TurnStatus) -> None:
        def do(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE turns SET status = ? WHERE turn_id = ?", (status, turn.turn_id)
            )
            if cur.rowcount == 0:
                raise UnknownTurnError(turn.turn_id)

        await self._run(do)

    # ------------------------------------------------------------------ extras

    async def record_usage(self, turn: TurnInfo, event: UsageEvent) -> None:
        data, tags = _dumps(event.as_dict()), _dumps(list(turn.tags))

        def do(conn: sqlite3.Connection) -> None:
            self._require_session(conn, event.session_id)
            conn.execute(
                "INSERT INTO usage (session_id, event, tags) VALUES (?, ?, ?)",
                (event.session_id, data, tags),
            )

        await self._run(do)

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        def do(conn: sqlite3.Connection) -> dict[str, Any] | None:
            row = conn.execute("SELECT record FROM sessions WHERE id = ?", (session_id,)).fetchone()
            return json.loads(row[0]) if row else None

        return await self._run(do)

    async def dump(self) -> dict[str, Any]:
        def do(conn: sqlite3.Connection) -> dict[str, Any]:
            def col(sql: str) -> list[Any]:
                return [json.loads(r[0]) for r in conn.execute(sql).fetchall()]

            turns = [
                {"turn": json.loads(t), "status": s}
                for t, s in conn.execute("SELECT turn, status FROM turns ORDER BY seq")
            ]
            messages = [
                {"session_id": sid, "turn_id": tid, "message": json.loads(m)}
                for sid, tid, m in conn.execute(
                    "SELECT session_id, turn_id, message FROM messages ORDER BY seq"
                )
            ]
            return {
                "sessions": col("SELECT record FROM sessions ORDER BY seq"),
                "turns": turns,
                "messages": messages,
                "tool_calls": col("SELECT row FROM tool_calls ORDER BY seq"),
                "usage": col("SELECT event FROM usage ORDER BY seq"),
            }

        return await self._run(do)

    async def cost_by_tag(self) -> dict[str, float]:
        def do(conn: sqlite3.Connection) -> dict[str, float]:
            totals: dict[str, float] = defaultdict(float)
            for event, tags in conn.execute("SELECT event, tags FROM usage ORDER BY seq"):
                add_costs(totals, json.loads(tags), json.loads(event)["cost_usd"])
            return dict(totals)

        return await self._run(do)

