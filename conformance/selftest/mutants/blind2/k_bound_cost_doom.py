"""Kernel profile (003): bounds (BOUND), cost roll-up (COST), doom loop (DOOM), child cancellation (STOP)."""
from __future__ import annotations

import math

from conformance.selftest.mutants._util import Uncancelled
from reference_kernel.cost import CostLedger, compute_cost
from reference_kernel.kernel import MAX_BUDGET, MAX_TURNS, MAX_WALL_CLOCK, Kernel

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["BOUND-005"], "max_wall_clock_s with a session of several RunTurns")
class KWallClockPerTurn(Kernel):
    """Seed 003: max_wall_clock_s is a per-session bound ("three independent bound dimensions per session").
    The mutant measures it from the start of the current RunTurn. Realistic: `started` reset each loop."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._turn_started: dict[int, float] = {}

    async def _run_turn(self, run, limit=None):
        self._turn_started[id(run)] = self.clock()
        return await super()._run_turn(run, limit)

    def _check_bounds(self, run):
        b = run.bounds
        if b.max_turns is not None and run.turns_used >= b.max_turns:
            return MAX_TURNS
        if self.ledger.exhausted(run.ledger_key):
            return MAX_BUDGET
        if b.max_wall_clock_s is not None and self.clock() - self._turn_started.get(id(run), run.started) >= b.max_wall_clock_s:
            return MAX_WALL_CLOCK
        return None


@mutant(["BOUND-002"], "max_turns = N with turns whose calls are all data-source calls")
class KMaxTurnsCountsApplyTurns(Kernel):
    """Seed 003: max_turns bounds the session's turns. The mutant counts only turns that apply a plan
    (resource calls). Realistic: the counter bumped in the apply step."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._applied: dict[int, int] = {}

    async def _apply_plan(self, run, plan, resources):
        if resources:
            self._applied[id(run)] = self._applied.get(id(run), 0) + 1
        await super()._apply_plan(run, plan, resources)

    def _check_bounds(self, run):
        used = run.turns_used
        run.turns_used = self._applied.get(id(run), 0)
        try:
            return super()._check_bounds(run)
        finally:
            run.turns_used = used


@mutant(["COST-003"], "max_cost_usd reached by the spend of one turn")
class KCostCheckedOnTurnStartSpend(Kernel):
    """Seed 003: "accumulate a running sum of cost_usd across every usage event in a session and compare it
    against max_cost_usd at step 17". The mutant compares the sum as it was when the turn began (one turn
    late). Realistic: a budget snapshot taken at step 1."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._was_exhausted: dict[int, bool] = {}

    async def _run_turn(self, run, limit=None):
        self._was_exhausted[id(run)] = self.ledger.exhausted(run.ledger_key)
        return await super()._run_turn(run, limit)

    def _check_bounds(self, run):
        out = super()._check_bounds(run)
        if out == MAX_BUDGET and not self._was_exhausted.get(id(run)):
            return None
        return out


@mutant(["BOUND-007", "BOUND-009"], "max_cost_usd reached")
class KCostBoundEndsAtOnce(Kernel):
    """Seed 003: "hitting any one of the three MUST terminate the loop via the same graceful-degradation path";
    "MUST run exactly one more turn". The mutant ends at once on the cost bound (no final turn): spending
    more after the money ran out looked wrong. Realistic."""

    async def _final_turn(self, run, limit):
        if limit == MAX_BUDGET:
            self._end(run, "limit_reached", limit)
            return
        await super()._final_turn(run, limit)


@mutant(["COST-001"], "a usage event with output tokens and an output price different from the input price")
class KOutputPricedAsInput(Kernel):
    """Seed 003: "the kernel MUST compute and persist cost_usd per usage event" from ModelSpec.pricing. The
    mutant prices output tokens at the input price. Realistic: one per-token price."""

    async def _on_usage(self, turn, chunk, ledger_key):
        saved = self.pricing
        self.pricing = saved.model_copy(update={"output_usd_per_mtok": saved.input_usd_per_mtok})
        try:
            return await super()._on_usage(turn, chunk, ledger_key)
        finally:
            self.pricing = saved


@mutant(["COST-001"], "a delegated child session whose model reports usage")
class KChildUsageNotPersisted(Kernel):
    """Seed 003: "the kernel MUST compute and persist cost_usd per usage event". The mutant charges a child's
    usage to the ledger but persists only top-level sessions' events. Realistic."""

    async def _on_usage(self, turn, chunk, ledger_key):
        if turn.depth == 0:
            return await super()._on_usage(turn, chunk, ledger_key)
        i, o, c = (int(chunk.get(k) or 0) for k in ("input_tokens", "output_tokens", "cached_input_tokens"))
        cost = compute_cost(self.pricing, i, o, c)
        if ledger_key is not None:
            self.ledger.charge(ledger_key, cost)
        return {"input_tokens": i, "output_tokens": o, "cached_input_tokens": c, "cost_usd": cost}


