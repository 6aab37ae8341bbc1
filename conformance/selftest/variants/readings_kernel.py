"""Legal variants of the kernel profile's open points (``akc readings``), one per alternative the
reference kernel does not take. Each must pass the full suite.

Ported from the blind round (written from the seeds alone, without the features); the names are
the blind ones. Each docstring names the reading, the seed words that leave it open, the
reference kernel's choice and this variant's.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any

import anyio

from conformance.boundary.adapter import Doubles, RunResult
from conformance.boundary.scenario import Scenario
from conformance.selftest.registry import variant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.cancel import Cancelled
from reference_kernel.concurrency import concurrency_key
from reference_kernel.config import current_call
from reference_kernel.kernel import Call, Kernel, _normalise_output

#: 003's plain hook chains (steps 1-2 and 5-7): their order is the adapter contract's.
_CHAIN_POINTS = ("context-assemble", "pre-model-call", "post-model-response", "pre-tool-call")
_KIND_RANK = {"data_source": 0, "interactive": 1, "resource": 2}


def _rank(c: Call) -> int:
    return _KIND_RANK.get(c.entry.spec.kind, 3) if c.entry is not None else 3


class _ScenarioMapping(ReferenceAdapter):
    """A kernel that takes some part of the configuration in differently (``transform``)."""

    def transform(self, scenario: Scenario) -> Scenario:  # pragma: no cover - overridden
        return scenario

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        return await super().run(self.transform(scenario.model_copy(deep=True)), doubles)


@variant()
class SessionStartOncePerSession(Kernel):
    """Reading session-start-frequency, alternative per-session: session-start once per session.

    003: "session-start fires once before the first RunTurn"; what a session is lives in a README
    we do not have. Reference: once per session run (every user message). Variant: only the first
    run of a session dispatches it; session-end is unchanged (once per run)."""

    async def _session_start(self, run: Any) -> None:
        started = self.__dict__.setdefault("_started_sessions", set())
        if run.turn.session_id in started:
            return
        started.add(run.turn.session_id)
        await super()._session_start(run)


@variant()
class ResultsGroupedByKind(Kernel):
    """Reading kernel-result-order, alternative grouped-by-kind.

    003 step 15: history ++ message ++ tool_result_blocks(results_ds, results_int, results_r).
    Reference: results in the order the model asked. Variant: data-source results, then
    interactive, then resource, each group in call order."""

    def _order_results(self, calls: list[Call]) -> list[Call]:
        return sorted(calls, key=_rank)


@variant(profile="kernel")
class InteractiveConcurrencyIgnored(_ScenarioMapping):
    """Reading interactive-concurrency-spec, alternative ignore.

    003: interactive calls run sequentially "regardless of any declared ConcurrencySpec", and one
    "MUST NOT even be declared" — a rule for the declarer. Reference: the tool is refused.
    Variant: the declaration is dropped; interactive calls still run one at a time."""

    def transform(self, scenario: Scenario) -> Scenario:
        for t in scenario.tools:
            if t.kind == "interactive":
                t.concurrency = None
        return scenario


@variant()
class VetoTextNeutral(Kernel):
    """Reading veto-result, alternative any-text.

    003: plan-ready is a "veto chain" and step 12 applies "approved items"; the vetoed item's
    result is in plan-apply-gate.md, which we do not have. Reference: "Vetoed: <reason>" (error).
    Variant: "Not applied: <reason>" (error; the word "veto" absent)."""

    async def _apply_plan(self, run: Any, plan: dict[str, Any], resources: list[Call]) -> None:
        items = {i.get("call_id"): i for i in plan.get("items", []) if isinstance(i, dict)}
        approved = []
        for c in resources:
            item = items.get(c.id)
            if item is None:
                c.fail("Not applied: removed from the plan")
            elif item.get("vetoed"):
                c.fail(f"Not applied: {item.get('reason') or 'rejected'}")
            else:
                approved.append(c)
        await self._run_keyed(run, approved)


@variant()
class PolicyDenialNoReason(Kernel):
    """Reading precheck-denial-result, alternative any-text.

    003: data-source and interactive calls "run a lightweight policy precheck before executing";
    what a denied call's result says is in plan-apply-gate.md. Reference: "Denied by policy:
    <reason>". Variant: "This call was not allowed by policy." (the reason is not echoed)."""

    async def _policy_precheck(self, run: Any, calls: list[Call]) -> list[Call]:
        if self.policy is None:
            return calls
        allowed = []
        for c in calls:
            ok, _reason = await self.policy({"id": c.id, "name": c.name, "args": c.args}, run.turn)
            if ok:
                allowed.append(c)
            else:
                c.fail("This call was not allowed by policy.")
        return allowed


@variant()
class InteractiveReverseOrder(Kernel):
    """Reading sequential-order, alternative other-order (kernel profile, step 9b).

    003 step 9b: execute_sequentially(interactive_calls), no order given (results still go back
    in the order asked). Reference: declaration order. Variant: prechecked in declaration order,
    then run one at a time in reverse order."""

    async def _execute_interactive(self, run: Any, calls: list[Call]) -> None:
        if not calls:
            return
        for c in reversed(await self._policy_precheck(run, calls)):
            with run.token.scope():
                await self._execute(c, run, run.turn_span)
            run.token.check()


