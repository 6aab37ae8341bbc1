"""The harness side of the stdio wire protocol: an adapter object that drives a kernel process.

``StdioAdapter`` implements the in-process adapter contract (``info`` and
``async run(scenario, doubles)``), so the runner, the doubles and the verdicts are exactly those of
an in-process kernel. One kernel process (:class:`~conformance.wire.connection.Connection`) serves
the whole suite run: started lazily in the event loop that runs the scenarios, ``start``-ed once,
and replaced after anything that leaves it in an unknown state (a crash, a hang, garbage on
stdout, a wrong ``seq``). During a ``run`` every callback the kernel sends is served in a task
of its own while it lasts (a worker, reused by the next callback once it is done), by the real
doubles, so rendezvous-based concurrency checks work over the wire as in-process.

The ``info`` is needed before any event loop runs (the CLI validates the adapter first), so
loading the spec does a short synchronous probe: start the process in a helper thread, ``start``,
``stop``. Its answer is cached per command line.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio
import sniffio

from conformance.boundary.adapter import AdapterInfo, ModelCallError, RunResult, ToolFailed
from conformance.harness.doubles import HarnessDoubles, HookRaised
from conformance.errors import Unsupported, UsageError
from conformance.boundary.scenario import Scenario
from conformance.wire import codec, validate
from conformance.wire.connection import (
    _LIVE_PIDS,
    START_TIMEOUT_S,
    AdapterErrored,
    Connection,
    WireError,
    loop_token,
)
from conformance.wire.messages import INTERNAL_ERROR, METHOD_NOT_FOUND, MODEL_ERROR, REQUEST_CANCELLED, TOOL_FAILED

__all__ = ["AdapterErrored", "StdioAdapter", "WireError", "load_stdio", "_LIVE_PIDS"]

_INFO_CACHE: dict[tuple[str, ...], AdapterInfo] = {}


class _Worker:
    """A task of the run's task group serving callbacks one at a time (see :meth:`_Run._work`):
    the callback it is given, and the cancel scope a ``$/cancel`` of that callback cancels (one
    for as long as none is cancelled)."""

    __slots__ = ("_wake", "_woken", "msg", "scope")

    def __init__(self, woken: Callable[[], Any]) -> None:
        self.msg: dict[str, Any] | None = None
        self.scope = anyio.CancelScope()
        self._woken = woken
        self._wake: Any = None

    def give(self, msg: dict[str, Any]) -> None:
        self.msg = msg
        wake, self._wake = self._wake, None
        if isinstance(wake, anyio.Event):
            wake.set()
        elif wake is not None and not wake.done():
            wake.set_result(None)

    async def ready(self) -> dict[str, Any]:
        """The callback given (at once when it is there already)."""
        while self.msg is None:
            self._wake = self._woken()
            await (self._wake.wait() if isinstance(self._wake, anyio.Event) else self._wake)
        return self.msg


class _Run:
    """One scenario over the wire: serves callbacks until the ``run`` response arrives."""

    def __init__(self, conn: Connection, seq: int, scenario: Scenario, doubles: Any) -> None:
        self.conn = conn
        self.seq = seq
        self.scenario = scenario
        self.doubles = doubles
        if isinstance(doubles, HarnessDoubles):
            doubles.inputs_private = True  # decoded from the kernel's lines, handed over once
        self.spans: list[dict[str, Any]] = []
        #: The kernel's pending requests → the scope serving them (``$/cancel`` cancels it).
        self.serving: dict[Any, anyio.CancelScope] = {}
        self.given_up: set[Any] = set()
        #: Message objects already handed to the doubles, by a cheap content key (see _intern).
        self._seen: dict[tuple[Any, ...], dict[str, Any]] = {}
        #: Workers waiting for a callback to serve (see _work), the latest last, and how one
        #: waits: an asyncio future (asyncio), an anyio Event (elsewhere).
        self._idle: list[_Worker] = []
        self._woken: Callable[[], Any] = anyio.Event
        self._previous: dict[Any, list[Any]] = {}
        self._blocking = self._blocking_calls(scenario)
        #: The last harness clock reading sent in a ``clock`` notification (the kernel starts
        #: from ``scenario.clock.start``).
        self._clock_sent = scenario.clock.start

    @staticmethod
    def _blocking_calls(scenario: Scenario) -> set[int]:
        """Model call indexes whose response blocks (a cancel point, ``block_until_cancelled``):
        their chunks are written one by one; every other response in a single write."""
        out: set[int] = set()
        index = 0
        for r in scenario.model.responses:
            for _ in range(max(1, r.repeat)):
                if r.block_until_cancelled:
                    out.add(index)
                index += 1
        cancel = scenario.cancel
        if cancel is not None and cancel.at == "model_call":
            out.add(cancel.index)
        return out

    def _intern(self, request: dict[str, Any], turn: dict[str, Any]) -> None:
        """Hand the doubles the *same* object for a history message they saw before (equal
        content), as an in-process kernel does: their log then copies each message once, not
        once per request (O(history) per model call instead of O(history²) per session).
        Cheap path: the same position in the session's previous request; else a content key."""
        messages = request.get("messages")
        if not isinstance(messages, list):
            return
        session = turn.get("session_id") if isinstance(turn, dict) else None
        prev = self._previous.get(session, ())
        seen = self._seen
        for i, m in enumerate(messages):
            if type(m) is not dict:
                continue
            if i < len(prev) and prev[i] == m:
                messages[i] = prev[i]
                continue
            calls = m.get("tool_calls")
            first = calls[0].get("id") if isinstance(calls, list) and calls and isinstance(calls[0], dict) else None
            key = (m.get("role"), m.get("text"), m.get("call_id"), first, len(m))
            try:
                old = seen.get(key)
            except TypeError:  # an unhashable field value: leave it alone
                continue
            if old is None:
                seen[key] = m
            elif old == m:
                messages[i] = old
        self._previous[session] = messages

    async def cancel_message(self, message: int) -> None:
        """The canceller the doubles call at the cancel point: a ``cancel`` notification."""
        await self.conn.send({"jsonrpc": "2.0", "method": "cancel", "params": {"seq": self.seq, "message": message}})

    def _check_seq(self, msg: dict[str, Any]) -> bool:
        """True: the message belongs to the running scenario. False: it carries the seq of an
        earlier one (a late callback): recorded against that scenario, not this one."""
        params = msg.get("params")
        seq = params.get("seq") if isinstance(params, dict) else None
        if type(seq) is int and 0 < seq < self.seq and seq in self.conn.finished:
            self.conn.stray(seq, f"the kernel sent {msg.get('method')!r} (line {self.conn.lines_read}) after it had answered this scenario's run")
            return False
        if seq != self.seq:
            raise WireError(
                f"wrong seq: the kernel's {msg.get('method')!r} carries seq {seq!r}, but the running "
                f"scenario {self.scenario.name!r} is seq {self.seq} (line {self.conn.lines_read})"
            )
        return True

    async def go(self) -> dict[str, Any]:
        conn = self.conn
        for index in range(len(self.scenario.user_messages)):
            self.doubles.register_canceller(index, lambda i=index: self.cancel_message(i))
        rid = conn.new_id("run")
        # As JSON text, unless every message is validated (the validator reads dicts).
        scenario = self.scenario.model_dump(mode="json") if conn.validating else codec.Raw(self.scenario.model_dump_json())
        params: dict[str, Any] = {"seq": self.seq, "scenario": scenario}
        served = getattr(self.doubles, "http_model", None)
        if served is not None:
            params["http_model"] = {"base_urls": served.base_urls(), "api_key": served.api_key}
        await conn.send({"jsonrpc": "2.0", "id": rid, "method": "run", "params": params})
        during = f"scenario {self.scenario.name!r}"
        if sniffio.current_async_library() == "asyncio":
            loop = asyncio.get_running_loop()
            self._woken = loop.create_future
        async with anyio.create_task_group() as tg:
            conn.take_lines(lambda msg: self._take(msg, tg))
            try:
                return await self._receive(tg, rid, during)
            finally:
                conn.take_lines(None)  # what comes after the run's end is not this run's

    def _take(self, msg: dict[str, Any], tg: Any) -> bool:
        """What :meth:`_receive` does with a callback of this scenario, a span, a journal write
        or a ``$/`` ping, done as its line is read (Connection.take_lines): no turn of the event
        loop to wake the receiving task first. False, with nothing done: _receive handles it."""
        method = msg.get("method")
        if type(method) is not str:
            return False
        if method.startswith("$/"):
            return method != "$/cancel" and "id" not in msg
        params = msg.get("params")
        if type(params) is not dict or type(params.get("seq")) is not int or params["seq"] != self.seq:
            return False
        if "id" in msg:
            if type(msg["id"]) not in (int, str):
                return False
            self._dispatch(msg, tg)
        elif method == "span":
            span = params.get("span")
            if type(span) is not dict:
                return False
            self.spans.append(span)
        elif method == "journal.write":
            report = getattr(self.doubles, "journal_write", None)
            if report is not None:
                try:
                    report(str(params.get("op")), params.get("record"), params.get("turn"))
                except Exception:  # noqa: BLE001 - _receive calls it again, and fails the run
                    return False
        else:
            return False
        return True

    def _dispatch(self, msg: dict[str, Any], tg: Any) -> None:
        """A callback to an idle worker, or to a new one."""
        if self._idle:
            worker = self._idle.pop()
        else:
            worker = _Worker(self._woken)
            tg.start_soon(self._work, worker)
        self.serving[msg["id"]] = worker.scope
        worker.give(msg)

    async def _receive(self, tg: Any, rid: int, during: str) -> dict[str, Any]:
        """Handle the kernel's messages until the answer to ``run`` (request ``rid``)."""
        conn = self.conn
        while True:
            # No message counts as progress by itself ("$/" pings from a thread of a kernel
            # deadlocked in its turn included): only what the doubles see it do does.
            msg = await conn.receive(during)
            method = msg.get("method")
            if method is not None:
                if isinstance(method, str) and method.startswith("$/") and method != "$/cancel" and "id" not in msg:
                    continue  # JSON-RPC/LSP convention: "$/" notifications may be ignored
                if not self._check_seq(msg):
                    if "id" in msg:
                        await conn.send({"jsonrpc": "2.0", "id": msg["id"], "error": {
                            "code": REQUEST_CANCELLED, "message": "that scenario's run has ended"}})
                    continue
                if "id" in msg:
                    self._dispatch(msg, tg)
                elif method == "span":
                    self.spans.append(self._notified_span(msg, conn.lines_read))
                elif method == "journal.write":
                    # Inline, before any later line: its place in the log is its order.
                    report = getattr(self.doubles, "journal_write", None)
                    if report is not None:
                        p = msg["params"]
                        report(str(p.get("op")), p.get("record"), p.get("turn"))
                elif method == "$/cancel":
                    target = msg["params"].get("id")
                    scope = self.serving.get(target)
                    if scope is not None:
                        self.given_up.add(target)
                        scope.cancel()
                else:
                    raise WireError(f"the kernel sent an unknown notification {method!r} (line {conn.lines_read})")
                continue
            if msg.get("id") != rid:
                old = conn.answered.get(msg.get("id")) if isinstance(msg.get("id"), int) else None
                if old is not None:
                    conn.stray(old, f"the kernel answered its run request (id {msg.get('id')}) a second time (line {conn.lines_read})")
                    continue
                raise WireError(f"the kernel answered request id {msg.get('id')!r}, which the harness never sent (line {conn.lines_read})")
            conn._ours.pop(rid, None)
            conn.answered[rid] = self.seq
            conn.finished.add(self.seq)
            tg.cancel_scope.cancel()  # callbacks still pending after the run ended are moot
            return self._envelope(msg)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _notified_span(msg: dict[str, Any], line: int) -> dict[str, Any]:
        """A ``span`` notification's span. Not an object: a protocol error, blamed on the message
        that carried it. A field of the wrong type inside it is the kernel's, judged by the checks
        that read it once merged into the RunResult (docs/adapter.md, "Wrong types")."""
        span = (msg.get("params") or {}).get("span")
        if not isinstance(span, dict):
            raise WireError(f"the kernel's `span` notification (line {line}) carries no span object: {type(span).__name__}")
        return span

    def _envelope(self, msg: dict[str, Any]) -> dict[str, Any]:
        if "error" in msg:
            err = msg.get("error") or {}
            raise AdapterErrored(f"the adapter program answered run with error {err.get('code')}: {err.get('message')}")
        env = msg.get("result")
        if not isinstance(env, dict):
            raise WireError("the answer to run has no result object")
        if env.get("seq") != self.seq:
            raise WireError(f"wrong seq: the answer to run carries seq {env.get('seq')!r}, expected {self.seq}")
        return env

    async def _work(self, worker: _Worker) -> None:
        """Serve the worker's callbacks until the run ends: between two it waits among the idle
        workers. A task per callback cost more than the callback's own work (anyio's task,
        handle, event and cancel scope, a done callback and its loop turn); a callback that
        blocks keeps its worker, and the next one gets another. A ``$/cancel`` cancels the
        worker's scope: the callback is answered "cancelled" and the worker takes a new scope."""
        before: list[dict[str, Any]] = []  # notifications to write just before the answer
        while True:
            with worker.scope:
                while not worker.scope.cancel_called:
                    msg = await worker.ready()
                    rid, method = msg["id"], msg["method"]
                    reply = await self._call(method, msg.get("params") or {}, rid, before)
                    self.serving.pop(rid, None)
                    worker.msg = None
                    await self.conn.send_many([*before, *self._clock(), {"jsonrpc": "2.0", "id": rid, **reply}], answers=method)
                    before = []
                    self._idle.append(worker)
            # The scope was cancelled: while serving a callback, or (its cancel came too late to
            # interrupt it) once it was served, the worker already idle again.
            msg, worker.msg = worker.msg, None
            worker.scope = anyio.CancelScope()
            if msg is not None:
                rid = msg["id"]
                self.serving.pop(rid, None)
                if rid in self.given_up:
                    reply = {"error": {"code": REQUEST_CANCELLED, "message": "request cancelled"}}
                    await self.conn.send_many([*before, *self._clock(), {"jsonrpc": "2.0", "id": rid, **reply}], answers=msg["method"])
                before = []
                self._idle.append(worker)

    def _clock(self) -> list[dict[str, Any]]:
        """A ``clock`` notification when the harness clock moved since the last one sent: written
        just before a response, so a kernel that times its spans with the harness clock
        (capability live_clock) reads, once a callback returned, a time at or after every event
        the harness observed during it (docs/protocol.md, Clock)."""
        now = getattr(self.doubles, "now", None)
        if now is None:
            return []
        t = now()
        if t == self._clock_sent:
            return []
        self._clock_sent = t
        return [{"jsonrpc": "2.0", "method": "clock", "params": {"seq": self.seq, "now": t}}]

    async def _call(self, method: str, p: dict[str, Any], rid: Any, before: list[dict[str, Any]]) -> dict[str, Any]:
        """The response (``result`` or ``error``) to one callback; ``before`` gets the
        notifications to write just before it."""
        d = self.doubles
        turn = p.get("turn") or {}
        try:
            if method == "model.complete":
                return await self._model(p.get("request") or {}, turn, rid, before)
            if method == "tool.invoke":
                return {"result": await d.invoke_tool(p.get("call") or {}, turn)}
            if method == "hook.dispatch":
                try:
                    out = await d.dispatch_hook(p.get("hook_id"), p.get("point"), p.get("payload"), turn)
                except HookRaised as exc:
                    out = {"kind": "raise", "message": str(exc)}
                return {"result": out}
            if method == "policy.precheck":
                return {"result": await d.policy_precheck(p.get("call") or {}, turn)}
            if method == "approver.ask":
                return {"result": await d.ask_approver(p.get("request") or {}, turn)}
            if method == "message.submit":
                submit = getattr(d, "submit_user_message", None)
                if submit is not None:
                    await submit(int(p.get("message", 0)))
                return {"result": {}}
        except ToolFailed as exc:
            return {"error": {"code": TOOL_FAILED, "message": str(exc)}}
        except Exception as exc:  # noqa: BLE001 - a double broke on what the kernel sent
            return {"error": {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}}
        return {"error": {"code": METHOD_NOT_FOUND, "message": f"unknown method {method!r}"}}

    async def _model(
        self, request: dict[str, Any], turn: dict[str, Any], rid: Any, before: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self._intern(request, turn)
        stream = self.doubles.model_stream(request, turn)
        index = getattr(self.doubles, "model_calls", 0) - 1
        one_by_one = index < 0 or index in self._blocking
        chunks: list[dict[str, Any]] = []
        ended = False  # the stream ran to its end or raised: closing it has nothing to wait for
        try:
            async for chunk in stream:
                chunks.append(chunk)
                note = {"jsonrpc": "2.0", "method": "model.chunk", "params": {"seq": self.seq, "request": rid, "chunk": chunk}}
                if one_by_one:
                    await self.conn.send_many([*self._clock(), note])
                else:
                    before.append(note)
            ended = True
        except ModelCallError as exc:
            ended = True
            return {"error": {"code": MODEL_ERROR, "message": str(exc),
                              "data": {"status": exc.status, "message": exc.message, "kind": exc.kind, "chunks": chunks}}}
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None and ended:
                await aclose()
            elif aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
        return {"result": {"chunks": chunks}}


class StdioAdapter:
    """An adapter whose kernel is a process speaking the stdio wire protocol."""

    def __init__(self, command: list[str], info: AdapterInfo, *, validating: bool | None = None) -> None:
        self.command = command
        self.info = info
        self.validating = validate.enabled() if validating is None else validating
        self._conn: Connection | None = None
        self._seq = 0
        self._finished: set[int] = set()
        #: Messages that belong to an earlier scenario (seq → what), for the harness to report there.
        self.strays: list[tuple[int, str]] = []
        #: Times the kernel process was lost (died, killed after a hang or garbage) and restarted.
        self.restarts = 0

    @property
    def seq(self) -> int:
        """The seq of the latest scenario run (the harness maps strays back to their scenario)."""
        return self._seq

    def pending_output(self) -> str | None:
        """Bytes the kernel wrote without a newline, writes to its stdin it did not take (for
        the hang diagnostic)."""
        conn = self._conn
        if conn is None or conn.stdout is None:
            return None
        return "; ".join(filter(None, (conn.pending(), conn.stdin_stalled()))) or None

    def take_strays(self) -> list[tuple[int, str]]:
        out, self.strays = self.strays, []
        conn = self._conn
        if conn is not None:
            out += conn.take_strays()
        return out

    async def _connection(self) -> Connection:
        conn = self._conn
        if conn is not None and (conn.token != loop_token() or not conn.alive()):
            if conn.token != loop_token():
                conn.abandon()
            else:
                with anyio.CancelScope(shield=True):
                    await conn.kill()
            conn = self._conn = None
        if conn is None:
            conn = Connection(self.command, self.validating)
            conn.finished = self._finished
            self._conn = conn
            await conn.open()
            try:
                info = await conn.handshake()
            except UsageError as exc:
                raise WireError(str(exc)) from None
            if info.profiles != self.info.profiles:
                raise WireError(f"the restarted kernel claims profiles {info.profiles}, the first one claimed {self.info.profiles}")
        return conn

    async def run(self, scenario: Scenario, doubles: Any) -> RunResult | dict[str, Any]:
        self._seq += 1
        run: _Run | None = None
        try:
            conn = await self._connection()
            run = _Run(conn, self._seq, scenario, doubles)
            env = await run.go()
        except BaseException as exc:
            # A crash, a hang (the runner's timeout cancelled us), garbage, a wrong seq: the
            # process is in an unknown state. Kill it now; the next scenario starts a fresh one.
            conn, self._conn = self._conn, None
            if conn is not None and isinstance(exc, Exception):
                try:
                    exc.lost_kernel = True  # type: ignore[attr-defined] - the circuit breaker counts it
                except AttributeError:
                    pass
            if conn is not None:
                self.restarts += 1
                self.strays += conn.take_strays()
                with anyio.CancelScope(shield=True):
                    await conn.kill()
            raise
        status = env.get("status")
        if status == "ok":
            result = env.get("result")
            if not isinstance(result, dict):
                raise WireError("the run envelope has status ok but no result object")
            if run.spans:
                known = {s.get("span_id") for s in result.get("spans") or [] if isinstance(s, dict)}
                result = dict(result, spans=list(result.get("spans") or []) + [s for s in run.spans if s.get("span_id") not in known])
            return result
        if status == "skipped":
            raise Unsupported(str(env.get("reason") or "the adapter program skipped this scenario"))
        if status == "errored":
            err = env.get("error") or {}
            context = err.get("context")
            raise AdapterErrored(
                f"{err.get('type', 'Error')}: {err.get('message', '')}" + (f"\n{context}" if context else "")
            )
        raise WireError(f"the run envelope has an unknown status {status!r}")

    async def aclose(self) -> None:
        """Send ``stop`` and wait for the process to exit (best effort)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with anyio.CancelScope(shield=True):
                if conn.token == loop_token():
                    await conn.stop()
                else:
                    conn.abandon()
            self.strays += conn.take_strays()


def _probe(command: list[str], validating: bool) -> AdapterInfo:
    """Start the process, ``start``, ``stop``, in a helper thread with its own event loop (the
    caller may be inside one)."""
    out: dict[str, Any] = {}

    async def main() -> None:
        conn = Connection(command, validating)
        await conn.open()
        try:
            out["info"] = await conn.handshake()
        finally:
            with anyio.CancelScope(shield=True):
                await conn.stop()

    def target() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=target, name="akc-stdio-probe", daemon=True)
    thread.start()
    thread.join(START_TIMEOUT_S + 10)
    if "info" in out:
        return out["info"]
    where = f"'stdio:{shlex.join(command)}'"
    exc = out.get("error")
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, UsageError):
        raise exc
    if isinstance(exc, TimeoutError):
        raise UsageError(f"adapter {where}: the kernel did not answer start within {START_TIMEOUT_S:g} s")
    if isinstance(exc, WireError):
        raise UsageError(f"adapter {where}: {exc}")
    raise UsageError(f"adapter {where}: the start handshake failed ({type(exc).__name__}: {exc})")


def load_stdio(rest: str) -> StdioAdapter:
    """``stdio:COMMAND ARGS…`` → a StdioAdapter (the ``stdio`` scheme's loader)."""
    try:
        command = shlex.split(rest)
    except ValueError as exc:
        raise UsageError(f"adapter 'stdio:{rest}': cannot parse the command line ({exc})") from None
    if not command:
        raise UsageError("adapter 'stdio:': no command after 'stdio:' (e.g. 'stdio:python -m reference_kernel.stdio')")
    if command[0] in ("python", "python3"):
        # Whatever 'python' is on PATH may not be this harness's interpreter.
        command[0] = sys.executable
    validating = validate.enabled()
    key = (*command, str(validating))
    info = _INFO_CACHE.get(key)
    if info is None:
        info = _INFO_CACHE[key] = _probe(command, validating)
    return StdioAdapter(command, info, validating=validating)
