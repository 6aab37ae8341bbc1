"""Kernel profile (003): the gate (GATE), instrumentation (SPAN) and concurrency keys (CONC)."""
from __future__ import annotations

from reference_kernel.concurrency import concurrency_key
from reference_kernel.config import Veto
from reference_kernel.kernel import _UNDECLARED, Kernel

from conformance.selftest.mutants.blind._reg import mutant
from conformance.selftest.mutants.blind2._shared import EditedSpans, FinalTurnFlag


def _item(c):
    return {"call_id": c.id, "name": c.name, "args": c.args, "vetoed": False, "reason": None}


@mutant(["GATE-004"], "a message with an interactive call and a resource call")
class KPlanHoldsInteractive(Kernel):
    """Seed 003 step 10: `plan := build_plan(resource_calls)`; interactive calls go through 9b. The mutant puts
    the interactive calls in the plan as well. Realistic: "everything that is not a data source"."""

    def _split_by_kind(self, calls):
        ds, res, inter = Kernel._split_by_kind(calls)
        self._inter = inter
        return ds, res, inter

    def _build_plan(self, resources):
        plan = Kernel._build_plan(resources)
        plan["items"] += [_item(c) for c in self._inter]
        return plan


@mutant(["GATE-006"], "a plan-ready hook vetoing two or more items")
class KVetoFirstIdOnly(Kernel):
    """Seed 003 step 11-12: `plan := HookDispatch("plan-ready", plan)` (veto chain) then apply_approved_items.
    A veto naming several items vetoes all of them; the mutant honours only its first id. Realistic:
    `call_ids[0]`."""

    @staticmethod
    def _apply_veto(plan, outcome):
        if isinstance(outcome, Veto) and len(outcome.call_ids) > 1:
            outcome = Veto(call_ids=list(outcome.call_ids[:1]), reason=outcome.reason)
        return Kernel._apply_veto(plan, outcome)


@mutant(["GATE-006"], "two resource calls to the same tool, one of them vetoed")
class KVetoByToolName(Kernel):
    """Seed 003 step 12: `apply_approved_items(plan)` - every item not vetoed is applied. The mutant vetoes by
    tool name, so a veto of one call also stops the other call to that tool. Realistic."""

    @staticmethod
    def _apply_veto(plan, outcome):
        if isinstance(outcome, Veto) and isinstance(plan, dict):
            names = {i.get("name") for i in plan.get("items", []) if i.get("call_id") in set(outcome.call_ids)}
            ids = [i.get("call_id") for i in plan.get("items", []) if i.get("name") in names]
            outcome = Veto(call_ids=ids, reason=outcome.reason)
        return Kernel._apply_veto(plan, outcome)


@mutant(["GATE-001"], "two or more data-source calls in one message with a policy")
class KPrecheckFirstDataSourceOnly(Kernel):
    """Seed 003 step 9: `execute_concurrently(PolicyPrecheck(data_source_calls))` - every call is prechecked.
    The mutant prechecks the batch by its first call. Realistic."""

    async def _execute_data_sources(self, run, calls):
        if calls:
            allowed = await self._policy_precheck(run, calls[:1])
            await self._execute_data_source(run, allowed + calls[1:])


@mutant(["GATE-003"], "a policy precheck that denies a data-source call")
class KDeniedStillRuns(Kernel):
    """Seed 003 step 9: `execute_concurrently(PolicyPrecheck(data_source_calls))` - the precheck filters what
    runs. The mutant runs the denied call anyway (its denial overwritten). Realistic: precheck logged only."""

    async def _policy_precheck(self, run, calls):
        await super()._policy_precheck(run, calls)
        return calls


@mutant(["GATE-003"], "a policy precheck that denies an interactive call")
class KDeniedInteractiveRuns(Kernel):
    """Seed 003 step 9b: `execute_sequentially(PolicyPrecheck(interactive_calls))` - a denied interactive call
    does not execute. The mutant asks the policy but runs every interactive call anyway. Realistic: "the user
    is asked anyway"."""

    async def _execute_interactive(self, run, calls):
        if not calls:
            return
        await self._policy_precheck(run, calls)
        for c in calls:
            with run.token.scope():
                await self._execute(c, run, run.turn_span)
            run.token.check()