class _ReversedOutsideChains:
    """A hook registry whose points outside 003's plain chains run their hooks last-registered first."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def at(self, point: str) -> list[Any]:
        hooks = list(self._inner.at(point))
        return hooks if point in _CHAIN_POINTS else hooks[::-1]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@variant()
class HooksReversedOutsideChains(Kernel):
    """Reading hook-order-outside-chains, alternative any-order-elsewhere.

    003: "Steps 1-2 and 5-7 are plain hook chains (see hook-dispatch.md)"; the order of several
    hooks at plan-ready, post-tool-call, post-apply, session-start and session-end is in that
    missing document. Reference: registration order everywhere. Variant: registration order at the
    plain chains, the most recently registered hook first at the other points."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hooks = _ReversedOutsideChains(self.hooks)


class _DoomDefault(_ScenarioMapping):
    threshold = 3

    def transform(self, scenario: Scenario) -> Scenario:
        if scenario.doom_loop.threshold is None:
            scenario.doom_loop.threshold = self.threshold
        return scenario


@variant(profile="kernel")
class DoomThreshold_4(_DoomDefault):  # noqa: N801 - the registry names it doom_threshold_4
    """Reading doom-loop-threshold, alternative four: the default threshold is 4.

    003: threshold "MUST default in [3,5]". Reference: 3. Variant: 4 (the window still defaults
    to the threshold)."""

    threshold = 4


_step_span: contextvars.ContextVar[str | None] = contextvars.ContextVar("step_span", default=None)


@variant()
class SpanPerStep(Kernel):
    """Reading span-granularity, alternative per-step.

    003: "MUST emit a span ... for tool execution (steps 9/9b/12)". Reference: one tool span per
    call. Variant: one tool span per step (9, 9b, 12) that runs anything, the call ids as an
    attribute; no per-call spans."""

    async def _run_keyed(self, run: Any, calls: list[Call]) -> None:
        if not calls:
            return
        await self._in_step_span(run, "tool_execution", calls, super()._run_keyed(run, calls))

    async def _execute_interactive(self, run: Any, calls: list[Call]) -> None:
        if not calls:
            return
        await self._in_step_span(run, "interactive_execution", calls, super()._execute_interactive(run, calls))

    async def _in_step_span(self, run: Any, name: str, calls: list[Call], coro: Any) -> None:
        span = self.spans.start(name, "tool", run.turn_span, {"call_ids": [c.id for c in calls]})
        reset = _step_span.set(span)
        try:
            await coro
        finally:
            _step_span.reset(reset)
            self.spans.end(span)

    async def _execute(self, c: Call, ctx: Any, parent_span: str | None) -> None:
        assert c.entry is not None
        if ctx.token.cancelled:
            c.fail("Cancelled before it started")
            return
        span = _step_span.get() or parent_span
        started = time.perf_counter()
        try:
            if c.entry.spec.delegate is not None:
                c.content, c.is_error = await self._delegate(c, ctx, span)  # type: ignore[arg-type]
            else:
                assert c.entry.fn is not None
                reset = current_call.set({"id": c.id, "name": c.name, "args": c.args})
                try:
                    c.content, c.is_error = _normalise_output(await c.entry.fn(c.args, ctx.turn))
                finally:
                    current_call.reset(reset)
        except Exception as exc:
            c.fail(str(exc) or type(exc).__name__)
        finally:
            c.duration_ms = (time.perf_counter() - started) * 1000.0


@variant()
class UndeclaredDataSourceSafe(Kernel):
    """Reading undeclared-data-source, alternative data-source-safe.

    003: "a provider-wide lock token when safe: false or undeclared", but also data-source
    operations "SHOULD declare safe: true ... so concurrent by default" and "resource operations
    default to safe: false when undeclared". Reference: undeclared means safe: false for every
    kind. Variant: an undeclared data-source operation gets a key per call; resources unchanged."""

    def _tool_key(self, c: Call) -> Any:
        spec = c.entry.spec  # type: ignore[union-attr]
        if spec.concurrency is None and spec.kind == "data_source":
            return concurrency_key(spec.provider, spec.name, spec.kind, None, c.args, c.id)
        return super()._tool_key(c)


# =========================================================================== interruption-notice


class _InterruptionNotice:
    """Mixin: when a model call is cancelled, store a notice of the kernel's own (as hermes-agent
    and strands-agents do), holding nothing the model streamed."""

    NOTICE = "Operation interrupted: waiting for model response."

    async def _call_model(self, turn: Any, request: Any, token: Any, parent_span: Any, ledger_key: Any) -> Any:
        try:
            return await super()._call_model(turn, request, token, parent_span, ledger_key)  # type: ignore[misc]
        except Cancelled:
            with anyio.CancelScope(shield=True):
                await self.journal.append_message(turn, {"role": "assistant", "text": self.NOTICE})  # type: ignore[attr-defined]
            raise


@variant()
class InterruptionNotice(_InterruptionNotice, Kernel):
    """Reading interruption-notice, alternative kernel-notice. Seed 000: "Nothing partial is saved
    from a cancelled model call." Reference: nothing at all is stored for the cancelled call.
    Variant: the kernel stores an assistant message of its own saying the call was interrupted;
    nothing of the model's stream is in it."""
