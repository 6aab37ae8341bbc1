"""Commonagent profile (000): tool calls, their hooks and approvals (TOOL), the iteration budget (BUDGET)."""
from __future__ import annotations

import anyio

from reference_kernel.agent import CommonAgent, _PreTool
from reference_kernel.config import AskUser, Block, Modify, current_call
from reference_kernel.kernel import _normalise_output, _perf_counter

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["TOOL-001"], "three or more non-interactive calls in one response")
class AParallelInPairs(CommonAgent):
    """Seed 000: "Tool calls from one model response run in parallel, unless one of them is interactive". The
    mutant lets at most two run at once. Realistic: a concurrency limit of 2."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._slots: dict[str, anyio.Semaphore] = {}  # per turn: a delegated child has its own

    async def _execute(self, c, ctx, parent_span):
        async with self._slots.setdefault(ctx.turn.turn_id, anyio.Semaphore(2)):
            await super()._execute(c, ctx, parent_span)


@mutant(["TOOL-001"], "two non-interactive calls to the same tool in one response")
class ASameToolSequential(CommonAgent):
    """Seed 000: "Tool calls from one model response run in parallel, unless one of them is interactive" -
    calls to one tool included. The mutant holds a lock per tool name. Realistic: "a tool is not reentrant"."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._tool_locks: dict[str, anyio.Lock] = {}

    async def _execute(self, c, ctx, parent_span):
        lock = self._tool_locks.setdefault(c.name, anyio.Lock())
        async with lock:
            await super()._execute(c, ctx, parent_span)


@mutant(["TOOL-002"], "an interactive call that is not the first call of its response")
class AInteractiveOnlyIfFirst(CommonAgent):
    """Seed 000: "... unless one of them is interactive; then they run one at a time." The mutant looks only at
    the first call. Realistic: `calls[0].kind`."""

    def _sequential(self, calls):
        return bool(calls) and calls[0].entry is not None and calls[0].entry.spec.kind == "interactive"


@mutant(["TOOL-003"], "a response whose calls name tools out of alphabetical order")
class AResultsByToolName(CommonAgent):
    """Seed 000: "Results go back to the model in the order the model asked for them." The mutant hands them
    back sorted by tool name. Realistic: results gathered in a name-sorted structure."""

    async def _tool_calls(self, t, tool_calls, span, bad):
        calls = await super()._tool_calls(t, tool_calls, span, bad)
        return sorted(calls, key=lambda c: c.name)


def _pre_tool_call_with(payload_of):
    async def _pre_tool_call(self, t, c, span):
        decision = _PreTool(args=dict(c.args))

        def act(payload, outcome):
            if isinstance(outcome, Block):
                decision.block = outcome.reason
                return payload, True
            if isinstance(outcome, AskUser):
                decision.ask = outcome.prompt
            elif isinstance(outcome, Modify):
                decision.args = {**decision.args, **outcome.args}
                payload = {**payload, "args": decision.args}
            return payload, False

        await self._dispatch("pre_tool_call", payload_of(c), t.turn, span, act)
        return decision

    return _pre_tool_call


@mutant(["TOOL-005"], "a pre_tool_call hook (its payload inspected)")
class APreToolCallWithoutCallId(CommonAgent):
    """Seed 000 step 2: "Fire pre_tool_call with the tool name, arguments, risk and call id." The mutant leaves
    out the call id. Realistic."""

    _pre_tool_call = _pre_tool_call_with(
        lambda c: {"name": c.name, "args": c.args, "risk": c.entry.spec.risk if c.entry else None}
    )


@mutant(["TOOL-008"], "two calls of one tool, each getting AskUser, with different answers")
class AApprovalCachedByTool(CommonAgent):
    """Seed 000: "AskUser(prompt) → ask the approver" - for each call. The mutant remembers the first answer
    per tool for the rest of the turn. Realistic: "don't ask twice"."""

    async def _ask_approver(self, t, c, prompt):
        cache = self.__dict__.setdefault("_answers", {})
        key = (t.turn.turn_id, c.name)
        if key not in cache:
            cache[key] = await super()._ask_approver(t, c, prompt)
        return cache[key]


@mutant(["TOOL-008"], "a pre_tool_call hook returning AskUser(prompt)")
class AApproverGetsGenericPrompt(CommonAgent):
    """Seed 000: "AskUser(prompt) → ask the approver" with that prompt. The mutant asks with its own text.
    Realistic: a fixed "Allow <tool>?" question."""

    async def _ask_approver(self, t, c, prompt):
        return await super()._ask_approver(t, c, f"Allow {c.name}?")


