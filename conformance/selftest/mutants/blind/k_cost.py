"""Kernel profile (003): cost accounting and roll-up over the session tree (COST)."""
from __future__ import annotations

import math

from reference_kernel.cost import CostLedger, _Node
from reference_kernel.kernel import Kernel, LoopCore

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["COST-001"], "several usage chunks in one model stream")
class KUsageLastChunkOnly(Kernel):
    """Seed 003: "the kernel MUST compute and persist cost_usd per usage event"; "accumulate a running sum of
    cost_usd across every usage event". The mutant keeps only the last usage chunk of a stream (the
    accumulator overwrites it) and costs that one. Realistic: `usage = chunk` in the accumulate loop."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._pending: dict[str, dict] = {}

    async def _on_usage(self, turn, chunk, ledger_key):
        self._pending[turn.turn_id] = chunk
        return {}

    async def _accumulate(self, turn, request, ledger_key):
        message, usage, bad = await super()._accumulate(turn, request, ledger_key)
        chunk = self._pending.pop(turn.turn_id, None)
        if chunk is not None:
            usage = await LoopCore._on_usage(self, turn, chunk, ledger_key)
        return message, usage, bad


@mutant(["COST-001"], "a usage event with cached_input_tokens and a cached price different from the input price")
class KCachedPricedAsInput(Kernel):
    """Seed 003: cost_usd computed from ModelSpec.pricing per model/protocol.md#cost-computation (cached input
    has its own price, docs/adapter.md). The mutant prices cached input tokens at the full input price.
    Realistic: ignoring the cache discount."""

    async def _on_usage(self, turn, chunk, ledger_key):
        p = self.pricing
        self.pricing = p.model_copy(update={"cached_input_usd_per_mtok": p.input_usd_per_mtok})
        try:
            return await super()._on_usage(turn, chunk, ledger_key)
        finally:
            self.pricing = p


class _NoRollUpLedger(CostLedger):
    def charge(self, session_id, cost_usd):
        with self._lock:
            node = self._nodes[session_id]
            node.remaining -= cost_usd
            node.spent += cost_usd
            return [session_id] if node.remaining <= 0 else []


@mutant(["COST-005", "COST-007"], "a child (delegated) session whose spend pushes the parent over max_cost_usd")
class KNoCostRollUp(Kernel):
    """Seed 003: "A session's max_cost_usd MUST account for its own spend and every descendant RunSession's
    spend". The mutant charges each usage event only to the session that spent it. Realistic: per-session
    counters with no tree walk."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.ledger = _NoRollUpLedger()


class _OneLevelLedger(CostLedger):
    def charge(self, session_id, cost_usd):
        fired = []
        with self._lock:
            current, hops = session_id, 0
            while current is not None and hops < 2:
                node = self._nodes[current]
                node.remaining -= cost_usd
                node.spent += cost_usd
                if node.remaining <= 0:
                    fired.append(current)
                current, hops = node.parent, hops + 1
        return fired


@mutant(["COST-007", "COST-005"], "a grandchild session (depth 2) whose spend should count against the root")
class KCostRollUpOneLevel(Kernel):
    """Seed 003: "Every usage event's computed cost_usd MUST be atomically subtracted ... at every session on the
    path from where the spend occurred up to the root". The mutant charges the spender and its direct parent
    only. Realistic: `self.cost += c; self.parent.cost += c` instead of a walk to the root."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.ledger = _OneLevelLedger()


class _StrictLedger(CostLedger):
    def exhausted(self, session_id):
        with self._lock:
            return self._node(session_id).remaining < 0


@mutant(["COST-004", "BOUND-004"], "cumulative cost exactly equal to max_cost_usd")
class KCostStrictLess(Kernel):
    """Seed 003: "When any session's remaining_cost_budget_usd reaches <= 0, that session's bound has fired".
    The mutant fires only below zero. Realistic off-by-one (`< 0`)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.ledger = _StrictLedger()


class _OwnBudgetLedger(CostLedger):
    def open_session(self, session_id, parent_id=None, max_cost_usd=None):
        super().open_session(session_id, parent_id, max_cost_usd)
        own = math.inf if max_cost_usd is None else float(max_cost_usd)
        with self._lock:
            self._nodes[session_id].remaining = own


@mutant(["COST-006"], "a child whose own max_cost_usd is unset or larger than the parent's remaining budget")
class KChildBudgetOwnOnly(Kernel):
    """Seed 003: `remaining_cost_budget_usd(child) = min(remaining_cost_budget_usd(parent), child_profile.max_cost_usd ?? +inf)`.
    The mutant starts a child's budget from its own max_cost_usd only (spend is still rolled up). Realistic:
    forgetting the min() with the parent's remaining budget."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.ledger = _OwnBudgetLedger()
