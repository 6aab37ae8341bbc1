"""A canonical trace (``conformance.trace.canonical``) as a readable timeline: one row per event,
grouped by model call, tool calls in lanes (one per call id), details in plain words.

Works on the trace's JSON form (a report's ``trace`` field), so a trace written by another
version of the suite still renders: an unknown event kind becomes a row with its JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.trace.normalise import canonical_json

JSON = dict[str, Any]

#: Number of lane colours in the CSS (``lane-0`` … ``lane-5``).
LANE_COLOURS = 6


@dataclass
class Row:
    index: int
    group: str  # hook | model | tool | gate | outcome | note | end
    title: str
    detail: str = ""
    lane: str | None = None
    lane_class: str = ""
    turn: str | None = None
    bad: bool = False


@dataclass
class Block:
    """The events of one model call (from its request up to the next), or the run's start/end."""

    title: str
    rows: list[Row] = field(default_factory=list)


@dataclass
class Timeline:
    feature: str
    scenario: str
    profile: str
    kernel: str
    blocks: list[Block]
    lanes: list[tuple[str, str]]
    spans: list[JSON]


def _j(value: Any, limit: int = 600) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _payload(payload: Any) -> str:
    if payload is None or payload == {}:
        return ""
    if isinstance(payload, dict):
        parts = []
        for k, v in payload.items():
            if isinstance(v, dict) and set(v) == {"kept", "new"}:
                v = f"{v['kept']} kept, then " + " · ".join(str(x) for x in v["new"])
            elif isinstance(v, list) and all(isinstance(x, str) for x in v):
                v = " · ".join(v) if v else "[]"
            parts.append(f"{k}: {_j(v, 300)}")
        return "\n".join(parts)
    return _j(payload)


