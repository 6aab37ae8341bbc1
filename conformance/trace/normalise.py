"""Normalisation of trace events: pure functions on JSON data (no I/O, no clocks, no randomness).

Why: two runs of the same behaviour must give equal traces, and different behaviour must not.
What a kernel may legitimately vary is removed here, and nothing else:

* ids the kernel generates (sessions, turns, spans; UUIDs anywhere) are renumbered by first
  appearance per kind (``session-1``, ``turn-2``, ``span-3``, ``id-1``). The harness's own call
  ids (``c0_0``, scripted) are stable and kept;
* timestamps and durations are dropped (span start/end, ``elapsed_s``, ``duration_ms``...), and
  a date-time inside a text (a system prompt's current time) becomes ``<timestamp>``;
* costs are rounded to :data:`COST_DIGITS` decimal places (1e-9 USD: summation order noise goes);
* events the spec lets interleave (the calls of one model response) are put in one canonical
  order that keeps each call's own order (see :func:`canonical_order`);
* spans are a tree whose siblings are sorted by content (their timestamps are gone).

:func:`apply_freedoms` goes one step further, for comparison only: the wording of the synthetic
instruction and the doom-loop status subtype are free choices of a kernel (docs/vocabulary.md,
"Free choices stay free") and are replaced by placeholders before two traces are compared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: Costs are rounded to this many decimal places of a USD (stated in every trace's header).
COST_DIGITS = 9

#: Keys whose string value is an id the kernel generated, and the kind it is renumbered as.
ID_KEYS: dict[str, str] = {
    "session_id": "session",
    "parent_session_id": "session",
    "turn_id": "turn",
    "parent_turn_id": "turn",
    "span_id": "span",
    "parent_id": "span",
    "parent_span_id": "span",
    "trace_id": "trace",
}

UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")

#: Keys holding a time or a duration (dropped wherever they appear, except inside tool args).
TIME_KEYS = frozenset(
    {
        "elapsed_s",
        "duration_ms",
        "duration_s",
        "duration",
        "timestamp",
        "ts",
        "time",
        "created_at",
        "updated_at",
        "started_at",
        "ended_at",
        "start_time",
        "end_time",
    }
)
#: A date-time inside any text (a system prompt's "Current time: ..."): replaced by TIMESTAMP.
DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
TIMESTAMP = "<timestamp>"
#: Values under these keys are the harness's own data (scripted tool arguments): kept verbatim.
OPAQUE_KEYS = frozenset({"args"})

SYNTHETIC = "<synthetic instruction>"
DOOM_SUBTYPE = "<doom-loop subtype>"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


# --------------------------------------------------------------------------- times and costs


def scrub(value: Any, *, digits: int = COST_DIGITS) -> Any:
    """``value`` without time/duration keys and with costs rounded (a new object)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in TIME_KEYS:
                continue
            if k in OPAQUE_KEYS:
                out[k] = v
            elif "cost" in k and isinstance(v, float):
                out[k] = round_cost(v, digits)
            else:
                out[k] = scrub(v, digits=digits)
        return out
    if isinstance(value, list):
        return [scrub(v, digits=digits) for v in value]
    if isinstance(value, str) and ":" in value:
        return DATETIME.sub(TIMESTAMP, value)
    return value


def round_cost(value: float, digits: int = COST_DIGITS) -> float:
    r = round(value, digits)
    return 0.0 if r == 0 else r  # no -0.0


# --------------------------------------------------------------------------- ids


