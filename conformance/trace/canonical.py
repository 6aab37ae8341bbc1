"""The canonical trace of one scenario run: what the harness's doubles saw and what the adapter
reported, normalised so that the same behaviour gives the same trace (``schemas/trace.schema.json``).

Why: people use the suite to see *how* two kernels (or two versions of one) differ, not only
whether they pass. A trace is built from a :class:`~conformance.harness.runner.ScenarioRun` (the doubles'
observation log + the RunResult) by :func:`build_trace`; :mod:`conformance.trace.normalise` does the
normalisation and :mod:`conformance.trace.diff` the comparison.

Events, in order: the observed ones (``hook``, ``model_request``, ``model_response``,
``model_error``, ``tool_start``, ``tool_end``, ``policy``, ``approval``, ``cancel``, harness notes),
then what the adapter reported (``usage``, ``outcome``, ``raised``, ``rejected``), the run's
``end`` (ok / timed_out / error / unsupported), and the spans as a tree (``span``).

Compact but lossless where it matters: a TurnInfo is one line (``profile session/turn parent=…``),
a model request lists its messages one line each after the ``kept`` first ones it shares with the
previous request, a hook payload's history is ``{"kept", "new"}`` against the same point's previous
history, and tool specs appear by name. A property's trace is that of its last (or failing) example.
Files hold one event per line (:func:`dump`), so a line diff is an event diff.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from conformance.trace.normalise import COST_DIGITS, canonical_json, normalise

FORMAT = "akc-trace/1"

JSON = dict[str, Any]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: The TurnInfo an event was made under, as one line (see :func:`turn_line`).
TurnRef = str


class HookEvent(_Event):
    kind: Literal["hook"] = "hook"
    point: str
    hook_id: str
    #: The call the dispatch is about (pre/post tool call), when the payload names one.
    call_id: str | None = None
    #: The payload, summarised: messages as one line each, tool specs by name.
    payload: Any = None
    outcome: JSON = Field(default_factory=dict)
    turn: TurnRef | None = None


class ModelRequestEvent(_Event):
    kind: Literal["model_request"] = "model_request"
    index: int
    #: The request's first ``kept`` messages are the previous model request's first ``kept``
    #: (a lossless way to keep a long session's trace linear in size).
    kept: int = 0
    #: The request's other messages, one line each (see :func:`message_line`).
    messages: list[str] = Field(default_factory=list)
    #: Names of the tool specs offered ([] when withheld).
    tools: list[str] = Field(default_factory=list)
    turn: TurnRef | None = None


class ModelResponseEvent(_Event):
    kind: Literal["model_response"] = "model_response"
    index: int
    #: The text chunks streamed, joined (None: no text).
    text: str | None = None
    tool_calls: list[JSON] = Field(default_factory=list)
    #: The usage chunk streamed (a list when the call streamed several).
    usage: JSON | list[JSON] | None = None
    #: False when the stream was cut short (cancelled or failed).
    complete: bool = True


class ModelErrorEvent(_Event):
    kind: Literal["model_error"] = "model_error"
    index: int
    #: None for a failure without an HTTP status (a timeout, a broken stream).
    status: int | None
    message: str


class ToolStartEvent(_Event):
    kind: Literal["tool_start"] = "tool_start"
    call_id: str
    name: str | None = None
    args: Any = None
    turn: TurnRef | None = None


class ToolEndEvent(_Event):
    kind: Literal["tool_end"] = "tool_end"
    call_id: str
    name: str | None = None
    result: str | None = None
    is_error: bool = False
    error: str | None = None
    cancelled: bool = False


class PolicyEvent(_Event):
    kind: Literal["policy"] = "policy"
    call_id: str | None = None
    name: str | None = None
    allow: bool
    reason: str | None = None
    turn: TurnRef | None = None


class ApprovalEvent(_Event):
    kind: Literal["approval"] = "approval"
    call_id: str | None = None
    name: str | None = None
    risk: str | None = None
    prompt: str | None = None
    decision: str
    turn: TurnRef | None = None


class NoteEvent(_Event):
    """Something the harness noticed: a cancel it issued, a failed rendezvous, an unknown tool..."""

    kind: Literal[
        "cancel", "cancel_missing", "script_exhausted", "rendezvous_timeout", "finish_order_timeout", "unknown_tool", "unknown_hook",
        "http_rejected", "http_stray", "http_other",  # the served model refused or noted a request
    ]
    call_id: str | None = None
    detail: JSON = Field(default_factory=dict)


class UsageTraceEvent(_Event):
    kind: Literal["usage"] = "usage"
    session_id: str | None = None
    turn_id: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    #: Rounded to ``Trace.cost_digits`` decimal places.
    cost_usd: float


class OutcomeEvent(_Event):
    kind: Literal["outcome"] = "outcome"
    message: int
    session_id: str | None = None
    turn_id: str | None = None
    status: str
    subtype: str | None = None
    reply: str | None = None
    error: str | None = None


class RaisedEvent(_Event):
    kind: Literal["raised"] = "raised"
    type: str
    message: str


class RejectedEvent(_Event):
    kind: Literal["rejected"] = "rejected"
    field: str
    message: str


class EndEvent(_Event):
    """How the run ended for the harness."""

    kind: Literal["end"] = "end"
    status: Literal["ok", "timed_out", "error", "unsupported"]
    detail: str | None = None


class SpanEvent(_Event):
    kind: Literal["span"] = "span"
    span_id: str
    parent_id: str | None = None
    name: str | None = None
    span_kind: str | None = None
    attributes: JSON = Field(default_factory=dict)


TraceEvent = Annotated[
    HookEvent
    | ModelRequestEvent
    | ModelResponseEvent
    | ModelErrorEvent
    | ToolStartEvent
    | ToolEndEvent
    | PolicyEvent
    | ApprovalEvent
    | NoteEvent
    | UsageTraceEvent
    | OutcomeEvent
    | RaisedEvent
    | RejectedEvent
    | EndEvent
    | SpanEvent,
    Field(discriminator="kind"),
]


class TraceKernel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    version: str
    #: The adapter's doom-loop subtype: a free choice, compared as a placeholder.
    doom_loop_subtype: str | None = None


class Trace(BaseModel):
    """One scenario's canonical trace."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["akc-trace/1"] = FORMAT
    feature: str
    scenario: str
    profile: str
    #: The requirement ids the scenario checks (its tags): for the reader of a diff, never compared.
    requirements: list[str] = Field(default_factory=list)
    kernel: TraceKernel
    #: Costs are rounded to this many decimal places (USD).
    cost_digits: int = COST_DIGITS
    events: list[TraceEvent] = Field(default_factory=list)

    def event_dicts(self) -> list[JSON]:
        return [e.model_dump(mode="json") for e in self.events]


