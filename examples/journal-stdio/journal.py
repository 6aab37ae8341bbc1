"""A Journal over stdio (docs/protocol.md, "Journals over stdio"): the reference SQLite journal in
``$AKC_JOURNAL_STORE/journal.db``, one JSON request per line on stdin, one response per line on
stdout. Any language can do the same; certify it with

    akc journal --adapter 'stdio:python examples/journal-stdio/journal.py'
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo
from reference_kernel.sqlite_journal import SqliteJournal


async def serve() -> None:
    journal = SqliteJournal(Path(os.environ["AKC_JOURNAL_STORE"]) / "journal.db")

    async def interrupt() -> None:  # the connection is gone: later writes fail
        journal.close()

    methods = {
        "hello": lambda: _value({"durable": True, "interrupt": True}),
        "create_session": lambda s: journal.create_session(NewSession(**s)),
        "load_history": journal.load_history,
        "start_turn": lambda t: journal.start_turn(TurnInfo(**t)),
        "append_message": lambda t, m: journal.append_message(TurnInfo(**t), m),
        "record_tool_call": lambda t, r: journal.record_tool_call(TurnInfo(**t), ToolCallRecord(**r)),
        "finish_turn": lambda t, status: journal.finish_turn(TurnInfo(**t), status),
        "get_session": journal.get_session,
        "dump": journal.dump,
        "interrupt": interrupt,
    }
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = await methods[request["method"]](*request.get("params", []))
            response = {"id": request["id"], "result": result}
        except Exception as exc:  # noqa: BLE001 - every error goes back to the caller
            response = {"id": request["id"], "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(response, ensure_ascii=False) + "\n")
        sys.stdout.flush()


async def _value(value: object) -> object:
    return value


if __name__ == "__main__":
    anyio.run(serve)