def _walk_ids(value: Any, key: str | None, seen: Callable[[str, str], None], uuids: list[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ID_KEYS and isinstance(v, str):
                seen(v, ID_KEYS[k])
            _walk_ids(v, k, seen, uuids)
    elif isinstance(value, list):
        for v in value:
            _walk_ids(v, key, seen, uuids)
    elif isinstance(value, str):
        uuids.extend(UUID.findall(value))


def id_map(events: Iterable[Any]) -> dict[str, str]:
    """Kernel id → ``<kind>-<n>``, numbered by first appearance per kind. Ids under a known key
    (``session_id``...) take that key's kind; any other UUID is an ``id``."""
    mapping: dict[str, str] = {}
    counters: dict[str, int] = {}

    def seen(raw: str, kind: str) -> None:
        if raw in mapping:
            return
        counters[kind] = counters.get(kind, 0) + 1
        mapping[raw] = f"{kind}-{counters[kind]}"

    uuids: list[str] = []
    for event in events:
        _walk_ids(event, None, seen, uuids)
    for raw in uuids:
        seen(raw, "id")
    return mapping


def _is_id_key(key: str | None) -> bool:
    return key is not None and (key in ID_KEYS or key == "id" or key.endswith("_id"))


def replace_ids(value: Any, mapping: dict[str, str], key: str | None = None) -> Any:
    """``value`` with every mapped id replaced (under id keys exactly, UUIDs inside any text)."""
    if isinstance(value, dict):
        return {k: replace_ids(v, mapping, k) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_ids(v, mapping, key) for v in value]
    if isinstance(value, str):
        if _is_id_key(key) and value in mapping:
            return mapping[value]
        if "-" in value:
            return UUID.sub(lambda m: mapping.get(m.group(0), m.group(0)), value)
    return value


def renumber(events: list[Any]) -> list[Any]:
    """The events with kernel ids renumbered by first appearance (stable under any renaming)."""
    return replace_ids(events, id_map(events))


# --------------------------------------------------------------------------- partial order

#: Hook points whose dispatches across calls keep their order (003 step 7: declaration order).
ORDERED_POINTS = frozenset({"pre-tool-call"})
#: Events that belong to one tool call (when they carry its ``call_id``).
CALL_KINDS = frozenset(
    {"tool_start", "tool_end", "policy", "approval", "rendezvous_timeout", "finish_order_timeout", "unknown_tool"}
)
_PRE_POINTS = frozenset({"pre_tool_call", "pre-tool-call"})
_RANK = {
    "policy": 1,
    "approval": 2,
    "tool_start": 3,
    "rendezvous_timeout": 4,
    "finish_order_timeout": 4,
    "unknown_tool": 4,
    "tool_end": 5,
}


def lane(event: dict[str, Any], shared: Mapping[str, str] | None = None) -> str | None:
    """The lane (a call, or a group of calls that run one at a time) an event belongs to when it
    may interleave with other lanes' events; None for an event that keeps its place (a barrier:
    model calls, turn-level hooks, pre-tool-call). ``shared`` maps call ids to a shared lane."""
    call_id = event.get("call_id")
    if not isinstance(call_id, str):
        return None
    kind = event.get("kind")
    if kind in CALL_KINDS or (kind == "hook" and event.get("point") not in ORDERED_POINTS):
        return shared.get(call_id, call_id) if shared else call_id
    return None


def _rank(event: dict[str, Any]) -> int:
    if event.get("kind") == "hook":
        return 0 if event.get("point") in _PRE_POINTS else 6
    return _RANK.get(str(event.get("kind")), 7)


def _merge(chains: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One linearisation of independent chains that depends only on the chains: repeatedly take
    the head with the smallest (rank, call id). Each chain's own order is kept."""
    heads = {cid: 0 for cid in chains}
    out = []
    while heads:
        cid = min(heads, key=lambda c: (_rank(chains[c][heads[c]]), c))
        out.append(chains[cid][heads[cid]])
        heads[cid] += 1
        if heads[cid] == len(chains[cid]):
            del heads[cid]
    return out


def canonical_order(events: list[dict[str, Any]], shared: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The canonical linearisation of the partial order the spec allows.

    Barrier events (see :func:`lane`) stay where they are, relative to each other. Between two
    barriers, the events of different calls are independent: only each call's own order counts
    (its pre-tool-call before its start, its start before its end...). So two logs that differ
    only in how concurrent calls interleaved give the same list, and a log where a tool started
    before its own hook, or a barrier moved, does not. Calls that must run one at a time, in
    order (interactive ones), share one lane through ``shared``: their order is kept too.
    """
    out: list[dict[str, Any]] = []
    chains: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        cid = lane(event, shared)
        if cid is None:
            out.extend(_merge(chains))
            chains = {}
            out.append(event)
        else:
            chains.setdefault(cid, []).append(event)
    out.extend(_merge(chains))
    return out


# --------------------------------------------------------------------------- spans


def _sort_key_value(value: Any) -> Any:
    """``value`` with every id blanked: a sort key that no id renaming can change."""
    if isinstance(value, dict):
        return {k: ("<id>" if k in ID_KEYS and isinstance(v, str) else _sort_key_value(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_sort_key_value(v) for v in value]
    if isinstance(value, str):
        return UUID.sub("<id>", value)
    return value


def canonical_spans(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Spans as a tree in depth-first order, siblings sorted by (kind, name, attributes,
    children): report order and timestamps no longer matter, the parent/child shape does.
    Each span: ``span_id``, ``parent_id``, ``name``, ``span_kind``, ``attributes``."""
    by_id = {s["span_id"]: s for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for s in spans:
        parent = s.get("parent_id")
        children.setdefault(parent if parent in by_id else None, []).append(s)
    keys: dict[int, str] = {}

    def key(s: dict[str, Any], depth: int = 0) -> str:
        if id(s) not in keys:
            kids = children.get(s["span_id"], []) if depth < 200 else []
            keys[id(s)] = canonical_json(
                [s.get("kind"), s.get("name"), _sort_key_value(s.get("attributes") or {}), sorted(key(c, depth + 1) for c in kids)]
            )
        return keys[id(s)]

    out: list[dict[str, Any]] = []
    visited: set[int] = set()

    def visit(s: dict[str, Any]) -> None:
        if id(s) in visited:
            return
        visited.add(id(s))
        out.append(
            {
                "kind": "span",
                "span_id": s["span_id"],
                "parent_id": s.get("parent_id") if s.get("parent_id") in by_id else None,
                "name": s.get("name"),
                "span_kind": s.get("kind"),
                "attributes": scrub(s.get("attributes") or {}),
            }
        )
        for c in sorted(children.get(s["span_id"], []), key=key):
            visit(c)

    for root in sorted(children.get(None, []), key=key):
        visit(root)
    for s in spans:  # cycles: whatever was not reachable from a root, in report order
        visit(s)
    return out


# --------------------------------------------------------------------------- allowed freedoms


def _texts(message: Any) -> list[str]:
    """The user/system text of a message: a dict, or a trace's one-line form ``role: text``."""
    if isinstance(message, dict):
        if message.get("role") in ("user", "system"):
            for k in ("text", "content"):
                if isinstance(message.get(k), str):
                    return [message[k]]
        return []
    if isinstance(message, str):
        for prefix in ("user: ", "system: "):
            if message.startswith(prefix):
                return [message[len(prefix) :]]
    return []


def synthetic_texts(events: list[dict[str, Any]]) -> list[str]:
    """User/system texts that first appear in a tool-less model request after the first (the
    limit-reached turn): the synthetic instruction, whose wording is the kernel's choice.
    A request's ``kept`` leading messages are the previous request's (the trace's encoding)."""
    out: list[str] = []
    previous: list[Any] = []
    first = True
    for e in events:
        if e.get("kind") != "model_request":
            continue
        kept = int(e.get("kept") or 0)
        messages = previous[:kept] + list(e.get("messages") or [])
        if not first and not e.get("tools"):
            seen = {t for m in previous for t in _texts(m)}
            for m in messages:
                out += [t for t in _texts(m) if t.strip() and t not in seen and t not in out]
        first = False
        previous = messages
    return out


def _replace_text(value: Any, old: list[str], new: str) -> Any:
    if isinstance(value, dict):
        return {k: _replace_text(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_text(v, old, new) for v in value]
    if isinstance(value, str):
        for text in old:
            if text in value:
                value = value.replace(text, new)
    return value


def _replace_subtype(value: Any, subtype: str) -> Any:
    if isinstance(value, dict):
        return {k: (DOOM_SUBTYPE if k == "subtype" and v == subtype else _replace_subtype(v, subtype)) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_subtype(v, subtype) for v in value]
    return value


def apply_freedoms(events: list[dict[str, Any]], doom_loop_subtype: str | None = None) -> list[dict[str, Any]]:
    """The events with the kernel's free choices replaced by placeholders (for comparison)."""
    texts = sorted(synthetic_texts(events), key=len, reverse=True)
    out = _replace_text(events, texts, SYNTHETIC) if texts else events
    if doom_loop_subtype:
        out = _replace_subtype(out, doom_loop_subtype)
    return out


def normalise(
    events: list[dict[str, Any]],
    spans: list[dict[str, Any]] | None = None,
    tail: list[dict[str, Any]] | None = None,
    shared: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The whole pipeline: scrub, canonical order, spans as a sorted tree, then renumber ids.
    ``tail`` events (usage, outcomes, end) follow the observed ones, before the spans."""
    ordered = canonical_order([scrub(e) for e in events], shared)
    rest = [scrub(e) for e in tail or []]
    return renumber(ordered + rest + canonical_spans(spans or []))
