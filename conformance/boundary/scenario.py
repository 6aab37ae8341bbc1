"""The scenario: what the harness hands a kernel's adapter, as plain JSON-serialisable data.

A scenario says *what* the kernel is given (tools, hooks, a model script, bounds, tags, user
messages); the doubles (see ``conformance.boundary.adapter.Doubles``) are *how* the harness observes what the
kernel does with it. Nothing here is kernel-specific: an adapter maps it onto its kernel's own
mechanisms. The JSON Schema in ``schemas/scenario.schema.json`` is generated from these models.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Profile = Literal["kernel", "commonagent"]
ToolKind = Literal["data_source", "resource", "interactive"]

#: Hook points of the ``kernel`` profile (003), in the order a turn dispatches them.
KERNEL_HOOK_POINTS: tuple[str, ...] = (
    "session-start",
    "context-assemble",
    "pre-model-call",
    "post-model-response",
    "pre-tool-call",
    "plan-ready",
    "post-tool-call",
    "post-apply",
    "session-end",
)

#: Hook points of the ``commonagent`` profile (000, the Hermes names).
COMMONAGENT_HOOK_POINTS: tuple[str, ...] = (
    "on_session_start",
    "pre_llm_call",
    "pre_api_request",
    "post_api_request",
    "api_request_error",
    "transform_api_error_classification",
    "transform_llm_output",
    "post_llm_call",
    "pre_tool_call",
    "post_tool_call",
    "transform_tool_result",
    "agent_loop_stopped",
    "on_session_end",
)

HOOK_POINTS: dict[str, tuple[str, ...]] = {
    "kernel": KERNEL_HOOK_POINTS,
    "commonagent": COMMONAGENT_HOOK_POINTS,
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# --------------------------------------------------------------------------- tools


class ConcurrencySpec(_Model):
    """003's ConcurrencySpec: ``safe`` operations are keyed by ``key_fields``; unsafe ones share a
    provider-wide lock."""

    safe: bool
    key_fields: list[str] = Field(default_factory=list)


class SubagentDef(_Model):
    """Makes a tool a delegation tool: calling it runs a child session of the kernel.

    The child's model calls go to the same scripted model (its script is one list, consumed in
    call order); the tool's ``goal`` argument is the child's first message and its title.
    """

    profile_id: str = "child"
    max_cost_usd: float | None = None
    max_turns: int | None = None


class ToolDef(_Model):
    """A tool the kernel must register. The harness implements it (``Doubles.invoke_tool``)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    kind: ToolKind = "data_source"
    provider: str = "default"
    concurrency: ConcurrencySpec | None = None
    terminates_turn: bool = False
    risk: Literal["low", "medium", "high"] = "low"
    #: Result text when no CallScript says otherwise. ``{args}`` is replaced by the canonical JSON
    #: of the arguments, ``{call_id}`` by the call id.
    result: str = "{name} ok"
    subagent: SubagentDef | None = None


class CallScript(_Model):
    """Scripted behaviour of one tool call, keyed by the call id the model script gave it."""

    result: str | None = None
    #: The tool raises with this message (the kernel must turn it into an error tool_result).
    error: str | None = None
    #: The call does not finish until the harness has submitted user message n (0-based): the
    #: turn running it is certainly still running when that message arrives (session lock).
    hold_until_submitted: int | None = None


# --------------------------------------------------------------------------- hooks


class Continue(_Model):
    kind: Literal["continue"] = "continue"


class Replace(_Model):
    """The hook returns a new payload; the next hook of the chain, and the kernel, see it."""

    kind: Literal["replace"] = "replace"
    payload: Any


class Block(_Model):
    """000's Block(reason): the tool does not run; the model gets ``Blocked: <reason>``."""

    kind: Literal["block"] = "block"
    reason: str


class AskUser(_Model):
    """000's AskUser(prompt): the kernel asks the approver before running the tool."""

    kind: Literal["ask_user"] = "ask_user"
    prompt: str


