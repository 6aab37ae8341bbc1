"""Mutants of 000's turn loop (TURN-*), tool calls (TOOL-*) and iteration budget (BUDGET-*)."""

from __future__ import annotations

from typing import Any

import anyio

from conformance.boundary.adapter import Doubles, RunResult
from conformance.boundary.scenario import Scenario
from conformance.selftest.registry import mutant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import BUDGET_EXHAUSTED, ERROR, CommonAgent


class _Edit(CommonAgent):
    """Base: change the payload (or skip the dispatch, by returning None) at one hook point."""

    point = ""

    def edit(self, payload: Any) -> Any:
        return payload

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        if point == self.point:
            edited = self.edit(payload)
            if edited is None:
                return payload
            payload = edited
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


# ------------------------------------------------------------------ the turn


@mutant("TURN-001")
class ReplyNotReturned(CommonAgent):
    """The final text is stored but the turn returns no reply."""

    async def _final_answer(self, t: Any, message: dict[str, Any], span: str) -> None:
        await super()._final_answer(t, message, span)
        t.reply = None


@mutant("TURN-002")
class NoSessionLock(CommonAgent):
    """No per-session lock: two messages to one session run their turns at the same time."""

    def _session_lock(self, session_id: str) -> anyio.Lock:
        return anyio.Lock()


