"""Kernel profile (003): policy precheck and plan/apply gate (GATE), loop bounds and limit-reached (BOUND)."""
from __future__ import annotations

from reference_kernel.kernel import MAX_BUDGET, MAX_TURNS, MAX_WALL_CLOCK, Kernel

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["GATE-002", "GATE-003"], "an interactive call the policy precheck denies")
class KNoPrecheckInteractive(Kernel):
    """Seed 003 step 9b: `results_int := execute_sequentially(PolicyPrecheck(interactive_calls))`; "every
    call the model makes passes through policy in some form". The mutant skips the precheck for
    interactive calls (the user is asked anyway). Realistic: assuming user interaction is its own gate."""

    async def _execute_interactive(self, run, calls):
        for c in calls:
            with run.token.scope():
                await self._execute(c, run, run.turn_span)
            run.token.check()


@mutant(["GATE-001", "GATE-003"], "two calls to the same data_source tool in one message, policy denying the second by call id")
class KPrecheckCachedByName(Kernel):
    """Seed 003 step 9: `execute_concurrently(PolicyPrecheck(data_source_calls))` - every call is prechecked.
    The mutant consults the policy once per tool name within a batch and reuses the verdict for later
    calls of the same tool. Realistic: memoising policy decisions by tool name."""

    async def _policy_precheck(self, run, calls):
        if self.policy is None:
            return calls
        verdicts: dict[str, tuple] = {}
        allowed = []
        for c in calls:
            if c.name not in verdicts:
                verdicts[c.name] = await self.policy({"id": c.id, "name": c.name, "args": c.args}, run.turn)
            ok, reason = verdicts[c.name]
            if ok:
                allowed.append(c)
            else:
                c.fail(f"Denied by policy: {reason or 'denied'}")
        return allowed


