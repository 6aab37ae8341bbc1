"""Run one scenario through an adapter, under a hard timeout, and say whose fault any trouble is.

``run_scenario`` is the async core. Synchronous callers (pytest-bdd steps never await) go through
:class:`PortalRunner`: one event loop in a daemon thread per pytest session, reached through an
anyio ``BlockingPortal``. The loop lives in a *daemon* thread (rather than
``start_blocking_portal``'s executor thread) so that a kernel that blocks the event loop forever
cannot keep the interpreter from exiting. A heartbeat task on the loop tells a busy loop from a
blocked one: when the scenario's time is up and the heartbeat has stopped, the kernel has blocked
the loop — the caller abandons that loop at once (it never waits on it again: a call into a blocked
portal waits as long as the block) and the next scenario gets a fresh one. If the loop still beats,
its own timeout fires; the caller waits a short grace for it, then abandons the loop anyway.

A timeout is the kernel's hang only if it stopped making progress: when the doubles saw it do
something for the scenario shortly before the time ran out (a model request, a chunk consumed, a
tool call, a hook dispatch, a journal write), the kernel is slow, not hung, and the scenario is
``incomplete`` ("raise with --timeout-scale"), never ``fail``. Chatter is not progress: a wire
message as such (a ``$/`` ping from a thread of a kernel deadlocked in its turn) counts for nothing.
"""

from __future__ import annotations

import concurrent.futures
import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal
from pydantic import BaseModel, ValidationError

from conformance.boundary.adapter import (
    MessageRecord,
    Outcome,
    RunResult,
    SessionRecord,
    Span,
    ToolCallRecord,
    TurnRecord,
    UsageEvent,
)
from conformance.harness.doubles import HarnessDoubles
from conformance.httpmodel.host import ModelHost
from conformance.errors import Unsupported, show
from conformance.boundary.scenario import Scenario

#: Extra seconds the synchronous backstop waits beyond the scenario's own timeout (loop still beating).
BACKSTOP_GRACE_S = 3.0
#: The loop's heartbeat period, and how long without a beat makes the loop "blocked".
HEARTBEAT_S = 0.05
BLOCKED_AFTER_S = 0.5
#: How long, after the kernel's run returned, the harness waits for model calls still open to
#: close before it reads the log (a dropped HTTP call is seen when its connection closes).
SETTLE_S = 2.0


def quiet_window(timeout_s: float) -> float:
    """A kernel with activity this recently before its timeout was still making progress."""
    return min(2.0, timeout_s / 4)


@dataclass
class ScenarioRun:
    """What happened when a scenario ran.

    Exactly one of these holds: ``result`` is set (the adapter returned a valid RunResult),
    ``timed_out`` (the kernel did not finish in time: a kernel failure), ``error`` is set (the
    adapter raised or returned something malformed: a harness error) or ``unsupported`` is set
    (the adapter cannot express the scenario: incomplete).
    """

    scenario: Scenario = field(repr=False)
    result: RunResult | None = field(default=None, repr=False)
    log: list[dict[str, Any]] = field(default_factory=list, repr=False)
    error: str | None = None
    timed_out: bool = False
    unsupported: str | None = None
    diagnostic: str | None = None
    #: The kernel process died or had to be killed (stdio), or the loop was lost: counts for the
    #: circuit breaker like a hang.
    lost_kernel: bool = False
    duration_s: float = 0.0
    #: The real time (``time.time()``) when the adapter was called and when it returned: the
    #: window in which a kernel reading the real clock made its ids (IDENT-005).
    wall_window: tuple[float, float] = (0.0, 0.0)
    doubles: HarnessDoubles | None = field(default=None, repr=False)
    #: Fields of records the kernel produced with a wrong type or missing ("journal.tool_calls[0]
    #: .approval: ..."): a check that reads one fails (docs/adapter.md, "Wrong types").
    malformed: list[str] = field(default_factory=list)
    #: What the doubles still had in flight when the time ran out (a hang's model call, say),
    #: taken before the cancellation unwound it: a check blocked by that hang reads it.
    in_flight_at_timeout: list[str] = field(default_factory=list)
    #: The model calls still open when the kernel's run had returned and SETTLE_S had passed:
    #: calls the kernel never dropped (a check after a cancel is blocked by STOP-002 on them).
    in_flight_at_end: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.timed_out and self.error is None