# --------------------------------------------------------------------------- summaries

_TEXT_LIMIT = 400


def _clip(text: Any) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"


def message_line(m: JSON, clip: bool = True) -> str:
    """One message as one line: ``role: text``, tool calls and results with their call ids.
    A message with any other field is kept whole, as canonical JSON."""
    c = _clip if clip else (lambda t: "" if t is None else str(t))
    role = m.get("role")
    keys = set(m)
    if role == "tool_result" and keys <= {"role", "call_id", "content", "is_error"} and isinstance(m.get("content"), str):
        flag = " error" if m.get("is_error") else ""
        return f"tool_result {m.get('call_id')}{flag}: {c(m.get('content'))}"
    calls = m.get("tool_calls") or []
    if (
        role == "assistant"
        and keys <= {"role", "text", "tool_calls"}
        and isinstance(calls, list)
        and all(isinstance(x, dict) and set(x) <= {"id", "name", "args"} for x in calls)
    ):
        line = f"assistant: {c(m.get('text'))}" if m.get("text") is not None else "assistant:"
        if calls:
            line += " | calls " + ", ".join(f"{x.get('id')} {x.get('name')}{canonical_json(x.get('args'))}" for x in calls)
        return line
    if role in ("user", "system") and keys <= {"role", "text"} and isinstance(m.get("text"), str):
        return f"{role}: {c(m.get('text'))}"
    return c(canonical_json(m))