@mutant(["TOOL-011"], "a pre_tool_call chain returning Modify(args) and AskUser, approved")
class AModifyLostOnApproval(CommonAgent):
    """Seed 000 step 3: "Modify(args) → the new arguments are merged in before the tool runs." The mutant, when
    the call also went to the approver and was approved, runs the tool with the model's arguments. Realistic:
    the approval path re-reads `call.args`."""

    async def _decide(self, t, c, span):
        original = dict(c.args) if isinstance(c.args, dict) else c.args
        ok = await super()._decide(t, c, span)
        if ok and c.approval == "approved":
            c.args = original
        return ok


@mutant(["TOOL-015"], "a failed (error) call and a transform_tool_result hook")
class ATransformSkipsErrors(CommonAgent):
    """Seed 000 step 6: "Fire transform_tool_result, which may replace the result text" - for every call. The
    mutant skips error results. Realistic: transform only 'real' output."""

    async def _dispatch(self, point, payload, turn, parent_span, on_outcome=None):
        if point == "transform_tool_result" and isinstance(payload, dict) and self._last_error:
            return payload
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)

    async def _after(self, t, c, span):
        self._last_error = c.is_error
        await super()._after(t, c, span)


@mutant(["TOOL-015"], "a transform_tool_result hook that replaces the text")
class ATransformOnlyStored(CommonAgent):
    """Seed 000 step 6: transform_tool_result "may replace the result text" - the text the model gets. The
    mutant stores the transformed text but hands the model the original. Realistic."""

    async def _after(self, t, c, span):
        original = c.content
        await super()._after(t, c, span)
        c.content = original


@mutant(["TOOL-014"], "a tool that raises")
class AToolRaiseEndsTurn(CommonAgent):
    """Seed 000 step 5: "Fire post_tool_call. It fires for blocked and failed calls too." - a failed call is a
    result, the turn goes on. The mutant lets the tool's exception end the turn. Realistic: no try/except."""

    async def _execute(self, c, ctx, parent_span):
        if c.entry is None or c.entry.spec.delegate is not None or ctx.token.cancelled or c.recheck and self._schema_error(c):
            return await super()._execute(c, ctx, parent_span)
        span = self.spans.start(c.name, "tool", parent_span, {"call_id": c.id, "name": c.name})
        started = _perf_counter()
        reset = current_call.set({"id": c.id, "name": c.name, "args": c.args})
        try:
            out = await c.entry.fn(c.args, ctx.turn)
            c.content, c.is_error = _normalise_output(out)
        finally:
            current_call.reset(reset)
            c.duration_ms = (_perf_counter() - started) * 1000.0
            self.spans.end(span, {"is_error": c.is_error})


@mutant(["TOOL-016", "JOURNAL-004"], "any tool call that runs")
class AToolCallRecordedTwice(CommonAgent):
    """Seed 000 step 7: "Store the tool call" - once. The mutant stores it when the tool returns and again at
    step 7. Realistic: two code paths each recording."""

    async def _execute(self, c, ctx, parent_span):
        await super()._execute(c, ctx, parent_span)
        await self.journal.record_tool_call(ctx.turn, self._record(c))


@mutant(["JOURNAL-004"], "any stored tool call (its duration inspected)")
class ADurationNotRecorded(CommonAgent):
    """Seed 001: "ToolCallRecord holds the call's name, arguments, result, error flag, risk, duration and
    approval." The mutant stores no duration. Realistic."""

    def _record(self, c):
        return super()._record(c).model_copy(update={"duration_ms": None})


@mutant(["BUDGET-001"], "max_iterations = N with responses holding two or more tool calls")
class ABudgetCountsToolCalls(CommonAgent):
    """Seed 000: "max_iterations caps the number of model calls in one turn." The mutant counts each tool call
    as an iteration too. Realistic: counting 'steps'."""

    async def _tool_calls(self, t, tool_calls, span, bad):
        t.iterations += max(0, len(tool_calls) - 1)
        return await super()._tool_calls(t, tool_calls, span, bad)


@mutant(["BUDGET-001"], "max_iterations = N with a model that always asks for tools")
class ABudgetSkipsLastTools(CommonAgent):
    """Seed 000 loop: "Stop if the iteration budget is spent" is checked at the top; the last call's tools
    still run ("Otherwise run the tool calls and loop again"). The mutant does not run the tools of the
    last allowed call. Realistic: checking the budget right after the model call."""

    async def _tool_calls(self, t, tool_calls, span, bad):
        if t.iterations >= self.profile.max_iterations:
            calls = [self._prepare(i, call, bad, check_schema=False) for i, call in enumerate(tool_calls)]
            for c in calls:
                c.fail("Not run: iteration budget spent")
            return calls
        return await super()._tool_calls(t, tool_calls, span, bad)
