"""Kernel profile (003): instrumentation (SPAN) and turn-level concurrency keys (CONC)."""
from __future__ import annotations

import anyio

from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.cancel import Cancelled
from reference_kernel.concurrency import concurrency_key
from reference_kernel.kernel import Kernel, ModelFailed, _UNDECLARED

from conformance.selftest.mutants.blind._reg import DroppingSpans, mutant


@mutant(["SPAN-001"], "a fired bound or doom loop (the final tool-less turn)")
class KNoFinalTurnSpan(Kernel):
    """Seed 003: "a conforming kernel MUST emit a span ... for the whole turn". The mutant emits no turn
    span for the limit-reached turn. Realistic: the final turn is run by a separate code path that the
    author forgot to instrument."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.spans = DroppingSpans(self.spans, lambda n, kind, at: kind == "turn" and bool(at.get("final")))


@mutant(["SPAN-003"], "a turn whose only tool calls are interactive")
class KNoSpanForInteractive(Kernel):
    """Seed 003: a span MUST be emitted "for tool execution (steps 9/9b/12)". The mutant instruments
    data-source and resource execution but not interactive calls (step 9b). Realistic: 9b was added
    later by a separate code path."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)

        def drop(name, kind, at):
            entry = self._tools.get(name)
            return kind == "tool" and entry is not None and entry.spec.kind == "interactive"

        self.spans = DroppingSpans(self.spans, drop)


@mutant(["SPAN-002"], "any model call (span timing checked against the stream)")
class KModelSpanEndsAtStreamOpen(Kernel):
    """Seed 003: a span MUST be emitted "for the model-call steps (3-4)" (StreamCompletion and accumulate).
    The mutant's model_call span is opened and closed around opening the stream only; accumulation
    (step 4) runs outside it. Realistic: wrapping only the `provider.stream(...)` call in a span."""

    async def _call_model(self, turn, request, token, parent_span, ledger_key):
        span = self.spans.start("model_call", "model_call", parent_span, {"model": self.profile.model})
        self.spans.end(span)
        failure = None
        result = None
        try:
            with token.scope():
                result = await self._accumulate(turn, request, ledger_key)
        except Exception as exc:
            failure = exc
        if token.cancelled:
            raise Cancelled()
        if failure is not None:
            raise ModelFailed(failure) from failure
        return result


@mutant(["SPAN-004"], "a turn with only data_source calls (empty plan)")
class KVetoSpanOnlyWithItems(Kernel):
    """Seed 003: a span MUST be emitted "for the policy veto chain (step 11)". The mutant dispatches
    plan-ready but opens the veto_chain span only when the plan has items. Realistic: instrumenting
    inside `if plan.items:`."""

    async def _plan_ready(self, run, plan):
        if plan["items"]:
            return await super()._plan_ready(run, plan)
        out = await self._dispatch("plan-ready", plan, run.turn, run.turn_span, self._apply_veto)
        return out if isinstance(out, dict) else plan


@mutant(["CONC-002"], "two calls of a safe:true tool with key_fields and equal key values in one message")
class KKeyFieldsIgnored(Kernel):
    """Seed 003: the key is `(provider_name, tool_name, value(key_fields))` when safe: true; "Calls sharing an
    identical key ... MUST execute sequentially". The mutant treats every safe:true call as its own key,
    ignoring key_fields. Realistic: reading `safe: true` as "parallel" and forgetting key_fields."""

    def _tool_key(self, c):
        spec = c.entry.spec
        if spec.concurrency is not None and spec.concurrency.safe:
            return ("call", c.id)
        return super()._tool_key(c)


@mutant(["CONC-005", "CONC-001"], "a safe:true tool with two key_fields, calls equal in the first and different in the second")
class KKeyFirstFieldOnly(Kernel):
    """Seed 003: key = `(provider_name, tool_name, value(key_fields))`, all key fields. The mutant keys on
    the first key field only, so calls differing in a later field are serialised although "Calls with
    distinct keys MUST execute concurrently". Realistic: `key_fields[0]`."""

    def _tool_key(self, c):
        spec = c.entry.spec
        if spec.concurrency is not None and spec.concurrency.safe and spec.concurrency.key_fields:
            declared = spec.concurrency.model_copy(update={"key_fields": spec.concurrency.key_fields[:1]})
            return concurrency_key(spec.provider, spec.name, spec.kind, declared, c.args, c.id)
        return super()._tool_key(c)


@mutant(["CONC-004"], "two different safe:false/undeclared tools of one provider in one message")
class KUnsafeLockPerTool(Kernel):
    """Seed 003: "a provider-wide lock token when safe: false or undeclared"; "Calls ... belonging to the
    same safe: false operation MUST execute sequentially" and the token is provider-wide. The mutant
    locks per (provider, tool), so two different unsafe tools of one provider overlap. Realistic: per-tool
    mutexes."""

    def _tool_key(self, c):
        key = super()._tool_key(c)
        if key and key[0] == "provider":
            return ("provider", c.entry.spec.provider, c.name)
        return key


@mutant(["CONC-006"], "unsafe/undeclared calls of two different providers in one message")
class KProviderLockGlobal(Kernel):
    """Seed 003: the lock token is *provider*-wide; "Calls with distinct keys MUST execute concurrently".
    The mutant uses one global lock for every unsafe/undeclared operation, whatever the provider.
    Realistic: a single "unsafe" mutex."""

    def _tool_key(self, c):
        key = super()._tool_key(c)
        if key and key[0] == "provider":
            return ("provider",)
        return key


@mutant(["CONC-007"], "two interactive calls in one message")
class KInteractiveConcurrent(Kernel):
    """Seed 003: "interactive calls ... MUST execute sequentially regardless of any declared
    ConcurrencySpec" (step 9b `execute_sequentially`). The mutant runs them through the keyed scheduler
    with a key per call, i.e. concurrently. Realistic: reusing one executor for every kind."""

    async def _execute_interactive(self, run, calls):
        if not calls:
            return
        allowed = await self._policy_precheck(run, calls)
        with run.token.scope():
            async with anyio.create_task_group() as tg:
                for c in allowed:
                    tg.start_soon(self._execute, c, run, run.turn_span)
        run.token.check()


@mutant(["CONC-005"], "two approved resource calls with distinct concurrency keys in one message")
class KResourcesAppliedSerially(Kernel):
    """Seed 003: "Calls with distinct keys MUST execute concurrently"; e.g. "two file-write resource calls to
    different paths running in parallel" with key_fields [path]. The mutant applies approved plan items
    one after another. Realistic: applying a plan in a for-loop."""

    async def _apply_plan(self, run, plan, resources):
        items = {i.get("call_id"): i for i in plan.get("items", []) if isinstance(i, dict)}
        for c in resources:
            item = items.get(c.id)
            if item is None:
                c.fail("Vetoed: removed from the plan")
            elif item.get("vetoed"):
                c.fail(f"Vetoed: {item.get('reason') or 'vetoed'}")
            else:
                with run.token.scope():
                    await self._execute(c, run, run.turn_span)
                run.token.check()


