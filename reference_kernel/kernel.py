"""The turn loop, 003's face: ``Kernel.run_session`` runs RunTurns until a termination condition.

``LoopCore`` holds what both faces share (tool registry and argument checks, hook chains, the model
call with its usage accounting, tool execution and delegation plumbing, cancellation, journal,
ids, clock, spans). ``Kernel`` adds 003's RunTurn: one small method per step, so that a mutant can
override exactly one rule. ``reference_kernel.agent.CommonAgent`` is 000's face on the same core.

Vocabulary (docs/vocabulary.md): a *session run* (``run_session``, one user
message, one journal turn, one TurnInfo) is a loop of *RunTurns* (one model call each).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from reference_kernel.cancel import CancellationToken, Cancelled
from reference_kernel.concurrency import ConcurrencySpec, KeyedLocks, concurrency_key
from reference_kernel.config import (
    ApproverFn,
    HookRegistry,
    LoopBounds,
    ModelProvider,
    PolicyFn,
    ProfileConfig,
    Replace,
    Tool,
    ToolSpec,
    Veto,
    current_call,
)
from reference_kernel.cost import CostLedger, Pricing, compute_cost
from reference_kernel.doom import DoomLoopDetector
from reference_kernel.errors import ConfigError
from reference_kernel.ids import IdGenerator
from reference_kernel.journal import Journal, MemoryJournal
from reference_kernel.jsontext import parse as parse_json
from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo, UsageEvent
from reference_kernel.spans import MemorySpanRecorder, SpanRecorder
from reference_kernel.tags import merge_tags

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_perf_counter = time.perf_counter  # a tool call's duration_ms (read twice a call)
TITLE_CHARS = 60  # CommonOS titles a new session with the first 60 characters of its first message

# Subtypes (003 names the bound ones; the others are ours, documented in docs/reference-kernel.md).
SUCCESS = "success"
MAX_TURNS = "error_max_turns"
MAX_BUDGET = "error_max_budget_usd"
MAX_WALL_CLOCK = "error_max_wall_clock"
DOOM_LOOP = "error_doom_loop"
DURING_EXECUTION = "error_during_execution"
CANCELLED = "cancelled"

_LIMIT_NAMES = {
    MAX_TURNS: "max_turns",
    MAX_BUDGET: "max_cost_usd",
    MAX_WALL_CLOCK: "max_wall_clock_s",
    DOOM_LOOP: "doom loop: the same tool call was repeated",
}
_SOFT_ABLE = (MAX_TURNS, MAX_BUDGET)
_UNDECLARED = ConcurrencySpec(safe=False)  # "safe: false or undeclared -- the conservative default"  # 003 offers "soft" for max_turns / max_cost_usd only


class HookFailed(Exception):
    """A hook raised: the run ends with an error naming the hook."""

    def __init__(self, hook_id: str, point: str, exc: BaseException) -> None:
        super().__init__(f"hook {hook_id!r} at {point} raised: {exc}")
        self.hook_id, self.point = hook_id, point


class ModelFailed(Exception):
    """The model call failed (any exception from the provider's stream)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc) or type(exc).__name__)
        self.status = getattr(exc, "status", None)
        self.message = getattr(exc, "message", None) or str(exc) or type(exc).__name__


@dataclass(slots=True)
class ToolEntry:
    spec: ToolSpec
    fn: Tool | None
    validator: Draft202012Validator | None


@dataclass(slots=True, init=False)
class Call:
    """One tool_use block of a turn, its slot for the result, and what the loop decided."""

    index: int
    call: dict[str, Any]  # {"id", "name", "args"} as the model asked
    id: str  # the call's id and tool name, read once (the loop reads them many times a turn)
    name: str
    entry: ToolEntry | None
    content: str | None  # set once the call has a result
    is_error: bool
    duration_ms: float
    approval: str | None
    args: Any  # the arguments the tool actually got
    raw: str | None  # input_json that was not a JSON object
    recheck: bool  # check the schema again right before running (args may have changed)

    def __init__(
        self,
        index: int,
        call: dict[str, Any],
        entry: ToolEntry | None = None,
        args: Any = None,
        raw: str | None = None,
        recheck: bool = False,
    ) -> None:
        self.index = index
        self.call = call
        self.id = call.get("id", "")
        self.name = call.get("name", "")
        self.entry = entry
        self.content = None
        self.is_error = False
        self.duration_ms = 0.0
        self.approval = None
        self.args = args
        self.raw = raw
        self.recheck = recheck

    def fail(self, content: str) -> None:
        self.content, self.is_error = content, True


@dataclass(slots=True)
class SessionResult:
    session_id: str
    turn_id: str
    status: str
    subtype: str | None = None
    reply: str | None = None
    error: str | None = None


@dataclass(slots=True)
class RunSession:
    """State of one session run (003's RunSession): the live history and the bound counters."""

    turn: TurnInfo
    token: CancellationToken
    bounds: LoopBounds
    doom: DoomLoopDetector
    history: list[dict[str, Any]]
    started: float
    span: str
    ledger_key: str
    turn_span: str | None = None
    turns_used: int = 0
    status: str = "completed"
    subtype: str | None = SUCCESS
    reply: str | None = None
    error: str | None = None
    bad_args: dict[str, str] = field(default_factory=dict)  # this turn's unparsable input_json
    #: The request's messages (system text + history), kept up to date by ``_append`` so that a
    #: turn's request costs O(1), not a copy of the whole history (no work grows with history).
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def parent_span(self) -> str:
        return self.turn_span or self.span


def _normalise_output(out: Any) -> tuple[str, bool]:
    if isinstance(out, str):
        return out, False
    if isinstance(out, dict):
        return str(out.get("content", "")), bool(out.get("is_error", False))
    return ("" if out is None else str(out)), False


class LoopCore:
    """What both faces share. Construction validates everything and raises ConfigError."""

    def __init__(
        self,
        profile: ProfileConfig,
        provider: ModelProvider,
        tools: Iterable[tuple[ToolSpec, Tool | None]] = (),
        hooks: HookRegistry | None = None,
        *,
        journal: Journal | None = None,
        clock: Callable[[], float] | None = None,
        ids: Callable[[], str] | None = None,
        spans: SpanRecorder | None = None,
        pricing: Pricing | None = None,
        policy: PolicyFn | None = None,
        approver: ApproverFn | None = None,
    ) -> None:
        self.profile = profile
        self.provider = provider
        #: A provider with ``accepts_turn = True`` gets the TurnInfo: ``stream(request, turn)``.
        self._stream_takes_turn = bool(getattr(provider, "accepts_turn", False))
        self.hooks = hooks or HookRegistry()
        self.clock = clock or time.time
        self.ids = ids or IdGenerator(self.clock)
        self.journal: Journal = journal or MemoryJournal(self.ids)  # one generator: ids sort
        self.spans: SpanRecorder = spans or MemorySpanRecorder(self.clock)
        self.pricing = pricing or Pricing()
        self.policy = policy
        self.approver = approver
        self.ledger = CostLedger()
        self.usage: list[UsageEvent] = []
        self._session_tags: dict[str, list[str]] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._tools: dict[str, ToolEntry] = {}
        for spec, fn in tools:
            self._register(spec, fn)
        self._model_tools = [entry.spec.model_view() for entry in self._tools.values()]

    # ------------------------------------------------------------------ registration

    def _register(self, spec: ToolSpec, fn: Tool | None) -> None:
        if spec.name in self._tools:
            raise ConfigError("tools", f"tool {spec.name!r} is registered twice")
        if fn is None and spec.delegate is None:
            raise ConfigError("tools", f"tool {spec.name!r} has no implementation")
        validator = None
        if set(spec.input_schema) - {"type", "description", "title"}:  # more than "an object"
            # Imported here: a kernel process answering the wire's `start` needs no jsonschema.
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(spec.input_schema)
            except SchemaError as exc:
                raise ConfigError("input_schema", f"tool {spec.name!r}: {exc.message}") from None
            validator = Draft202012Validator(spec.input_schema)
        self._tools[spec.name] = ToolEntry(spec, fn, validator)

    # ------------------------------------------------------------------ sessions

    async def new_session(
        self,
        first_message: str,
        tags: Iterable[str] = (),
        *,
        source: str = "cli",
        parent_session_id: str | None = None,
        title: str | None = None,
    ) -> str:
        """Create a session: title = first 60 characters of the first message (a child's: its
        goal); its own tags are validated (ConfigError) and kept for its turns."""
        own = merge_tags(tags)
        session_id = await self.journal.create_session(
            NewSession(
                profile_id=self.profile.profile_id,
                source=source,
                title=title if title is not None else first_message[:TITLE_CHARS],
                tags=own,
                parent_session_id=parent_session_id,
            )
        )
        self._session_tags[session_id] = own
        return session_id

    def _session_lock(self, session_id: str) -> anyio.Lock:
        """One run per session at a time (000 step 1; harmless and sensible for 003 too)."""
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = anyio.Lock()
        return lock

    async def _turn_tags(self, session_id: str) -> list[str]:
        """001: a turn's tags are the profile's plus the session's, sorted, without duplicates."""
        own = self._session_tags.get(session_id)
        if own is None:
            record = await self.journal.get_session(session_id)
            own = list(record.get("tags", [])) if record else []
            self._session_tags[session_id] = own
        return merge_tags(self.profile.tags, own)

    # ------------------------------------------------------------------ hooks

    async def _dispatch(
        self,
        point: str,
        payload: Any,
        turn: TurnInfo,
        parent_span: str | None,
        on_outcome: Callable[[Any, Any], tuple[Any, bool]] | None = None,
    ) -> Any:
        """A hook chain: each hook gets the previous one's output. ``on_outcome`` interprets the
        point-specific outcomes (veto, block, ...) and may stop the chain."""
        hooks = self.hooks.at(point)
        if not hooks:
            return payload
        for hook_id, fn in hooks:
            span = self.spans.start(point, "hook", parent_span, {"hook_id": hook_id})
            try:
                outcome = await fn(point, payload, turn)
            except Exception as exc:
                self.spans.end(span, {"error": type(exc).__name__})
                raise HookFailed(hook_id, point, exc) from exc
            self.spans.end(span)
            if outcome is None:
                continue
            if isinstance(outcome, Replace):
                payload = outcome.payload
            elif on_outcome is not None:
                payload, stop = on_outcome(payload, outcome)
                if stop:
                    break
        return payload

    # ------------------------------------------------------------------ the model call

    async def _call_model(
        self,
        turn: TurnInfo,
        request: dict[str, Any],
        token: CancellationToken,
        parent_span: str | None,
        ledger_key: str | None,
    ) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, str]]:
        """Steps 3-4: stream and accumulate one assistant message. Usage is costed, journaled and
        charged at receipt. Returns (message, usage, bad arguments by call id). Raises Cancelled
        (nothing partial kept) or ModelFailed."""
        span = self.spans.start("model_call", "model_call", parent_span, {"model": self.profile.model})
        failure: BaseException | None = None
        result = None
        try:
            with token.scope():
                result = await self._accumulate(turn, request, ledger_key)
        except Exception as exc:  # a failing model API, whatever the provider raises
            failure = exc
        finally:
            self.spans.end(span, {"error": type(failure).__name__} if failure else None)
        if token.cancelled:
            raise Cancelled()
        if failure is not None:
            raise ModelFailed(failure) from failure
        assert result is not None
        return result

    async def _accumulate(
        self, turn: TurnInfo, request: dict[str, Any], ledger_key: str | None
    ) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, str]]:
        if self._stream_takes_turn:
            stream = self.provider.stream(request, turn)  # type: ignore[call-arg]
        else:
            stream = self.provider.stream(request)
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        raw: list[str] = []
        usage = None
        try:
            async for chunk in stream:
                kind = chunk.get("type")
                if kind == "text":
                    texts.append(chunk.get("text") or "")
                elif kind == "tool_use":
                    if calls and chunk.get("id") == calls[-1]["id"]:
                        raw[-1] += chunk.get("input_json") or ""  # a continued argument stream
                    else:
                        calls.append({"id": chunk.get("id"), "name": chunk.get("name")})
                        raw.append(chunk.get("input_json") or "")
                        if "args" in chunk and not chunk.get("input_json"):
                            calls[-1]["args"] = chunk["args"]
                elif kind == "usage":
                    usage = await self._on_usage(turn, chunk, ledger_key)
        except BaseException:  # cancelled or failed mid-stream: close the stream, shielded
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
            raise
        message: dict[str, Any] = {"role": "assistant"}
        if texts or not calls:
            message["text"] = "".join(texts)
        bad: dict[str, str] = {}
        if calls:
            for call, text in zip(calls, raw):
                if "args" not in call:
                    call["args"] = self._parse_args(call, text, bad)
            message["tool_calls"] = calls
        return message, usage, bad

    @staticmethod
    def _parse_args(call: dict[str, Any], text: str, bad: dict[str, str]) -> Any:
        """input_json → args. Text that is not a JSON object is a fault of that call: the stored
        message gets ``{}`` (001: args is an object) and the raw text is kept aside by call id."""
        if not text.strip():
            return {}
        try:
            args = parse_json(text)
        except ValueError:
            args = None
        if isinstance(args, dict):
            return args
        bad[call.get("id") or ""] = text
        return {}

    async def _on_usage(
        self, turn: TurnInfo, chunk: dict[str, Any], ledger_key: str | None
    ) -> dict[str, Any]:
        """003: cost_usd computed and persisted at receipt, and charged up the session tree."""
        i = int(chunk.get("input_tokens") or 0)
        o = int(chunk.get("output_tokens") or 0)
        c = int(chunk.get("cached_input_tokens") or 0)
        cost = compute_cost(self.pricing, i, o, c)
        event = UsageEvent(turn.session_id, turn.turn_id, self.profile.model, i, o, c, cost)
        self.usage.append(event)
        if ledger_key is not None:
            self.ledger.charge(ledger_key, cost)
        await self.journal.record_usage(turn, event)
        return {"input_tokens": i, "output_tokens": o, "cached_input_tokens": c, "cost_usd": cost}

    # ------------------------------------------------------------------ tool calls

    def _prepare(self, index: int, call: dict[str, Any], bad: dict[str, str], check_schema: bool = True) -> Call:
        """Look the tool up and check the arguments (a JSON object fitting the tool's schema);
        a fault becomes the call's result. 000 checks the schema later, after Modify."""
        c = Call(
            index,
            call,
            entry=self._tools.get(call.get("name", "")),
            args=call.get("args"),
            raw=bad.get(call.get("id", "")) if bad else None,
            recheck=not check_schema,
        )
        if c.entry is None:
            c.fail(f"Unknown tool: {c.name!r}")
        elif c.raw is not None:
            c.fail(f"Invalid arguments for {c.name}: not a JSON object: {c.raw[:200]}")
        elif isinstance(c.args, str):
            c.fail(f"Invalid arguments for {c.name}: not a JSON object: {c.args[:200]}")
        elif c.args is None:
            c.args = {}
        elif not isinstance(c.args, dict):
            c.fail(f"Invalid arguments for {c.name}: expected a JSON object")
        elif check_schema:
            problem = self._schema_error(c)
            if problem is not None:
                c.fail(problem)
        return c

    def _schema_error(self, c: Call) -> str | None:
        validator = c.entry.validator if c.entry else None
        if validator is None:
            return None
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(c.args))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return f"Invalid arguments for {c.name}: {error.message} (at {where})"

    async def _execute(self, c: Call, ctx: Any, parent_span: str | None) -> None:
        """Run one call's tool (or sub-agent) and fill its slot; a raise is an error result."""
        assert c.entry is not None
        if ctx.token.cancelled:  # no tool starts after a cancel (a task may begin late)
            c.fail("Cancelled before it started")
            return
        problem = self._schema_error(c) if c.recheck else None
        if problem is not None:
            c.fail(problem)
            return
        span = self.spans.start(c.name, "tool", parent_span, {"call_id": c.id, "name": c.name})
        started = _perf_counter()
        try:
            if c.entry.spec.delegate is not None:
                c.content, c.is_error = await self._delegate(c, ctx, span)
            else:
                assert c.entry.fn is not None
                reset = current_call.set({"id": c.id, "name": c.name, "args": c.args})
                try:
                    out = await c.entry.fn(c.args, ctx.turn)
                    c.content, c.is_error = (out, False) if type(out) is str else _normalise_output(out)
                finally:
                    current_call.reset(reset)
        except Exception as exc:
            c.fail(str(exc) or type(exc).__name__)
        finally:
            c.duration_ms = (_perf_counter() - started) * 1000.0
            self.spans.end(span, {"is_error": c.is_error})

    async def _delegate(self, c: Call, ctx: Any, span: str) -> tuple[str, bool]:
        raise NotImplementedError

    def _child_allowed(self, depth: int) -> str | None:
        """remaining_depth = max_depth - depth; a child would be at depth + 1."""
        if depth + 1 > self.profile.max_depth:
            return f"Delegation refused: max_depth {self.profile.max_depth} reached"
        return None

    @staticmethod
    def _goal(args: dict[str, Any]) -> str:
        goal = args.get("goal")
        return goal if isinstance(goal, str) else json.dumps(args, sort_keys=True)

    def _record(self, c: Call) -> ToolCallRecord:
        return ToolCallRecord(  # positional: call_id, name, args, result, is_error, risk, duration_ms, approval
            c.id,
            c.name,
            c.args if c.args is not None else c.call.get("args"),
            c.content or "",
            c.is_error,
            c.entry.spec.risk if c.entry else None,
            c.duration_ms,
            c.approval,
        )

    @staticmethod
    def _tool_result(c: Call) -> dict[str, Any]:
        return {"role": "tool_result", "call_id": c.id, "content": c.content or "", "is_error": c.is_error}


