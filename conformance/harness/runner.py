"""Run one scenario through an adapter, under a hard timeout, and say whose fault any trouble is.

``run_scenario`` is the async core. Synchronous callers (pytest-bdd steps never await) go through
:class:`PortalRunner`: one event loop in a daemon thread per pytest session, reached through an
anyio ``BlockingPortal``. The loop lives in a *daemon* thread (rather than
``start_blocking_portal``'s executor thread) so that a kernel that blocks the event loop forever
cannot keep the interpreter from exiting; as a backstop the caller waits on the portal future with
a timeout a little longer than the scenario's and reports a hang.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal
from pydantic import BaseModel, ValidationError

from conformance.boundary.adapter import RunResult
from conformance.harness.doubles import HarnessDoubles
from conformance.errors import Unsupported, show
from conformance.boundary.scenario import Scenario

#: Extra seconds the synchronous backstop waits beyond the scenario's own timeout.
BACKSTOP_GRACE_S = 3.0


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
    duration_s: float = 0.0
    doubles: HarnessDoubles | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.timed_out and self.error is None


def _describe_event(e: dict[str, Any]) -> str:
    kind = e["kind"]
    if kind == "hook":
        return f"hook {e['hook_id']} at {e['point']}"
    if kind in ("tool_start", "tool_end"):
        return f"{kind} {e['call_id']} ({e['name']})"
    if kind in ("model_request", "model_response", "script_exhausted", "model_error"):
        return f"{kind} #{e['index']}"
    return kind


def hang_diagnostic(scenario: Scenario, doubles: HarnessDoubles, limit_s: float) -> str:
    """One paragraph: in-flight calls and the last events before the hang."""
    flying = doubles.in_flight()
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


def validate_result(raw: Any) -> RunResult:
    """The adapter's return value as a RunResult; raises ValueError naming the bad field."""
    if isinstance(raw, RunResult):
        data: Any = raw.model_dump()
    elif isinstance(raw, BaseModel):
        data = raw.model_dump()
    elif isinstance(raw, dict):
        data = raw
    else:
        raise ValueError(f"adapter.run returned {type(raw).__name__}, not a RunResult")
    try:
        return RunResult.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"adapter.run returned a malformed RunResult ({_validation_message(exc)})") from None


