"""The turn loop, 000's face: ``CommonAgent.run_turn`` follows Hermes's run_conversation().

A *turn* here is one user message to one reply or stop; each *iteration* is one model call and its
tools. It shares the model call, tool execution, cancellation, journal, ids, clock and spans with
``reference_kernel.kernel.LoopCore``; only 000's own rules live here (session lock, prompt tiers,
the Hermes hooks, Block / AskUser / Modify, parallel-unless-interactive, statuses).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from reference_kernel.cancel import CancellationToken, Cancelled
from reference_kernel.config import AddContext, AskUser, Block, Modify
from reference_kernel.kernel import Call, HookFailed, LoopCore, ModelFailed
from reference_kernel.records import TurnInfo

COMPLETED = "completed"
INTERRUPTED = "interrupted"
BUDGET_EXHAUSTED = "budget_exhausted"
ERROR = "error"


@dataclass(slots=True)
class TurnResult:
    session_id: str
    turn_id: str
    status: str
    reply: str | None = None
    error: str | None = None


@dataclass(slots=True)
class AgentTurn:
    """State of one turn: who runs it, its token, the live history and its span."""

    turn: TurnInfo
    token: CancellationToken
    history: list[dict[str, Any]]
    span: str
    context: list[dict[str, Any]] = field(default_factory=list)  # pre_llm_call's, model only
    user_index: int = 0
    iterations: int = 0
    status: str = COMPLETED
    reply: str | None = None
    error: str | None = None


@dataclass(slots=True)
class _PreTool:
    """What the pre_tool_call chain decided for one call."""

    args: dict[str, Any]
    block: str | None = None
    ask: str | None = None


def _classify(status: int | None) -> str:
    if status is None:
        return "unknown"
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if 400 <= status < 500:
        return "invalid_request"
    if status >= 500:
        return "server_error"
    return "unknown"


class CommonAgent(LoopCore):
    """000's CommonAgent: ``run_turn`` and ``stop``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._running: dict[str, CancellationToken] = {}
        self._frozen_context: dict[str, str] = {}
        self._fresh: set[str] = set()  # sessions that have not had a turn yet

    # ------------------------------------------------------------------ public API

    async def new_session(self, first_message: str, tags: Iterable[str] = (), **kwargs: Any) -> str:
        """Create a session and freeze its context tier (reused by every later turn)."""
        session_id = await super().new_session(first_message, tags, **kwargs)
        self._frozen_context[session_id] = self._context_tier(session_id)
        self._fresh.add(session_id)
        return session_id

    async def run_turn(
        self,
        session_id: str | None,
        user_message: str,
        *,
        tags: Iterable[str] = (),
        token: CancellationToken | None = None,
    ) -> TurnResult:
        """One user message to one reply or stop. Never raises for a fault, a budget or a stop."""
        token = token or CancellationToken()
        if session_id is None:
            session_id = await self.new_session(user_message, tags)
        async with self._session_lock(session_id):  # 1: one turn per session at a time; a second message waits
            is_new = session_id in self._fresh
            self._fresh.discard(session_id)
            turn = TurnInfo(
                profile_id=self.profile.profile_id,
                session_id=session_id,
                turn_id=self.ids(),
                tags=await self._turn_tags(session_id),
            )
            self._running[session_id] = token
            try:
                return await self._turn(turn, user_message, token, is_new)
            finally:
                self._running.pop(session_id, None)

    def stop(self, session_id: str) -> bool:
        """Dispatcher::stop: cancel the running turn of that session (True if there was one)."""
        token = self._running.get(session_id)
        if token is None:
            return False
        token.cancel()
        return True

    # ------------------------------------------------------------------ the turn

    async def _turn(
        self, turn: TurnInfo, text: str, token: CancellationToken, is_new: bool, parent_span: str | None = None
    ) -> TurnResult:
        span = self.spans.start(
            "session", "session", parent_span, {"session_id": turn.session_id, "turn_id": turn.turn_id, "depth": turn.depth}
        )
        t = AgentTurn(turn=turn, token=token, history=[], span=span)
        try:
            await self.journal.start_turn(turn)
            t.history = await self.journal.load_history(turn.session_id)  # 2: oldest first
            user = {"role": "user", "text": text}
            t.user_index = len(t.history)
            await self._store(t, user)  # stored before any model call
            await self._session_hooks(t, is_new, text)  # 4
            await self._iterate(t)  # 5
        except Cancelled:
            t.status = INTERRUPTED
        except HookFailed as exc:
            t.status, t.error = ERROR, str(exc)
        except Exception as exc:
            t.status, t.error = ERROR, f"{type(exc).__name__}: {exc}"
        except BaseException:  # cancelled from outside (a parent's scope, a timeout)
            t.status = INTERRUPTED
            with anyio.CancelScope(shield=True):
                await self._finish(t)
                self.spans.end(span, {"status": t.status})
            raise
        await self._finish(t)  # 6
        self.spans.end(span, {"status": t.status})
        return TurnResult(turn.session_id, turn.turn_id, t.status, t.reply, t.error)

    async def _session_hooks(self, t: AgentTurn, is_new: bool, text: str) -> None:
        """on_session_start only for a new session; pre_llm_call once per turn (its context is
        for the model only)."""
        if is_new:
            await self._dispatch("on_session_start", {"session_id": t.turn.session_id}, t.turn, t.span)
        contexts: list[str] = []

        def take(payload: Any, outcome: Any) -> tuple[Any, bool]:
            if isinstance(outcome, AddContext):
                contexts.append(outcome.text)
            return payload, False

        await self._dispatch(
            "pre_llm_call", {"session_id": t.turn.session_id, "user_message": text}, t.turn, t.span, take
        )
        t.context = [{"role": "user", "text": c} for c in contexts]

    def _should_stop(self, t: AgentTurn) -> bool:
        """Top of the loop: the iteration budget (no extra call) or a cancel."""
        t.token.check()
        if t.iterations >= self.profile.max_iterations:
            t.status = BUDGET_EXHAUSTED
            return True
        return False

    async def _iterate(self, t: AgentTurn) -> None:
        while not self._should_stop(t):
            turn_span = self.spans.start("turn", "turn", t.span, {"index": t.iterations})
            try:
                done = await self._iteration(t, turn_span)
            finally:
                self.spans.end(turn_span)
            if done:
                return

    async def _iteration(self, t: AgentTurn, span: str) -> bool:
        request = self._request(t)
        await self._dispatch("pre_api_request", {"request": request}, t.turn, span)
        t.token.check()
        t.iterations += 1
        try:
            message, usage, bad = await self._call_model(t.turn, request, t.token, span, None)
        except ModelFailed as exc:
            await self._api_error(t, exc, span)
            return True
        await self._dispatch("post_api_request", {"message": message, "usage": usage}, t.turn, span)
        t.token.check()
        await self._store(t, message)
        calls = message.get("tool_calls") or []
        if not calls:
            await self._final_answer(t, message, span)
            return True
        done = await self._tool_calls(t, calls, span, bad)
        for c in done:
            await self._store(t, self._tool_result(c))
        return False

    def _request(self, t: AgentTurn) -> dict[str, Any]:
        """System text first; pre_llm_call's context right in front of this turn's user message."""
        messages = [{"role": "system", "text": self._system_text(t.turn.session_id)}]
        if t.context:
            messages.extend(t.history[: t.user_index])
            messages.extend(t.context)
            messages.extend(t.history[t.user_index :])
        else:
            messages.extend(t.history)
        return {"messages": messages, "tools": list(self._model_tools), "params": {}}

    # ------------------------------------------------------------------ prompt tiers

    def _system_text(self, session_id: str) -> str:
        """Three tiers: stable (SOUL), context (frozen for the session), volatile (the time)."""
        context = self._frozen_context.get(session_id)
        if context is None:  # a session created elsewhere: freeze it on first use
            context = self._frozen_context[session_id] = self._context_tier(session_id)
        tiers = [self.profile.system_prompt, context, self._volatile_tier()]
        return "\n\n".join(tier for tier in tiers if tier)

    def _context_tier(self, session_id: str) -> str:
        tags = self._session_tags.get(session_id) or []
        started = _dt.datetime.fromtimestamp(self.clock(), _dt.timezone.utc).isoformat()
        return (
            f"Profile: {self.profile.profile_id}. Session: {session_id}, started {started}."
            + (f" Tags: {', '.join(tags)}." if tags else "")
        )

    def _volatile_tier(self) -> str:
        return "Current time: " + _dt.datetime.fromtimestamp(self.clock(), _dt.timezone.utc).isoformat()

    # ------------------------------------------------------------------ endings

    async def _api_error(self, t: AgentTurn, exc: ModelFailed, span: str) -> None:
        """api_request_error, then transform_api_error_classification; the turn ends in error."""
        await self._dispatch("api_request_error", {"status": exc.status, "message": exc.message}, t.turn, span)
        out = await self._dispatch(
            "transform_api_error_classification",
            {"status": exc.status, "message": exc.message, "classification": _classify(exc.status)},
            t.turn,
            span,
        )
        classification = out.get("classification") if isinstance(out, dict) else out
        t.status, t.error = ERROR, f"{classification}: {exc.message}"

    async def _final_answer(self, t: AgentTurn, message: dict[str, Any], span: str) -> None:
        out = await self._dispatch("transform_llm_output", {"text": message.get("text", "")}, t.turn, span)
        text = out.get("text") if isinstance(out, dict) else out
        text = "" if text is None else str(text)
        await self._dispatch("post_llm_call", {"text": text}, t.turn, span)
        t.reply, t.status = text, COMPLETED

    async def _finish(self, t: AgentTurn) -> None:
        """agent_loop_stopped after an interrupt; the status is stored, THEN on_session_end."""
        if t.status == INTERRUPTED:
            try:
                await self._dispatch("agent_loop_stopped", {"reason": "cancelled"}, t.turn, t.span)
            except HookFailed as exc:
                t.error = str(exc)
        await self._finish_turn(t)
        try:
            await self._dispatch(
                "on_session_end", {"session_id": t.turn.session_id, "status": t.status}, t.turn, t.span
            )
        except HookFailed as exc:  # recorded, never dispatched again
            t.status, t.error = ERROR, str(exc)
            await self._finish_turn(t)

    async def _finish_turn(self, t: AgentTurn) -> None:
        try:
            await self.journal.finish_turn(t.turn, t.status)
        except Exception as exc:
            t.status, t.error = ERROR, f"journal: {exc}"

    async def _store(self, t: AgentTurn, message: dict[str, Any]) -> None:
        t.history.append(message)
        await self.journal.append_message(t.turn, message)

    # ------------------------------------------------------------------ tool calls

    def _sequential(self, calls: list[Call]) -> bool:
        """All in parallel, unless one of them is interactive: then all one at a time."""
        return any(c.entry is not None and c.entry.spec.kind == "interactive" for c in calls)

    async def _tool_calls(
        self, t: AgentTurn, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]
    ) -> list[Call]:
        """Interactive among them: each call start to finish, one at a time. Otherwise the tools
        run in parallel; the hooks and approvals around them go one call at a time in the order
        asked, so what hooks and the approver see does not depend on the scheduler."""
        calls = [self._prepare(i, call, bad, check_schema=False) for i, call in enumerate(tool_calls)]
        with t.token.scope():
            if self._sequential(calls):
                for c in calls:
                    t.token.check()
                    if await self._decide(t, c, span):
                        await self._execute(c, t, span)
                    await self._after(t, c, span)
            else:
                runnable = []
                for c in calls:
                    t.token.check()
                    if await self._decide(t, c, span):
                        runnable.append(c)
                if len(runnable) == 1:
                    await self._execute(runnable[0], t, span)
                elif runnable:
                    async with anyio.create_task_group() as tg:
                        for c in runnable:
                            tg.start_soon(self._execute, c, t, span)
                for c in calls:
                    await self._after(t, c, span)
        t.token.check()
        return calls  # each call wrote its own slot: the order the model asked

    async def _decide(self, t: AgentTurn, c: Call, span: str) -> bool:
        """Steps 1-3: looked up (a fault already has its result), pre_tool_call, act on it."""
        if c.content is not None:
            return False
        decision = await self._pre_tool_call(t, c, span)
        c.args = decision.args
        if decision.block is not None:
            c.fail(f"Blocked: {decision.block}")
            return False
        if decision.ask is not None:
            c.approval = await self._ask_approver(t, c, decision.ask)
            if c.approval != "approved":
                c.fail(f"Not approved ({c.approval})")
                return False
        return True

    async def _after(self, t: AgentTurn, c: Call, span: str) -> None:
        """Steps 5-7: post_tool_call (blocked and failed calls too), transform, store."""
        await self._dispatch(
            "post_tool_call",
            {"name": c.name, "args": c.args, "call_id": c.id, "result": c.content, "is_error": c.is_error},
            t.turn,
            span,
        )
        out = await self._dispatch(
            "transform_tool_result", {"name": c.name, "call_id": c.id, "result": c.content}, t.turn, span
        )
        if isinstance(out, dict):
            out = out.get("result", out.get("text", out.get("content", c.content)))
        c.content = "" if out is None else str(out)
        await self.journal.record_tool_call(t.turn, self._record(c))

    async def _pre_tool_call(self, t: AgentTurn, c: Call, span: str) -> _PreTool:
        """The chain: Modify merges and goes on, AskUser is noted and goes on, Block stops it."""
        decision = _PreTool(args=dict(c.args))
        risk = c.entry.spec.risk if c.entry else None

        def act(payload: Any, outcome: Any) -> tuple[Any, bool]:
            if isinstance(outcome, Block):
                decision.block = outcome.reason
                return payload, True
            if isinstance(outcome, AskUser):
                decision.ask = outcome.prompt
            elif isinstance(outcome, Modify):
                decision.args = {**decision.args, **outcome.args}
                payload = {**payload, "args": decision.args}
            return payload, False

        await self._dispatch(
            "pre_tool_call", {"name": c.name, "args": c.args, "risk": risk, "call_id": c.id}, t.turn, span, act
        )
        return decision

    async def _ask_approver(self, t: AgentTurn, c: Call, prompt: str) -> str:
        """No approver configured: nobody can approve, so the answer is ``denied``."""
        if self.approver is None:
            return "denied"
        risk = c.entry.spec.risk if c.entry else None
        request = {"call_id": c.id, "name": c.name, "args": c.args, "risk": risk, "prompt": prompt}
        return await self.approver(request, t.turn)

    async def _delegate(self, c: Call, t: AgentTurn, span: str) -> tuple[str, bool]:
        """A child turn (TurnInfo.child) on a new session titled with its goal, child token."""
        refused = self._child_allowed(t.turn.depth)
        if refused:
            return refused, True
        goal = self._goal(c.args)
        session_id = await self.new_session(
            goal, t.turn.tags, source="subagent", parent_session_id=t.turn.session_id, title=goal
        )
        self._fresh.discard(session_id)
        child = t.turn.child(session_id, self.ids())
        token = t.token.child()
        try:
            result = await self._turn(child, goal, token, True, span)
        finally:
            token.detach()
        if result.status != COMPLETED:
            return f"Sub-agent {result.status}: {result.error or ''}".rstrip(": "), True
        return result.reply or "", False
