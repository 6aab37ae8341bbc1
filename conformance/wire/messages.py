"""The stdio wire protocol's messages (version 1), as pydantic models.

They exist for two jobs: the JSON Schemas in ``schemas/protocol/`` are generated from them (so a
kernel in another language validates against exactly what the harness accepts), and
``--validate-protocol`` checks every message against those schemas. The client and the reference
server build and read plain dicts on the hot path; ``docs/protocol.md`` is the prose version.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from conformance.boundary.adapter import AdapterInfo, RunResult, Span, TurnInfo
from conformance.boundary.scenario import HookOutcome, Scenario

from conformance.wire.codes import (  # noqa: F401 - the version and codes, re-exported
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODEL_ERROR,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    REQUEST_CANCELLED,
    SUPPORTED_VERSIONS,
    TOOL_FAILED,
    UNSUPPORTED_VERSION,
)

Id = int | str


class _Strict(BaseModel):
    """Top-level params and results: unknown keys are refused (they are usually typos)."""

    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    """Shapes owned by the kernel's own vocabulary (requests, calls): extra keys are kept."""

    model_config = ConfigDict(extra="allow")


# --------------------------------------------------------------------------- envelope


class RpcError(_Strict):
    code: int
    message: str
    data: Any = None


class Request(_Strict):
    jsonrpc: Literal["2.0"]
    id: Id
    method: str
    params: dict[str, Any] = Field(default_factory=dict)


class Notification(_Strict):
    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] = Field(default_factory=dict)


class Response(_Strict):
    jsonrpc: Literal["2.0"]
    id: Id
    result: Any


class ErrorResponse(_Strict):
    jsonrpc: Literal["2.0"]
    id: Id | None
    error: RpcError


Envelope = Request | Notification | Response | ErrorResponse


# --------------------------------------------------------------------------- chunks


class TextChunk(_Strict):
    type: Literal["text"]
    text: str


class ToolUseChunk(_Strict):
    type: Literal["tool_use"]
    id: str
    name: str
    #: Raw argument text (may be invalid JSON on purpose).
    input_json: str


class UsageChunk(_Strict):
    type: Literal["usage"]
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0


Chunk = Annotated[TextChunk | ToolUseChunk | UsageChunk, Field(discriminator="type")]


# --------------------------------------------------------------------------- harness → kernel


class HarnessInfo(_Open):
    name: str
    version: str


class StartParams(_Strict):
    protocol: int
    harness: HarnessInfo


class StartResult(_Strict):
    protocol: int
    info: AdapterInfo


class HttpModelParams(_Strict):
    """The scenario's model served over HTTP (docs/http-kernels.md): the base URL per dialect
    (``anthropic``, ``openai-chat``, ``openai-responses``) and the API key to send."""

    base_urls: dict[str, str]
    api_key: str


class RunParams(_Strict):
    seq: int
    scenario: Scenario
    #: For a kernel that calls its model over HTTP instead of ``model.complete``.
    http_model: HttpModelParams | None = None


class RunOk(_Strict):
    seq: int
    status: Literal["ok"]
    result: RunResult


class ErrorInfo(_Strict):
    type: str
    message: str
    #: Free text: a stack, the step the adapter was in.
    context: str | None = None


class RunErrored(_Strict):
    seq: int
    status: Literal["errored"]
    error: ErrorInfo


class RunSkipped(_Strict):
    seq: int
    status: Literal["skipped"]
    reason: str


RunEnvelope = Annotated[RunOk | RunErrored | RunSkipped, Field(discriminator="status")]


class StopParams(_Strict):
    pass


class StopResult(_Strict):
    pass


class CancelParams(_Strict):
    seq: int
    #: The user message whose running turn must be cancelled.
    message: int


class ModelChunkParams(_Strict):
    seq: int
    #: The id of the kernel's pending ``model.complete`` request.
    request: Id
    chunk: Chunk


class ClockParams(_Strict):
    """``clock``: the harness clock's reading (docs/protocol.md, Clock), sent just before a
    response or a ``model.chunk`` whenever it moved since the last one: a kernel that claims
    ``live_clock`` reads its clock as the largest ``now`` received in the run (or the
    ``injectable_clock`` formula, if larger); others may ignore it."""

    seq: int
    now: float


# --------------------------------------------------------------------------- kernel → harness


class ModelRequest(_Open):
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)


class ModelCompleteParams(_Strict):
    seq: int
    request: ModelRequest
    turn: TurnInfo


class ModelCompleteResult(_Strict):
    chunks: list[Chunk]


class ModelErrorData(_Strict):
    """``error.data`` of a scripted model API failure (code 1001): ``kind`` http (with the
    error ``status``), timeout or broken_stream (status null)."""

    status: int | None
    message: str
    kind: Literal["http", "timeout", "broken_stream"] = "http"
    chunks: list[Chunk] = Field(default_factory=list)


