"""The reference adapter: maps a conformance Scenario onto the reference kernel's two faces.

Profile ``kernel`` runs ``Kernel.run_session`` per user message, ``commonagent`` runs
``CommonAgent.run_turn``. Everything the harness provides (model, tools, hooks, policy precheck,
approver, clock) is wired to the doubles; nothing here adds behaviour the kernel lacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import reference_kernel
from conformance.boundary.adapter import (
    OBSERVATIONS,
    native,
    AdapterInfo,
    Doubles,
    JournalDump,
    KernelRaised,
    Outcome,
    Rejection,
    RunResult,
    Span,
    run_user_messages,
)
from conformance.boundary.adapter import UsageEvent as UsageOut
from conformance.boundary.scenario import COMMONAGENT_HOOK_POINTS, KERNEL_HOOK_POINTS, Scenario, ToolDef, UserMessage
from reference_kernel.agent import CommonAgent
from reference_kernel.cancel import CancellationToken
from reference_kernel.concurrency import ConcurrencySpec
from reference_kernel.config import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_ITERATIONS,
    AddContext,
    AskUser,
    Block,
    DelegateSpec,
    DoomLoopConfig,
    HookRegistry,
    LoopBounds,
    Modify,
    ProfileConfig,
    Replace,
    ToolSpec,
    Veto,
    current_call,
)
from reference_kernel.cost import Pricing
from reference_kernel.doom import DEFAULT_THRESHOLD
from reference_kernel.errors import ConfigError
from reference_kernel.ids import IdGenerator
from reference_kernel.journal import MemoryJournal
from reference_kernel.kernel import DOOM_LOOP, Kernel, LoopCore
from reference_kernel.records import TurnInfo
from reference_kernel.spans import MemorySpanRecorder, SpanRecord
from reference_kernel.tags import merge_tags

CAPABILITIES = ["max_cost_usd", "max_wall_clock_s", "soft_limits", "subagents", "injectable_clock", "live_clock"]


class HookRaised(Exception):
    """A scripted hook's ``raise`` outcome."""


class _Wiring:
    """Callbacks into the doubles, with each TurnInfo's dict made once (not per call)."""

    accepts_turn = True  # the model provider wants the TurnInfo

    def __init__(self, doubles: Doubles, cache_turns: bool = True, model: Any = None) -> None:
        self.doubles = doubles
        self._turns: dict[str, dict[str, Any]] = {}
        self._cache = cache_turns  # off: a kernel that hands out different TurnInfos per turn_id
        self._model = model  # a provider of the kernel's own (a model API client), or the double

    def turn(self, turn: TurnInfo) -> dict[str, Any]:
        if not self._cache:
            return turn.as_dict()
        d = self._turns.get(turn.turn_id)
        if d is None:
            d = self._turns[turn.turn_id] = turn.as_dict()
        return d

    def stream(self, request: dict[str, Any], turn: TurnInfo) -> Any:
        if self._model is not None:
            return self._model.stream(request, self.turn(turn))
        return self.doubles.model_stream(request, self.turn(turn))

    def tool(self, name: str) -> Any:
        async def invoke(args: dict[str, Any], turn: TurnInfo) -> dict[str, Any]:
            call = current_call.get() or {"id": "", "name": name, "args": args}
            return await self.doubles.invoke_tool(
                {"id": call["id"], "name": name, "args": args}, self.turn(turn)
            )

        return invoke

    def hook(self, hook_id: str) -> Any:
        async def dispatch(point: str, payload: Any, turn: TurnInfo) -> Any:
            out = await self.doubles.dispatch_hook(hook_id, point, payload, self.turn(turn))
            return _outcome(out)

        return dispatch

    async def policy(self, call: dict[str, Any], turn: TurnInfo) -> tuple[bool, str | None]:
        out = await self.doubles.policy_precheck(call, self.turn(turn))
        return bool(out.get("allow", True)), out.get("reason")

    async def approver(self, request: dict[str, Any], turn: TurnInfo) -> str:
        out = await self.doubles.ask_approver(request, self.turn(turn))
        return str(out.get("decision", "denied"))


