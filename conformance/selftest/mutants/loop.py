"""Mutants of 003's RunTurn steps (LOOP-*) and its spans (SPAN-*), on the kernel face."""

from __future__ import annotations

import json
from typing import Any

from conformance.selftest.mutants._util import DroppingSpans, ReorderedHooks
from conformance.selftest.registry import mutant
from reference_kernel.kernel import SUCCESS, Kernel


@mutant("LOOP-001")
class ContextAssembleFirstTurnOnly(Kernel):
    """context-assemble dispatched on the first turn only (later turns reuse the history)."""

    async def _context_assemble(self, run: Any) -> Any:
        if run.turns_used == 0:
            return await super()._context_assemble(run)
        return {"history": run.history, "budget": {}}


@mutant("LOOP-002")
class PreModelCallGetsRawHistory(Kernel):
    """pre-model-call gets the live history, not the context-assemble chain's output."""

    async def _pre_model_call(self, run: Any, payload: Any, limit: str | None) -> dict[str, Any]:
        return await super()._pre_model_call(run, {"history": run.history, "budget": payload.get("budget") if isinstance(payload, dict) else {}}, limit)


@mutant("LOOP-003")
class RequestIgnoresPreModelCallHistory(Kernel):
    """The request is built from the live history, whatever the pre-model-call chain returned."""

    def _build_request(self, run: Any, out: Any, limit: str | None) -> dict[str, Any]:
        out = dict(out) if isinstance(out, dict) else {}
        out["payload"] = None
        return super()._build_request(run, out, limit)


@mutant("LOOP-004")
class PostModelResponseAfterTools(Kernel):
    """post-model-response dispatched after the tool calls instead of before them."""

    async def _post_model_response(self, run: Any, message: dict[str, Any]) -> dict[str, Any]:
        if not message.get("tool_calls"):
            return await super()._post_model_response(run, message)
        self._deferred = message
        return message

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        terminal = await super()._post_tool_calls(run, calls)
        await super()._post_model_response(run, self._deferred)
        return terminal


@mutant("LOOP-004")
class PostModelResponseSeesTextOnly(Kernel):
    """post-model-response gets the message without its tool_use blocks (the kernel acts on the whole one)."""

    async def _post_model_response(self, run: Any, message: dict[str, Any]) -> dict[str, Any]:
        shown = {k: v for k, v in message.items() if k != "tool_calls"}
        out = await self._dispatch("post-model-response", shown, run.turn, run.turn_span)
        return message if out is shown or not isinstance(out, dict) else out


@mutant("LOOP-005")
class ActsOnOriginalMessage(Kernel):
    """post-model-response is dispatched but its replacement is ignored."""

    async def _post_model_response(self, run: Any, message: dict[str, Any]) -> dict[str, Any]:
        await super()._post_model_response(run, message)
        return message


@mutant("LOOP-006")
class PlanReadyOnEveryTurn(Kernel):
    """plan-ready (with an empty plan) dispatched on a turn without tool_use blocks too."""

    async def _append_done(self, run: Any, message: dict[str, Any], limit: str | None) -> None:
        await self._plan_ready(run, {"items": []})
        await super()._append_done(run, message, limit)


@mutant("LOOP-007")
class PreToolCallsReversed(Kernel):
    """pre-tool-call dispatched in reverse declaration order."""

    async def _dispatch_pre_tool_calls(self, run: Any, tool_calls: list[dict[str, Any]]) -> None:
        await super()._dispatch_pre_tool_calls(run, list(reversed(tool_calls)))


@mutant("LOOP-007")
class PreToolCallPerCallJustBeforeIt(Kernel):
    """pre-tool-call of each call dispatched right before that call runs (not all up front)."""

    async def _dispatch_pre_tool_calls(self, run: Any, tool_calls: list[dict[str, Any]]) -> None:
        return None

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        await self._dispatch("pre-tool-call", {"id": c.id, "name": c.name, "args": c.call.get("args")}, ctx.turn, parent_span)
        await super()._execute(c, ctx, parent_span)


