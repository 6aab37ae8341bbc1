"""Commonagent profile (000): the turn loop, session hooks, prompt and storage (TURN)."""
from __future__ import annotations

import anyio

from reference_kernel.agent import ERROR, CommonAgent

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["TURN-002"], "two overlapping (concurrent) messages to the same session")
class ANoSessionLock(CommonAgent):
    """Seed 000 step 1: "Take the session lock. Only one turn runs per session at a time. A second message to
    the same session waits." The mutant creates a new lock per call, so nothing waits. Realistic: a lock
    created locally instead of looked up per session."""

    def _session_lock(self, session_id):
        return anyio.Lock()


class _ReversedHistoryJournal:
    def __init__(self, inner):
        self._inner = inner

    async def load_history(self, session_id):
        return list(reversed(await self._inner.load_history(session_id)))

    def __getattr__(self, name):
        return getattr(self._inner, name)


@mutant(["TURN-003"], "a second turn in a session (history of >= 2 messages)")
class AHistoryNewestFirst(CommonAgent):
    """Seed 000 step 2: "The session's active messages are loaded, oldest first." The mutant loads them newest
    first. Realistic: `ORDER BY created DESC` as for a UI listing."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.journal = _ReversedHistoryJournal(self.journal)


@mutant(["TURN-009"], "a second turn in the same session")
class AOnSessionStartEveryTurn(CommonAgent):
    """Seed 000 step 4: "on_session_start fires if the session is new." The mutant fires it on every turn.
    Realistic: 003's session-start semantics leaking in."""

    async def _session_hooks(self, t, is_new, text):
        await super()._session_hooks(t, True, text)


@mutant(["TURN-010"], "a turn that makes two or more model calls (tools, then answer)")
class APreLlmCallPerIteration(CommonAgent):
    """Seed 000 step 4: "pre_llm_call fires once per turn." The mutant fires it before every model call.
    Realistic: putting the hook inside the loop next to pre_api_request."""

    async def _iteration(self, t, span):
        if t.iterations > 0:
            await self._dispatch("pre_llm_call", {"session_id": t.turn.session_id, "user_message": t.history[t.user_index].get("text")}, t.turn, span)
        return await super()._iteration(t, span)


@mutant(["TURN-012"], "a pre_llm_call hook that returns context")
class AContextStored(CommonAgent):
    """Seed 000 step 4: "Context it returns is put in front of the user message for the model only; it is never
    stored." The mutant stores the context as a user message in the journal. Realistic: persisting every
    message the model saw."""

    async def _session_hooks(self, t, is_new, text):
        await super()._session_hooks(t, is_new, text)
        for c in t.context:
            await self.journal.append_message(t.turn, c)


@mutant(["TURN-011"], "a pre_llm_call hook that returns context")
class AContextAfterUser(CommonAgent):
    """Seed 000 step 4: context "is put in front of the user message". The mutant appends it after the user
    message. Realistic: `messages.extend(context)` at the end."""

    def _request(self, t):
        req = super()._request(t)
        if t.context:
            msgs = [m for m in req["messages"] if not any(m is c for c in t.context)]
            pos = 1 + t.user_index + 1  # system + history before + user
            req["messages"] = msgs[:pos] + list(t.context) + msgs[pos:]
        return req


@mutant(["TURN-014"], "a failing model call")
class APostApiRequestOnError(CommonAgent):
    """Seed 000 step 5: "pre_api_request → model call → post_api_request. On failure: api_request_error, then
    transform_api_error_classification." The mutant fires post_api_request for failed calls too (in a
    finally block). Realistic."""

    async def _api_error(self, t, exc, span):
        await self._dispatch("post_api_request", {"message": None, "usage": None}, t.turn, span)
        await super()._api_error(t, exc, span)


@mutant(["TURN-015", "MSG-006"], "a turn with tool calls")
class AToolCallMessagesNotStored(CommonAgent):
    """Seed 000 step 5: "Store the assistant message." (every one). The mutant stores only assistant messages
    without tool calls (keeps the others in memory). Realistic: storing only "real" answers."""

    async def _store(self, t, message):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            t.history.append(message)
            return
        await super()._store(t, message)


@mutant(["TURN-017"], "a transform_llm_output hook that replaces the text")
class AReplyUntransformed(CommonAgent):
    """Seed 000 step 5: "No tool calls? Run transform_llm_output and post_llm_call, and finish." The turn's reply is
    the transformed output. The mutant returns the model's original text as the reply. Realistic."""

    async def _final_answer(self, t, message, span):
        await super()._final_answer(t, message, span)
        t.reply = message.get("text", "")


@mutant(["TURN-020"], "a turn ending with status error (failed model call or raising hook)")
class ANoSessionEndOnError(CommonAgent):
    """Seed 000 step 6: "on_session_end fires at the end of every turn". The mutant skips it when the turn
    ended in error. Realistic: the error path returns early."""

    async def _finish(self, t):
        if t.status == ERROR:
            await self._finish_turn(t)
            return
        await super()._finish(t)