def _describe_event(e: dict[str, Any]) -> str:
    kind = e["kind"]
    if kind == "hook":
        return f"hook {e['hook_id']} at {e['point']}"
    if kind in ("tool_start", "tool_end"):
        name = str(e["name"])
        return f"{kind} {e['call_id']} ({name if len(name) <= 80 else name[:79] + '…'})"
    if kind in ("model_request", "model_response", "script_exhausted", "model_error"):
        return f"{kind} #{e['index']}"
    return kind


def hang_diagnostic(scenario: Scenario, doubles: HarnessDoubles, limit_s: float, adapter: Any = None) -> str:
    """One paragraph: in-flight calls, output the kernel left unfinished, the last events."""
    flying = doubles.in_flight()
    pending = None
    try:
        pending = adapter.pending_output() if hasattr(adapter, "pending_output") else None
    except Exception:  # noqa: BLE001 - a diagnostic must never break the run
        pending = None
    if pending:
        flying = [*flying, pending]
    last = [_describe_event(e) for e in doubles.log.events[-5:]]
    return (
        f"the kernel did not finish scenario {scenario.name!r} within {limit_s:g} s; "
        f"in flight: {', '.join(flying) if flying else 'nothing the harness can see'}; "
        f"last events: {', '.join(last) if last else 'none'}"
    )


def _validation_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
    return f"field {loc}: {err.get('msg')}"


#: Where a RunResult holds records the kernel itself produced (001's journal records, outcomes,
#: usage events, spans), by location, with their model. A value of the wrong type in a field of
#: one (an approval stored as a boolean) is the kernel's, not the adapter's (docs/adapter.md,
#: "Wrong types").
KERNEL_RECORDS: dict[tuple[str, ...], type[BaseModel]] = {
    ("journal", "sessions"): SessionRecord,
    ("journal", "turns"): TurnRecord,
    ("journal", "messages"): MessageRecord,
    ("journal", "tool_calls"): ToolCallRecord,
    ("journal", "usage"): UsageEvent,
    ("outcomes",): Outcome,
    ("usage",): UsageEvent,
    ("spans",): Span,
}


#: Fields of those records that are the adapter's bookkeeping, not the kernel's values: an
#: outcome's ``message`` says which user message it answers.
ADAPTER_FIELDS: dict[tuple[str, ...], frozenset[str]] = {("outcomes",): frozenset({"message"})}


def _kernel_record(loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], type[BaseModel]] | None:
    """The kernel record an error lies *in a field of* (its location and model), if any."""
    for where, model in KERNEL_RECORDS.items():
        n = len(where)
        if tuple(loc[:n]) == where and len(loc) > n + 1 and isinstance(loc[n], int):
            if loc[n + 1] in ADAPTER_FIELDS.get(where, ()):
                return None
            return tuple(loc[: n + 1]), model
    return None