class ToolCall(_Open):
    id: str
    name: str
    args: Any = None


class ToolInvokeParams(_Strict):
    seq: int
    call: ToolCall
    turn: TurnInfo


class ToolInvokeResult(_Strict):
    content: str
    is_error: bool


class HookDispatchParams(_Strict):
    seq: int
    hook_id: str
    point: str
    payload: Any = None
    turn: TurnInfo


class PolicyPrecheckParams(_Strict):
    seq: int
    call: ToolCall
    turn: TurnInfo


class PolicyDecision(_Strict):
    allow: bool
    reason: str | None = None


class ApprovalRequest(_Open):
    call_id: str
    name: str
    args: Any = None
    risk: str | None = None
    prompt: str | None = None


class ApproverAskParams(_Strict):
    seq: int
    request: ApprovalRequest
    turn: TurnInfo


class ApproverDecision(_Strict):
    decision: Literal["approved", "denied", "timed_out"]


class SpanParams(_Strict):
    seq: int
    span: Span


class JournalWriteParams(_Strict):
    """``journal.write``: the kernel wrote to its journal (after the write returned)."""

    seq: int
    #: 001's Journal method: create_session, start_turn, append_message, record_tool_call, finish_turn.
    op: str
    record: Any = None
    #: The TurnInfo the write was made under (null for create_session).
    turn: TurnInfo | None = None


class MessageSubmitParams(_Strict):
    """``message.submit``: the kernel is about to take user message ``message``; the harness
    records when, and may hold a ``concurrent`` message until the previous turn is running."""

    seq: int
    message: int


class MessageSubmitResult(_Strict):
    pass


class CancelRequestParams(_Strict):
    """``$/cancel``: the kernel gave up its own pending request ``id``."""

    seq: int
    id: Id


# --------------------------------------------------------------------------- the method table

Direction = Literal["harness→kernel", "kernel→harness"]

#: method → (direction of the request or notification, params model, result model or None for
#: a notification).
METHODS: dict[str, tuple[Direction, Any, Any]] = {
    "start": ("harness→kernel", StartParams, StartResult),
    "run": ("harness→kernel", RunParams, RunEnvelope),
    "stop": ("harness→kernel", StopParams, StopResult),
    "cancel": ("harness→kernel", CancelParams, None),
    "model.chunk": ("harness→kernel", ModelChunkParams, None),
    "clock": ("harness→kernel", ClockParams, None),
    "model.complete": ("kernel→harness", ModelCompleteParams, ModelCompleteResult),
    "tool.invoke": ("kernel→harness", ToolInvokeParams, ToolInvokeResult),
    "hook.dispatch": ("kernel→harness", HookDispatchParams, HookOutcome),
    "policy.precheck": ("kernel→harness", PolicyPrecheckParams, PolicyDecision),
    "approver.ask": ("kernel→harness", ApproverAskParams, ApproverDecision),
    "span": ("kernel→harness", SpanParams, None),
    "journal.write": ("kernel→harness", JournalWriteParams, None),
    "message.submit": ("kernel→harness", MessageSubmitParams, MessageSubmitResult),
    "$/cancel": ("kernel→harness", CancelRequestParams, None),
}

#: Error ``data`` shapes by error code.
ERROR_DATA: dict[int, Any] = {MODEL_ERROR: ModelErrorData}


class EnvelopeSchema(RootModel[Envelope]):
    """Any message on the wire: request, notification, response or error response."""


class RunEnvelopeSchema(RootModel[RunEnvelope]):
    """The result of ``run``: ok (with the RunResult), errored or skipped."""


class HookOutcomeSchema(RootModel[HookOutcome]):
    """The result of ``hook.dispatch``: the outcome the kernel must honour."""


_NAMED = {id(Envelope): EnvelopeSchema, id(RunEnvelope): RunEnvelopeSchema, id(HookOutcome): HookOutcomeSchema}


def file_stem(method: str) -> str:
    """The schema file stem of a method (``$/cancel`` → ``cancel-request``: no slash in names)."""
    return "cancel-request" if method == "$/cancel" else method


def schema_files() -> dict[str, Any]:
    """``protocol/<file>`` → model, for :mod:`conformance.cli.schemagen` (unions get a named root
    model so that their schema has a readable title)."""
    files: dict[str, Any] = {"protocol/envelope.schema.json": EnvelopeSchema}
    for method, (_direction, params, result) in METHODS.items():
        files[f"protocol/{file_stem(method)}.params.schema.json"] = params
        if result is not None:
            files[f"protocol/{file_stem(method)}.result.schema.json"] = _NAMED.get(id(result), result)
    files["protocol/model.complete.error-data.schema.json"] = ModelErrorData
    return files
