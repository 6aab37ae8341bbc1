"""``stdio:CMD`` journals: a Journal in any language, one process per opened store, speaking JSON
lines on stdin/stdout (docs/protocol.md, "Journals over stdio"). Requests go one at a time.

The process is untrusted: a line that is not a JSON response, a response to another request or
an early exit is an error of the call that waited for it, never the kit's crash.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

import anyio
from anyio.abc import Process

from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo

#: Longest response line read (a history of large messages fits).
MAX_LINE = 64 << 20


class JournalProcessError(Exception):
    """The journal process answered with an error, or broke the protocol."""


class StdioJournal:
    def __init__(self, process: Process) -> None:
        self._process = process
        self._lock = anyio.Lock()
        self._next = 0
        self._buffer = b""
        self.durable = False

    @classmethod
    async def start(cls, command: str, store: str) -> StdioJournal:
        argv = shlex.split(command)
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable  # whatever 'python' is on PATH may not be this harness's interpreter (as stdio kernels)
        process = await anyio.open_process(argv, env={**os.environ, "AKC_JOURNAL_STORE": store})
        journal = cls(process)
        hello = await journal._call("hello")  # what it claims: {"durable": bool, "interrupt": bool}
        if not isinstance(hello, dict):
            await journal.aclose()
            raise JournalProcessError(f"hello: expected an object, got {str(hello)[:200]}")
        journal.durable = hello.get("durable") is True
        if hello.get("interrupt") is True:
            journal.interrupt = journal._interrupt  # type: ignore[attr-defined]
        return journal

    async def _readline(self) -> bytes:
        assert self._process.stdout is not None
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise JournalProcessError(f"a response line longer than {MAX_LINE} bytes")
            try:
                chunk = await self._process.stdout.receive(1 << 16)
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                raise JournalProcessError("the journal process closed its output") from None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    async def _call(self, method: str, *params: Any) -> Any:
        async with self._lock:
            rid, self._next = self._next, self._next + 1
            request = json.dumps({"id": rid, "method": method, "params": list(params)}, ensure_ascii=False, allow_nan=False)
            assert self._process.stdin is not None
            try:
                await self._process.stdin.send(request.encode() + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise JournalProcessError("the journal process is gone") from None
            line = await self._readline()
        try:
            response = json.loads(line)
        except ValueError:
            raise JournalProcessError(f"{method}: not a JSON response: {line[:200]!r}") from None
        if not isinstance(response, dict) or response.get("id") != rid:
            raise JournalProcessError(f"{method}: expected a response with id {rid}, got {str(response)[:200]}")
        if "error" in response:
            raise JournalProcessError(f"{method}: {str(response['error'])[:500]}")
        return response.get("result")

    async def create_session(self, session: NewSession) -> str:
        return await self._call("create_session", session.as_dict())

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        return await self._call("load_history", session_id)

    async def start_turn(self, turn: TurnInfo) -> None:
        await self._call("start_turn", turn.as_dict())

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        await self._call("append_message", turn.as_dict(), message)

    async def record_tool_call(self, turn: TurnInfo, record: ToolCallRecord) -> None:
        await self._call("record_tool_call", turn.as_dict(), record.as_dict())

    async def finish_turn(self, turn: TurnInfo, status: str) -> None:
        await self._call("finish_turn", turn.as_dict(), status)

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        return await self._call("get_session", session_id)

    async def dump(self) -> dict[str, Any]:
        return await self._call("dump")

    async def _interrupt(self) -> None:
        await self._call("interrupt")

    async def aclose(self) -> None:
        if self._process.stdin is not None:
            await self._process.stdin.aclose()
        with anyio.move_on_after(5):
            await self._process.wait()
        if self._process.returncode is None:
            self._process.kill()
            await self._process.wait()
