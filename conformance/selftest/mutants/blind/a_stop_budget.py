"""Commonagent profile (000): stopping a turn (STOP) and the iteration budget (BUDGET)."""
from __future__ import annotations

from reference_kernel.agent import BUDGET_EXHAUSTED, COMPLETED, INTERRUPTED, CommonAgent
from reference_kernel.cancel import CancellationToken, Cancelled
from reference_kernel.kernel import LoopCore

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["STOP-003"], "a model call cancelled mid-stream after some text chunks")
class APartialSavedOnCancel(CommonAgent):
    """Seed 000: "Nothing partial is saved from a cancelled model call." The mutant stores the text streamed so
    far as an assistant message when the call is cancelled. Realistic: "don't lose the user's partial
    answer"."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._partial: dict[str, list] = {}

    async def _accumulate(self, turn, request, ledger_key):
        texts = self._partial.setdefault(turn.turn_id, [])
        texts.clear()
        stream = self.provider.stream(request, turn) if self._stream_takes_turn else self.provider.stream(request)
        provider = self.provider

        class _Tee:
            accepts_turn = True

            def stream(self_inner, req, tr=None):
                async def gen():
                    async for chunk in stream:
                        if chunk.get("type") == "text":
                            texts.append(chunk.get("text") or "")
                        yield chunk
                return gen()

        self.provider = _Tee()
        try:
            return await LoopCore._accumulate(self, turn, request, ledger_key)
        finally:
            self.provider = provider

    async def _iteration(self, t, span):
        try:
            return await super()._iteration(t, span)
        except Cancelled:
            texts = self._partial.get(t.turn.turn_id)
            if texts:
                await self._store(t, {"role": "assistant", "text": "".join(texts)})
            raise


@mutant(["STOP-005"], "a cancelled turn with agent_loop_stopped and on_session_end hooks")
class AStoppedAfterSessionEnd(CommonAgent):
    """Seed 000 step 6: "After an interrupt, agent_loop_stopped fires. The final status is stored, then
    on_session_end fires." The mutant fires agent_loop_stopped after on_session_end. Realistic: the loop
    notifies "stopped" from its outermost finally."""

    async def _finish(self, t):
        await self._finish_turn(t)
        await self._dispatch("on_session_end", {"session_id": t.turn.session_id, "status": t.status}, t.turn, t.span)
        if t.status == INTERRUPTED:
            await self._dispatch("agent_loop_stopped", {"reason": "cancelled"}, t.turn, t.span)


@mutant(["STOP-006"], "cancelling the parent turn while a child agent runs")
class AChildTokenFresh(CommonAgent):
    """Seed 000: "Child agents get a child token, so stopping the parent stops its children too." The mutant gives
    the child a fresh token. Realistic."""

    async def _delegate(self, c, t, span):
        refused = self._child_allowed(t.turn.depth)
        if refused:
            return refused, True
        goal = self._goal(c.args)
        session_id = await self.new_session(goal, t.turn.tags, source="subagent", parent_session_id=t.turn.session_id, title=goal)
        self._fresh.discard(session_id)
        child = t.turn.child(session_id, self.ids())
        result = await self._turn(child, goal, CancellationToken(), True, span)
        if result.status != COMPLETED:
            return f"Sub-agent {result.status}: {result.error or ''}".rstrip(": "), True
        return result.reply or "", False


@mutant(["STOP-004", "JOURNAL-005"], "a cancelled turn (stored status inspected)")
class ACancelledStoredDifferently(CommonAgent):
    """Seed 000: "The turn ends with status interrupted" - the final status is stored (step 6). The mutant
    reports interrupted but stores `cancelled`. Realistic: two status enums, API vs storage."""

    async def _finish_turn(self, t):
        if t.status == INTERRUPTED:
            try:
                await self.journal.finish_turn(t.turn, "cancelled")
            except Exception as exc:
                t.error = f"journal: {exc}"
            return
        await super()._finish_turn(t)


@mutant(["BUDGET-001"], "max_iterations = N with a model that always asks for tools")
class ABudgetOffByOne(CommonAgent):
    """Seed 000: "max_iterations caps the number of model calls in one turn." The mutant allows one more model
    call (`>` instead of `>=`). Realistic off-by-one."""

    def _should_stop(self, t):
        t.token.check()
        if t.iterations > self.profile.max_iterations:
            t.status = BUDGET_EXHAUSTED
            return True
        return False


@mutant(["BUDGET-005"], "a second turn in a session after a turn that used iterations")
class ABudgetPerSession(CommonAgent):
    """Seed 000: "max_iterations caps the number of model calls in one turn." The mutant counts iterations per
    session, across turns. Realistic: the counter kept on the session object."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._used: dict[str, int] = {}
        self._base: dict[str, int] = {}

    def _should_stop(self, t):
        t.token.check()
        sid = t.turn.session_id
        if self._base.get(t.turn.turn_id) is None:
            self._base[t.turn.turn_id] = self._used.get(sid, 0)
        self._used[sid] = self._base[t.turn.turn_id] + t.iterations
        if self._used[sid] >= self.profile.max_iterations:
            t.status = BUDGET_EXHAUSTED
            return True
        return False


@mutant(["BUDGET-003"], "a turn needing more than 90 model calls with max_iterations not configured")
class ABudgetDefault90(CommonAgent):
    """Seed 000: "The default is 500, as in Hermes." The mutant defaults to 90 (Hermes' own current default).
    Realistic: copying the number from Hermes' source."""

    def _should_stop(self, t):
        t.token.check()
        cap = 90 if self.profile.max_iterations == 500 else self.profile.max_iterations
        if t.iterations >= cap:
            t.status = BUDGET_EXHAUSTED
            return True
        return False