class _SpawnMaxLedger(CostLedger):
    """A child's budget = min(parent's max_cost_usd, own): the parent's spend so far is forgotten."""

    def __init__(self):
        super().__init__()
        self._max: dict[str, float] = {}

    def open_session(self, session_id, parent_id=None, max_cost_usd=None):
        super().open_session(session_id, parent_id, max_cost_usd)
        own = math.inf if max_cost_usd is None else float(max_cost_usd)
        self._max[session_id] = own if parent_id is None else min(self._max[parent_id], own)
        if parent_id is not None:
            self._nodes[session_id].remaining = self._max[session_id]


@mutant(["COST-006"], "a child spawned after the parent has spent part of its max_cost_usd")
class KChildBudgetFromParentMax(Kernel):
    """Seed 003: `remaining_cost_budget_usd(child) = min(remaining_cost_budget_usd(parent), child_profile.
    max_cost_usd ?? +inf)`. The mutant uses the parent's configured max, not what remains of it. Realistic."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.ledger = _SpawnMaxLedger()


@mutant(["DOOM-003", "DOOM-004", "DOOM-001"], "the same call repeated over consecutive turns, one call per turn")
class KDoomPerTurn(Kernel):
    """Seed 003: "At step 16 of every turn, the kernel MUST compare the most recent threshold resource/
    data-source calls' hashes" - across turns. The mutant compares only the calls of the current turn.
    Realistic: a detector created inside the turn."""

    def _check_doom(self, run, calls):
        run.doom.reset()
        return super()._check_doom(run, calls)


@mutant(["DOOM-008", "DOOM-004"], "identical data-source calls interleaved with interactive calls (A I A I A)")
class KDoomInteractiveBreaksRun(Kernel):
    """Seed 003: compare "the most recent threshold resource/data-source calls' hashes" - interactive calls are
    not among them. The mutant lets an interactive call break a run of identical calls. Realistic: every call
    appended to the window, interactive ones under a marker."""

    def _check_doom(self, run, calls):
        for c in calls:
            if c.entry is not None and c.entry.spec.kind == "interactive":
                run.doom.record("\0interactive", c.id)
        return super()._check_doom(run, calls)


@mutant(["DOOM-004", "DOOM-003"], "the same failing call (tool error) repeated threshold times")
class KDoomSkipsFailedCalls(Kernel):
    """Seed 003: "on threshold consecutive identical hashes it MUST treat this as a bound-fired condition" -
    whatever the calls returned. The mutant leaves calls that ended in an error out. Realistic: only
    successful calls are 'progress'."""

    def _check_doom(self, run, calls):
        return super()._check_doom(run, [c for c in calls if not c.is_error])


@mutant(["DOOM-004"], "doom_loop window_size configured larger than threshold")
class KDoomNeedsFullWindow(Kernel):
    """Seed 003: "compare the most recent threshold ... calls' hashes"; window_size only bounds what is kept.
    The mutant fires only when the whole window is identical. Realistic: `len(set(window)) == 1` on a full
    window."""

    def _check_doom(self, run, calls):
        fired = super()._check_doom(run, calls)
        hashes = run.doom._hashes
        if fired and (len(hashes) < run.doom.window_size or len(set(hashes)) != 1):
            return None
        return fired


@mutant(["STOP-006"], "cancelling the root while a grandchild session (depth 2) runs")
class KGrandchildTokenFresh(Kernel):
    """Seed 000: "Child agents get a child token, so stopping the parent stops its children too" - at every
    depth. The mutant gives a child's own children a fresh token. Realistic."""

    async def _delegate(self, c, run, span):
        if run.turn.depth >= 1:
            run = Uncancelled(run)
        return await super()._delegate(c, run, span)


# Dropped after the first run (docs/selftest.md): k_spawn_without_cost_budget breaks only COST-009, untestable
# (RunSessionRequest is defined in subagents.md, which we do not have, and never crosses the adapter boundary;
# the budget's effect is COST-006's, which its sibling k_child_budget_from_parent_max is killed by).
