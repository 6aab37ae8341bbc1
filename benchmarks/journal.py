"""Journal throughput: turns per second and p99 write latency for the memory, SQLite and Postgres
journals under 1, 8 and 64 concurrent sessions (issue 27).

A turn is what the reference kernel writes for one tool call: start_turn, the user message, the
assistant's tool call, the ToolCallRecord, the tool result, the final answer, finish_turn (seven
writes). Each session is one task writing its turns one after the other; the sessions run at once.
Postgres is measured when a server is given (``--dsn`` or ``$AKC_JOURNAL_DSN``; scripts/postgres.sh
starts one), else its rows say so. SQLite is a file with synchronous=FULL (an fsync per commit).

    python benchmarks/journal.py [--turns 200] [--sessions 1 8 64] [--dsn DSN] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference_kernel.journal import MemoryJournal
from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo
from reference_kernel.sqlite_journal import SqliteJournal


async def one_session(journal: Any, turns: int, latencies: list[float]) -> None:
    sid = await journal.create_session(NewSession(profile_id="bench", source="cli", tags=["client:acme"]))

    async def timed(call: Any, *args: Any) -> None:
        started = time.perf_counter()
        await call(*args)
        latencies.append(time.perf_counter() - started)

    for i in range(turns):
        t = TurnInfo(profile_id="bench", session_id=sid, turn_id=str(uuid.uuid4()), tags=["client:acme"])
        await timed(journal.start_turn, t)
        await timed(journal.append_message, t, {"role": "user", "text": f"question {i}: do I need an umbrella?"})
        await timed(journal.append_message, t, {"role": "assistant", "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Charleston"}}]})
        await timed(journal.record_tool_call, t, ToolCallRecord(call_id="c1", name="weather", args={"city": "Charleston"},
                                                                 result="18°C, rain", risk="low", duration_ms=12.5, approval="approved"))
        await timed(journal.append_message, t, {"role": "tool_result", "call_id": "c1", "content": "18°C, rain", "is_error": False})
        await timed(journal.append_message, t, {"role": "assistant", "text": "Yes, bring an umbrella."})
        await timed(journal.finish_turn, t, "completed")


async def measure(make: Any, sessions: int, turns: int) -> dict[str, Any]:
    journal = await make()
    latencies: list[float] = []
    try:
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(sessions):
                tg.start_soon(one_session, journal, turns, latencies)
        elapsed = time.perf_counter() - started
    finally:
        closer = getattr(journal, "aclose", None) or getattr(journal, "close", None)
        if closer is not None:
            result = closer()
            if hasattr(result, "__await__"):
                await result
    latencies.sort()
    return {"sessions": sessions, "turns": sessions * turns, "turns_per_s": round(sessions * turns / elapsed, 1),
            "p99_write_ms": round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 3),
            "p50_write_ms": round(latencies[len(latencies) // 2] * 1000, 3)}


def makers(tmp: Path, dsn: str | None) -> dict[str, Any]:
    async def memory() -> Any:
        return MemoryJournal()

    async def sqlite() -> Any:
        return SqliteJournal(tmp / f"{uuid.uuid4().hex}.db")

    async def postgres() -> Any:
        from reference_kernel.postgres_journal import PostgresJournal

        journal = PostgresJournal(dsn, schema=f"akc_bench_{uuid.uuid4().hex[:12]}", max_size=16, drop=True)  # type: ignore[arg-type]
        return await journal.open()

    return {"memory": memory, "sqlite": sqlite, **({"postgres": postgres} if dsn else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per session")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--dsn", default=os.environ.get("AKC_JOURNAL_DSN"))
    parser.add_argument("--json", action="store_true", help="one JSON line per row")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="akc-bench-journal-") as tmp:
        rows = []
        for name, make in makers(Path(tmp), args.dsn).items():
            for sessions in args.sessions:
                turns = max(1, args.turns // sessions) if name != "memory" else args.turns
                row = {"journal": name, **anyio.run(measure, make, sessions, turns)}
                rows.append(row)
                print(json.dumps(row) if args.json else
                      f"{name:<9} {sessions:>3} sessions  {row['turns']:>6} turns  {row['turns_per_s']:>10.1f} turns/s  "
                      f"p99 write {row['p99_write_ms']:>8.3f} ms  (p50 {row['p50_write_ms']:.3f})", flush=True)
        if not args.dsn and not args.json:
            print("postgres: not measured (no --dsn and no $AKC_JOURNAL_DSN; scripts/postgres.sh start DIR prints one)")


if __name__ == "__main__":
    main()
