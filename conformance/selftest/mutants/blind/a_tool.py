"""Commonagent profile (000): tool calls, pre/post tool hooks and approvals (TOOL)."""
from __future__ import annotations

import itertools

from reference_kernel.agent import CommonAgent, _PreTool
from reference_kernel.config import AskUser, Block, Modify

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["TOOL-001"], "two or more non-interactive calls in one response")
class AAlwaysSequential(CommonAgent):
    """Seed 000: "Tool calls from one model response run in parallel, unless one of them is interactive". The
    mutant always runs them one at a time. Realistic: the simple, safe loop."""

    def _sequential(self, calls):
        return True


@mutant(["TOOL-002"], "an interactive call together with other calls in one response")
class AParallelDespiteInteractive(CommonAgent):
    """Seed 000: "... unless one of them is interactive; then they run one at a time." The mutant runs them in
    parallel anyway. Realistic: forgetting the interactive exception."""

    def _sequential(self, calls):
        return False


@mutant(["TOOL-003"], "parallel calls finishing in an order different from the order asked")
class AResultsCompletionOrder(CommonAgent):
    """Seed 000: "Results go back to the model in the order the model asked for them." The mutant returns them
    in completion order. Realistic: collecting results as tasks finish (as_completed)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._tick = itertools.count()
        self._done_at: dict[int, int] = {}

    async def _execute(self, c, ctx, parent_span):
        try:
            await super()._execute(c, ctx, parent_span)
        finally:
            self._done_at[id(c)] = next(self._tick)

    async def _tool_calls(self, t, tool_calls, span, bad):
        calls = await super()._tool_calls(t, tool_calls, span, bad)
        return sorted(calls, key=lambda c: self._done_at.pop(id(c), -1))


@mutant(["TOOL-007"], "a pre_tool_call hook returning Block(reason)")
class ABlockedTextPrefix(CommonAgent):
    """Seed 000: "Block(reason) → the tool does not run. The model gets Blocked: <reason> as an error result."
    The mutant words it "Blocked by hook: <reason>". Realistic: a more descriptive message."""

    async def _decide(self, t, c, span):
        ok = await super()._decide(t, c, span)
        if c.content is not None and c.content.startswith("Blocked: "):
            c.content = "Blocked by hook: " + c.content[len("Blocked: "):]
        return ok


def _pre_tool_call_factory(merge):
    async def _pre_tool_call(self, t, c, span):
        decision = _PreTool(args=dict(c.args))
        risk = c.entry.spec.risk if c.entry else None

        def act(payload, outcome):
            if isinstance(outcome, Block):
                decision.block = outcome.reason
                return payload, True
            if isinstance(outcome, AskUser):
                decision.ask = outcome.prompt
            elif isinstance(outcome, Modify):
                decision.args = merge(c.args, decision.args, outcome.args)
                payload = {**payload, "args": decision.args}
            return payload, False

        await self._dispatch("pre_tool_call", {"name": c.name, "args": c.args, "risk": risk, "call_id": c.id}, t.turn, span, act)
        return decision

    return _pre_tool_call


@mutant(["TOOL-011"], "Modify(args) giving only some of the arguments")
class AModifyReplaces(CommonAgent):
    """Seed 000: "Modify(args) → the new arguments are merged in before the tool runs." The mutant replaces the
    arguments with the Modify's. Realistic: `args = outcome.args`."""

    _pre_tool_call = _pre_tool_call_factory(lambda orig, cur, new: dict(new))


@mutant(["TOOL-011"], "two pre_tool_call hooks each returning Modify with different keys")
class AModifyChainFromOriginal(CommonAgent):
    """Seed 000: "Modify(args) → the new arguments are merged in". With a chain of two Modify hooks, the mutant
    merges each over the model's original arguments, losing the first hook's change. Realistic: merging into
    `call.args` rather than the running args."""

    _pre_tool_call = _pre_tool_call_factory(lambda orig, cur, new: {**orig, **new})


@mutant(["TOOL-010"], "an approver that times out")
class ATimedOutAsDenied(CommonAgent):
    """Seed 000: "Anything but approval gives the model Not approved (denied) or Not approved (timed_out)." The
    mutant collapses every non-approval to denied. Realistic: a boolean approve/deny API."""

    async def _ask_approver(self, t, c, prompt):
        r = await super()._ask_approver(t, c, prompt)
        return r if r == "approved" else "denied"


@mutant(["TOOL-013"], "a call blocked by pre_tool_call")
class ANoPostToolCallForBlocked(CommonAgent):
    """Seed 000 step 5: "Fire post_tool_call. It fires for blocked and failed calls too." The mutant skips it for
    blocked calls. Realistic: post hook only for calls that ran."""

    async def _dispatch(self, point, payload, turn, parent_span, on_outcome=None):
        if point == "post_tool_call" and isinstance(payload, dict) and str(payload.get("result") or "").startswith("Blocked: "):
            return payload
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


@mutant(["TOOL-015"], "both post_tool_call and transform_tool_result hooks registered")
class ATransformBeforePost(CommonAgent):
    """Seed 000 steps 5-6: "Fire post_tool_call ... Fire transform_tool_result". The mutant fires
    transform_tool_result first. Realistic: transforming before notifying."""

    async def _after(self, t, c, span):
        out = await self._dispatch("transform_tool_result", {"name": c.name, "call_id": c.id, "result": c.content}, t.turn, span)
        if isinstance(out, dict):
            out = out.get("result", out.get("text", out.get("content", c.content)))
        new = "" if out is None else str(out)
        await self._dispatch("post_tool_call", {"name": c.name, "args": c.args, "call_id": c.id, "result": c.content, "is_error": c.is_error}, t.turn, span)
        c.content = new
        await self.journal.record_tool_call(t.turn, self._record(c))


@mutant(["TOOL-016", "JOURNAL-004"], "a blocked call")
class ABlockedNotRecorded(CommonAgent):
    """Seed 000 step 7: "Store the tool call, and its approval if there was one" - for every call, and blocked
    calls go through steps 5-7 too. The mutant stores only calls whose tool ran. Realistic."""

    async def _after(self, t, c, span):
        if c.content is not None and c.content.startswith("Blocked: ") and c.duration_ms == 0.0:
            rec = self.journal.record_tool_call

            async def skip(*a, **k):
                return None

            self.journal.record_tool_call = skip
            try:
                await super()._after(t, c, span)
            finally:
                self.journal.record_tool_call = rec
            return
        await super()._after(t, c, span)


@mutant(["TOOL-017", "JOURNAL-004"], "a call that goes to the approver")
class AApprovalNotRecorded(CommonAgent):
    """Seed 000 step 7: "Store the tool call, and its approval if there was one." The mutant stores the call
    without its approval. Realistic: the record built before the approval is known."""

    def _record(self, c):
        return super()._record(c).model_copy(update={"approval": None})