def turn_line(turn: Any) -> str | None:
    """A (renumbered) TurnInfo as one line: ``profile session/turn [parent=… depth=… tags=…]``."""
    if not isinstance(turn, dict):
        return None if turn is None else str(turn)
    line = f"{turn.get('profile_id')} {turn.get('session_id')}/{turn.get('turn_id')}"
    if turn.get("parent_turn_id") is not None:
        line += f" parent={turn.get('parent_turn_id')}"
    if turn.get("depth"):
        line += f" depth={turn.get('depth')}"
    if turn.get("tags"):
        line += " tags=" + ",".join(str(t) for t in turn["tags"])
    extra = {k: v for k, v in turn.items() if k not in ("profile_id", "session_id", "turn_id", "parent_turn_id", "depth", "tags")}
    if extra:
        line += " " + canonical_json(extra)
    return line


def summarise(value: Any, lists: dict[str, list[Any]] | None = None, path: str = "", depth: int = 0) -> Any:
    """A hook payload, summarised: each message as one line, each tool spec by its name, and a
    history (a list of messages) as ``{"kept": k, "new": [lines]}`` when its first k messages are
    those of the history last seen at the same place (``lists`` remembers them, by ``path``), so
    that a long session's trace stays linear in size and a changed message is still pinpointed."""
    if depth > 12:
        return _clip(canonical_json(value))
    if isinstance(value, dict):
        if isinstance(value.get("role"), str):
            return message_line(value)
        if isinstance(value.get("name"), str) and "input_schema" in value:
            return value["name"]
        return {k: summarise(v, lists, f"{path}.{k}", depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if value and lists is not None and all(isinstance(v, dict) and isinstance(v.get("role"), str) for v in value):
            before = lists.get(path, [])
            kept = 0
            while kept < min(len(value), len(before)) and value[kept] == before[kept]:
                kept += 1
            lists[path] = value
            lines = [message_line(v) for v in value[kept:]]
            return {"kept": kept, "new": lines} if kept else lines
        return [summarise(v, lists, f"{path}[]", depth + 1) for v in value]
    if isinstance(value, str):
        return _clip(value)
    return value


def _payload_call_id(payload: Any) -> str | None:
    if not isinstance(payload, dict) or isinstance(payload.get("role"), str):
        return None
    for key in ("call_id", "id"):
        if isinstance(payload.get(key), str):
            return payload[key]
    call = payload.get("call")
    if isinstance(call, dict) and isinstance(call.get("id"), str):
        return call["id"]
    return None


# --------------------------------------------------------------------------- building


def observed_events(log: list[JSON]) -> list[JSON]:
    """The doubles' log as trace events (not yet normalised)."""
    out: list[JSON] = []
    request_turn: dict[int, Any] = {}
    previous: list[Any] = []
    lists: dict[str, list[Any]] = {}
    for e in log:
        kind = e.get("kind")
        if kind == "hook":
            out.append(
                {
                    "kind": "hook",
                    "point": e.get("point"),
                    "hook_id": e.get("hook_id"),
                    "call_id": _payload_call_id(e.get("payload")),
                    "payload": summarise(e.get("payload"), lists, str(e.get("point"))),
                    "outcome": e.get("outcome") or {},
                    "turn": e.get("turn"),
                }
            )
        elif kind == "model_request":
            request = e.get("request") or {}
            request_turn[e.get("index", -1)] = e.get("turn")
            tools = request.get("tools") or []
            messages = list(request.get("messages") or [])
            kept = 0
            while kept < min(len(messages), len(previous)) and messages[kept] == previous[kept]:
                kept += 1
            previous = messages
            out.append(
                {
                    "kind": "model_request",
                    "index": e.get("index"),
                    "kept": kept,
                    "messages": messages[kept:],  # one line each, after renumbering
                    "tools": [t.get("name") if isinstance(t, dict) else str(t) for t in tools],
                    "turn": e.get("turn"),
                }
            )
        elif kind == "model_response":
            chunks = e.get("chunks") or []
            texts = [c.get("text", "") for c in chunks if c.get("type") == "text"]
            usages = [{k: v for k, v in c.items() if k != "type"} for c in chunks if c.get("type") == "usage"]
            out.append(
                {
                    "kind": "model_response",
                    "index": e.get("index"),
                    "text": "".join(texts) if texts else None,
                    "tool_calls": [
                        {"id": c.get("id"), "name": c.get("name"), "input_json": c.get("input_json")}
                        for c in chunks
                        if c.get("type") == "tool_use"
                    ],
                    "usage": (usages[0] if len(usages) == 1 else usages) if usages else None,
                    "complete": bool(e.get("complete", bool(usages))),
                }
            )
        elif kind == "model_error":
            out.append({"kind": "model_error", "index": e.get("index"), "status": e.get("status"), "message": e.get("message")})
        elif kind == "tool_start":
            out.append({"kind": "tool_start", "call_id": e.get("call_id"), "name": e.get("name"), "args": e.get("args"), "turn": e.get("turn")})
        elif kind == "tool_end":
            out.append(
                {
                    "kind": "tool_end",
                    "call_id": e.get("call_id"),
                    "name": e.get("name"),
                    "result": e.get("result"),
                    "is_error": bool(e.get("is_error", False)),
                    "error": e.get("error"),
                    "cancelled": bool(e.get("cancelled", False)),
                }
            )
        elif kind == "policy":
            call = e.get("call") or {}
            decision = e.get("decision") or {}
            out.append(
                {
                    "kind": "policy",
                    "call_id": call.get("id"),
                    "name": call.get("name"),
                    "allow": bool(decision.get("allow")),
                    "reason": decision.get("reason"),
                    "turn": e.get("turn"),
                }
            )
        elif kind == "approval":
            req = e.get("request") or {}
            out.append(
                {
                    "kind": "approval",
                    "call_id": req.get("call_id"),
                    "name": req.get("name"),
                    "risk": req.get("risk"),
                    "prompt": req.get("prompt"),
                    "decision": str(e.get("decision")),
                    "turn": e.get("turn"),
                }
            )
        elif kind in ("journal_write", "submit", "submission_timeout", "hold_timeout", "finish_order_unmet", "hook_returned"):
            continue  # the journal is in the report already; submissions and holds are the harness's own
        else:
            detail = {k: v for k, v in e.items() if k not in ("seq", "kind", "call_id")}
            out.append({"kind": kind, "call_id": e.get("call_id"), "detail": detail})
    return out


def reported_events(run: Any) -> tuple[list[JSON], list[JSON]]:
    """What the adapter reported and how the run ended: (tail events — usage, outcome, raised,
    rejected, end — and the raw spans)."""
    tail: list[JSON] = []
    spans: list[JSON] = []
    result = run.result
    if result is not None:
        for u in result.usage:
            d = u.model_dump()
            tail.append({"kind": "usage", **{k: d.get(k) for k in UsageTraceEvent.model_fields if k != "kind"}})
        for o in result.outcomes:
            d = o.model_dump()
            tail.append({"kind": "outcome", **{k: d.get(k) for k in OutcomeEvent.model_fields if k != "kind"}})
        if result.raised is not None:
            tail.append({"kind": "raised", "type": result.raised.type, "message": result.raised.message})
        if result.rejected is not None:
            tail.append({"kind": "rejected", "field": result.rejected.field, "message": result.rejected.message})
        spans = [s.model_dump() for s in result.spans]
    if run.timed_out:
        end: JSON = {"kind": "end", "status": "timed_out", "detail": _scrub_numbers(run.diagnostic)}
    elif run.error:
        end = {"kind": "end", "status": "error", "detail": run.error}
    elif run.unsupported:
        end = {"kind": "end", "status": "unsupported", "detail": run.unsupported}
    else:
        end = {"kind": "end", "status": "ok", "detail": None}
    tail.append(end)
    return tail, spans


_SECONDS = re.compile(r"within [0-9.]+ s")


def _scrub_numbers(text: str | None) -> str | None:
    """A hang diagnostic without its time limit (a capped limit must not make traces differ)."""
    return _SECONDS.sub("within the time limit", text) if text else text


def sequential_lanes(log: list[JSON], scenario: Any) -> dict[str, str]:
    """Calls that run one at a time, in order, share a lane (so their order is compared): the
    interactive calls of a response (003), or every call of a response that has one (000)."""
    kinds = {t.name: t.kind for t in getattr(scenario, "tools", [])}
    profile = getattr(scenario, "profile", "kernel")
    shared: dict[str, str] = {}
    for e in log:
        if e.get("kind") != "model_response":
            continue
        calls = [(str(c.get("id")), c.get("name")) for c in e.get("chunks") or [] if c.get("type") == "tool_use"]
        interactive = [cid for cid, name in calls if kinds.get(str(name)) == "interactive"]
        if not interactive:
            continue
        members = [cid for cid, _ in calls] if profile == "commonagent" else interactive
        for cid in members:
            shared[cid] = f"~one-at-a-time-{e.get('index')}"
    return shared


def build_trace(run: Any, *, feature: str, scenario: str, info: Any, requirements: list[str] | None = None) -> Trace:
    """The canonical trace of a :class:`~conformance.harness.runner.ScenarioRun` (its last run)."""
    tail, spans = reported_events(run)
    log = list(run.log)
    shared = sequential_lanes(log, run.scenario)
    events = [_compact(e) for e in normalise(observed_events(log), spans, tail, shared)]
    return Trace(
        feature=feature,
        scenario=scenario,
        profile=str(run.scenario.profile),
        requirements=sorted(requirements or []),
        kernel=TraceKernel(
            name=str(getattr(info, "name", "?")),
            version=str(getattr(info, "version", "?")),
            doom_loop_subtype=getattr(info, "doom_loop_subtype", None),
        ),
        events=events,  # type: ignore[arg-type]
    )


def _compact(event: JSON) -> JSON:
    """After renumbering: TurnInfo and request messages as one line each."""
    if "turn" in event:
        event = {**event, "turn": turn_line(event["turn"])}
    if event.get("kind") == "model_request":
        event = {**event, "messages": [_line(m) for m in event["messages"]]}
    return event


def _line(message: Any) -> str:
    if isinstance(message, dict):
        return message_line(message, clip=False)
    return message if isinstance(message, str) else canonical_json(message)


def slug(text: str, limit: int = 80) -> str:
    """A file-name-safe form of a feature or scenario name."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (s[:limit].rstrip("-") or "x")


def trace_filename(feature: str, scenario: str) -> str:
    """``<feature-slug>--<scenario-slug>.json``; a long scenario name keeps a short hash so that
    names differing only after the cut stay apart."""
    import hashlib

    name = slug(scenario, 200)
    if len(name) > 100:
        name = name[:90].rstrip("-") + "-" + hashlib.sha1(scenario.encode()).hexdigest()[:8]
    return f"{slug(feature, 60)}--{name}.json"


def clear_traces(folder: str | Path) -> int:
    """Create ``folder`` and remove the akc traces a previous run left in it (only files that are
    traces: a renamed scenario must not linger as a phantom in the next diff). Returns how many."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    removed = 0
    for f in path.glob("*.json"):
        try:
            with f.open(encoding="utf-8") as fh:
                head = fh.read(200)
        except (OSError, UnicodeDecodeError):
            continue
        if f'"format": "{FORMAT}"' in head:
            f.unlink()
            removed += 1
    return removed


def dump(trace: Trace) -> str:
    """The trace as JSON with one event per line (small, and a line diff is an event diff)."""
    from conformance.report.escape import json_safe

    data = json_safe(trace.model_dump(mode="json"))  # kernel text: no lone surrogate in a UTF-8 file
    events = data.pop("events")
    head = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in data.items()]
    body = ",\n".join("    " + json.dumps(e, ensure_ascii=False) for e in events)
    return "{\n" + "\n".join(head) + '\n  "events": [\n' + body + ("\n" if body else "") + "  ]\n}\n"


def load(text: str) -> Trace:
    return Trace.model_validate_json(text)
