"""Kernel profile (003): RunTurn step order and hook chains (LOOP)."""
from __future__ import annotations

import copy
import json
from typing import Any

from reference_kernel.kernel import CANCELLED, SUCCESS, Kernel

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["LOOP-001", "LOOP-012"], "a session whose history exceeds 8 messages (>=4 tool turns, or a later message)")
class KContextHistoryWindow(Kernel):
    """Seed 003 step 1: `payload := HookDispatch("context-assemble", {history, budget})` and step 15
    `history := history ++ message ++ tool_result_blocks(...)`. The mutant hands context-assemble (and so
    the model) only the last 8 messages of the history: a "context window" optimisation written into the
    kernel loop. Realistic: authors trim history to save tokens and forget the loop must pass it whole."""

    WINDOW = 8

    async def _context_assemble(self, run):
        remaining = self.ledger.remaining(run.ledger_key)
        budget = {
            "turns_used": run.turns_used,
            "cost_usd": self.ledger.spent(run.ledger_key),
            "remaining_cost_budget_usd": None if remaining == float("inf") else remaining,
            "elapsed_s": self.clock() - run.started,
        }
        hist = run.history if len(run.history) <= self.WINDOW else run.history[-self.WINDOW:]
        payload = {"history": hist, "budget": budget}
        if not self.hooks.at("context-assemble"):
            return payload
        return await self._dispatch("context-assemble", payload, run.turn, run.turn_span)


@mutant(["LOOP-007"], "two or more tool_use blocks in one message")
class KPreToolCallReversed(Kernel):
    """Seed 003 step 7: `for each tool_use block in message (declaration order): HookDispatch("pre-tool-call", ...)`.
    The mutant walks the blocks from last to first (a `reversed()`/pop() loop). Realistic: stack-based
    iteration over the blocks."""

    async def _dispatch_pre_tool_calls(self, run, tool_calls):
        await super()._dispatch_pre_tool_calls(run, list(reversed(tool_calls)))


@mutant(["LOOP-007"], "two identical calls (same name and args) in one message")
class KPreToolCallDedup(Kernel):
    """Seed 003 step 7: pre-tool-call for *each* tool_use block. The mutant dispatches it once per distinct
    (name, args), skipping repeated identical blocks. Realistic: de-duplicating hook notifications."""

    async def _dispatch_pre_tool_calls(self, run, tool_calls):
        seen, unique = set(), []
        for call in tool_calls:
            key = (call.get("name"), json.dumps(call.get("args"), sort_keys=True, default=str))
            if key not in seen:
                seen.add(key)
                unique.append(call)
        await super()._dispatch_pre_tool_calls(run, unique)


@mutant(["LOOP-008"], "a data_source call and an interactive call in the same message")
class KInteractiveBeforeDataSources(Kernel):
    """Seed 003 step 9 (data-source calls) precedes step 9b (interactive calls); the kernel "MUST execute
    steps 1 through 18 in the order shown". The mutant runs the interactive calls first (ask the user
    early). Realistic: prioritising user-facing calls."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._stash: dict[int, list] = {}

    async def _execute_data_sources(self, run, calls):
        self._stash[id(run)] = calls

    async def _execute_interactive(self, run, calls):
        await super()._execute_interactive(run, calls)
        await super()._execute_data_sources(run, self._stash.pop(id(run), []))


@mutant(["LOOP-009", "SPAN-004"], "a turn whose tool calls are all data_source/interactive (empty plan)")
class KPlanReadySkippedWhenEmpty(Kernel):
    """Seed 003 steps 10-11: `plan := build_plan(resource_calls)`; `plan := HookDispatch("plan-ready", plan)`
    runs for every turn with tool_use blocks. The mutant skips the veto chain when the plan is empty.
    Realistic: an "optimisation" that skips a chain with nothing to veto."""

    async def _plan_ready(self, run, plan):
        if not plan["items"]:
            return plan
        return await super()._plan_ready(run, plan)


@mutant(["LOOP-010"], "a call whose result is an error (vetoed, denied, unknown tool, tool raising)")
class KPostToolCallSkipsErrors(Kernel):
    """Seed 003 step 13: `for each (call, result) in results_ds ∪ results_int ∪ results_r:
    HookDispatch("post-tool-call", {call, result})`. The mutant dispatches post-tool-call only for
    successful results. Realistic: treating post-tool-call as an on-success callback."""

    async def _post_tool_calls(self, run, calls):
        for c in calls:
            if not c.is_error:
                await self._dispatch(
                    "post-tool-call",
                    {"call": c.call, "result": {"content": c.content, "is_error": c.is_error}},
                    run.turn, run.turn_span,
                )
            if c.entry is not None and c.entry.spec.terminates_turn:
                return True
        return False


@mutant(["LOOP-011"], "a plan-ready hook that vetoes (or replaces) a plan item")
class KPostApplyPreVetoPlan(Kernel):
    """Seed 003 step 14: `HookDispatch("post-apply", plan)` where plan is step 11's output
    (`plan := HookDispatch("plan-ready", plan)`). The mutant hands post-apply the plan as built at step 10
    (before the veto chain). Realistic: keeping a reference to the original plan object."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._orig: dict[int, Any] = {}

    async def _plan_ready(self, run, plan):
        self._orig[id(run)] = copy.deepcopy(plan)
        return await super()._plan_ready(run, plan)

    async def _post_apply(self, run, plan):
        await super()._post_apply(run, self._orig.pop(id(run), plan))


@mutant(["LOOP-005"], "a post-model-response hook that replaces the message (different tool calls)")
class KActsOnOriginalMessage(Kernel):
    """Seed 003 step 5: `message := HookDispatch("post-model-response", message)`; steps 6-15 use that
    message. The mutant dispatches the chain but keeps acting on the model's original message.
    Realistic: forgetting to assign the chain's return value."""

    async def _post_model_response(self, run, message):
        await super()._post_model_response(run, copy.deepcopy(message))
        return message


@mutant(["LOOP-018"], "a cancelled session run")
class KNoSessionEndOnCancel(Kernel):
    """Seed 003: "session-end fires once after the loop exits (normal completion, a fired bound, or
    cancellation)". The mutant skips session-end when the run was cancelled. Realistic: cancellation
    short-circuits cleanup hooks."""

    async def _session_end(self, run):
        if run.subtype == CANCELLED:
            return
        await super()._session_end(run)


@mutant(["LOOP-013"], "a turn in which every tool call ends in an error result (vetoed/denied/failed)")
class KStopWhenAllCallsFailed(Kernel):
    """Seed 003 step 18: "loop to step 1, unless a termination condition fired in 16/17 or DoneCheck".
    The mutant also ends the loop (as success) when every call of the turn failed. Realistic: a "give up
    when nothing worked" heuristic that is not one of the seed's termination conditions."""

    def _check_doom(self, run, calls):
        if calls and all(c.is_error for c in calls):
            return SUCCESS
        return super()._check_doom(run, calls)
