"""Kernel profile (003): the RunTurn steps and their hooks (LOOP), child sessions' hooks."""
from __future__ import annotations

import copy

from reference_kernel.kernel import Kernel

from conformance.selftest.mutants.blind._reg import mutant
from conformance.selftest.mutants.blind2._shared import FinalTurnFlag


@mutant(["LOOP-007"], "a message with a tool_use block naming an unknown tool")
class KPreToolCallSkipsUnknown(Kernel):
    """Seed 003 step 7: "for each tool_use block in message (declaration order): HookDispatch("pre-tool-call",
    tool_call)". The mutant looks the tool up first and dispatches only for known tools. Realistic."""

    async def _dispatch_pre_tool_calls(self, run, tool_calls):
        await super()._dispatch_pre_tool_calls(run, [c for c in tool_calls if c.get("name") in self._tools])


@mutant(["LOOP-010"], "a tool call whose tool fails (raises or returns an error)")
class KPostToolCallSkipsFailed(Kernel):
    """Seed 003 step 13: "for each (call, result) in results_ds ∪ results_int ∪ results_r: HookDispatch(
    "post-tool-call", {call, result})". The mutant skips calls whose result is an error. Realistic."""

    async def _post_tool_calls(self, run, calls):
        return await super()._post_tool_calls(run, [c for c in calls if not c.is_error])


@mutant(["LOOP-010"], "a resource call vetoed in plan-ready")
class KPostToolCallSkipsVetoed(Kernel):
    """Seed 003 step 13: post-tool-call for each (call, result) of results_r. A vetoed item has a result (an
    error); the mutant dispatches only for calls that ran. Realistic: iterating the applied items only."""

    async def _post_tool_calls(self, run, calls):
        return await super()._post_tool_calls(run, [c for c in calls if not (c.content or "").startswith("Vetoed")])


@mutant(["LOOP-011"], "a turn with two or more resource calls")
class KPostApplyPerItem(Kernel):
    """Seed 003 step 14: `HookDispatch("post-apply", plan)` - once per turn. The mutant dispatches it once per
    plan item. Realistic: the dispatch put inside the apply loop."""

    async def _post_apply(self, run, plan):
        for _ in plan.get("items") or [None]:
            await super()._post_apply(run, plan)


@mutant(["LOOP-011"], "a plan-ready hook that vetoes an item, and a post-apply hook")
class KPostApplyOriginalPlan(Kernel):
    """Seed 003 steps 11-14: `plan := HookDispatch("plan-ready", plan)` then `HookDispatch("post-apply", plan)`:
    post-apply gets the plan the veto chain returned. The mutant hands post-apply the plan as built (step 10).
    Realistic: keeping a reference to the first plan object."""

    async def _plan_ready(self, run, plan):
        self._built = copy.deepcopy(plan)
        return await super()._plan_ready(run, plan)

    async def _post_apply(self, run, plan):
        await super()._post_apply(run, self._built)


@mutant(["LOOP-012"], "two calls to the same tool in one message")
class KOneResultPerTool(Kernel):
    """Seed 003 step 15: `history := history ++ message ++ tool_result_blocks(...)` - one block per call.
    The mutant keeps one result per tool name. Realistic: results collected in a dict keyed by tool name."""

    def _order_results(self, calls):
        seen: dict[str, object] = {}
        for c in calls:
            seen.setdefault(c.name, c)
        return list(seen.values())


@mutant(["LOOP-001"], "a context-assemble hook (its payload inspected)")
class KContextAssembleNoBudget(Kernel):
    """Seed 003 step 1: `payload := HookDispatch("context-assemble", {history, budget})`. The mutant sends the
    history only. Realistic: budget left for the bounds code."""

    async def _context_assemble(self, run):
        if not self.hooks.at("context-assemble"):
            return await super()._context_assemble(run)
        return await self._dispatch("context-assemble", {"history": list(run.history)}, run.turn, run.turn_span)