def _unwrap(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def run_scenario(adapter: Any, scenario: Scenario, *, doubles: HarnessDoubles | None = None) -> ScenarioRun:
    """Run ``scenario`` through ``adapter`` under ``anyio.fail_after(scenario.timeout_s)``."""
    doubles = doubles or HarnessDoubles(scenario)
    run = ScenarioRun(scenario=scenario, doubles=doubles)
    run.log = doubles.log.events
    started = time.perf_counter()
    raw: Any = None
    # A watchdog task snapshots what is in flight *before* the cancellation unwinds it.
    snapshot: dict[str, str] = {}

    async def watchdog(scope: anyio.CancelScope) -> None:
        await anyio.sleep(scenario.timeout_s)
        snapshot["diagnostic"] = hang_diagnostic(scenario, doubles, scenario.timeout_s)
        scope.cancel()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watchdog, tg.cancel_scope)
            raw = await adapter.run(scenario, doubles)
            tg.cancel_scope.cancel()
        if "diagnostic" in snapshot:
            run.timed_out = True
            run.diagnostic = snapshot["diagnostic"]
    except Exception as exc:  # noqa: BLE001 - the adapter's breakage is reported, not raised
        inner = _unwrap(exc)
        if "diagnostic" in snapshot:
            run.timed_out = True
            run.diagnostic = snapshot["diagnostic"]
        elif isinstance(inner, Unsupported):
            run.unsupported = str(inner) or "the adapter cannot express this scenario"
        elif isinstance(inner, TimeoutError):
            run.timed_out = True
            run.diagnostic = hang_diagnostic(scenario, doubles, scenario.timeout_s)
        else:
            run.error = f"the adapter raised {type(inner).__name__}: {inner}"
    finally:
        run.duration_s = time.perf_counter() - started
    if not (run.timed_out or run.error or run.unsupported):
        try:
            run.result = validate_result(raw)
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

    def __init__(self, backend: str = "asyncio", timeout_cap_s: float | None = None) -> None:
        self.backend = backend
        #: If set, no scenario gets more than this many seconds (keeps tests of hung kernels fast).
        self.timeout_cap_s = timeout_cap_s
        #: Extra seconds the backstop waits on the portal beyond the scenario's own timeout.
        self.grace_s = BACKSTOP_GRACE_S
        self._portal: BlockingPortal | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        #: Set once a kernel blocked the event loop (the loop was abandoned and replaced).
        self.hung = False

    def start(self) -> PortalRunner:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._main, name="akc-portal", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._portal is None:
            raise RuntimeError(f"could not start the {self.backend} event loop: {self._failure!r}")
        return self

    def _main(self) -> None:
        async def main() -> None:
            async with BlockingPortal() as portal:
                self._portal = portal
                self._ready.set()
                await portal.sleep_until_stopped()

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

    def call(self, func: Any, *args: Any, timeout: float) -> Any:
        """Run ``await func(*args)`` on the loop; ``TimeoutError`` if it takes over ``timeout``."""
        future = self.portal.start_task_soon(func, *args)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    def run(self, adapter: Any, scenario: Scenario, *, rendezvous_timeout_s: float | None = None) -> ScenarioRun:
        """Run a scenario synchronously; a kernel that blocks the loop is reported as hung.
        ``rendezvous_timeout_s`` shortens the doubles' rendezvous and finish-order waits (for
        checks where a wait that times out is tolerated)."""
        if self.timeout_cap_s is not None and scenario.timeout_s > self.timeout_cap_s:
            scenario = scenario.model_copy(update={"timeout_s": self.timeout_cap_s})
        doubles = HarnessDoubles(scenario, rendezvous_timeout_s=rendezvous_timeout_s)
        limit = scenario.timeout_s + self.grace_s
        try:
            return self.call(_run_with, adapter, scenario, doubles, timeout=limit)
        except TimeoutError:
            self._abandon()
            run = ScenarioRun(scenario=scenario, timed_out=True, doubles=doubles, log=doubles.log.events)
            run.diagnostic = (
                hang_diagnostic(scenario, doubles, limit)
                + " (the kernel blocked the event loop: the scenario's own timeout could not fire)"
            )
            return run

    def _abandon(self) -> None:
        """The loop is blocked by the kernel: leave its daemon thread behind (asking it to stop
        whenever it wakes up) and let the next scenario start a fresh loop."""
        self.hung = True
        portal = self._portal
        self._portal, self._thread, self._ready = None, None, threading.Event()
        if portal is not None:
            try:
                portal.start_task_soon(portal.stop, True)
            except Exception:  # noqa: BLE001 - best effort
                pass

    def stop(self) -> None:
        """Stop the loop, cancelling what still runs (``portal.stop(cancel_remaining=True)``)."""
        if self._portal is None:
            return
        portal, self._portal = self._portal, None
        try:
            portal.start_task_soon(portal.stop, True).result(timeout=5)
        except Exception:  # noqa: BLE001 - best effort on teardown
            pass
        if self._thread is not None:
            self._thread.join(timeout=5)


async def _run_with(adapter: Any, scenario: Scenario, doubles: HarnessDoubles) -> ScenarioRun:
    return await run_scenario(adapter, scenario, doubles=doubles)


def run_sync(adapter: Any, scenario: Scenario, backend: str = "asyncio") -> ScenarioRun:
    """Run one scenario on a fresh event loop (for scripts and tests outside pytest)."""
    runner = PortalRunner(backend).start()
    try:
        return runner.run(adapter, scenario)
    finally:
        runner.stop()