class Kernel(LoopCore):
    """003's face: ``run_session`` = session-start, RunTurns until termination, session-end."""

    # ------------------------------------------------------------------ public API

    async def run_session(
        self,
        session_id: str | None,
        user_message: str,
        *,
        tags: Iterable[str] = (),
        token: CancellationToken | None = None,
    ) -> SessionResult:
        """Run one user message to termination. Never raises for a bound, a fault or a cancel."""
        token = token or CancellationToken()
        if session_id is None:
            session_id = await self.new_session(user_message, tags)
        async with self._session_lock(session_id):
            turn = TurnInfo(
                profile_id=self.profile.profile_id,
                session_id=session_id,
                turn_id=self.ids(),
                tags=await self._turn_tags(session_id),
            )
            return await self._run(turn, user_message, token, self.profile.bounds, None, None)

    # ------------------------------------------------------------------ the session run

    async def _run(
        self,
        turn: TurnInfo,
        text: str,
        token: CancellationToken,
        bounds: LoopBounds,
        parent_ledger: str | None,
        parent_span: str | None,
    ) -> SessionResult:
        self.ledger.open_session(turn.turn_id, parent_ledger, bounds.max_cost_usd)
        remaining = self.ledger.remaining(turn.turn_id)
        span = self.spans.start(
            "session",
            "session",
            parent_span,
            {
                "session_id": turn.session_id,
                "turn_id": turn.turn_id,
                "depth": turn.depth,
                # what 003's RunSessionRequest carries, computed at spawn time
                "remaining_depth": self.profile.max_depth - turn.depth,
                "remaining_cost_budget_usd": None if remaining == float("inf") else remaining,
            },
        )
        run = RunSession(
            turn=turn,
            token=token,
            bounds=bounds,
            doom=DoomLoopDetector(self.profile.doom_loop.threshold, self.profile.doom_loop.window),
            history=[],
            started=self.clock(),
            span=span,
            ledger_key=turn.turn_id,
        )
        try:
            await self.journal.start_turn(turn)
            run.history = await self.journal.load_history(turn.session_id)
            run.messages = self._system_messages() + run.history
            await self._append(run, {"role": "user", "text": text})
            await self._session_start(run)
            await self._loop(run)
        except Cancelled:
            self._end(run, CANCELLED, CANCELLED)
        except HookFailed as exc:
            self._end(run, "error", DURING_EXECUTION, str(exc))
        except ModelFailed as exc:
            self._end(run, "error", DURING_EXECUTION, f"model call failed: {exc}")
        except Exception as exc:  # a journal or kernel fault: end with an error, never raise
            self._end(run, "error", DURING_EXECUTION, f"{type(exc).__name__}: {exc}")
        except BaseException:  # cancelled from outside (a parent's scope, a timeout)
            self._end(run, CANCELLED, CANCELLED)
            with anyio.CancelScope(shield=True):
                await self._finish_run(run)
            raise
        await self._finish_run(run)
        return SessionResult(turn.session_id, turn.turn_id, run.status, run.subtype, run.reply, run.error)

    async def _finish_run(self, run: RunSession) -> None:
        """session-end once, then the journal's final status for the run, then its span."""
        await self._session_end(run)
        try:
            await self.journal.finish_turn(run.turn, run.status)
        except Exception as exc:
            run.status, run.error = "error", f"journal: {exc}"
        self.spans.end(run.span, {"status": run.status, "subtype": run.subtype})

    @staticmethod
    def _end(run: RunSession, status: str, subtype: str | None, error: str | None = None) -> None:
        run.status, run.subtype, run.error = status, subtype, error

    async def _session_start(self, run: RunSession) -> None:
        await self._dispatch("session-start", {"session_id": run.turn.session_id}, run.turn, run.span)

    async def _session_end(self, run: RunSession) -> None:
        """Fires once whichever way the run ended; if it raises, that is recorded, not retried."""
        try:
            await self._dispatch(
                "session-end", {"session_id": run.turn.session_id, "subtype": run.subtype}, run.turn, run.span
            )
        except HookFailed as exc:
            run.status, run.error = "error", str(exc)
            if run.subtype == SUCCESS:
                run.subtype = DURING_EXECUTION

    async def _loop(self, run: RunSession) -> None:
        """Step 18: loop until DoneCheck, or a fired limit's one final turn."""
        while True:
            outcome = await self._run_turn(run)
            if outcome == SUCCESS:
                return
            if outcome is not None:
                await self._final_turn(run, outcome)
                return

    # ------------------------------------------------------------------ one RunTurn

    async def _run_turn(self, run: RunSession, limit: str | None = None) -> str | None:
        """One RunTurn. Returns SUCCESS (done), a limit subtype (16/17 fired) or None (go on).
        ``limit`` set: the limit-reached turn (no tool specs, synthetic instruction, no tools run)."""
        check = run.token.check
        check()
        run.turn_span = self.spans.start(
            "turn", "turn", run.span, {"index": run.turns_used, "final": limit is not None}
        )
        try:
            payload = await self._context_assemble(run)  # 1
            check()
            request = await self._pre_model_call(run, payload, limit)  # 2
            check()
            message = await self._model_call(run, request)  # 3-4
            check()
            message = await self._post_model_response(run, message)  # 5
            check()
            tool_calls = message.get("tool_calls") or []
            if limit is not None or self._done_check(tool_calls):  # 6 (nothing runs on the final turn)
                await self._append_done(run, message, limit)
                run.turns_used += 1
                return SUCCESS
            await self._dispatch_pre_tool_calls(run, tool_calls)  # 7
            check()
            calls = [self._prepare(i, call, run.bad_args) for i, call in enumerate(tool_calls)]
            data_sources, resources, interactive = self._split_by_kind(calls)  # 8
            await self._execute_data_sources(run, data_sources)  # 9
            check()
            await self._execute_interactive(run, interactive)  # 9b
            check()
            plan = self._build_plan(resources)  # 10
            plan = await self._plan_ready(run, plan)  # 11
            check()
            await self._apply_plan(run, plan, resources)  # 12
            check()
            terminal = await self._post_tool_calls(run, calls)  # 13
            check()
            if not terminal:
                await self._post_apply(run, plan)  # 14
                check()
            await self._append_results(run, message, calls)  # 15
            run.turns_used += 1
            if terminal:
                run.reply = message.get("text")
                return SUCCESS
            return self._check_doom(run, calls) or self._check_bounds(run)  # 16, 17
        finally:
            self.spans.end(run.turn_span)
            run.turn_span = None

    @staticmethod
    def _done_check(tool_calls: list[dict[str, Any]]) -> bool:
        """Implicit done detection: a message without tool_use blocks ends the loop."""
        return not tool_calls

    async def _context_assemble(self, run: RunSession) -> Any:
        if not self.hooks.at("context-assemble"):  # nobody changes it: no copy
            if not self.hooks.at("pre-model-call"):  # nobody sees it: no budget either
                return {"history": run.history}
            return {"history": run.history, "budget": self._budget(run)}
        payload = {"history": list(run.history), "budget": self._budget(run)}
        return await self._dispatch("context-assemble", payload, run.turn, run.turn_span)

    def _budget(self, run: RunSession) -> dict[str, Any]:
        remaining = self.ledger.remaining(run.ledger_key)
        return {
            "turns_used": run.turns_used,
            "cost_usd": self.ledger.spent(run.ledger_key),
            "remaining_cost_budget_usd": None if remaining == float("inf") else remaining,
            "elapsed_s": self.clock() - run.started,
        }

    async def _pre_model_call(self, run: RunSession, payload: Any, limit: str | None) -> dict[str, Any]:
        """Step 2, then the request: system text, the (possibly replaced) history, and on the
        limit-reached turn no tool specs plus the synthetic instruction."""
        tool_specs = [] if limit is not None else list(self._model_tools)
        out = {"payload": payload, "tool_specs": tool_specs, "params": {}}
        if self.hooks.at("pre-model-call"):
            out = await self._dispatch("pre-model-call", out, run.turn, run.turn_span)
        return self._build_request(run, out, limit)

    def _system_messages(self) -> list[dict[str, Any]]:
        if self.profile.system_prompt:
            return [{"role": "system", "text": self.profile.system_prompt}]
        return []

    def _build_request(self, run: RunSession, out: Any, limit: str | None) -> dict[str, Any]:
        out = out if isinstance(out, dict) else {}
        payload = out.get("payload")
        history = payload.get("history", run.history) if isinstance(payload, dict) else run.history
        if history is run.history and limit is None:
            messages = run.messages  # the live list: nothing copied on the hot path
        else:  # a hook replaced the history, or the limit-reached turn adds its instruction
            messages = self._system_messages() + list(history)
            if limit is not None:
                messages.append({"role": "user", "text": self._limit_instruction(limit)})
        tools = [] if limit is not None else out.get("tool_specs", [])
        return {"messages": messages, "tools": tools, "params": out.get("params") or {}}

    def _limit_instruction(self, limit: str) -> str:
        return (
            f"The limit was reached ({_LIMIT_NAMES.get(limit, limit)}). Do not call tools; "
            "give your final answer from what you have."
        )

    async def _model_call(self, run: RunSession, request: dict[str, Any]) -> dict[str, Any]:
        message, _usage, run.bad_args = await self._call_model(
            run.turn, request, run.token, run.turn_span, run.ledger_key
        )
        return message

    async def _post_model_response(self, run: RunSession, message: dict[str, Any]) -> dict[str, Any]:
        if not self.hooks.at("post-model-response"):
            return message
        out = await self._dispatch("post-model-response", message, run.turn, run.turn_span)
        return out if isinstance(out, dict) else message

    async def _append_done(self, run: RunSession, message: dict[str, Any], limit: str | None) -> None:
        """DoneCheck: store the answer. On the limit-reached turn, tool calls are dropped unrun."""
        if limit is not None and message.get("tool_calls"):
            message = {k: v for k, v in message.items() if k != "tool_calls"}
            message.setdefault("text", "")
        await self._append(run, message)
        run.reply = message.get("text")

    async def _dispatch_pre_tool_calls(self, run: RunSession, tool_calls: list[dict[str, Any]]) -> None:
        if not self.hooks.at("pre-tool-call"):
            return
        for call in tool_calls:  # declaration order
            await self._dispatch(
                "pre-tool-call",
                {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")},
                run.turn,
                run.turn_span,
            )

    @staticmethod
    def _split_by_kind(calls: list[Call]) -> tuple[list[Call], list[Call], list[Call]]:
        """Step 8; faulted calls (unknown tool, bad JSON) already have their result."""
        by_kind: dict[str, list[Call]] = {"data_source": [], "resource": [], "interactive": []}
        for c in calls:
            if c.content is None and c.entry is not None:
                by_kind[c.entry.spec.kind].append(c)
        return by_kind["data_source"], by_kind["resource"], by_kind["interactive"]

    async def _policy_precheck(self, run: RunSession, calls: list[Call]) -> list[Call]:
        """Steps 9/9b: every data-source and interactive call passes the precheck first."""
        if self.policy is None:
            return calls
        allowed = []
        for c in calls:
            ok, reason = await self.policy({"id": c.id, "name": c.name, "args": c.args}, run.turn)
            if ok:
                allowed.append(c)
            else:
                c.fail(f"Denied by policy: {reason or 'denied'}")
        return allowed

    async def _execute_data_source(self, run: RunSession, calls: list[Call]) -> None:
        await self._run_keyed(run, calls)

    async def _execute_data_sources(self, run: RunSession, calls: list[Call]) -> None:
        if calls:
            await self._execute_data_source(run, await self._policy_precheck(run, calls))

    async def _execute_interactive(self, run: RunSession, calls: list[Call]) -> None:
        """Step 9b: one at a time, whatever their ConcurrencySpec (they may not declare one)."""
        if not calls:
            return
        for c in await self._policy_precheck(run, calls):
            with run.token.scope():
                await self._execute(c, run, run.turn_span)
            run.token.check()

    def _tool_key(self, c: Call) -> Any:
        """003: an undeclared operation gets the provider-wide lock token, whatever its kind."""
        spec = c.entry.spec  # type: ignore[union-attr]
        declared = spec.concurrency or _UNDECLARED
        return concurrency_key(spec.provider, spec.name, spec.kind, declared, c.args, c.id)

    async def _run_keyed(self, run: RunSession, calls: list[Call]) -> None:
        """Distinct keys concurrently (one task group), equal keys one after the other."""
        if not calls:
            return
        with run.token.scope():
            if len(calls) == 1:
                await self._execute(calls[0], run, run.turn_span)
            else:
                locks = KeyedLocks()
                async with anyio.create_task_group() as tg:
                    for c in calls:
                        tg.start_soon(self._run_under_key, run, c, locks)
        run.token.check()

    async def _run_under_key(self, run: RunSession, c: Call, locks: KeyedLocks) -> None:
        async with locks.hold(self._tool_key(c)):
            await self._execute(c, run, run.turn_span)

    @staticmethod
    def _build_plan(resources: list[Call]) -> dict[str, Any]:
        return {
            "items": [
                {"call_id": c.id, "name": c.name, "args": c.args, "vetoed": False, "reason": None}
                for c in resources
            ]
        }

    async def _plan_ready(self, run: RunSession, plan: dict[str, Any]) -> dict[str, Any]:
        """Step 11: the veto chain, dispatched for every turn with tool calls, in its own span."""
        span = self.spans.start("plan-ready", "veto_chain", run.turn_span, {"items": len(plan["items"])})
        if not self.hooks.at("plan-ready"):  # an empty chain: its span, nothing to await
            self.spans.end(span)
            return plan
        try:
            out = await self._dispatch("plan-ready", plan, run.turn, span, self._apply_veto)
        finally:
            self.spans.end(span)
        return out if isinstance(out, dict) else plan

    @staticmethod
    def _apply_veto(plan: Any, outcome: Any) -> tuple[Any, bool]:
        if not isinstance(outcome, Veto) or not isinstance(plan, dict):
            return plan, False
        vetoed = set(outcome.call_ids)
        items = [
            {**item, "vetoed": True, "reason": outcome.reason} if item.get("call_id") in vetoed else item
            for item in plan.get("items", [])
        ]
        return {**plan, "items": items}, False

    async def _apply_plan(self, run: RunSession, plan: dict[str, Any], resources: list[Call]) -> None:
        """Step 12: apply the items the chain left standing; a vetoed item gets an error result."""
        items = {item.get("call_id"): item for item in plan.get("items", []) if isinstance(item, dict)}
        approved = []
        for c in resources:
            item = items.get(c.id)
            if item is None:
                c.fail("Vetoed: removed from the plan")
            elif item.get("vetoed"):
                c.fail(f"Vetoed: {item.get('reason') or 'vetoed'}")
            else:
                approved.append(c)
        await self._run_keyed(run, approved)

    async def _post_tool_calls(self, run: RunSession, calls: list[Call]) -> bool:
        """Step 13 in the order the model asked. A terminal tool ends the turn right after its
        own post-tool-call (the remaining dispatches and post-apply are skipped)."""
        hooked = bool(self.hooks.at("post-tool-call"))
        for c in calls:
            if hooked:
                await self._dispatch(
                    "post-tool-call",
                    {"call": c.call, "result": {"content": c.content, "is_error": c.is_error}},
                    run.turn,
                    run.turn_span,
                )
            if c.entry is not None and c.entry.spec.terminates_turn:
                return True
        return False

    async def _post_apply(self, run: RunSession, plan: dict[str, Any]) -> None:
        if not self.hooks.at("post-apply"):
            return
        await self._dispatch("post-apply", plan, run.turn, run.turn_span)

    def _order_results(self, calls: list[Call]) -> list[Call]:
        """Each call wrote its own slot, so the list is already in the order the model asked."""
        return calls

    async def _append_results(self, run: RunSession, message: dict[str, Any], calls: list[Call]) -> None:
        """Step 15: the assistant message, then its tool_results in the model's order."""
        await self._append(run, message)
        ordered = self._order_results(calls)
        for c in ordered:
            await self._append(run, self._tool_result(c))
        for c in ordered:
            await self.journal.record_tool_call(run.turn, self._record(c))

    async def _append(self, run: RunSession, message: dict[str, Any]) -> None:
        run.history.append(message)
        run.messages.append(message)
        await self.journal.append_message(run.turn, message)

    def _check_doom(self, run: RunSession, calls: list[Call]) -> str | None:
        """Step 16: hashes of resource / data-source calls; threshold identical in a row fires."""
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                run.doom.record(c.name, c.raw if c.raw is not None else c.call.get("args"))
        return DOOM_LOOP if run.doom.fired() else None

    def _check_bounds(self, run: RunSession) -> str | None:
        """Step 17: three independent dimensions, one graceful path."""
        bounds = run.bounds
        if bounds.max_turns is not None and run.turns_used >= bounds.max_turns:
            return MAX_TURNS
        if self.ledger.exhausted(run.ledger_key):
            return MAX_BUDGET
        if bounds.max_wall_clock_s is not None and self.clock() - run.started >= bounds.max_wall_clock_s:
            return MAX_WALL_CLOCK
        return None

    async def _final_turn(self, run: RunSession, limit: str) -> None:
        """Limit reached: exactly one more RunTurn without tools, then end with the subtype."""
        await self._run_turn(run, limit)
        if run.bounds.soft and limit in _SOFT_ABLE:  # paused, not ended: no error_* subtype
            self._end(run, "paused", "paused_" + limit.removeprefix("error_"))
        else:
            self._end(run, "limit_reached", limit)

    # ------------------------------------------------------------------ delegation

    async def _delegate(self, c: Call, run: RunSession, span: str) -> tuple[str, bool]:
        """A child RunSession: TurnInfo.child, its own ledger node under ours, a child token."""
        refused = self._child_allowed(run.turn.depth)
        if refused:
            return refused, True
        delegate = c.entry.spec.delegate  # type: ignore[union-attr]
        goal = self._goal(c.args)
        session_id = await self.new_session(
            goal, run.turn.tags, source="subagent", parent_session_id=run.turn.session_id, title=goal
        )
        child_turn = run.turn.child(session_id, self.ids())
        bounds = self.profile.bounds.model_copy(
            update={
                k: v
                for k, v in (("max_turns", delegate.max_turns), ("max_cost_usd", delegate.max_cost_usd))
                if v is not None
            }
        )
        token = run.token.child()
        try:
            result = await self._run(child_turn, goal, token, bounds, run.ledger_key, span)
        finally:
            token.detach()
        if result.status in ("error", CANCELLED):
            return f"Sub-agent {result.subtype}: {result.error or ''}".rstrip(": "), True
        return result.reply or "", False