class Modify(_Model):
    """000's Modify(args): these arguments are merged over the model's before the tool runs."""

    kind: Literal["modify"] = "modify"
    args: dict[str, Any]


class AddContext(_Model):
    """pre_llm_call's returned context: put in front of the user message for the model only."""

    kind: Literal["context"] = "context"
    text: str


class Veto(_Model):
    """plan-ready: veto these plan items (by call id). The kernel must not apply them, and their
    tool_result must say they were vetoed."""

    kind: Literal["veto"] = "veto"
    call_ids: list[str]
    reason: str = "vetoed"


class Raise(_Model):
    """The hook raises this message (the kernel must end the session with an error status)."""

    kind: Literal["raise"] = "raise"
    message: str = "hook failed"


HookOutcome = Annotated[
    Continue | Replace | Block | AskUser | Modify | AddContext | Veto | Raise,
    Field(discriminator="kind"),
]


class HookMatch(_Model):
    """Restricts a scripted outcome to some dispatches; unset fields match anything."""

    tool: str | None = None
    call_id: str | None = None
    occurrence: int | None = None  # 0-based count of this hook's dispatches


class ScriptedOutcome(_Model):
    when: HookMatch = Field(default_factory=HookMatch)
    outcome: HookOutcome


class HookDef(_Model):
    """A hook the kernel must register at ``point``, in list order. Every dispatch is recorded by
    the harness; the first ``script`` entry whose ``when`` matches gives the outcome (default:
    continue)."""

    id: str
    point: str
    script: list[ScriptedOutcome] = Field(default_factory=list)


# --------------------------------------------------------------------------- model


class Pricing(_Model):
    """USD per million tokens. cost = (input*input + cached*cached_input + output*output) / 1e6,
    where ``input_tokens`` counts only non-cached input."""

    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    cached_input_usd_per_mtok: float = 0.0


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


class ScriptedToolCall(_Model):
    #: Unset: the harness assigns ``c<model call index>_<position>``.
    id: str | None = None
    name: str
    args: dict[str, Any] | None = None
    #: Raw argument text instead of ``args`` (to script invalid JSON).
    raw_args: str | None = None


class ModelError(_Model):
    """A failed model call, in no API's dialect: ``http``, the API answered with an error
    ``status``; ``timeout``, no answer came in time; ``broken_stream``, the stream broke off after
    ``after_chunks`` chunks. A timeout and a broken stream carry no status (``status`` is read
    for ``http`` only)."""

    kind: Literal["http", "timeout", "broken_stream"] = "http"
    status: int = 500
    message: str = "scripted model error"
    #: How many chunks stream before the error is raised (0: the call fails at once).
    after_chunks: int = 0


class ModelResponse(_Model):
    text: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    #: Several usage events for this one model call, streamed instead of ``usage``: the first as
    #: the stream opens (before the text), the others after the tool_use chunks (a provider that
    #: reports input usage at message start and output usage at its end). A call cancelled at
    #: ``cancel.at = model_call`` streams the first of them, then its text, then blocks.
    usage_events: list[Usage] = Field(default_factory=list)
    #: Split ``text`` into this many stream chunks.
    chunks: int = 1
    error: ModelError | None = None
    #: Stream ``after_chunks`` chunks, then never finish: the kernel must cancel the call.
    block_until_cancelled: bool = False
    #: Use this response this many times in a row (tool call ids get a ``_r<k>`` suffix).
    repeat: int = 1


class ModelDef(_Model):
    name: str = "scripted-model"
    pricing: Pricing = Field(default_factory=Pricing)
    responses: list[ModelResponse] = Field(default_factory=list)


# --------------------------------------------------------------------------- run shape


class Bounds(_Model):
    """003's LoopBounds (per session) plus 000's max_iterations (per turn)."""

    max_turns: int | None = None
    max_cost_usd: float | None = None
    max_wall_clock_s: float | None = None
    soft: bool = False
    max_iterations: int | None = None
    max_depth: int | None = None