def build(trace: JSON) -> Timeline:
    """The timeline of one trace (the JSON of :class:`~conformance.trace.canonical.Trace`)."""
    lanes: dict[str, str] = {}

    def lane(call_id: Any) -> tuple[str | None, str]:
        if call_id is None:
            return None, ""
        cid = str(call_id)
        if cid not in lanes:
            lanes[cid] = f"lane-{len(lanes) % LANE_COLOURS}"
        return cid, lanes[cid]

    blocks = [Block("Before the first model call")]
    spans: list[JSON] = []
    tail = Block("How the run ended")
    # "withheld" only where another request of the run offered tools: a scenario with no tools
    # offers none, and the kernel held nothing back
    offered_any = any(e.get("tools") for e in trace.get("events") or [] if e.get("kind") == "model_request")
    for i, e in enumerate(trace.get("events") or []):
        kind = e.get("kind")
        turn = e.get("turn")
        if kind == "span":
            spans.append(e)
            continue
        if kind == "model_request":
            n = int(e.get("index", len(blocks) - 1)) + 1
            blocks.append(Block(f"Model call {n}"))
            msgs = e.get("messages") or []
            kept = e.get("kept") or 0
            detail = (f"{kept} message(s) as in the previous request, then:\n" if kept else "") + "\n".join(str(m) for m in msgs)
            tools = ", ".join(e.get("tools") or []) or ("none (tool specs withheld)" if offered_any else "none (the scenario offers none)")
            row = Row(i, "model", f"model request {n} — tools: {tools}", detail, turn=turn)
        elif kind == "model_response":
            n = int(e.get("index", 0)) + 1
            calls = e.get("tool_calls") or []
            what = []
            if e.get("text") is not None:
                what.append(f"says {_j(e.get('text'), 200)}")
            if calls:
                what.append("asks for " + ", ".join(f"{c.get('name')}({c.get('input_json') or ''}) as {c.get('id')}" for c in calls))
            usage = e.get("usage")
            detail = f"usage: {_j(usage)}" if usage else ""
            cut = "" if e.get("complete", True) else " (stream cut short)"
            row = Row(i, "model", f"model response {n}: " + ("; ".join(what) or "nothing") + cut, detail, bad=not e.get("complete", True))
        elif kind == "model_error":
            row = Row(i, "model", f"model call {int(e.get('index', 0)) + 1} failed: status {e.get('status')}", str(e.get("message") or ""), bad=True)
        elif kind == "hook":
            out = e.get("outcome") or {}
            verb = "" if out.get("kind") in (None, "continue") else f" → {out.get('kind')}"
            lid, lcls = lane(e.get("call_id")) if e.get("call_id") else (None, "")
            detail = _payload(e.get("payload"))
            if verb:
                detail += ("\n" if detail else "") + f"outcome: {_j(out)}"
            row = Row(i, "hook", f"hook {e.get('point')} [{e.get('hook_id')}]{verb}", detail, lid, lcls, turn)
        elif kind == "tool_start":
            lid, lcls = lane(e.get("call_id"))
            row = Row(i, "tool", f"tool {e.get('name')} starts ({lid})", f"args: {_j(e.get('args'))}", lid, lcls, turn)
        elif kind == "tool_end":
            lid, lcls = lane(e.get("call_id"))
            how = "cancelled" if e.get("cancelled") else ("error" if e.get("is_error") or e.get("error") else "ok")
            detail = f"result: {_j(e.get('result'))}" if e.get("result") is not None else ""
            if e.get("error"):
                detail += ("\n" if detail else "") + f"error: {e.get('error')}"
            row = Row(i, "tool", f"tool {e.get('name')} ends ({lid}): {how}", detail, lid, lcls, bad=how != "ok")
        elif kind == "policy":
            lid, lcls = lane(e.get("call_id"))
            verdict = "allows" if e.get("allow") else "denies"
            row = Row(i, "gate", f"policy precheck {verdict} {lid} {e.get('name') or ''}".strip(), str(e.get("reason") or ""), lid, lcls, turn)
        elif kind == "approval":
            lid, lcls = lane(e.get("call_id"))
            row = Row(i, "gate", f"approver: {e.get('decision')} for {lid} {e.get('name') or ''}".strip(), str(e.get("prompt") or ""), lid, lcls, turn)
        elif kind in ("usage", "outcome", "raised", "rejected", "end"):
            if kind == "usage":
                title = f"usage: {e.get('input_tokens')} in, {e.get('output_tokens')} out, {e.get('cost_usd')} USD"
                row = Row(i, "outcome", title, f"turn {e.get('turn_id')}")
            elif kind == "outcome":
                title = f"user message {e.get('message')} ends: status {e.get('status')}" + (f", subtype {e.get('subtype')}" if e.get("subtype") else "")
                detail = "\n".join(x for x in (f"reply: {e.get('reply')}" if e.get("reply") is not None else "", f"error: {e.get('error')}" if e.get("error") else "") if x)
                row = Row(i, "outcome", title, detail)
            elif kind == "raised":
                row = Row(i, "outcome", f"the kernel raised {e.get('type')}", str(e.get("message") or ""), bad=True)
            elif kind == "rejected":
                row = Row(i, "outcome", f"the kernel rejected the scenario ({e.get('field')})", str(e.get("message") or ""))
            else:
                row = Row(i, "end", f"run end: {e.get('status')}", str(e.get("detail") or ""), bad=e.get("status") != "ok")
            tail.rows.append(row)
            continue
        else:
            lid, lcls = lane(e.get("call_id")) if e.get("call_id") else (None, "")
            row = Row(i, "note", f"harness: {kind}", _j(e.get("detail") or {}), lid, lcls, bad=True)
        blocks[-1].rows.append(row)
    blocks = [b for b in blocks if b.rows] + ([tail] if tail.rows else [])
    kernel = trace.get("kernel") or {}
    return Timeline(
        feature=str(trace.get("feature", "")),
        scenario=str(trace.get("scenario", "")),
        profile=str(trace.get("profile", "")),
        kernel=f"{kernel.get('name', '?')} {kernel.get('version', '')}".strip(),
        blocks=blocks,
        lanes=list(lanes.items()),
        spans=spans,
    )