def _show_path(loc: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def lenient_result(raw: Any) -> tuple[RunResult, list[str]]:
    """The adapter's return value as a RunResult, and what in it the kernel produced with a wrong
    type or without a field the seeds define ("journal.tool_calls[0].approval: ..."). Such a
    record is kept as the kernel made it (unvalidated), so the check that reads the field fails on
    it and no other check is affected. ValueError naming the bad field when the adapter's own
    wrapping is malformed (a list that is not a list, a record that is not an object)."""
    data = _result_data(raw)
    try:
        return RunResult.model_validate(data), []
    except ValidationError as exc:
        errors = exc.errors()
    records: dict[tuple[Any, ...], type[BaseModel]] = {}
    malformed = []
    for err in errors:
        found = _kernel_record(tuple(err.get("loc", ())))
        if found is None:
            raise ValueError(f"adapter.run returned a malformed RunResult ({_validation_message_of(err)})") from None
        records[found[0]] = found[1]
        shown = f"{_show_path(tuple(err['loc']))}: {err.get('msg')}"
        malformed.append(shown if err.get("type") == "missing" else f"{shown} (the kernel produced {err.get('input')!r})")
    data = copy.deepcopy(data)
    for where, model in records.items():
        parent = data
        for part in where[:-1]:
            parent = parent[part]
        parent[where[-1]] = model.model_construct(**parent[where[-1]])
    try:
        return RunResult.model_validate(data), malformed
    except ValidationError as exc:
        raise ValueError(f"adapter.run returned a malformed RunResult ({_validation_message(exc)})") from None


def _validation_message_of(err: Any) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
    return f"field {loc}: {err.get('msg')}"


def _result_data(raw: Any) -> Any:
    if isinstance(raw, RunResult):
        return raw.model_dump()
    if isinstance(raw, BaseModel):
        return raw.model_dump()
    if isinstance(raw, dict):
        return raw
    raise ValueError(f"adapter.run returned {type(raw).__name__}, not a RunResult")


def _timed_out(run: ScenarioRun, snapshot: dict[str, str]) -> None:
    if "slow" in snapshot:
        run.unsupported = snapshot["slow"]
    elif "diagnostic" in snapshot:
        run.timed_out = True
        run.diagnostic = snapshot["diagnostic"]


def _unwrap(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def slow_message(scenario: Scenario, limit_s: float, doubles: HarnessDoubles) -> str | None:
    """If the kernel was still making progress when its time ran out: why the scenario is
    incomplete (too slow, not hung). None: it had stopped — a hang."""
    last = getattr(doubles, "last_activity", None)
    if last is None or time.monotonic() - last > quiet_window(limit_s):
        return None
    return (
        f"too slow to finish scenario {scenario.name!r} in {limit_s:g} s (the kernel was still making progress: "
        f"{len(doubles.log.events)} events, the last {time.monotonic() - last:.2f} s before the timeout); "
        "raise with --timeout-scale"
    )


def _base_exception_message(exc: BaseException) -> str:
    what = f"{type(exc).__name__}({exc})" if str(exc) else type(exc).__name__
    return (
        f"the adapter raised {what}, which would have ended the harness's event loop "
        "(an adapter must not raise SystemExit or KeyboardInterrupt)"
    )


async def run_scenario(
    adapter: Any, scenario: Scenario, *, doubles: HarnessDoubles | None = None, host: ModelHost | None = None
) -> ScenarioRun:
    """Run ``scenario`` through ``adapter`` under its hard timeout (read before the adapter runs:
    an adapter that changes the scenario it is given is reported, and cannot extend its time).
    The scenario's model is served over HTTP by ``host`` (the event loop's; without one, a host
    serves this scenario alone) as ``doubles.http_model``."""
    doubles = doubles or HarnessDoubles(scenario)
    run = ScenarioRun(scenario=scenario, doubles=doubles)
    run.log = doubles.log.events
    limit_s = float(scenario.timeout_s)
    before = scenario.model_dump()
    started = time.perf_counter()
    wall_start = time.time()
    raw: Any = None
    # A watchdog task snapshots what is in flight *before* the cancellation unwinds it.
    snapshot: dict[str, str] = {}

    async def watchdog(scope: anyio.CancelScope) -> None:
        await anyio.sleep(limit_s)
        slow = slow_message(scenario, limit_s, doubles)
        snapshot["slow" if slow else "diagnostic"] = slow or hang_diagnostic(scenario, doubles, limit_s, adapter)
        run.in_flight_at_timeout = doubles.in_flight()
        scope.cancel()

    served = None
    try:
        async with anyio.create_task_group() as tg:
            if host is None:
                host = await tg.start(ModelHost().serve)
            served = host.open(doubles)
            tg.start_soon(watchdog, tg.cancel_scope)
            raw = await adapter.run(scenario, doubles)
            run.in_flight_at_end = await doubles.settle_model_calls(min(SETTLE_S, max(0.0, limit_s - (time.perf_counter() - started))))
            tg.cancel_scope.cancel()
        _timed_out(run, snapshot)
    except anyio.get_cancelled_exc_class():
        raise  # the harness itself is cancelling (its loop is stopping): not the adapter's doing
    except BaseException as exc:  # noqa: BLE001 - the adapter's breakage is reported, not raised
        inner = _unwrap(exc)
        if isinstance(inner, anyio.get_cancelled_exc_class()) and not snapshot:
            raise
        if snapshot:
            _timed_out(run, snapshot)
        elif isinstance(inner, Unsupported):
            run.unsupported = str(inner) or "the adapter cannot express this scenario"
        elif isinstance(inner, TimeoutError):
            run.timed_out = True
            run.diagnostic = hang_diagnostic(scenario, doubles, limit_s)
        elif isinstance(inner, (SystemExit, KeyboardInterrupt, GeneratorExit)) or not isinstance(inner, Exception):
            run.error = _base_exception_message(inner)
        else:
            run.error = f"the adapter raised {type(inner).__name__}: {inner}"
            if getattr(inner, "lost_kernel", False):
                run.lost_kernel = True
    finally:
        run.duration_s = time.perf_counter() - started
        run.wall_window = (wall_start, time.time())
        if served is not None and host is not None:
            host.close(served)
    try:
        changed = sorted(k for k, v in scenario.model_dump().items() if before.get(k) != v)
    except Exception:  # noqa: BLE001 - the adapter broke the scenario object itself
        changed = ["(the object no longer dumps)"]
    if changed and run.error is None:
        run.error = (
            f"the adapter changed the scenario it was given (field{'s' if len(changed) > 1 else ''} {', '.join(changed)}): "
            f"a mutated scenario is not the one the check describes (the harness kept its timeout of {limit_s:g} s)"
        )
    if not (run.timed_out or run.error or run.unsupported):
        try:
            run.result, run.malformed = lenient_result(raw)
        except ValueError as exc:
            run.error = str(exc)
    missing = doubles.log.of("cancel_missing")
    if missing and run.error is None and not run.timed_out:
        m = missing[0]
        run.error = (
            f"the adapter registered no canceller for user message {m['message']} "
            f"(cancel point {show(m['where'])})"
        )
    return run


class PortalRunner:
    """One event loop (asyncio or trio) in a daemon thread, driven through a BlockingPortal."""

    def __init__(self, backend: str = "asyncio", timeout_cap_s: float | None = None, *, timeout_scale: float = 1.0) -> None:
        self.backend = backend
        #: If set, no scenario gets more than this many seconds (keeps tests of hung kernels fast).
        self.timeout_cap_s = timeout_cap_s
        #: Every scenario's timeout is multiplied by this (``--timeout-scale``: slow machines).
        self.timeout_scale = timeout_scale
        #: Extra seconds the backstop waits on a loop that still beats, beyond the scenario's timeout
        #: (a capped run caps it too: the self-test's mutants that ignore cancellation would
        #: otherwise pay the whole grace in every run of every such scenario).
        self.grace_s = BACKSTOP_GRACE_S if timeout_cap_s is None else min(BACKSTOP_GRACE_S, timeout_cap_s)
        self._portal: BlockingPortal | None = None
        #: The current loop's served model (every scenario's model double over HTTP).
        self.host: ModelHost | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        #: The current loop's last heartbeat (time.monotonic) and the flag that stops it.
        self._beat = [time.monotonic()]
        self._quit = threading.Event()
        #: Set once a kernel blocked the event loop (the loop was abandoned and replaced).
        self.hung = False

    def start(self) -> PortalRunner:
        if self._thread is not None:
            return self
        self._beat, self._quit = [time.monotonic()], threading.Event()
        self._thread = threading.Thread(target=self._main, args=(self._beat, self._quit), name="akc-portal", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._portal is None:
            raise RuntimeError(f"could not start the {self.backend} event loop: {self._failure!r}")
        return self

    def _main(self, beat: list[float], quit_: threading.Event) -> None:
        async def heartbeat(portal: BlockingPortal) -> None:
            while not quit_.is_set():
                beat[0] = time.monotonic()
                await anyio.sleep(HEARTBEAT_S)
            await portal.stop(cancel_remaining=True)  # abandoned: end this loop once it is free

        async def main() -> None:
            async with BlockingPortal() as portal, anyio.create_task_group() as tg:
                tg.start_soon(heartbeat, portal)
                self.host = await tg.start(ModelHost().serve)
                self._portal = portal
                self._ready.set()
                await portal.sleep_until_stopped()
                tg.cancel_scope.cancel()

        try:
            anyio.run(main, backend=self.backend)
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._failure = exc
            self._ready.set()

    @property
    def portal(self) -> BlockingPortal:
        if self._portal is None:
            self.start()
        assert self._portal is not None
        return self._portal

    def blocked_for(self) -> float:
        """Seconds since the loop last beat (about 0 while it runs freely)."""
        return time.monotonic() - self._beat[0]

    def call(self, func: Any, *args: Any, timeout: float) -> Any:
        """Run ``await func(*args)`` on the loop; ``TimeoutError`` if it takes over ``timeout``."""
        future = self.portal.start_task_soon(func, *args)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    def scenario_for(self, scenario: Scenario) -> Scenario:
        """The scenario with its timeout scaled and capped (the adapter gets this copy)."""
        timeout = scenario.timeout_s * self.timeout_scale
        if self.timeout_cap_s is not None:
            timeout = min(timeout, self.timeout_cap_s)
        if timeout != scenario.timeout_s:
            scenario = scenario.model_copy(update={"timeout_s": timeout})
        return scenario

    def run(self, adapter: Any, scenario: Scenario, *, rendezvous_timeout_s: float | None = None) -> ScenarioRun:
        """Run a scenario synchronously; a kernel that blocks the loop is reported as hung at the
        scenario's timeout. ``rendezvous_timeout_s`` shortens the doubles' rendezvous and
        finish-order waits (for checks where a wait that times out is tolerated)."""
        scenario = self.scenario_for(scenario)
        limit_s = float(scenario.timeout_s)
        doubles = HarnessDoubles(scenario, rendezvous_timeout_s=rendezvous_timeout_s)
        try:
            future = self.portal.start_task_soon(_run_with, adapter, scenario, doubles, self.host)
        except RuntimeError as exc:  # the loop died under a previous scenario
            self._abandon()
            run = ScenarioRun(scenario=scenario, doubles=doubles, log=doubles.log.events, lost_kernel=True)
            run.error = f"the harness's event loop had stopped ({exc}); it was restarted"
            return run
        deadline = time.monotonic() + limit_s
        try:
            # Wait for the scenario's own timeout; then a blocked loop is abandoned at once, a
            # beating one gets a short grace to let its own watchdog end the scenario.
            return future.result(timeout=limit_s + 0.05)
        except concurrent.futures.TimeoutError:
            pass
        while True:
            blocked = self.blocked_for()
            if blocked >= BLOCKED_AFTER_S or time.monotonic() > deadline + self.grace_s:
                break
            try:
                return future.result(timeout=min(BLOCKED_AFTER_S, 0.1 + max(0.0, deadline + self.grace_s - time.monotonic())))
            except concurrent.futures.TimeoutError:
                continue
        blocked = self.blocked_for()
        self._abandon()
        run = ScenarioRun(
            scenario=scenario, timed_out=True, doubles=doubles, log=doubles.log.events, in_flight_at_timeout=doubles.in_flight()
        )
        if blocked >= BLOCKED_AFTER_S:
            run.diagnostic = (
                hang_diagnostic(scenario, doubles, limit_s)
                + f"; the kernel blocked the event loop: no heartbeat for {blocked:.1f} s (it was still blocked"
                " when the harness gave up on it at the scenario's timeout)"
            )
        else:
            run.diagnostic = (
                hang_diagnostic(scenario, doubles, limit_s)
                + f" (nor in the {self.grace_s:g} s grace after it: the scenario ignored cancellation)"
            )
        return run

    def _abandon(self) -> None:
        """The loop is blocked (or dead): leave its daemon thread behind without ever waiting on
        it (its heartbeat stops the loop whenever it wakes up) and let the next scenario start a
        fresh loop."""
        self.hung = True
        self._quit.set()
        self._portal, self._thread, self._ready = None, None, threading.Event()

    def stop(self) -> None:
        """Stop the loop, cancelling what still runs (``portal.stop(cancel_remaining=True)``)."""
        if self._portal is None:
            return
        portal, self._portal = self._portal, None
        if self.blocked_for() < BLOCKED_AFTER_S:
            try:
                portal.start_task_soon(portal.stop, True).result(timeout=5)
            except Exception:  # noqa: BLE001 - best effort on teardown
                pass
        self._quit.set()
        if self._thread is not None and self.blocked_for() < BLOCKED_AFTER_S:
            self._thread.join(timeout=5)


async def _run_with(adapter: Any, scenario: Scenario, doubles: HarnessDoubles, host: ModelHost | None) -> ScenarioRun:
    return await run_scenario(adapter, scenario, doubles=doubles, host=host)


def run_sync(adapter: Any, scenario: Scenario, backend: str = "asyncio") -> ScenarioRun:
    """Run one scenario on a fresh event loop (for scripts and tests outside pytest)."""
    runner = PortalRunner(backend).start()
    try:
        return runner.run(adapter, scenario)
    finally:
        runner.stop()