class DoomLoop(_Model):
    threshold: int | None = None
    window_size: int | None = None


class CancelAt(_Model):
    """Where the harness cancels the running turn (it calls the canceller the adapter registered)."""

    #: model_call: on the index-th model call (0-based, across the run); the response streams its
    #: ``after_chunks`` and then blocks until cancelled. hook: when ``point`` is dispatched for the
    #: ``occurrence``-th time (the hook then returns continue). tool: when ``call_id`` starts.
    at: Literal["model_call", "hook", "tool"]
    index: int = 0
    point: str | None = None
    occurrence: int = 0
    call_id: str | None = None
    #: tool: cancel when the first of these calls starts, whichever it is (calls that run one at a
    #: time in an order the seeds leave open; reading sequential-order).
    call_ids: list[str] = Field(default_factory=list)
    #: Which user message's turn to cancel.
    message: int = 0


class HookHold(_Model):
    """Hold one dispatch of a hook point (the ``occurrence``-th of ``point``, 0-based, counted
    over the run) until a hook, model call or tool call of *another* turn shows up, or a short
    window passes: a kernel that lets a waiting turn start before this dispatch returned shows
    it in the log (e.g. a session lock released before on_session_end)."""

    point: str
    occurrence: int = 0


class UserMessage(_Model):
    text: str
    #: A label; messages with the same label go to the same session.
    session: str = "s1"
    #: Extra tags a message that starts a new session brings.
    tags: list[str] = Field(default_factory=list)
    #: Submit this message while the previous one is still running (session-lock checks).
    concurrent: bool = False


class ClockDef(_Model):
    """The harness clock (``Doubles.now``), for kernels that accept one."""

    start: float = 1_000_000.0
    advance_per_model_call: float = 0.0
    #: Advance this much at every event the doubles observe (a model request, the end of a model
    #: stream, a tool start and end, a hook dispatch), and stamp the event with the time: spans the
    #: kernel times with this clock can then be checked to enclose what they name.
    advance_per_event: float = 0.0


class Scenario(_Model):
    name: str
    profile: Profile
    profile_id: str = "default"
    tools: list[ToolDef] = Field(default_factory=list)
    calls: dict[str, CallScript] = Field(default_factory=dict)
    #: Groups of call ids that must all be running at once (each waits for the others).
    rendezvous: list[list[str]] = Field(default_factory=list)
    #: Call ids that must *finish* in this order (each waits for its predecessor to finish).
    finish_order: list[str] = Field(default_factory=list)
    #: Groups of call ids that must NOT overlap: the first of a group to start is held until
    #: another of the group starts (under the rendezvous timeout, then it goes on). A kernel that
    #: overlaps them always shows it; one that runs them one at a time is not failed for the wait.
    hold_first: list[list[str]] = Field(default_factory=list)
    hooks: list[HookDef] = Field(default_factory=list)
    #: Hook dispatches held while another turn may start (``HookHold``).
    hold_hooks: list[HookHold] = Field(default_factory=list)
    #: Policy precheck denials: call id or tool name → reason.
    policy_deny: dict[str, str] = Field(default_factory=dict)
    #: Answers of the approver, in the order it is asked.
    approver: list[Literal["approved", "denied", "timed_out"]] = Field(default_factory=list)
    model: ModelDef = Field(default_factory=ModelDef)
    bounds: Bounds = Field(default_factory=Bounds)
    doom_loop: DoomLoop = Field(default_factory=DoomLoop)
    profile_tags: list[str] = Field(default_factory=list)
    session_tags: list[str] = Field(default_factory=list)
    system_prompt: str = "You are a test agent."
    user_messages: list[UserMessage] = Field(default_factory=lambda: [UserMessage(text="hello")])
    cancel: CancelAt | None = None
    clock: ClockDef = Field(default_factory=ClockDef)
    #: Seconds the harness gives the whole scenario before it fails it as hung.
    timeout_s: float = 5.0