class ObservedJournal:
    """The kernel's journal, each write reported to the harness after it returned
    (``Doubles.journal_write``), so that its place among the hook dispatches is on the harness's
    event log. Reads and extras pass through unchanged."""

    def __init__(self, inner: Any, doubles: Doubles) -> None:
        self._inner = inner
        self._report = getattr(doubles, "journal_write", None)

    def _tell(self, op: str, record: dict[str, Any], turn: TurnInfo | None) -> None:
        if self._report is not None:
            self._report(op, record, turn.as_dict() if turn is not None else None)

    async def create_session(self, session: Any) -> str:
        session_id = await self._inner.create_session(session)
        self._tell("create_session", {"id": session_id, **session.as_dict()}, None)
        return session_id

    async def start_turn(self, turn: TurnInfo) -> None:
        await self._inner.start_turn(turn)
        self._tell("start_turn", turn.as_dict(), turn)

    async def append_message(self, turn: TurnInfo, message: dict[str, Any]) -> None:
        await self._inner.append_message(turn, message)
        self._tell("append_message", message, turn)

    async def record_tool_call(self, turn: TurnInfo, record: Any) -> None:
        await self._inner.record_tool_call(turn, record)
        self._tell("record_tool_call", record.as_dict(), turn)

    async def finish_turn(self, turn: TurnInfo, status: Any) -> None:
        await self._inner.finish_turn(turn, status)
        self._tell("finish_turn", {"status": status}, turn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _outcome(out: Any) -> Any:
    """A harness outcome dict → the kernel's outcome object (docs/adapter.md)."""
    if not isinstance(out, dict):
        return None
    kind = out.get("kind", "continue")
    if kind == "replace":
        return Replace(out.get("payload"))
    if kind == "veto":
        return Veto(list(out.get("call_ids", [])), out.get("reason", "vetoed"))
    if kind == "block":
        return Block(out.get("reason", ""))
    if kind == "ask_user":
        return AskUser(out.get("prompt", ""))
    if kind == "modify":
        return Modify(dict(out.get("args") or {}))
    if kind == "context":
        return AddContext(out.get("text", ""))
    if kind == "raise":
        raise HookRaised(out.get("message", "hook failed"))
    return None


def _tool_spec(tool: ToolDef) -> ToolSpec:
    return ToolSpec(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        kind=tool.kind,
        provider=tool.provider,
        concurrency=(
            ConcurrencySpec(safe=tool.concurrency.safe, key_fields=list(tool.concurrency.key_fields))
            if tool.concurrency is not None
            else None
        ),
        terminates_turn=tool.terminates_turn,
        risk=tool.risk,
        delegate=(
            DelegateSpec(max_cost_usd=tool.subagent.max_cost_usd, max_turns=tool.subagent.max_turns)
            if tool.subagent is not None
            else None
        ),
    )


def build(
    scenario: Scenario,
    doubles: Doubles,
    *,
    kernel_cls: type[Kernel] = Kernel,
    agent_cls: type[CommonAgent] = CommonAgent,
    ids_factory: Callable[[Callable[[], float]], Callable[[], str]] = IdGenerator,
    journal_factory: Callable[[Callable[[], str]], Any] = MemoryJournal,
    cache_turns: bool = True,
    model: Callable[[Doubles], Any] | None = None,
) -> tuple[LoopCore, _Wiring]:
    """The kernel for a scenario; raises ConfigError for a configuration it refuses.

    The keyword arguments let the self-test swap one part (a mutant or legal-variant subclass,
    another id generator or journal); the defaults are the reference kernel."""
    b = scenario.bounds
    profile = ProfileConfig(
        profile_id=scenario.profile_id,
        tags=scenario.profile_tags,
        system_prompt=scenario.system_prompt,
        max_iterations=b.max_iterations if b.max_iterations is not None else DEFAULT_MAX_ITERATIONS,
        bounds=LoopBounds(
            max_turns=b.max_turns,
            max_cost_usd=b.max_cost_usd,
            max_wall_clock_s=b.max_wall_clock_s,
            soft=b.soft,
        ),
        max_depth=b.max_depth if b.max_depth is not None else DEFAULT_MAX_DEPTH,
        doom_loop=DoomLoopConfig(
            threshold=(
                scenario.doom_loop.threshold if scenario.doom_loop.threshold is not None else DEFAULT_THRESHOLD
            ),
            window_size=scenario.doom_loop.window_size,
        ),
        model=scenario.model.name,
    )
    merge_tags(scenario.session_tags)
    for message in scenario.user_messages:
        merge_tags(message.tags)
    wiring = _Wiring(doubles, cache_turns, model(doubles) if model is not None else None)
    hooks = HookRegistry()
    for hook in scenario.hooks:
        hooks.register(hook.point, hook.id, wiring.hook(hook.id))
    tools = [(_tool_spec(t), None if t.subagent is not None else wiring.tool(t.name)) for t in scenario.tools]
    face = kernel_cls if scenario.profile == "kernel" else agent_cls
    ids = ids_factory(doubles.now)  # one generator for every id, so they sort by creation
    kernel = face(
        profile,
        wiring,
        tools,
        hooks,
        journal=ObservedJournal(journal_factory(ids), doubles),
        clock=doubles.now,
        ids=ids,
        spans=MemorySpanRecorder(doubles.now),
        pricing=Pricing(**scenario.model.pricing.model_dump()),
        policy=wiring.policy,
        approver=wiring.approver,
    )
    return kernel, wiring


class ReferenceAdapter:
    """Without arguments: the reference kernel. The keywords (used by ``conformance.selftest``)
    swap the kernel or agent class, the id generator or journal, or what ``info`` declares;
    ``cache_turns=False`` turns the TurnInfo dict cache off (for a kernel that hands out
    different TurnInfos under one turn_id); ``model(doubles)`` gives the kernel a model provider
    of its own (``stream(request, turn)`` of chunks: an HTTP API client pointed at
    ``doubles.http_model``, examples/http-kernels/) instead of the model double."""

    info = AdapterInfo(
        name="reference-kernel",
        version=reference_kernel.__version__,
        profiles=["kernel", "commonagent"],
        capabilities=list(CAPABILITIES),
        doom_loop_subtype=DOOM_LOOP,
        # Everything the suite names is the reference kernel's own.
        mechanisms=native([*KERNEL_HOOK_POINTS, *COMMONAGENT_HOOK_POINTS, *CAPABILITIES, *OBSERVATIONS], "reference_kernel:"),
    )

    def __init__(
        self,
        *,
        kernel_cls: type[Kernel] = Kernel,
        agent_cls: type[CommonAgent] = CommonAgent,
        name: str | None = None,
        ids_factory: Callable[[Callable[[], float]], Callable[[], str]] = IdGenerator,
        journal_factory: Callable[[Callable[[], str]], Any] = MemoryJournal,
        doom_loop_subtype: str | None = None,
        capabilities: list[str] | None = None,
        cache_turns: bool = True,
        model: Callable[[Doubles], Any] | None = None,
        dialects: list[str] | None = None,
    ) -> None:
        self._build = {
            "kernel_cls": kernel_cls,
            "agent_cls": agent_cls,
            "ids_factory": ids_factory,
            "journal_factory": journal_factory,
            "cache_turns": cache_turns,
            "model": model,
        }
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if doom_loop_subtype is not None:
            changes["doom_loop_subtype"] = doom_loop_subtype
        if capabilities is not None:
            changes["capabilities"] = list(capabilities)
        if dialects is not None:
            changes["dialects"] = list(dialects)
        if changes:
            self.info = self.info.model_copy(update=changes)

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        try:
            kernel, _wiring = build(scenario, doubles, **self._build)
        except ConfigError as exc:
            return RunResult(rejected=Rejection(field=exc.field, message=exc.message))
        outcomes: list[Outcome | None] = [None] * len(scenario.user_messages)
        raised: list[KernelRaised] = []
        sessions: dict[str, str] = {}

        async def prepare(index: int, message: UserMessage) -> tuple[str, CancellationToken]:
            session_id = sessions.get(message.session)
            if session_id is None:
                session_id = await kernel.new_session(
                    message.text, list(scenario.session_tags) + list(message.tags)
                )
                sessions[message.session] = session_id
            token = CancellationToken()
            doubles.register_canceller(index, token.cancel)
            return session_id, token

        async def run_one(index: int, message: UserMessage, prepared: tuple[str, CancellationToken]) -> None:
            session_id, token = prepared
            try:
                if isinstance(kernel, Kernel):
                    r = await kernel.run_session(session_id, message.text, token=token)
                    outcomes[index] = Outcome(
                        message=index, session_id=r.session_id, turn_id=r.turn_id, status=r.status,
                        subtype=r.subtype, reply=r.reply, error=r.error,
                    )
                else:
                    assert isinstance(kernel, CommonAgent)
                    a = await kernel.run_turn(session_id, message.text, token=token)
                    outcomes[index] = Outcome(
                        message=index, session_id=a.session_id, turn_id=a.turn_id, status=a.status,
                        reply=a.reply, error=a.error,
                    )
            except Exception as exc:  # the kernel broke its contract: report it, do not hide it
                raised.append(KernelRaised(type=type(exc).__name__, message=str(exc)))

        try:
            await run_user_messages(scenario, run_one, prepare, doubles)
        except Exception as exc:
            raised.append(KernelRaised(type=type(exc).__name__, message=str(exc)))

        dump = await kernel.journal.dump()
        closer = getattr(kernel.journal, "aclose", None)  # a journal with connections (Postgres)
        if closer is not None:
            await closer()
        return RunResult(
            outcomes=[o for o in outcomes if o is not None],
            journal=JournalDump.model_validate(dump),
            usage=[UsageOut.model_validate(e.as_dict()) for e in kernel.usage],
            spans=[Span.model_validate(s.as_dict() if isinstance(s, SpanRecord) else s) for s in kernel.spans.spans],  # type: ignore[attr-defined]
            raised=raised[0] if raised else None,
        )


#: ``akc run --journal NAME --dsn DSN`` sets these: the journal the reference kernel records in.
JOURNAL_ENV, DSN_ENV = "AKC_JOURNAL", "AKC_JOURNAL_DSN"


def journal_from_env() -> Callable[[Callable[[], str]], Any]:
    """The journal factory ``$AKC_JOURNAL`` names: memory (default), sqlite (in memory) or
    postgres (``$AKC_JOURNAL_DSN``; each scenario in a fresh schema, dropped when it ends)."""
    name = os.environ.get(JOURNAL_ENV, "memory")
    if name == "memory":
        return MemoryJournal
    if name == "sqlite":
        from reference_kernel.sqlite_journal import SqliteJournal

        return lambda ids: SqliteJournal(":memory:", ids)
    if name == "postgres":
        import uuid

        from reference_kernel.postgres_journal import PostgresJournal

        dsn = os.environ.get(DSN_ENV)
        if not dsn:
            raise ConfigError("journal", f"the postgres journal needs ${DSN_ENV} (akc run --dsn)")
        return lambda ids: PostgresJournal(dsn, schema=f"akc_run_{uuid.uuid4().hex}", ids=ids, max_size=4, drop=True)
    raise ConfigError("journal", f"unknown journal {name!r} (memory, sqlite or postgres)")


def _journal_of_the_environment(ids: Callable[[], str]) -> Any:
    """Read at each scenario's build, not once: a process may keep an adapter across runs."""
    return journal_from_env()(ids)


def factory() -> ReferenceAdapter:
    return ReferenceAdapter(journal_factory=_journal_of_the_environment)