class _NewestFirst:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        return list(reversed(await self._inner.load_history(session_id)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@mutant("TURN-003")
class HistoryNewestFirst(CommonAgent):
    """The stored history is loaded newest first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.journal = _NewestFirst(self.journal)


@mutant("TURN-004")
class UserMessageStoredLast(CommonAgent):
    """The user message is stored only when the turn finishes, after what the turn produced."""

    async def _store(self, t: Any, message: dict[str, Any]) -> None:
        if message.get("role") == "user" and len(t.history) == t.user_index:
            t.history.append(message)
            self.__dict__.setdefault("_held", {})[t.turn.turn_id] = message
            return
        await super()._store(t, message)

    async def _finish(self, t: Any) -> None:
        held = self.__dict__.get("_held", {}).pop(t.turn.turn_id, None)
        if held is not None:
            await self.journal.append_message(t.turn, held)
        await super()._finish(t)


@mutant("TURN-005")
class SystemPromptFirstCallOnly(CommonAgent):
    """Only the turn's first model request carries the system prompt."""

    def _request(self, t: Any) -> dict[str, Any]:
        request = super()._request(t)
        if t.iterations > 0:
            request["messages"] = request["messages"][1:]
        return request


@mutant("TURN-009")
class SessionStartEveryTurn(CommonAgent):
    """on_session_start fires on every turn."""

    async def _session_hooks(self, t: Any, is_new: bool, text: str) -> None:
        await super()._session_hooks(t, True, text)


@mutant("TURN-010")
class PreLlmCallEveryIteration(CommonAgent):
    """pre_llm_call fires before every model call, not once per turn."""

    async def _iteration(self, t: Any, span: str) -> bool:
        if t.iterations > 0:
            await self._dispatch("pre_llm_call", {"session_id": t.turn.session_id, "user_message": t.history[t.user_index].get("text")}, t.turn, span)
        return await super()._iteration(t, span)


@mutant("TURN-011")
class ContextAfterUserMessage(CommonAgent):
    """pre_llm_call's context is placed after the history instead of before the user message."""

    def _request(self, t: Any) -> dict[str, Any]:
        context, t.context = t.context, []
        try:
            request = super()._request(t)
        finally:
            t.context = context
        request["messages"].extend(context)
        return request


@mutant("TURN-012")
class ContextStored(CommonAgent):
    """pre_llm_call's context is stored with the conversation."""

    async def _session_hooks(self, t: Any, is_new: bool, text: str) -> None:
        await super()._session_hooks(t, is_new, text)
        for message in t.context:
            await self.journal.append_message(t.turn, message)


@mutant("TURN-013")
class PreApiRequestOnce(CommonAgent):
    """pre_api_request fires only before the first model call of a turn."""

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        if point == "pre_api_request":
            seen = self.__dict__.setdefault("_pre_api", set())
            if turn.turn_id in seen:
                return payload
            seen.add(turn.turn_id)
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


@mutant("TURN-014")
class ErrorClassifiedFirst(CommonAgent):
    """transform_api_error_classification fires before api_request_error."""

    async def _api_error(self, t: Any, exc: Any, span: str) -> None:
        out = await self._dispatch(
            "transform_api_error_classification", {"status": exc.status, "message": exc.message, "classification": "unknown"}, t.turn, span
        )
        await self._dispatch("api_request_error", {"status": exc.status, "message": exc.message}, t.turn, span)
        classification = out.get("classification") if isinstance(out, dict) else out
        t.status, t.error = ERROR, f"{classification}: {exc.message}"


@mutant("TURN-015")
class ToolAskingMessagesNotStored(CommonAgent):
    """Assistant messages that ask for tools are kept in memory but not stored."""

    async def _store(self, t: Any, message: dict[str, Any]) -> None:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            t.history.append(message)
            return
        await super()._store(t, message)


@mutant("TURN-016")
class PostLlmCallBeforeTransform(CommonAgent):
    """post_llm_call fires before transform_llm_output."""

    async def _final_answer(self, t: Any, message: dict[str, Any], span: str) -> None:
        await self._dispatch("post_llm_call", {"text": message.get("text", "")}, t.turn, span)
        out = await self._dispatch("transform_llm_output", {"text": message.get("text", "")}, t.turn, span)
        text = out.get("text") if isinstance(out, dict) else out
        t.reply, t.status = "" if text is None else str(text), "completed"


@mutant("TURN-017")
class ReplyUntransformed(CommonAgent):
    """The reply is the model's text, not what transform_llm_output returned."""

    async def _final_answer(self, t: Any, message: dict[str, Any], span: str) -> None:
        await super()._final_answer(t, message, span)
        t.reply = message.get("text", "")


@mutant("TURN-018")
class NoModelCallAfterTools(CommonAgent):
    """After running the tools the turn ends with the assistant's text instead of calling the model again."""

    async def _iteration(self, t: Any, span: str) -> bool:
        done = await super()._iteration(t, span)
        if not done:
            asked = next((m for m in reversed(t.history) if m.get("role") == "assistant"), {})
            t.reply = asked.get("text", "")
        return True


@mutant("TURN-019")
class PreLlmCallBeforeSessionStart(CommonAgent):
    """pre_llm_call fires before on_session_start."""

    async def _session_hooks(self, t: Any, is_new: bool, text: str) -> None:
        await super()._session_hooks(t, False, text)
        if is_new:
            await self._dispatch("on_session_start", {"session_id": t.turn.session_id}, t.turn, t.span)


@mutant("TURN-020")
class SessionEndOnlyWhenCompleted(CommonAgent):
    """on_session_end fires only for completed turns."""

    async def _finish(self, t: Any) -> None:
        if t.status == "completed":
            await super()._finish(t)
        else:
            await self._finish_turn(t)


@mutant("TURN-020")
class SessionEndBeforeStatusStored(CommonAgent):
    """on_session_end fires with the final status in its payload, and only then is the status
    stored (000: "The final status is stored, then on_session_end fires"). The old TURN-020 check
    compared the payload's status with the stored one and let it through; the ordered log of
    journal writes and hook dispatches shows the finish_turn write after the dispatch."""

    async def _finish(self, t: Any) -> None:
        if t.status == "interrupted":
            await self._dispatch("agent_loop_stopped", {"reason": "cancelled"}, t.turn, t.span)
        await self._dispatch("on_session_end", {"session_id": t.turn.session_id, "status": t.status}, t.turn, t.span)
        await self._finish_turn(t)


@mutant("TAG-007")
class SystemTextNamesTheClient(CommonAgent):
    """The loop gives tags a meaning: a ``client:`` tag adds a line to the system prompt. The old
    TAG-007 check left system messages out of the comparison and let it through; requests are now
    compared whole, tag strings and ids masked."""

    def _system_text(self, session_id: str) -> str:
        text = super()._system_text(session_id)
        clients = [t for t in self._session_tags.get(session_id) or [] if t.startswith("client:")]
        return text + ("\n\nPriority support for this client." if clients else "")


# ------------------------------------------------------------------ tool calls


@mutant("TOOL-001")
class ToolsAlwaysSequential(CommonAgent):
    """Tool calls always run one at a time."""

    def _sequential(self, calls: list[Any]) -> bool:
        return True


@mutant("TOOL-002")
class InteractiveCallsInParallel(CommonAgent):
    """Tool calls run in parallel even when one is interactive."""

    def _sequential(self, calls: list[Any]) -> bool:
        return False


@mutant("TOOL-003", profile="commonagent")
class AgentResultsInFinishingOrder(CommonAgent):
    """Tool results go back in the order the calls finished."""

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        await super()._execute(c, ctx, parent_span)
        self.__dict__.setdefault("_finished", []).append(id(c))

    async def _tool_calls(self, t: Any, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]) -> list[Any]:
        calls = await super()._tool_calls(t, tool_calls, span, bad)
        done = self.__dict__.get("_finished", [])
        return sorted(calls, key=lambda c: done.index(id(c)) if id(c) in done else -1)


@mutant("TOOL-004")
class ToolByPosition(CommonAgent):
    """Each call runs the tool registered at the call's position, not the one it names."""

    def _prepare(self, index: int, call: dict[str, Any], bad: dict[str, str], check_schema: bool = True) -> Any:
        c = super()._prepare(index, call, bad, check_schema)
        entries = list(self._tools.values())
        if c.entry is not None and len(entries) > 1:
            c.entry = entries[index % len(entries)]
        return c


class _PreToolNoRisk(_Edit):
    point = "pre_tool_call"

    def edit(self, payload: Any) -> Any:
        return {k: v for k, v in payload.items() if k != "risk"}


@mutant("TOOL-005")
class PreToolCallWithoutRisk(_PreToolNoRisk):
    """pre_tool_call's payload lacks the tool's risk."""


@mutant("TOOL-006")
class BlockStillRuns(CommonAgent):
    """A blocked call's tool still runs (its result is then replaced by the Blocked text)."""

    async def _decide(self, t: Any, c: Any, span: str) -> bool:
        go = await super()._decide(t, c, span)
        if not go and c.content is not None and c.content.startswith("Blocked:"):
            text = c.content
            c.content = None
            await self._execute(c, t, span)
            c.content, c.is_error = text, True
        return go


@mutant("TOOL-007")
class BlockedWording(CommonAgent):
    """A blocked call's result says `Blocked by hook: <reason>`."""

    async def _decide(self, t: Any, c: Any, span: str) -> bool:
        go = await super()._decide(t, c, span)
        if c.content is not None and c.content.startswith("Blocked: "):
            c.content = "Blocked by hook: " + c.content.removeprefix("Blocked: ")
        return go


@mutant("TOOL-008")
class AskUserIgnored(CommonAgent):
    """AskUser is ignored: the tool runs without asking the approver."""

    async def _ask_approver(self, t: Any, c: Any, prompt: str) -> str:
        return "approved"


@mutant("TOOL-009")
class NotApprovedWording(CommonAgent):
    """A denied call's result says `Not approved: denied`."""

    async def _decide(self, t: Any, c: Any, span: str) -> bool:
        go = await super()._decide(t, c, span)
        if c.content == "Not approved (denied)":
            c.content = "Not approved: denied"
        return go


@mutant("TOOL-010")
class TimeoutCountsAsDenied(CommonAgent):
    """An approver timeout is reported as a denial."""

    async def _ask_approver(self, t: Any, c: Any, prompt: str) -> str:
        decision = await super()._ask_approver(t, c, prompt)
        return "denied" if decision == "timed_out" else decision


@mutant("TOOL-011")
class ModifyReplacesArgs(CommonAgent):
    """Modify(args) replaces the model's arguments instead of merging over them."""

    async def _pre_tool_call(self, t: Any, c: Any, span: str) -> Any:
        decision = await super()._pre_tool_call(t, c, span)
        modified = {k: v for k, v in decision.args.items() if k not in c.args or c.args[k] != v}
        if modified:
            decision.args = modified
        return decision


# PostToolCallWithoutResult (a post_tool_call payload without the result) was dropped: 000 gives
# post_tool_call no payload (reading post-tool-call-payload), so it breaks no rule.


@mutant("TOOL-012")
class PostToolCallOncePerDistinctCall(CommonAgent):
    """post_tool_call fires once per distinct (name, args) of a response: identical calls share
    one dispatch. The old TOOL-012 scenario (two calls with different args, matched by payload)
    let it through; the identical-calls scenario counts one dispatch per call."""

    async def _after(self, t: Any, c: Any, span: str) -> None:
        seen = self.__dict__.setdefault("_post_seen", set())
        key = (t.turn.turn_id, t.iterations, c.name, repr(c.args))
        if key in seen:
            original = self._dispatch

            async def skip_post(point: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
                if point == "post_tool_call":
                    return payload
                return await original(point, payload, *args, **kwargs)

            self._dispatch = skip_post  # type: ignore[method-assign]
            try:
                await super()._after(t, c, span)
            finally:
                del self._dispatch
            return
        seen.add(key)
        await super()._after(t, c, span)


@mutant("TOOL-013")
class PostToolCallSkippedWhenBlocked(_Edit):
    """post_tool_call is not dispatched for a blocked call."""

    point = "post_tool_call"

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        if point == self.point and str(payload.get("result") or "").startswith("Blocked:"):
            return payload
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


@mutant("TOOL-014")
class PostToolCallSkippedWhenFailed(_Edit):
    """post_tool_call is not dispatched for a call whose tool failed."""

    point = "post_tool_call"

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        result = str(payload.get("result") or "") if point == self.point else ""
        if point == self.point and payload.get("is_error") and not result.startswith(("Blocked:", "Not approved")):
            return payload
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


@mutant("TOOL-015")
class TransformToolResultIgnored(CommonAgent):
    """transform_tool_result fires but the model gets the original result."""

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        out = await super()._dispatch(point, payload, turn, parent_span, on_outcome)
        return payload if point == "transform_tool_result" else out


class _SkipBlockedRecords:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def record_tool_call(self, turn: Any, record: Any) -> None:
        if record.result.startswith(("Blocked:", "Not approved")):
            return
        await self._inner.record_tool_call(turn, record)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@mutant("TOOL-016")
class BlockedCallsNotRecorded(CommonAgent):
    """Only calls that ran are recorded; blocked and refused ones are not."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.journal = _SkipBlockedRecords(self.journal)


@mutant("TOOL-017")
class ApprovalNotRecorded(CommonAgent):
    """The approver's decision is not recorded with the call."""

    def _record(self, c: Any) -> Any:
        return super()._record(c).model_copy(update={"approval": None})


# ------------------------------------------------------------------ iteration budget


@mutant("BUDGET-001")
class OneIterationTooMany(CommonAgent):
    """max_iterations allows one more model call than configured."""

    def _should_stop(self, t: Any) -> bool:
        t.iterations -= 1
        try:
            return super()._should_stop(t)
        finally:
            t.iterations += 1


@mutant("BUDGET-002")
class ExhaustedIsError(CommonAgent):
    """A turn out of iterations ends with status error."""

    def _should_stop(self, t: Any) -> bool:
        stop = super()._should_stop(t)
        if t.status == BUDGET_EXHAUSTED:
            t.status = ERROR
        return stop


class _IterationDefault(ReferenceAdapter):
    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        if scenario.bounds.max_iterations is None:
            bounds = scenario.bounds.model_copy(update={"max_iterations": 50})
            scenario = scenario.model_copy(update={"bounds": bounds})
        return await super().run(scenario, doubles)


@mutant("BUDGET-003", profile="commonagent")
class DefaultIterationsFifty(_IterationDefault):
    """max_iterations defaults to 50 (the example config value) instead of 500."""


@mutant("BUDGET-004", also_expected=("BUDGET-001", "BUDGET-002", "BUDGET-005"))
class ConfiguredIterationsIgnored(CommonAgent):
    """The profile's max_iterations is ignored: always 500."""

    def __init__(self, profile: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(profile.model_copy(update={"max_iterations": 500}), *args, **kwargs)


@mutant("BUDGET-005")
class IterationsNotReset(CommonAgent):
    """The iteration count goes on across the turns of a session instead of restarting."""

    def _should_stop(self, t: Any) -> bool:
        base = self.__dict__.setdefault("_base", {})
        used = self.__dict__.setdefault("_used", {})
        start = base.setdefault(t.turn.turn_id, used.get(t.turn.session_id, 0))
        used[t.turn.session_id] = start + t.iterations
        t.iterations += start
        try:
            return super()._should_stop(t)
        finally:
            t.iterations -= start

