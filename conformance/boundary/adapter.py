"""The adapter boundary: how the harness drives a kernel and what the kernel reports back.

A kernel is certified through an *adapter*, an object made by a factory named ``pkg.mod:factory``.
The harness calls ``await adapter.run(scenario, doubles)`` once per scenario. The adapter builds
its kernel from the scenario, wires the *doubles* in (the model, every tool, every hook, the
policy precheck, the approver and, if the kernel accepts one, the clock are the harness's), runs
the scenario's user messages and returns a :class:`RunResult`.

Everything that crosses this boundary is JSON-serialisable (dicts, lists, strings, numbers), so
the same contract can be served over a wire protocol to kernels in any language: the doubles are
called back, never imported by the kernel.

Observation principle: what the doubles see (hook dispatches and their payloads, model requests,
tool starts and ends, policy and approver questions) is recorded by the harness itself. Only what
cannot be seen from outside is reported in the result: statuses, the journal, usage with cost,
and spans.

Shapes used on the callbacks (001's message JSON, the canonical form at this boundary):

* message: ``{"role": "user", "text": ...}``,
  ``{"role": "assistant", "text"?: ..., "tool_calls"?: [{"id", "name", "args"}]}``,
  ``{"role": "tool_result", "call_id", "content", "is_error"}``, ``{"role": "system", "text"}``.
* model request: ``{"messages": [message...], "tools": [tool spec...], "params": {...}}``
  where a tool spec is ``{"name", "description", "input_schema"}``. A request sent with tool
  specs withheld has ``"tools": []`` (or no ``tools`` key).
* stream chunk: ``{"type": "text", "text"}``, ``{"type": "tool_use", "id", "name", "input_json"}``
  (``input_json`` is the raw argument text), ``{"type": "usage", "input_tokens", "output_tokens",
  "cached_input_tokens"}``. A failing call raises :class:`ModelCallError` from the stream.
* tool call: ``{"id", "name", "args"}``; tool result: ``{"content": str, "is_error": bool}``.
* TurnInfo: ``{"profile_id", "session_id", "turn_id", "parent_turn_id", "tags", "depth"}``.
* hook outcome: one of the outcome models of ``conformance.boundary.scenario`` as a dict
  (``{"kind": "continue"}``, ``{"kind": "replace", "payload": ...}``, ...).

Hook payloads per point are listed in ``docs/adapter.md``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

import anyio
from anyio.lowlevel import checkpoint

from conformance.boundary.scenario import Profile, Scenario, UserMessage

JSON = dict[str, Any]

#: Optional capabilities (the SHOULD/MAY features of the catalog). Undeclared means not offered;
#: declared means tested, and a false claim fails.
CAPABILITIES: tuple[str, ...] = (
    "max_cost_usd",
    "max_wall_clock_s",
    "soft_limits",
    "subagents",
    "injectable_clock",
    # The kernel reads the harness clock at every reading (in-process: doubles.now), so its spans
    # can be timed against what the harness observed; a kernel over stdio computes scenario.clock
    # itself and cannot offer it.
    "live_clock",
    "doom_loop_llm_check",
    "weighted_tokens",
    "pipelining",
    # The kernel ships tool providers of its own (003's SHOULD on data-source declarations).
    "bundled_tools",
)


#: What an adapter's mechanism table may name besides hook points and capabilities: abilities of
#: the kernel the suite observes or drives (see ``conformance/catalog/mechanisms.toml``).
OBSERVATIONS: tuple[str, ...] = (
    "policy_precheck",  # 003's lightweight precheck of data-source / interactive calls
    "approver",  # 000's AskUser approver
    "tool_kinds",  # data-source / resource / interactive treated differently
    "tool_risk",  # a tool's risk handed to pre_tool_call
    "concurrency_keys",  # ConcurrencySpec keys and provider-wide locks
    "terminal_tool",  # terminates_turn
    "max_turns",  # 003's turn bound (kernel) / max_iterations (commonagent)
    "max_iterations",
    "final_turn",  # the limit-reached path: one final tool-less turn
    "doom_loop",  # a kernel-owned doom-loop detector
    "usage",  # usage events with cost_usd from the model's pricing
    "spans",  # trace spans reported by the kernel
    "journal",  # what the kernel stored (sessions, turns, messages, tool calls)
    "turn_info",  # TurnInfo (ids, tags, depth) made by the kernel
    "tags",  # tag validation and resolution
    "cancellation",  # cancelling a running turn
)

#: How a hook point, capability or observation maps onto the kernel (``AdapterInfo.mechanisms``).
MechanismKind = Literal["native", "observe-only", "emulated", "absent", "not-wired"]
MECHANISM_KINDS: tuple[str, ...] = ("native", "observe-only", "emulated", "absent", "not-wired")


class Mechanism(BaseModel):
    """One row of an adapter's mechanism table: ``native`` (the kernel's own mechanism, named in
    ``via``), ``observe-only`` (the kernel calls back but the value cannot be changed),
    ``emulated`` (the adapter does it; never earns a pass), ``absent`` (the kernel has no such
    thing) or ``not-wired`` (the kernel has it, named in ``via``, but the adapter does not connect
    it: like ``absent`` it earns no pass, and the report says the gap is the adapter's)."""

    model_config = ConfigDict(extra="forbid")

    kind: MechanismKind
    #: The kernel's own name for it, e.g. ``Hooks.before_tool_validate``.
    via: str | None = None
    note: str | None = None


def native(names: Iterable[str], via: str) -> dict[str, Mechanism]:
    """A mechanism table saying ``native`` for each name (a kernel's own hooks and features)."""
    return {name: Mechanism(kind="native", via=f"{via} {name}") for name in names}


#: A capability name (an enum in ``schemas/adapter-info.schema.json``).
Capability = Literal[CAPABILITIES]  # type: ignore[valid-type]


class ModelCallError(Exception):
    """Raised from the scripted model's stream: the model API failed. ``kind`` is ``http`` (the
    API answered with the error ``status``), ``timeout`` or ``broken_stream`` (no status: None)."""

    def __init__(self, status: int | None, message: str, kind: str = "http") -> None:
        super().__init__(f"{status}: {message}" if status is not None else f"{kind}: {message}")
        self.status = status
        self.message = message
        self.kind = kind


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


#: The model APIs the harness serves its model double in (``conformance.httpmodel``).
Dialect = Literal["anthropic", "openai-chat", "openai-responses"]
#: What a model API may have no place for (the ``dialect-limits`` reading; the HTTP dialects'
#: table is ``conformance.httpmodel.dialect.CANNOT_CARRY``): ``tool-error-flag``, a tool result
#: has no error flag; ``usage-events``, usage is one figure per model call.
ModelApiLimit = Literal["tool-error-flag", "usage-events"]


class AdapterInfo(_Model):
    name: str
    version: str
    language: str = "python"
    homepage: str | None = None
    profiles: list[Profile]
    capabilities: list[Capability] = Field(default_factory=list)
    #: The status subtype this kernel uses when its doom-loop detector fires (seeds leave it open).
    doom_loop_subtype: str | None = None
    #: The kernel's reading of open points of the seeds: {reading id: alternative id} (``akc
    #: readings``). Optional: undeclared, every legal alternative is accepted; declared, the checks
    #: hold the kernel to it, and the report prints it.
    readings: dict[str, str] = Field(default_factory=dict)
    #: How each hook point, capability and observation (``OBSERVATIONS``) maps onto the kernel.
    #: Empty: not declared (no mechanism rule applies). Declared: a name missing from it is
    #: ``absent``, and a requirement depending on a mechanism that is not ``native`` cannot pass
    #: (``conformance.report.verdicts.mechanism_verdict``).
    mechanisms: dict[str, Mechanism] = Field(default_factory=dict)
    #: The model API(s) the kernel calls over HTTP (``docs/http-kernels.md``): it takes its model
    #: from ``doubles.http_model.base_url(dialect)`` (in process) or the run request's
    #: ``http_model`` (stdio), not from ``doubles.model_stream``. Empty: the kernel takes the model
    #: double directly. The first one listed is the kernel's own; the report names those used.
    dialects: list[Dialect] = Field(default_factory=list)
    #: What the framework's own in-process model API cannot carry (``docs/adapter.md``, "What a
    #: model API cannot carry"): the checks judge an in-process model request on what that API
    #: can say, as they judge an HTTP one on its dialect's ``CANNOT_CARRY``. Empty: it carries all.
    model_api_cannot_carry: list[ModelApiLimit] = Field(default_factory=list)

    @field_validator("capabilities", mode="before")
    @classmethod
    def _known_capabilities(cls, value: Any) -> Any:
        """A misspelt capability would silently turn its requirements into not-offered: refuse it."""
        if isinstance(value, (list, tuple)):
            unknown = [c for c in value if c not in CAPABILITIES]
            if unknown:
                shown = ", ".join(repr(c)[:80] for c in unknown[:5]) + (f", … ({len(unknown)} in all)" if len(unknown) > 5 else "")
                raise ValueError(f"unknown capability {shown}; the known ones are {', '.join(CAPABILITIES)}")
        return value


class TurnInfo(_Model):
    profile_id: str
    session_id: str
    turn_id: str
    parent_turn_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    depth: int = 0


class SessionRecord(_Model):
    id: str
    profile_id: str
    source: str | None = None
    title: str | None = None
    tags: list[str] = Field(default_factory=list)
    parent_session_id: str | None = None


class TurnRecord(_Model):
    turn: TurnInfo
    status: str | None = None


class MessageRecord(_Model):
    session_id: str
    turn_id: str | None = None
    message: JSON


class ToolCallRecord(_Model):
    session_id: str
    turn_id: str | None = None
    call_id: str
    name: str
    args: Any = None
    result: str | None = None
    is_error: bool = False
    risk: str | None = None
    duration_ms: float | None = None
    approval: str | None = None


class UsageEvent(_Model):
    session_id: str
    turn_id: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float


class JournalDump(_Model):
    """What the kernel stored, in the order it stored it (001's Journal contract)."""

    sessions: list[SessionRecord] = Field(default_factory=list)
    turns: list[TurnRecord] = Field(default_factory=list)
    messages: list[MessageRecord] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    #: The usage events as the kernel persisted them, each with its cost_usd (003: "compute and
    #: persist cost_usd per usage event at receipt time"), in storing order. None: the adapter
    #: cannot show what its kernel persisted (the cost checks that need it are incomplete).
    usage: list[UsageEvent] | None = None


class Span(_Model):
    span_id: str
    parent_id: str | None = None
    name: str
    #: session | turn | model_call | tool | veto_chain | hook | other
    kind: str
    start: float | None = None
    end: float | None = None
    attributes: JSON = Field(default_factory=dict)


class Outcome(_Model):
    """How one user message's run ended."""

    message: int
    session_id: str | None = None
    turn_id: str | None = None
    #: commonagent: completed | interrupted | budget_exhausted | error. kernel: free text.
    status: str
    #: kernel profile: success | error_max_turns | error_max_budget_usd | error_max_wall_clock |
    #: the adapter's doom_loop_subtype | anything else for errors and cancellation.
    subtype: str | None = None
    #: The final answer text the turn returned (after transform_llm_output, for commonagent).
    reply: str | None = None
    error: str | None = None


class KernelRaised(_Model):
    """The kernel raised out of its public API instead of ending with a status."""

    type: str
    message: str


class Rejection(_Model):
    """The kernel refused the scenario's configuration when it was created (bad tag, ConcurrencySpec
    on an interactive tool, negative bound...). ``field`` names what was refused."""

    field: str
    message: str


class RunResult(_Model):
    outcomes: list[Outcome] = Field(default_factory=list)
    journal: JournalDump = Field(default_factory=JournalDump)
    usage: list[UsageEvent] = Field(default_factory=list)
    spans: list[Span] = Field(default_factory=list)
    raised: KernelRaised | None = None
    rejected: Rejection | None = None


class Doubles(Protocol):
    """The harness side of the boundary. Every method may be called concurrently."""

    def model_stream(self, request: JSON, turn: JSON) -> AsyncIterator[JSON]:
        """Stream the scripted response to ``request`` (see the chunk shapes above)."""
        ...

    async def invoke_tool(self, call: JSON, turn: JSON) -> JSON:
        """Run the harness's tool for ``call``; returns ``{"content", "is_error"}``. A scripted
        failure raises :class:`ToolFailed`."""
        ...

    async def dispatch_hook(self, hook_id: str, point: str, payload: Any, turn: JSON) -> JSON:
        """Dispatch to the hook ``hook_id`` registered at ``point``; returns its outcome."""
        ...

    async def policy_precheck(self, call: JSON, turn: JSON) -> JSON:
        """003's lightweight precheck of a data-source or interactive call:
        ``{"allow": bool, "reason": str | None}``."""
        ...

    async def ask_approver(self, request: JSON, turn: JSON) -> JSON:
        """000's AskUser: ``request`` is ``{"call_id", "name", "args", "risk", "prompt"}``;
        returns ``{"decision": "approved" | "denied" | "timed_out"}``."""
        ...

    def now(self) -> float:
        """The harness clock in seconds (for kernels that accept an injected clock)."""
        ...

    def register_canceller(
        self, message: int, cancel: Callable[[], Awaitable[None] | None]
    ) -> None:
        """The adapter registers how to cancel user message ``message``'s running turn; the
        harness calls it at the scenario's cancel point."""
        ...

    def journal_write(self, op: str, record: JSON, turn: JSON | None) -> None:
        """The adapter reports each write the kernel made to its journal, when it made it (after
        the write returned): ``op`` is 001's Journal method (``create_session``, ``start_turn``,
        ``append_message``, ``record_tool_call``, ``finish_turn``), ``record`` what was written
        (the NewSession with its id, the message, the ToolCallRecord, ``{"status"}``...), ``turn``
        the TurnInfo it was written under (None for ``create_session``). It goes on the harness's
        ordered event log, so checks can see a write's place among hook dispatches (000: "The
        final status is stored, then on_session_end fires"). Optional: an adapter that reports no
        writes gets ``incomplete`` ("journal writes not observable") from the checks needing them."""
        ...

    async def submit_user_message(self, index: int) -> None:
        """Called (by :func:`run_user_messages`) right before user message ``index`` is handed
        to the kernel: the harness records when it submitted each message, and may hold a message
        marked ``concurrent`` until the turn of the message before it is observably running."""
        ...


class ToolFailed(Exception):
    """Raised by ``Doubles.invoke_tool`` when the scenario scripts the tool to fail."""


@runtime_checkable
class KernelAdapter(Protocol):
    info: AdapterInfo

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult: ...


AdapterFactory = Callable[[], KernelAdapter]


async def run_user_messages(
    scenario: Scenario,
    run_one: Callable[[int, UserMessage, Any], Awaitable[None]],
    prepare: Callable[[int, UserMessage], Awaitable[Any]] | None = None,
    doubles: Any = None,
) -> None:
    """Run the scenario's user messages as the harness means them: each waits until every earlier
    one has ended, unless it is marked ``concurrent`` (then it starts while they still run).

    ``prepare(index, message)`` runs in message order before the message starts (create or look up
    its session there, so two concurrent messages to a new session get the same one); its result is
    ``run_one``'s third argument. ``run_one`` should report the kernel's own failures in its result,
    not raise: what it raises is the adapter's breakage. Pass the ``doubles``: each message is
    submitted through ``doubles.submit_user_message`` right before it starts, so the harness
    records when (and holds a concurrent message until the turn before it is running)."""
    submit = getattr(doubles, "submit_user_message", None)
    async with anyio.create_task_group() as tg:
        pending: list[anyio.Event] = []
        for index, message in enumerate(scenario.user_messages):
            if not message.concurrent:
                for event in pending:
                    await event.wait()
            if submit is not None:
                await submit(index)
            prepared = await prepare(index, message) if prepare is not None else None
            done = anyio.Event()
            pending.append(done)

            async def one(index: int = index, message: UserMessage = message, prepared: Any = prepared,
                          done: anyio.Event = done) -> None:
                try:
                    await run_one(index, message, prepared)
                finally:
                    done.set()

            tg.start_soon(one)
            await checkpoint()  # let it start before the next one

Verdict = Literal["pass", "fail", "not-offered", "incomplete", "error"]