@mutant("LOOP-008")
class InteractiveBeforeDataSources(Kernel):
    """Interactive calls (step 9b) run before the data-source calls (step 9)."""

    async def _execute_data_sources(self, run: Any, calls: list[Any]) -> None:
        self._later = calls

    async def _execute_interactive(self, run: Any, calls: list[Any]) -> None:
        await super()._execute_interactive(run, calls)
        await super()._execute_data_sources(run, self._later)


@mutant("LOOP-009")
class PlanReadySkippedWhenEmpty(Kernel):
    """plan-ready not dispatched when the plan has no items."""

    async def _plan_ready(self, run: Any, plan: dict[str, Any]) -> dict[str, Any]:
        if not plan["items"]:
            return plan
        return await super()._plan_ready(run, plan)


@mutant("LOOP-010")
class PostToolCallAsEachFinishes(Kernel):
    """post-tool-call dispatched as each call finishes, not after all calls of the turn."""

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        await super()._execute(c, ctx, parent_span)
        await self._dispatch(
            "post-tool-call", {"call": c.call, "result": {"content": c.content, "is_error": c.is_error}}, ctx.turn, parent_span
        )
        self.__dict__.setdefault("_posted", set()).add(id(c))

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        for c in calls:
            if id(c) not in self.__dict__.get("_posted", set()):
                await self._dispatch(
                    "post-tool-call", {"call": c.call, "result": {"content": c.content, "is_error": c.is_error}}, run.turn, run.turn_span
                )
        return any(c.entry is not None and c.entry.spec.terminates_turn for c in calls)


@mutant("LOOP-011")
class PostApplyBeforePostToolCalls(Kernel):
    """post-apply dispatched right after the plan is applied, before the post-tool-call hooks."""

    async def _apply_plan(self, run: Any, plan: dict[str, Any], resources: list[Any]) -> None:
        await super()._apply_plan(run, plan, resources)
        await super()._post_apply(run, plan)

    async def _post_apply(self, run: Any, plan: dict[str, Any]) -> None:
        return None


@mutant("LOOP-012")
class ErrorResultsNotHandedOn(Kernel):
    """Only successful tool results go back into the history (refused and vetoed calls vanish)."""

    async def _append_results(self, run: Any, message: dict[str, Any], calls: list[Any]) -> None:
        await super()._append_results(run, message, [c for c in calls if not c.is_error])


@mutant("LOOP-013")
class StopsWhenEveryCallFailed(Kernel):
    """A turn whose calls were all refused or vetoed ends the loop ("nothing left to do")."""

    async def _append_results(self, run: Any, message: dict[str, Any], calls: list[Any]) -> None:
        await super()._append_results(run, message, calls)
        run.reply = (message.get("text") or "") if calls and all(c.is_error for c in calls) else None

    def _check_bounds(self, run: Any) -> str | None:
        return super()._check_bounds(run) or (SUCCESS if run.reply is not None else None)


@mutant("LOOP-014")
class HookChainReversed(Kernel):
    """Hooks of one point run in the reverse of their registration order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hooks = ReorderedHooks(self.hooks)


@mutant("LOOP-015")
class SessionStartOnSomeLaterRuns(Kernel):
    """session-start dispatched on the first run of a session and on every other later run only:
    neither once per run nor once per session (reading session-start-frequency)."""

    async def _session_start(self, run: Any) -> None:
        runs = self.__dict__.setdefault("_runs", {})
        n = runs[run.turn.session_id] = runs.get(run.turn.session_id, -1) + 1
        if n == 0 or n % 2 == 0:
            await super()._session_start(run)


@mutant("LOOP-016")
class SessionEndOnlyOnLimits(Kernel):
    """session-end not dispatched when the loop ends by done detection."""

    async def _session_end(self, run: Any) -> None:
        if run.subtype == SUCCESS:
            return
        await super()._session_end(run)


@mutant("LOOP-017")
class SessionEndTwiceAfterBound(Kernel):
    """session-end fired by the limit path and again when the run finishes."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        await super()._final_turn(run, limit)
        await self._session_end(run)


@mutant("LOOP-018")
class NoSessionEndOnCancel(Kernel):
    """session-end skipped for a cancelled run."""

    async def _session_end(self, run: Any) -> None:
        if run.status == "cancelled":
            return
        await super()._session_end(run)