@mutant(["LOOP-002"], "a pre-model-call hook (its payload inspected)")
class KPreModelCallNoParams(Kernel):
    """Seed 003 step 2: `request := HookDispatch("pre-model-call", {payload, tool_specs, params})`. The mutant
    leaves params out of the payload. Realistic: params added to the request afterwards."""

    async def _pre_model_call(self, run, payload, limit):
        out = {"payload": payload, "tool_specs": [] if limit is not None else list(self._model_tools)}
        if self.hooks.at("pre-model-call"):
            out = await self._dispatch("pre-model-call", out, run.turn, run.turn_span)
        return self._build_request(run, out, limit)


@mutant(["LOOP-004"], "a model response with tool_use blocks and a post-model-response hook")
class KPostModelResponseTwiceWithTools(Kernel):
    """Seed 003 step 5: `message := HookDispatch("post-model-response", message)` - once per turn. The mutant
    dispatches it again before running tools. Realistic: a second dispatch after normalising tool calls."""

    async def _post_model_response(self, run, message):
        out = await super()._post_model_response(run, message)
        if out.get("tool_calls"):
            out = await super()._post_model_response(run, out)
        return out


@mutant(["LOOP-004"], "a fired bound (the limit-reached turn) with a post-model-response hook")
class KPostModelResponseSkippedOnFinal(FinalTurnFlag, Kernel):
    """Seed 003: the limit-reached path runs "exactly one more turn", and every turn runs step 5
    `HookDispatch("post-model-response", message)`. The mutant skips step 5 on that turn. Realistic."""

    async def _post_model_response(self, run, message):
        if id(run) in self._final_runs:
            return message
        return await super()._post_model_response(run, message)


@mutant(["LOOP-001"], "a fired bound (the limit-reached turn) with a context-assemble hook")
class KContextAssembleSkippedOnFinal(FinalTurnFlag, Kernel):
    """Seed 003: "A kernel implementation MUST execute steps 1 through 18 in the order shown for every turn";
    the limit-reached turn is a turn. The mutant builds its request from the raw history. Realistic."""

    async def _context_assemble(self, run):
        if id(run) in self._final_runs:
            return {"history": run.history, "budget": self._budget(run)}
        return await super()._context_assemble(run)


@mutant(["LOOP-015"], "a session-start hook and a context-assemble hook")
class KSessionStartAfterFirstContext(Kernel):
    """Seed 003: "session-start fires once before the first RunTurn". The mutant fires it after the first
    context-assemble. Realistic: lazy start on first use."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._pending: set[int] = set()

    async def _session_start(self, run):
        self._pending.add(id(run))

    async def _context_assemble(self, run):
        out = await super()._context_assemble(run)
        if id(run) in self._pending:
            self._pending.discard(id(run))
            await super()._session_start(run)
        return out


@mutant(["LOOP-015"], "a delegated child session with a session-start hook")
class KChildNoSessionStart(Kernel):
    """Seed 003: "session-start fires once before the first RunTurn" - of every session, a child's too. The
    mutant skips it for child sessions. Realistic: lifecycle hooks only for user sessions."""

    async def _session_start(self, run):
        if run.turn.depth == 0:
            await super()._session_start(run)


@mutant(["LOOP-016"], "a delegated child session ending by done detection, with a session-end hook")
class KChildNoSessionEnd(Kernel):
    """Seed 003: "session-end fires once after the loop exits (normal completion, ...)" - for a child session
    too. The mutant skips it for children. Realistic."""

    async def _session_end(self, run):
        if run.turn.depth == 0:
            await super()._session_end(run)


@mutant(["LOOP-020"], "a hook that raises")
class KNoSessionEndOnHookError(Kernel):
    """Seed 003: "session-end fires once after the loop exits" - whatever way. The mutant skips it when a hook
    raised. Realistic: avoiding another hook call after a hook failure."""

    async def _session_end(self, run):
        if run.status == "error" and (run.error or "").startswith("hook "):
            return
        await super()._session_end(run)


@mutant(["LOOP-020"], "a failing model call (4xx, 5xx, timeout or broken stream)")
class KNoSessionEndOnModelError(Kernel):
    """Seed 003: "session-end fires once after the loop exits" - whatever way. The mutant skips it when the
    model call failed. Realistic: an early return in the error path."""

    async def _session_end(self, run):
        if run.status == "error" and (run.error or "").startswith("model call failed"):
            return
        await super()._session_end(run)
