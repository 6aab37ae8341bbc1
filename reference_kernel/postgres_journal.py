"""001's Journal on Postgres, as CommonOS keeps it: psycopg 3, async, a connection pool.

The schema is created by :meth:`PostgresJournal.open` (a migration table records its version, so
a newer journal can add columns later); every write is one transaction, committed before the
method returns, so a write that returned survives a crash of this process. ``schema`` puts the
tables in a Postgres schema of their own (one cluster serves many journals: the conformance
kit gives each check a fresh one). Rows are JSON text, not ``jsonb``: jsonb cannot hold
``\\u0000`` (the kit's Unicode properties found it) and reorders keys; a record comes back as it
was given. Each table keeps its order by a ``bigserial``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from reference_kernel.errors import UnknownSessionError, UnknownTurnError
from reference_kernel.ids import IdGenerator
from reference_kernel.journal import (
    add_costs,
    message_json,
    session_record,
    to_json,
    tool_call_json,
)
from reference_kernel.records import (
    NewSession,
    ToolCallRecord,
    TurnInfo,
    TurnStatus,
    UsageEvent,
)

#: Migrations, in order; ``schema_version`` holds how many ran.
MIGRATIONS = (
    """
    CREATE TABLE sessions (seq bigserial PRIMARY KEY, id text NOT NULL UNIQUE, record text NOT NULL);
    CREATE TABLE turns (seq bigserial PRIMARY KEY, turn_id text NOT NULL UNIQUE,
        session_id text NOT NULL REFERENCES sessions(id), turn text NOT NULL, status text);
    CREATE TABLE messages (seq bigserial PRIMARY KEY, session_id text NOT NULL REFERENCES sessions(id),
        turn_id text, message text NOT NULL);
    CREATE INDEX messages_by_session ON messages (session_id, seq);
    CREATE TABLE tool_calls (seq bigserial PRIMARY KEY, session_id text NOT NULL REFERENCES sessions(id), row text NOT NULL);
    CREATE TABLE usage (seq bigserial PRIMARY KEY, session_id text NOT NULL REFERENCES sessions(id),
        event text NOT NULL, tags text NOT NULL);
    """,
)

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresJournal:
    """001's Journal contract on Postgres (same behaviour as ``MemoryJournal``).

    The pool opens, and the migrations run, on first use (a kernel's journal factory is not
    async); ``await aclose()`` when done (``drop=True``: the schema is dropped then too, for a
    journal that lives as long as one conformance scenario)."""

    durable = True

    def __init__(self, dsn: str, *, schema: str = "public", ids: IdGenerator | None = None,
                 max_size: int = 10, drop: bool = False) -> None:
        if not _SCHEMA_NAME.match(schema):
            raise ValueError(f"postgres journal: bad schema name {schema!r} (lower-case letters, digits, _)")
        self.dsn, self.schema, self._max_size, self._drop = dsn, schema, max_size, drop
        self._ids = ids or IdGenerator()
        self._pool: Any = None
        self._opening: Any = None

    @property
    def _app(self) -> str:
        return f"akc-journal-{self.schema}"[:63]

    async def open(self) -> PostgresJournal:
        """Open the pool and run the migrations not yet run (once; later calls return at once)."""
        import anyio

        if self._pool is not None:
            return self
        if self._opening is None:
            self._opening = anyio.Lock()
        async with self._opening:
            if self._pool is None:
                from psycopg_pool import AsyncConnectionPool

                schema = self.schema

                async def configure(conn: Any) -> None:
                    await conn.execute(f"SET search_path TO {schema}")
                    await conn.commit()

                pool = AsyncConnectionPool(self.dsn, min_size=1, max_size=self._max_size, open=False,
                                           configure=configure, check=AsyncConnectionPool.check_connection,
                                           kwargs={"application_name": self._app})
                await pool.open(wait=True, timeout=30)
                try:
                    await self._migrate(pool)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self

    async def _conn(self) -> Any:
        if self._pool is None:
            await self.open()
        return self._pool.connection()

    async def _migrate(self, pool: Any) -> None:
        async with pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))  # one migrator at a time
            await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version int NOT NULL)")
            row = await (await conn.execute("SELECT max(version) FROM schema_version")).fetchone()
            done = row[0] or 0
            for version, sql in enumerate(MIGRATIONS[done:], start=done + 1):
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            if self._drop:
                async with pool.connection() as conn:
                    await conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
                    await conn.commit()
        finally:
            await pool.close()

    @staticmethod
    async def _require_session(conn: Any, session_id: str, what: str = "session") -> None:
        cur = await conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,))
        if await cur.fetchone() is None:
            raise UnknownSessionError(session_id, what)

    async def _write(self, sql: str, params: tuple[Any, ...], session_id: str) -> None:
        """One row, in one transaction, after checking its session exists."""
        async with await self._conn() as conn, conn.transaction():
            await self._require_session(conn, session_id)
            await conn.execute(sql, params)

    # ------------------------------------------------------------------ 001's trait

    async def create_session(self, session: NewSession) -> str:
        session_id = self._ids()
        record = to_json(session_record(session_id, session), "session")
        async with await self._conn() as conn, conn.transaction():
            if session.parent_session_id is not None:
                await self._require_session(conn, session.parent_session_id, "parent session")
            await conn.execute("INSERT INTO sessions (id, record) VALUES (%s, %s)", (session_id, record))
        return session_id

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        async with await self._conn() as conn:
            await self._require_session(conn, session_id)
            cur = await conn.execute("SELECT message FROM messages WHERE session_id = %s ORDER BY seq", (session_id,))
            return [json.loads(row[0]) for row in await cur.fetchall()]

    async def start_turn(self, turn: TurnInfo) -> None:
        from psycopg.errors import UniqueViolation

        try:
            await self._write("INSERT INTO turns (turn_id, session_id, turn, status) VALUES (%s, %s, %s, NULL)",
                              (turn.turn_id, turn.session_id, to_json(turn.as_dict(), "turn")), turn.session_id)
        except UniqueViolation:
            raise ValueError(f"journal: turn {turn.turn_id!r} was already started") from None

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        await self._write("INSERT INTO messages (session_id, turn_id, message) VALUES (%s, %s, %s)",
                          (turn.session_id, turn.turn_id, message_json(message)), turn.session_id)

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        await self._write("INSERT INTO tool_calls (session_id, row) VALUES (%s, %s)",
                          (turn.session_id, tool_call_json(turn, record)), turn.session_id)

    async def finish_turn(self, turn: TurnInfo, status: TurnStatus) -> None:
        async with await self._conn() as conn, conn.transaction():
            cur = await conn.execute("UPDATE turns SET status = %s WHERE turn_id = %s", (status, turn.turn_id))
            if cur.rowcount == 0:
                raise UnknownTurnError(turn.turn_id)

    # ------------------------------------------------------------------ extras

    async def record_usage(self, turn: TurnInfo, event: UsageEvent) -> None:
        await self._write("INSERT INTO usage (session_id, event, tags) VALUES (%s, %s, %s)",
                          (event.session_id, to_json(event.as_dict(), "usage"), to_json(list(turn.tags), "tags")),
                          event.session_id)

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        async with await self._conn() as conn:
            row = await (await conn.execute("SELECT record FROM sessions WHERE id = %s", (session_id,))).fetchone()
            return json.loads(row[0]) if row else None

    async def dump(self) -> dict[str, Any]:
        async with await self._conn() as conn, conn.transaction():  # one snapshot
            async def rows(sql: str) -> list[Any]:
                return list(await (await conn.execute(sql)).fetchall())

            return {
                "sessions": [json.loads(r[0]) for r in await rows("SELECT record FROM sessions ORDER BY seq")],
                "turns": [{"turn": json.loads(t), "status": s} for t, s in await rows("SELECT turn, status FROM turns ORDER BY seq")],
                "messages": [{"session_id": s, "turn_id": t, "message": json.loads(m)}
                             for s, t, m in await rows("SELECT session_id, turn_id, message FROM messages ORDER BY seq")],
                "tool_calls": [json.loads(r[0]) for r in await rows("SELECT row FROM tool_calls ORDER BY seq")],
                "usage": [json.loads(r[0]) for r in await rows("SELECT event FROM usage ORDER BY seq")],
            }

    async def cost_by_tag(self) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        async with await self._conn() as conn:
            for event, tags in await (await conn.execute("SELECT event, tags FROM usage ORDER BY seq")).fetchall():
                add_costs(totals, json.loads(tags), json.loads(event)["cost_usd"])
        return dict(totals)

    # ------------------------------------------------------------------ for the conformance kit

    async def interrupt(self) -> None:
        """Drop every connection of the pool server-side, as a network failure would."""
        async with await self._conn() as conn:
            await conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE pid <> pg_backend_pid() AND datname = current_database() AND usename = current_user "
                               "AND application_name = %s", (self._app,))
