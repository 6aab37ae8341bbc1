"""Serve the reference adapter over the stdio wire protocol: ``python -m reference_kernel.stdio``.

This is the kernel side of ``docs/protocol.md`` and the proof that the protocol carries
everything: ``akc run --adapter 'stdio:python -m reference_kernel.stdio'`` must give the same
verdicts as the in-process adapter. The ReferenceAdapter runs unchanged; it is handed a Doubles
proxy whose every method is a JSON-RPC request to the harness. What arrives is dispatched in
order: responses resolve pending calls by id and ``model.chunk`` feeds a pending model stream as
soon as the line is read (from the pipe's protocol callback); the reader task serves the rest,
and ``cancel`` calls the registered canceller at once (no later line is dispatched before it, as
the protocol requires). Notifications of ours wait for the next request or response and share
its write.

Stdout carries protocol lines only: ``sys.stdout`` is pointed at stderr so that a stray print
cannot corrupt the stream.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import traceback
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel

from conformance.boundary.adapter import ModelCallError, ToolFailed
from conformance.boundary.scenario import Scenario
from conformance.wire import codec
from conformance.wire.codes import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MODEL_ERROR,
    PROTOCOL_VERSION,
    TOOL_FAILED,
    UNSUPPORTED_VERSION,
)
from reference_kernel.adapter import ReferenceAdapter

#: Seconds a notification waits for a request or a response to travel with.
NOTIFY_DELAY_S = 0.002


class _Pending:
    """One request of ours awaiting its response (and, for model calls, its chunks): a queue the
    reader fills without ever blocking, and a future the waiting task sleeps on (a memory object
    stream per call cost more than the call's own work)."""

    __slots__ = ("messages", "waiter")

    def __init__(self) -> None:
        self.messages: deque[dict[str, Any]] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put(self, msg: dict[str, Any]) -> None:
        self.messages.append(msg)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> dict[str, Any]:
        while not self.messages:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        return self.messages.popleft()


class _LineReader(asyncio.Protocol):
    """Complete lines from the harness as the loop reads them (no reader registered and removed
    around every read, as a wait for readability per read costs). ``deliver`` takes a line at
    once when no earlier line waits (an answer to a pending call: its caller wakes a loop turn
    sooner); what it declines waits in ``lines``, in order."""

    def __init__(self, deliver: Callable[[bytes], bool]) -> None:
        self.deliver = deliver
        self.lines: deque[bytes] = deque()
        self.eof = False
        self.waiter: asyncio.Future[None] | None = None
        self._partial = bytearray()

    def data_received(self, data: bytes) -> None:
        self._partial += data
        if b"\n" not in data:
            return  # a long line arrives in many reads: no copy until it is complete
        *complete, rest = self._partial.split(b"\n")
        self._partial = rest
        for line in complete:
            if self.lines or not self.deliver(bytes(line)):
                self.lines.append(bytes(line))
        if self.lines:
            self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof_received()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class Server:
    def __init__(self, out_fd: int, in_fd: int) -> None:
        self._out = out_fd
        self._in = in_fd
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._cancellers: dict[int, Callable[[], Awaitable[None] | None]] = {}
        self._seq: int | None = None
        #: The largest harness clock reading received (``clock`` notifications) in this run.
        self.harness_now: float | None = None
        self.adapter = ReferenceAdapter()
        self._out_lines: list[bytes] = []
        self._flush_timer: asyncio.TimerHandle | None = None

    # ----------------------------------------------------------------- output

    def write(self, msg: dict[str, Any]) -> None:
        """Write one line now, after the notifications still queued: a request or a response
        (the harness waits for it). Synchronous, so senders never interleave."""
        self._out_lines.append(codec.dumps_line(msg))
        self.flush()

    def notify(self, msg: dict[str, Any]) -> None:
        """Queue a notification: it goes out with the next request or response (fewer writes,
        fewer wake-ups of the harness), or :data:`NOTIFY_DELAY_S` later if none comes (a timer,
        not a turn of the event loop per notification)."""
        self._out_lines.append(codec.dumps_line(msg))
        if self._flush_timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop in this thread: write now
            self.flush()
            return
        self._flush_timer = loop.call_later(NOTIFY_DELAY_S, self.flush)

    def flush(self) -> None:
        timer, self._flush_timer = self._flush_timer, None
        if timer is not None:
            timer.cancel()
        if not self._out_lines:
            return
        data = b"".join(self._out_lines)
        self._out_lines.clear()
        view = memoryview(data)
        while view:
            n = os.write(self._out, view)
            view = view[n:]

    def respond(self, rid: Any, result: Any = None, error: dict[str, Any] | None = None) -> None:
        if error is not None:
            self.write({"jsonrpc": "2.0", "id": rid, "error": error})
        else:
            self.write({"jsonrpc": "2.0", "id": rid, "result": result})

    # ----------------------------------------------------------------- calls to the harness

    def call_start(self, method: str, params: dict[str, Any]) -> tuple[int, _Pending]:
        self._next_id += 1
        rid = self._next_id
        pending = self._pending[rid] = _Pending()
        self.write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid, pending

    def give_up(self, rid: int) -> None:
        """Our call was cancelled by the kernel: tell the harness (``$/cancel``)."""
        if self._pending.pop(rid, None) is not None:
            self.write({"jsonrpc": "2.0", "method": "$/cancel", "params": {"seq": self._seq, "id": rid}})

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        rid, pending = self.call_start(method, params)
        try:
            msg = await pending.get()
        except BaseException:
            self.give_up(rid)
            raise
        self._pending.pop(rid, None)
        return _result(msg)

    # ----------------------------------------------------------------- input

    async def lines(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        reader = _LineReader(self._deliver)
        try:
            pipe = os.fdopen(self._in, "rb", buffering=0, closefd=False)
            await loop.connect_read_pipe(lambda: reader, pipe)
        except ValueError:  # not a pipe, socket or character device (a file): read it by hand
            async for line in self._read_lines():
                yield line
            return
        while True:
            while reader.lines:
                line = reader.lines.popleft()
                if line.strip():
                    yield line
            if reader.eof:
                return
            reader.waiter = loop.create_future()
            try:
                await reader.waiter
            finally:
                reader.waiter = None

    async def _read_lines(self) -> AsyncIterator[bytes]:
        """A file on stdin (``< requests.jsonl``): always readable, and the poller refuses it."""
        os.set_blocking(self._in, False)
        regular = stat.S_ISREG(os.fstat(self._in).st_mode)
        buffer = b""
        while True:
            if regular:
                await anyio.lowlevel.checkpoint()
            else:
                await anyio.wait_readable(self._in)
            try:
                data = os.read(self._in, 1 << 16)
            except BlockingIOError:
                continue
            if not data:
                return
            buffer += data
            *complete, buffer = buffer.split(b"\n")
            for line in complete:
                if line.strip():
                    yield line

    def _deliver(self, line: bytes) -> bool:
        """Hand an answer to a pending call (a response, a ``model.chunk``) or a ``clock``
        reading over at once; False for anything else (the serve loop's)."""
        msg = codec.fast_loads(line)
        if not isinstance(msg, dict):
            return False
        method = msg.get("method")
        if method is None:
            pending = self._pending.get(msg.get("id"))
        elif method == "model.chunk":
            pending = self._pending.get((msg.get("params") or {}).get("request"))
        elif method == "clock":
            self._clock(msg)
            return True
        else:
            return False
        if pending is not None:
            pending.put(msg)
        return True

    def _clock(self, msg: dict[str, Any]) -> None:
        now = msg["params"].get("now")
        if msg["params"].get("seq") == self._seq and isinstance(now, (int, float)):
            self.harness_now = now if self.harness_now is None else max(self.harness_now, now)

    async def serve(self) -> None:
        try:
            await self._serve()
        finally:
            self.flush()

    async def _serve(self) -> None:
        async with anyio.create_task_group() as tg:
            async for line in self.lines():
                msg = codec.fast_loads(line)
                if msg is codec.UNREAD:
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        print(f"reference_kernel.stdio: not JSON: {line[:200]!r}", file=sys.stderr)
                        continue
                method = msg.get("method")
                if method is None:
                    pending = self._pending.get(msg.get("id"))
                    if pending is not None:
                        pending.put(msg)
                elif method == "model.chunk":
                    pending = self._pending.get(msg["params"].get("request"))
                    if pending is not None:
                        pending.put(msg)
                elif method == "clock":
                    self._clock(msg)
                elif method == "cancel":
                    canceller = self._cancellers.get(msg["params"].get("message"))
                    if canceller is not None:
                        result = canceller()
                        if result is not None:
                            await result
                elif method == "start":
                    self._start(msg)
                elif method == "run":
                    tg.start_soon(self._run, msg)
                elif method == "stop":
                    self.respond(msg.get("id"), {})
                    tg.cancel_scope.cancel()
                    return
                elif "id" in msg:
                    self.respond(msg["id"], error={"code": METHOD_NOT_FOUND, "message": f"unknown method {method!r}"})
            tg.cancel_scope.cancel()  # EOF: the harness is gone

    def _start(self, msg: dict[str, Any]) -> None:
        version = (msg.get("params") or {}).get("protocol")
        if version != PROTOCOL_VERSION:
            self.respond(
                msg.get("id"),
                error={"code": UNSUPPORTED_VERSION, "message": f"unsupported protocol version {version!r}",
                       "data": {"supported": [PROTOCOL_VERSION]}},
            )
            return
        info = ReferenceAdapter.info.model_dump(mode="json")
        # live_clock over the wire: the clock is the harness's, read from its `clock`
        # notifications (WireDoubles.now).
        self.respond(msg.get("id"), {"protocol": PROTOCOL_VERSION, "info": info})

    async def _run(self, msg: dict[str, Any]) -> None:
        rid, params = msg.get("id"), msg.get("params") or {}
        seq = params.get("seq")
        self._seq = seq
        self._cancellers = {}
        self.harness_now = None
        try:
            scenario = Scenario.model_validate(params.get("scenario"))
        except Exception as exc:  # noqa: BLE001
            self.respond(rid, error={"code": INVALID_PARAMS, "message": f"invalid scenario: {exc}"})
            return
        try:
            result = await self.adapter.run(scenario, WireDoubles(self, seq, scenario, params.get("http_model")))
            envelope: dict[str, Any] = {"seq": seq, "status": "ok", "result": _as_json(result)}
        except Exception as exc:  # noqa: BLE001 - the adapter broke: say so, with context
            envelope = {
                "seq": seq,
                "status": "errored",
                "error": {"type": type(exc).__name__, "message": str(exc), "context": traceback.format_exc(limit=8)},
            }
        self.respond(rid, envelope)


def _as_json(result: Any) -> Any:
    """A RunResult for the wire: pydantic's JSON text, spliced into the line as it is (a fifth
    of the cost of ``model_dump(mode="json")`` and a second encoding), or, for text JSON cannot
    carry as UTF-8 (a lone surrogate), the dict, which the codec writes with escapes."""
    try:
        return codec.Raw(result.model_dump_json())
    except ValueError:  # pydantic_core.PydanticSerializationError
        return result.model_dump(mode="json")


def _result(msg: dict[str, Any]) -> Any:
    """A response → its result, or the exception its error stands for."""
    if "error" not in msg:
        return msg.get("result")
    err = msg["error"] or {}
    code = err.get("code")
    if code == MODEL_ERROR:
        data = err.get("data") or {}
        status = data.get("status", 500)
        raise ModelCallError(
            None if status is None else int(status),
            str(data.get("message", err.get("message", ""))),
            str(data.get("kind", "http")),
        )
    if code == TOOL_FAILED:
        raise ToolFailed(str(err.get("message", "")))
    raise RuntimeError(f"harness error {code}: {err.get('message')}")


class ServedModel:
    """The run request's ``http_model`` as ``doubles.http_model`` is in process: the scenario's
    model served over HTTP (docs/http-kernels.md)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.base_urls: dict[str, str] = dict(params.get("base_urls") or {})
        self.api_key: str = str(params.get("api_key", ""))

    def base_url(self, dialect: str) -> str:
        try:
            return self.base_urls[dialect]
        except KeyError:
            raise ValueError(f"the harness serves no dialect {dialect!r} (it serves {', '.join(self.base_urls)})") from None


class WireDoubles:
    """The Doubles protocol, each method a callback to the harness."""

    def __init__(self, server: Server, seq: int, scenario: Scenario, http_model: dict[str, Any] | None = None) -> None:
        self.server = server
        self.seq = seq
        self.scenario = scenario
        self.clock = scenario.clock
        self.model_calls = 0
        self.http_model = ServedModel(http_model) if http_model else None

    def model_stream(self, request: dict[str, Any], turn: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        # Sent now, as in-process the request is seen (and the clock advances) when it is made.
        self.model_calls += 1
        rid, pending = self.server.call_start("model.complete", {"seq": self.seq, "request": request, "turn": turn})
        return self._stream(rid, pending)

    async def _stream(self, rid: int, pending: _Pending) -> AsyncIterator[dict[str, Any]]:
        done = False
        try:
            while True:
                msg = await pending.get()
                if msg.get("method") == "model.chunk":
                    yield msg["params"]["chunk"]
                    continue
                done = True
                self.server._pending.pop(rid, None)
                _result(msg)  # raises ModelCallError for a scripted failure
                return
        finally:
            if not done:
                self.server.give_up(rid)

    async def invoke_tool(self, call: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
        return await self.server.call("tool.invoke", {"seq": self.seq, "call": call, "turn": turn})

    async def dispatch_hook(self, hook_id: str, point: str, payload: Any, turn: dict[str, Any]) -> dict[str, Any]:
        return await self.server.call(
            "hook.dispatch", {"seq": self.seq, "hook_id": hook_id, "point": point, "payload": payload, "turn": turn}
        )

    async def policy_precheck(self, call: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
        return await self.server.call("policy.precheck", {"seq": self.seq, "call": call, "turn": turn})

    async def ask_approver(self, request: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
        return await self.server.call("approver.ask", {"seq": self.seq, "request": request, "turn": turn})

    def now(self) -> float:
        """docs/protocol.md, Clock: start + advance × model calls made so far, or the harness's
        latest ``clock`` reading if that is later (a clock that advances at every event)."""
        local = self.clock.start + self.clock.advance_per_model_call * self.model_calls
        notified = self.server.harness_now
        return local if notified is None else max(local, notified)

    def register_canceller(self, message: int, cancel: Callable[[], Awaitable[None] | None]) -> None:
        self.server._cancellers[message] = cancel

    def journal_write(self, op: str, record: dict[str, Any], turn: dict[str, Any] | None) -> None:
        self.server.notify(
            {"jsonrpc": "2.0", "method": "journal.write",
             "params": {"seq": self.seq, "op": op, "record": record, "turn": turn}}
        )

    async def submit_user_message(self, index: int) -> None:
        await self.server.call("message.submit", {"seq": self.seq, "message": index})


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe (Linux): a long session's model request is one line of hundreds of KB, and
    with the default 64 KiB the writer stalls until the harness has read each piece."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass


def main() -> None:
    _widen_pipe(1)
    out_fd = os.dup(1)
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol stream
    server = Server(out_fd, sys.stdin.fileno())
    try:
        anyio.run(server.serve)
    except KeyboardInterrupt:
        pass
    _exit_now()


def _exit_now() -> None:
    """End the process without tearing every module down (~60 ms of CPU for a process holding
    pydantic's models, paid at each stop: the harness's probe and its run): the atexit handlers
    run, then ``os._exit``. Not under a profiler or a tracer (they write their data at the
    interpreter's exit), nor while another thread runs."""
    import atexit
    import threading

    if sys.getprofile() is not None or sys.gettrace() is not None or threading.active_count() > 1:
        return
    atexit._run_exitfuncs()
    sys.stderr.flush()
    sys.__stderr__.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