@mutant(["GATE-002"], "an interactive call with a policy")
class KInteractivePrecheckAfter(Kernel):
    """Seed 003 step 9b: `execute_sequentially(PolicyPrecheck(interactive_calls))` - precheck first. The mutant
    runs the interactive calls, then prechecks them. Realistic: audit-style policy."""

    async def _execute_interactive(self, run, calls):
        if not calls:
            return
        for c in calls:
            with run.token.scope():
                await self._execute(c, run, run.turn_span)
            run.token.check()
        await self._policy_precheck(run, calls)


@mutant(["SPAN-003"], "a turn with resource calls applied at step 12")
class KNoSpanForResourceApply(Kernel):
    """Seed 003: a span MUST be emitted "for tool execution (steps 9/9b/12)". The mutant instruments data-source
    and interactive execution but not step 12's resource calls. Realistic: apply is its own code path."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)

        def edit(name, kind, at):
            entry = self._tools.get(name)
            return None if kind == "tool" and entry is not None and entry.spec.kind == "resource" else at

        self.spans = EditedSpans(self.spans, edit)


@mutant(["SPAN-002"], "a failing model call (4xx, 5xx, timeout or broken stream)")
class KNoModelSpanOnFailure(Kernel):
    """Seed 003: a span MUST be emitted "for the model-call steps (3-4)" of every turn. The mutant keeps the
    model-call span only when the call succeeded. Realistic: span recorded on success only."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        model_spans: set[str] = set()

        inner = self.spans

        class _Rec(EditedSpans):
            def start(s, name, kind, parent_id, attributes=None):
                sid = EditedSpans.start(s, name, kind, parent_id, attributes)
                if kind == "model_call":
                    model_spans.add(sid)
                return sid

        self.spans = _Rec(inner, None, lambda sid, at: sid in model_spans and "error" in at)


@mutant(["SPAN-002"], "a fired bound (the limit-reached turn)")
class KNoModelSpanOnFinal(FinalTurnFlag, Kernel):
    """Seed 003: a span MUST be emitted "for the model-call steps (3-4)" of every turn. The mutant's
    limit-reached turn calls the model without its span. Realistic: the final turn's separate code path."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._current = None
        self.spans = EditedSpans(self.spans, lambda n, kind, at: None if kind == "model_call" and self._current in self._final_runs else at)

    async def _model_call(self, run, request):
        self._current = id(run)
        return await super()._model_call(run, request)


@mutant(["SPAN-004"], "a plan-ready hook that vetoes an item")
class KNoVetoSpanWhenVetoed(Kernel):
    """Seed 003: a span MUST be emitted "for the policy veto chain (step 11)". The mutant discards the veto-chain
    span when the chain vetoed something. Realistic: the span closed on the success path only."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.spans = EditedSpans(self.spans)

    async def _plan_ready(self, run, plan):
        before = len(self.spans._inner.spans)
        out = await super()._plan_ready(run, plan)
        if any(isinstance(i, dict) and i.get("vetoed") for i in out.get("items", [])):
            for s in list(self.spans._inner.spans)[before:]:
                if s["kind"] == "veto_chain":
                    self.spans._dropped.add(s["span_id"])
        return out


@mutant(["SPAN-001"], "a session of two or more RunTurns")
class KTurnSpanFirstOnly(Kernel):
    """Seed 003: a span MUST be emitted "for the whole turn" - every turn. The mutant opens a turn span for
    the first RunTurn only (later ones nest in it). Realistic: span opened in the session setup."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.spans = EditedSpans(
            self.spans, lambda n, kind, at: None if kind == "turn" and at.get("index", 0) > 0 and not at.get("final") else at
        )


@mutant(["CONC-001", "CONC-005"], "two calls to different safe:true tools with key_fields and equal key values")
class KKeyWithoutToolName(Kernel):
    """Seed 003: the key is `(provider_name, tool_name, value(key_fields))`; "Calls with distinct keys MUST
    execute concurrently". The mutant leaves tool_name out, so two tools with the same key value never
    overlap. Realistic."""

    def _tool_key(self, c):
        spec = c.entry.spec
        key = concurrency_key(spec.provider, spec.name, spec.kind, spec.concurrency or _UNDECLARED, c.args, c.id)
        if key and key[0] == "key":
            return ("key", key[1], key[3])
        return key


@mutant(["CONC-001"], "three or more data-source calls in one message")
class KDataSourcesInPairs(Kernel):
    """Seed 003: "Calls with distinct keys MUST execute concurrently." The mutant runs data-source calls in
    batches of two. Realistic: a small concurrency cap."""

    async def _execute_data_source(self, run, calls):
        for i in range(0, len(calls), 2):
            await self._run_keyed(run, calls[i : i + 2])