def _spans_mutant(drop: Any) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        Kernel.__init__(self, *args, **kwargs)
        self.spans = DroppingSpans(self.spans, drop)

    return __init__


@mutant("SPAN-001")
class NoSpanForFinalTurn(Kernel):
    """The final tool-less turn after a bound gets no turn span."""

    __init__ = _spans_mutant(lambda name, kind, attrs: kind == "turn" and attrs.get("final") is True)


@mutant("SPAN-002")
class NoModelCallSpan(Kernel):
    """No span for the model call."""

    __init__ = _spans_mutant(lambda name, kind, attrs: kind == "model_call")


@mutant("SPAN-003")
class NoToolSpan(Kernel):
    """No span for tool execution."""

    __init__ = _spans_mutant(lambda name, kind, attrs: kind == "tool")


@mutant("SPAN-004")
class NoVetoSpanForEmptyPlan(Kernel):
    """No veto-chain span when the plan is empty."""

    __init__ = _spans_mutant(lambda name, kind, attrs: kind == "veto_chain" and attrs.get("items") == 0)


@mutant("SPAN-004")
class VetoSpanForFinalToolCalls(Kernel):
    """The limit-reached turn's answer carries tool calls: nothing runs and plan-ready is not
    dispatched, yet a veto_chain span is reported for it. The old SPAN-004 check counted responses
    with tool calls, not veto chain runs, so it let this through (and failed the reference kernel)."""

    async def _append_done(self, run: Any, message: dict[str, Any], limit: str | None) -> None:
        if limit is not None and message.get("tool_calls"):
            self.spans.end(self.spans.start("plan-ready", "veto_chain", run.turn_span, {"items": 0}))
        await super()._append_done(run, message, limit)


# ---------------------------------------------------------------- the blind round's survivors


@mutant("LOOP-012", also_expected=("LOOP-001",))
class ContextHistoryWindow(Kernel):
    """Blind round survivor k_context_history_window: context-assemble (and so the model) gets only
    the last 8 messages of the history. Every scenario's history was 8 messages or fewer; the long
    session of LOOP-001/LOOP-012 (six tool turns, several calls each) catches it."""

    WINDOW = 8

    async def _context_assemble(self, run: Any) -> Any:
        full = run.history
        if len(full) > self.WINDOW:
            run.history = full[-self.WINDOW :]
        try:
            return await super()._context_assemble(run)
        finally:
            run.history = full


@mutant("LOOP-007")
class PreToolCallDedup(Kernel):
    """Blind round survivor k_pre_tool_call_dedup: pre-tool-call once per distinct (name, args),
    identical blocks of one message skipped. No scenario had two identical blocks in one message."""

    async def _dispatch_pre_tool_calls(self, run: Any, tool_calls: list[dict[str, Any]]) -> None:
        seen: set[tuple[Any, str]] = set()
        unique = []
        for call in tool_calls:
            key = (call.get("name"), json.dumps(call.get("args"), sort_keys=True, default=str))
            if key not in seen:
                seen.add(key)
                unique.append(call)
        await super()._dispatch_pre_tool_calls(run, unique)


@mutant("LOOP-005")
class EmptyToolCallsKeepsOriginal(Kernel):
    """A post-model-response replacement whose tool_calls is an empty list is read as "no change":
    the model's own tool calls run (issue 21: a hook returning tool_calls: [])."""

    async def _post_model_response(self, run: Any, message: dict[str, Any]) -> dict[str, Any]:
        out = await super()._post_model_response(run, message)
        if out is not message and out.get("tool_calls") == [] and message.get("tool_calls"):
            return {**out, "tool_calls": message["tool_calls"]}
        return out



@mutant("LOOP-010")
class PostToolCallOncePerIdenticalCall(Kernel):
    """post-tool-call is dispatched once per distinct (tool, arguments) of a turn: identical calls
    share one dispatch."""

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        seen: set[str] = set()
        distinct = []
        for c in calls:
            key = f"{c.name}:{json.dumps(c.args, sort_keys=True)}"
            if key not in seen:
                seen.add(key)
                distinct.append(c)
        return await super()._post_tool_calls(run, distinct)