@mutant(["GATE-004"], "a message mixing data_source (or interactive) and resource calls")
class KPlanIncludesAllCalls(Kernel):
    """Seed 003 step 10: `plan := build_plan(resource_calls)` - the plan holds resource calls only. The
    mutant builds plan items for every valid call of the turn. Realistic: building the plan from the
    whole tool_use list."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._all: list = []

    def _split_by_kind(self, calls):
        self._all = [c for c in calls if c.content is None and c.entry is not None]
        return Kernel._split_by_kind(calls)

    def _build_plan(self, resources):
        return Kernel._build_plan(self._all)


@mutant(["GATE-006"], "a plan with several items, one of which is vetoed")
class KVetoOneVetoesAll(Kernel):
    """Seed 003 steps 11-12: `apply_approved_items(plan)` - items not vetoed are applied. The mutant treats a
    veto of any item as a veto of the whole plan. Realistic: `if outcome is Veto: plan.rejected = True`."""

    @staticmethod
    def _apply_veto(plan, outcome):
        from reference_kernel.config import Veto
        if not isinstance(outcome, Veto) or not isinstance(plan, dict):
            return plan, False
        items = [{**i, "vetoed": True, "reason": outcome.reason} for i in plan.get("items", [])]
        return {**plan, "items": items}, False


@mutant(["GATE-006"], "two plan-ready hooks each vetoing a different item")
class KVetoChainForgetsEarlierVetoes(Kernel):
    """Seed 003 step 11: `plan := HookDispatch("plan-ready", plan)  // veto chain`. In a chain every veto
    must stick. The mutant recomputes each item's vetoed flag from the latest Veto only, un-vetoing items an
    earlier hook vetoed. Realistic: `item.vetoed = item.id in outcome.call_ids`."""

    @staticmethod
    def _apply_veto(plan, outcome):
        from reference_kernel.config import Veto
        if not isinstance(outcome, Veto) or not isinstance(plan, dict):
            return plan, False
        ids = set(outcome.call_ids)
        items = [
            {**i, "vetoed": i.get("call_id") in ids, "reason": outcome.reason if i.get("call_id") in ids else None}
            for i in plan.get("items", [])
        ]
        return {**plan, "items": items}, False


@mutant(["CONC-010", "GATE-005", "GATE-004"], "a resource tool declared safe: true")
class KSafeResourcesSkipGate(Kernel):
    """Seed 003: "Step 9/12's split still governs approval gating (data_source executes freely, resource goes
    through the plan/apply gate); the concurrency key above governs scheduling". The mutant executes
    resource calls declared safe:true at step 9 with the data sources, outside the plan. Realistic: letting
    ConcurrencySpec decide gating."""

    @staticmethod
    def _split_by_kind(calls):
        ds, res, inter = Kernel._split_by_kind(calls)
        safe = [c for c in res if c.entry.spec.concurrency is not None and c.entry.spec.concurrency.safe]
        return ds + safe, [c for c in res if c not in safe], inter


@mutant(["BOUND-002"], "max_turns = N with a model that always asks for tools")
class KMaxTurnsOffByOne(Kernel):
    """Seed 003: max_turns checked at step 17; hitting it MUST terminate. The mutant fires only when
    turns_used > max_turns, running one tool turn too many. Realistic off-by-one (`>` for `>=`)."""

    def _check_bounds(self, run):
        b = run.bounds
        if b.max_turns is not None and run.turns_used > b.max_turns:
            return MAX_TURNS
        if self.ledger.exhausted(run.ledger_key):
            return MAX_BUDGET
        if b.max_wall_clock_s is not None and self.clock() - run.started >= b.max_wall_clock_s:
            return MAX_WALL_CLOCK
        return None


@mutant(["BOUND-010"], "any fired bound")
class KFinalTurnOffersTools(Kernel):
    """Seed 003: "exactly one more turn with tool specs withheld from the request". The mutant keeps
    offering the tool specs on the final turn and relies on not executing the calls. Realistic: adding the
    instruction but reusing the normal request builder."""

    def _build_request(self, run, out, limit):
        req = super()._build_request(run, out, limit)
        if limit is not None:
            req["tools"] = list(self._model_tools)
        return req


@mutant(["BOUND-011"], "any fired bound (then inspect history/journal, or a later message to the session)")
class KLimitInstructionInHistory(Kernel):
    """Seed 003: "a synthetic instruction telling the model the limit was reached" on the final turn; the
    instruction is a request-time injection, not conversation. The mutant appends the instruction as a user
    message to the session history (and journal). Realistic: injecting via the normal append path."""

    async def _final_turn(self, run, limit):
        await self._append(run, {"role": "user", "text": self._limit_instruction(limit)})
        await super()._final_turn(run, limit)

    def _build_request(self, run, out, limit):
        req = super()._build_request(run, out, None)
        if limit is not None:
            req["tools"] = []
        return req


@mutant(["BOUND-005"], "max_wall_clock_s reached exactly (elapsed == limit)")
class KWallClockStrict(Kernel):
    """Seed 003: max_wall_clock_s bound; "hitting any one of the three MUST terminate". The mutant fires only
    when elapsed > limit, so a run that has lasted exactly the limit goes on. Realistic off-by-one."""

    def _check_bounds(self, run):
        b = run.bounds
        if b.max_turns is not None and run.turns_used >= b.max_turns:
            return MAX_TURNS
        if self.ledger.exhausted(run.ledger_key):
            return MAX_BUDGET
        if b.max_wall_clock_s is not None and self.clock() - run.started > b.max_wall_clock_s:
            return MAX_WALL_CLOCK
        return None


@mutant(["BOUND-007", "BOUND-009"], "max_wall_clock_s firing")
class KWallClockHardStop(Kernel):
    """Seed 003: "hitting any one of the three MUST terminate the loop via the same graceful-degradation path";
    "run exactly one more turn". The mutant ends at once on the wall-clock bound (no time left, so no final
    turn). Realistic: "out of time means no more model calls"."""

    async def _final_turn(self, run, limit):
        if limit == MAX_WALL_CLOCK:
            self._end(run, "limit_reached", limit)
            return
        await super()._final_turn(run, limit)


@mutant(["BOUND-012"], "a fired bound whose final answer still contains tool_use blocks")
class KFinalTurnExecutesTools(Kernel):
    """Seed 003: "The session MUST end after that turn" (the tool-less final turn). The mutant still executes
    tool_use blocks the model returns on the final turn before ending. Realistic: reusing the normal
    tool-execution path for whatever the model returned."""

    async def _append_done(self, run, message, limit):
        calls = message.get("tool_calls") or []
        if limit is None or not calls:
            return await super()._append_done(run, message, limit)
        await self._append(run, message)
        prepared = [self._prepare(i, c, run.bad_args) for i, c in enumerate(calls)]
        for c in prepared:
            if c.content is None and c.entry is not None:
                await self._execute(c, run, run.turn_span)
        for c in prepared:
            await self._append(run, self._tool_result(c))
        run.reply = message.get("text")


@mutant(["BOUND-006", "BOUND-005"], "max_wall_clock_s set with max_cost_usd unset")
class KWallClockNeedsCostBound(Kernel):
    """Seed 003: "Each bound MUST be checked independently". The mutant checks the wall clock only inside the
    cost-bound branch (only when max_cost_usd is set). Realistic: a nested `if` copy-paste."""

    def _check_bounds(self, run):
        b = run.bounds
        if b.max_turns is not None and run.turns_used >= b.max_turns:
            return MAX_TURNS
        if b.max_cost_usd is not None:
            if self.ledger.exhausted(run.ledger_key):
                return MAX_BUDGET
            if b.max_wall_clock_s is not None and self.clock() - run.started >= b.max_wall_clock_s:
                return MAX_WALL_CLOCK
        elif self.ledger.exhausted(run.ledger_key):
            return MAX_BUDGET
        return None
