"""Steps for the LOOP features (003's RunTurn step order, hook chains, session-start/-end).

It also holds the log helpers the SPAN, GATE and DONE step modules share. A *model turn* k is
the stretch of the observation log around the k-th model request: from the context-assemble /
pre-model-call dispatches right before it up to the next turn's start (1-based). Turns are
anchored on model requests, so a kernel that skips a step-1 dispatch fails only step 1's checks.
A chain's output is computed from the scripted outcomes (the first hook's payload, then each
``replace``, and each ``veto`` marking its items), never from what the kernel handed the next
hook, so a broken chain cannot hide a broken consumer. These steps are for the kernel profile.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_bdd import given, parsers, then

from conformance.errors import Blocked, ConformanceFailure, HarnessError, Incomplete, expect_equal, show
from conformance.boundary.scenario import ModelResponse, ScriptedToolCall
from conformance.steps.common import ScenarioContext, _json, judges, split_ids, table_rows

_QUOTED = re.compile(r'"([^"]*)"')
_INF = float("inf")

#: The plain hook chains of 003 (steps 1-2 and 5-7): the only points whose chain order is fixed.
CHAIN_POINTS = ("context-assemble", "pre-model-call", "post-model-response", "pre-tool-call")

#: The hook points that belong to a turn's tool phase (steps 7 to 14).
TOOL_POINTS = ("pre-tool-call", "plan-ready", "post-tool-call", "post-apply")


# ============================================================================ log helpers


def quoted(text: str) -> list[str]:
    """All double-quoted items of a step fragment (``"a", "b"`` or ``"a, b"`` both work)."""
    items = _QUOTED.findall(text)
    out: list[str] = []
    for item in items:
        out.extend(split_ids(item))
    return out


def hook_events(akc: ScenarioContext) -> list[dict[str, Any]]:
    """Every hook dispatch of every hook (recording and scripted), in order."""
    return akc.events("hook")


def rec_id(point: str) -> str:
    """The id of the harness's recording hook at this point (first in its chain)."""
    return f"rec:{point}"


#: Hook points dispatched in a turn before its model call (steps 1 and 2).
PRE_MODEL_POINTS = ("context-assemble", "pre-model-call")
#: Log kinds that may sit between a turn's pre-model hooks and its model request.
_NEUTRAL = ("cancel", "cancel_missing", "unknown_hook", "script_exhausted")


def turn_starts(akc: ScenarioContext) -> list[int]:
    """The log seq where each model turn starts: one turn per model request, starting at the
    earliest of the context-assemble / pre-model-call dispatches right before that request (or
    at the request itself). Turns are anchored on model requests, not on context-assemble, so a
    kernel that skips or misplaces a step-1 dispatch breaks only the checks about step 1."""
    log = akc.log
    starts = []
    for i, e in enumerate(log):
        if e["kind"] != "model_request":
            continue
        start = e["seq"]
        j = i - 1
        while j >= 0:
            prev = log[j]
            if prev["kind"] == "hook" and prev["point"] in PRE_MODEL_POINTS:
                start = prev["seq"]
            elif prev["kind"] not in _NEUTRAL:
                break
            j -= 1
        starts.append(start)
    return starts


def turn_count(akc: ScenarioContext) -> int:
    """How many model turns the run had (one per model request)."""
    return len(turn_starts(akc))


def turn_window(akc: ScenarioContext, k: int) -> tuple[int, float]:
    """[lo, hi) log seqs of model turn k (1-based)."""
    starts = turn_starts(akc)
    if not 1 <= k <= len(starts):
        raise ConformanceFailure(f"model turn {k}", f"at least {k} model turns (model requests)", len(starts))
    hi: float = starts[k] if k < len(starts) else _INF
    return starts[k - 1], hi


def in_turn(akc: ScenarioContext, k: int, *kinds: str) -> list[dict[str, Any]]:
    """Log events of these kinds that fall in model turn k."""
    lo, hi = turn_window(akc, k)
    return [e for e in akc.events(*kinds) if lo <= e["seq"] < hi]


def dispatches(akc: ScenarioContext, k: int | None, point: str, *, recorded: bool = True) -> list[dict[str, Any]]:
    """Dispatches of ``point`` (in turn k, or the whole run when k is None): by default only the
    recording hook's (one per dispatch of the point), else every hook of the chain."""
    events = in_turn(akc, k, "hook") if k is not None else hook_events(akc)
    out = [e for e in events if e["point"] == point]
    if recorded:
        out = [e for e in out if e["hook_id"] == rec_id(point)]
    return out


def chain_output(akc: ScenarioContext, k: int, point: str) -> Any:
    """What the chain at ``point`` (dispatched once in turn k) handed on, computed from the
    scripted outcomes: the first hook's payload, then each ``replace`` outcome's payload, and each
    ``veto`` marks its items ``vetoed`` with the reason (the plan shape of docs/adapter.md)."""
    chain = dispatches(akc, k, point, recorded=False)
    if not chain:
        raise ConformanceFailure(f'"{point}" in model turn {k}', "dispatched", "not dispatched")
    return apply_outcomes(chain[0]["payload"], chain)


def apply_outcomes(out: Any, chain: list[dict[str, Any]]) -> Any:
    """``out`` after the replace and veto outcomes of these hook dispatches, in order."""
    for e in chain:
        outcome = e.get("outcome") or {}
        kind = outcome.get("kind", "continue")
        if kind == "replace":
            out = outcome.get("payload")
        elif kind == "veto" and isinstance(out, dict):
            vetoed = set(outcome.get("call_ids") or [])
            out = {
                **out,
                "items": [
                    {**item, "vetoed": True, "reason": outcome.get("reason", "vetoed")}
                    if isinstance(item, dict) and item.get("call_id") in vetoed
                    else item
                    for item in out.get("items") or []
                ],
            }
    return out


def tool_kind(akc: ScenarioContext, name: Any) -> str | None:
    """The kind the scenario declared for this tool (None for an unknown tool)."""
    for t in akc.scenario.tools:
        if t.name == name:
            return t.kind
    return None


def turn_message(akc: ScenarioContext, k: int) -> dict[str, Any]:
    """Turn k's assistant message as the kernel must act on it: the streamed message, or the
    post-model-response chain's replacement when a hook replaced it."""
    chain = dispatches(akc, k, "post-model-response", recorded=False)
    if any((e.get("outcome") or {}).get("kind") == "replace" for e in chain):
        message = apply_outcomes(chain[0]["payload"], chain)
        if isinstance(message, dict):
            return message
    text, calls = streamed_message(akc, k - 1)
    out: dict[str, Any] = {"role": "assistant", "text": text}
    if calls:
        out["tool_calls"] = calls
    return out


def turn_calls(akc: ScenarioContext, k: int) -> list[dict[str, Any]]:
    """The tool calls of turn k's message as the kernel acts on it."""
    return [c for c in turn_message(akc, k).get("tool_calls") or [] if isinstance(c, dict)]


def turn_plan(akc: ScenarioContext, k: int) -> Any:
    """The plan the veto chain of turn k left: plan-ready's payload (or, if it was not dispatched,
    one unvetoed item per resource call) after the chain's replace and veto outcomes."""
    chain = dispatches(akc, k, "plan-ready", recorded=False)
    if chain:
        return apply_outcomes(chain[0]["payload"], chain)
    items = [
        {"call_id": c.get("id"), "name": c.get("name"), "args": c.get("args"), "vetoed": False}
        for c in turn_calls(akc, k)
        if tool_kind(akc, c.get("name")) == "resource"
    ]
    return {"items": items}


def denied_calls(akc: ScenarioContext) -> set[str]:
    """Call ids the policy precheck denied."""
    return {str((e.get("call") or {}).get("id")) for e in akc.events("policy") if not (e.get("decision") or {}).get("allow", True)}


def starts_in_turn(akc: ScenarioContext, k: int) -> list[dict[str, Any]]:
    """tool_start events of model turn k."""
    return in_turn(akc, k, "tool_start")


def ends_in_turn(akc: ScenarioContext, k: int) -> list[dict[str, Any]]:
    """tool_end events of model turn k."""
    return in_turn(akc, k, "tool_end")


def norm_message(m: Any) -> Any:
    """A message reduced to what 001's canonical JSON says (empty text and absent text agree)."""
    if not isinstance(m, dict):
        return m
    out: dict[str, Any] = {"role": m.get("role")}
    if m.get("text"):
        out["text"] = m["text"]
    if m.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c.get("id"), "name": c.get("name"), "args": c.get("args")} for c in m["tool_calls"] if isinstance(c, dict)
        ]
    for key in ("call_id", "content", "is_error"):
        if key in m:
            out[key] = m[key]
    return out


def non_system(messages: Any) -> list[Any]:
    """The messages without system ones (a kernel may place its system text anywhere), normalised."""
    return [norm_message(m) for m in messages or [] if not (isinstance(m, dict) and m.get("role") == "system")]


def contains(observed: Any, expected: Any) -> bool:
    """``observed`` holds everything ``expected`` says (dicts may carry extra keys)."""
    if isinstance(expected, dict):
        return isinstance(observed, dict) and all(k in observed and contains(observed[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(observed, list) and len(observed) == len(expected) and all(
            contains(o, e) for o, e in zip(observed, expected, strict=True)
        )
    return observed == expected


def spec_names(specs: Any) -> list[Any]:
    """The names of a list of tool specs."""
    return [s.get("name") if isinstance(s, dict) else s for s in specs or []]


def call_id_of(payload: Any) -> Any:
    """The call id in a pre-tool-call / post-tool-call payload."""
    if not isinstance(payload, dict):
        return None
    call = payload.get("call")
    if isinstance(call, dict):
        return call.get("id")
    return payload.get("id")


def last_seq(events: list[dict[str, Any]]) -> float:
    """The largest seq of these events (-1 when there are none)."""
    return max((e["seq"] for e in events), default=-1)


def first_seq(events: list[dict[str, Any]]) -> float:
    """The smallest seq of these events (infinity when there are none)."""
    return min((e["seq"] for e in events), default=_INF)


def streamed_message(akc: ScenarioContext, index: int) -> tuple[str, list[dict[str, Any]]]:
    """(text, tool calls) the scripted model streamed on model call ``index`` (0-based)."""
    for e in akc.events("model_response"):
        if e["index"] == index:
            text = "".join(c.get("text", "") for c in e["chunks"] if c.get("type") == "text")
            calls = [
                {"id": c["id"], "name": c["name"], "args": json.loads(c["input_json"] or "{}")}
                for c in e["chunks"]
                if c.get("type") == "tool_use"
            ]
            return text, calls
    raise ConformanceFailure(f"model call {index + 1}", "a finished model response", "none")


# ============================================================================ LOOP-001, 002, 003


@then(parsers.re(r'every model call starts with "context-assemble" carrying the history and the budget$'))
@judges("LOOP-001")
def then_turns_start_with_context_assemble(akc: ScenarioContext) -> None:
    """Between two model requests there is exactly one context-assemble, and no hook of the new
    turn (pre-model-call) comes before it; its payload has the history (with the user message)
    and a budget. Evidence (mandatory): the kernel made model requests and dispatched
    context-assemble."""
    akc.require_kernel_ran()
    akc.require_points_dispatched(["context-assemble"])
    akc.evidence.require("context-assemble dispatches", dispatches(akc, None, "context-assemble"))
    marks = sorted(
        [(e["seq"], "MODEL") for e in akc.events("model_request")]
        + [(e["seq"], e["point"]) for e in akc.hook_dispatches() if e["point"] in ("context-assemble", "pre-model-call")]
    )
    seen: list[str] = []
    for _, what in marks:
        if what == "MODEL":
            if seen[:1] != ["context-assemble"] or seen.count("context-assemble") != 1:
                raise ConformanceFailure(
                    "hooks between two model requests", '["context-assemble", "pre-model-call", …] (context-assemble once, first)', seen
                )
            seen = []
        else:
            seen.append(what)
    user_texts = [m.text for m in akc.scenario.user_messages]
    previous_used: Any = None
    for k, e in enumerate(dispatches(akc, None, "context-assemble"), start=1):
        payload = e["payload"]
        if not isinstance(payload, dict) or not isinstance(payload.get("history"), list):
            raise ConformanceFailure(f"context-assemble payload of model turn {k}", '{"history": [...], "budget": {...}}', payload)
        texts = [m.get("text") for m in payload["history"] if isinstance(m, dict) and m.get("role") == "user"]
        if not any(t in texts for t in user_texts):
            raise ConformanceFailure(f"history at context-assemble of model turn {k}", f"the user message among {show(texts)}", payload["history"])
        # A budget the kernel cannot report is absent, whether left out or handed over empty: one
        # rule for every adapter (issue 22 §3), never a pass on an empty object.
        budget = payload.get("budget")
        if not isinstance(budget, dict) or not budget:
            raise ConformanceFailure(
                f"budget at context-assemble of model turn {k}",
                "the current budget: an object with what the kernel counts (turns used, remaining cost…)",
                "none" if budget is None else budget,
            )
        used = budget.get("turns_used")
        if isinstance(used, int) and isinstance(previous_used, int) and used <= previous_used:
            raise ConformanceFailure(
                f"budget.turns_used at model turn {k}", f"more than at model turn {k - 1} ({previous_used})", used
            )
        previous_used = used
        akc.evidence.saw(f"context-assemble of model turn {k} carried a history of {len(payload['history'])} messages and a budget")


@then(parsers.re(r"the pre-model-call payload of model call (?P<k>\d+) carries the context-assemble output, the tool specs and the params$"))
def then_pre_model_call_payload(akc: ScenarioContext, k: str) -> None:
    """pre-model-call (first hook) gets {payload: <context-assemble chain output>, tool_specs:
    every declared tool, params: {...}}, after the whole context-assemble chain."""
    turn = int(k)
    ca_chain = dispatches(akc, turn, "context-assemble", recorded=False)
    calls = dispatches(akc, turn, "pre-model-call")
    if len(calls) != 1:
        raise ConformanceFailure(f"pre-model-call dispatches in model turn {turn}", 1, len(calls))
    if calls[0]["seq"] < last_seq(ca_chain):
        raise ConformanceFailure(f"pre-model-call of model turn {turn}", "after the whole context-assemble chain", "during it")
    payload = calls[0]["payload"]
    if not isinstance(payload, dict):
        raise ConformanceFailure(f"pre-model-call payload of model turn {turn}", '{"payload", "tool_specs", "params"}', payload)
    if ca_chain:  # without a context-assemble dispatch (LOOP-001's fault) there is no output to compare
        expected = apply_outcomes(ca_chain[0]["payload"], ca_chain)
        if not contains(payload.get("payload"), expected):
            without_budget = {key: v for key, v in expected.items() if key != "budget"} if isinstance(expected, dict) else expected
            handed = ca_chain[0]["payload"]
            if "LOOP-001" not in akc.requirement_ids and isinstance(handed, dict) and "budget" not in handed and contains(payload.get("payload"), without_budget):
                # only the budget is missing, and the kernel never had one to carry: LOOP-001's subject
                raise Blocked("LOOP-001", f"context-assemble of model turn {turn} carried no budget, so pre-model-call could not pass one on")
            raise ConformanceFailure(f"pre-model-call payload.payload of model turn {turn}", expected, payload.get("payload"))
    offered = set(map(str, spec_names(payload.get("tool_specs"))))
    missing = sorted(t.name for t in akc.scenario.tools if t.name not in offered)
    if missing:  # a kernel may offer tools of its own as well (bundled tools)
        raise ConformanceFailure(f"tool specs in the pre-model-call payload of model turn {turn}", f"every declared tool, {show(missing)} too", sorted(offered))
    if not isinstance(payload.get("params"), dict):
        raise ConformanceFailure(f"params in the pre-model-call payload of model turn {turn}", "an object", payload.get("params"))
    akc.evidence.saw(f"pre-model-call of model turn {turn} carried the context-assemble output and {len(offered)} tool specs")


@then(parsers.re(r"the request of model call (?P<k>\d+) is the one the pre-model-call chain produced$"))
def then_request_from_chain(akc: ScenarioContext, k: str) -> None:
    """The model got the pre-model-call chain's output: its history (system text aside), its tool
    specs and its params."""
    turn = int(k)
    out = chain_output(akc, turn, "pre-model-call")
    request = akc.model_request(turn)
    inner = out.get("payload") if isinstance(out, dict) else None
    history = inner.get("history") if isinstance(inner, dict) else None
    if not isinstance(history, list):
        raise HarnessError("the pre-model-call chain output has no payload.history to compare with")
    expected = non_system(history)
    if not akc.carries(turn, "tool-error-flag"):  # readings: dialect-limits
        expected = [{k: v for k, v in m.items() if k != "is_error"} if isinstance(m, dict) else m for m in expected]
    expect_equal(f"messages of model request {turn} (system messages aside)", expected, non_system(request.get("messages")))
    expect_equal(f"tool specs of model request {turn}", spec_names(out.get("tool_specs")), spec_names(request.get("tools")))
    params = out.get("params") or {}
    if not contains(request.get("params") or {}, params):
        raise ConformanceFailure(f"params of model request {turn}", params, request.get("params"))
    akc.evidence.saw(f"model request {turn} matched the pre-model-call chain's output ({len(non_system(history))} messages)")


# ============================================================================ LOOP-004, 005


@then(parsers.re(r'"post-model-response" was dispatched once in every model call$'))
def then_pmr_once_per_turn(akc: ScenarioContext) -> None:
    """One post-model-response per model turn, and as many turns as model requests. The calls a
    kernel made past the script's closing answer got no message to dispatch: they are DONE-001's
    (:meth:`ScenarioContext.require_answer_ended_run`), judged after the scripted ones."""
    akc.require_kernel_ran()
    n = turn_count(akc)
    expect_equal("model turns (context-assemble) against model requests", len(akc.model_requests()), n)
    past = min((e["index"] for e in akc.events("script_exhausted")), default=n)
    for k in range(1, n + 1):
        if k - 1 == past:
            akc.require_answer_ended_run()
        expect_equal(f"post-model-response dispatches in model turn {k}", 1, len(dispatches(akc, k, "post-model-response")))
    akc.evidence.saw(f"post-model-response once in each of {n} model turns")


@then(parsers.re(r'"post-model-response" of model call (?P<k>\d+) carries the whole streamed message, dispatched after the stream ended and before any tool hook$'))
def then_pmr_whole_message(akc: ScenarioContext, k: str) -> None:
    """The payload is the accumulated assistant message (all text chunks joined, every tool_use
    block with its parsed arguments), dispatched after the stream's end."""
    turn = int(k)
    text, calls = streamed_message(akc, turn - 1)
    pmr = dispatches(akc, turn, "post-model-response")
    if len(pmr) != 1:
        raise ConformanceFailure(f"post-model-response dispatches in model turn {turn}", 1, len(pmr))
    expected = norm_message({"role": "assistant", "text": text, "tool_calls": calls})
    expect_equal(f"post-model-response payload of model turn {turn}", expected, norm_message(pmr[0]["payload"]))
    ended = [e for e in akc.events("model_response") if e["index"] == turn - 1]
    if pmr[0]["seq"] < ended[0]["seq"]:
        raise ConformanceFailure(f"post-model-response of model turn {turn}", "after the model stream ended", "while it was still open")
    tool_hooks = [e for e in in_turn(akc, turn, "hook") if e["point"] in TOOL_POINTS]
    starts = starts_in_turn(akc, turn)
    first_tool = min(first_seq(tool_hooks), first_seq(starts))
    if pmr[0]["seq"] > first_tool:
        raise ConformanceFailure(f"post-model-response of model turn {turn}", "before any tool hook or tool of the turn", "after one")
    akc.evidence.saw(f"post-model-response of model turn {turn} carried the streamed message ({len(calls)} tool calls)")


@then(parsers.re(r'call "(?P<call>[^"]+)" ran with (?P<args>\{.*\})$'))
def then_call_ran_with(akc: ScenarioContext, call: str, args: str) -> None:
    """The tool call with this id started with exactly these arguments."""
    starts = [e for e in akc.tool_starts() if e["call_id"] == call]
    if not starts:
        raise ConformanceFailure(f"call {call}", "it ran", f"tool starts: {show([e['call_id'] for e in akc.tool_starts()])}")
    expect_equal(f"arguments of call {call}", json.loads(args), starts[0]["args"])
    akc.evidence.saw(f"call {call} ran with {args}")


@then(parsers.re(r'the request of model call (?P<k>\d+) holds an assistant message calling "(?P<calls>[^"]*)"(?P<rest>.*)$'))
def then_request_holds_calls(akc: ScenarioContext, k: str, calls: str, rest: str) -> None:
    """Some assistant message of model request k has exactly these tool call ids; optionally
    `and none calling "x"`: no assistant message of it calls x."""
    messages = akc.request_messages(akc.model_request(int(k)))
    seen = [[c.get("id") for c in m.get("tool_calls") or []] for m in messages if m.get("role") == "assistant"]
    if split_ids(calls) not in seen:
        raise ConformanceFailure(f"assistant messages of model request {k}", f"one calling {show(split_ids(calls))}", seen)
    m = re.fullmatch(r'\s*and none calling "(?P<bad>[^"]+)"\s*', rest)
    if rest.strip() and m is None:
        raise HarnessError(f"cannot understand {rest.strip()!r}")
    if m is not None:
        bad = m.group("bad")
        if any(bad in ids for ids in seen):
            raise ConformanceFailure(f"assistant messages of model request {k}", f"none calling {bad}", seen)
    akc.evidence.saw(f"model request {k} held an assistant message calling {calls}")


# ============================================================================ LOOP-006, 007, 008


@then(parsers.re(r"no tool hook was dispatched in model call (?P<k>\d+)$"))
def then_no_tool_hooks(akc: ScenarioContext, k: str) -> None:
    """None of pre-tool-call, plan-ready, post-tool-call, post-apply in model turn k."""
    _, calls = streamed_message(akc, int(k) - 1)
    akc.evidence.require(f"model turn {k} was answered without tool calls", not calls)
    points = [e["point"] for e in in_turn(akc, int(k), "hook") if e["point"] in TOOL_POINTS]
    expect_equal(f"tool hooks in model turn {k}", [], points)


@then(parsers.re(r'"pre-tool-call" of model call (?P<k>\d+) was dispatched for "(?P<ids>[^"]*)" in this order, before any tool of it started$'))
def then_pre_tool_call_order(akc: ScenarioContext, k: str, ids: str) -> None:
    """One pre-tool-call per tool_use block, in declaration order, all before the first tool start."""
    turn = int(k)
    ptc = dispatches(akc, turn, "pre-tool-call")
    expect_equal(f"pre-tool-call dispatches of model turn {turn} (call ids)", split_ids(ids), [call_id_of(e["payload"]) for e in ptc])
    akc.evidence.require(f"pre-tool-call dispatches in model turn {turn}", ptc)
    starts = starts_in_turn(akc, turn)
    all_ptc = dispatches(akc, turn, "pre-tool-call", recorded=False)
    if starts and last_seq(all_ptc) > first_seq(starts):
        first = min(starts, key=lambda e: e["seq"])
        late = [call_id_of(e["payload"]) for e in ptc if e["seq"] > first["seq"]]
        raise ConformanceFailure(
            f"pre-tool-call of model turn {turn}", "every one before the first tool starts", f"{show(late)} after {first['call_id']} started"
        )


@then(parsers.re(r"every data-source call of model call (?P<k>\d+) ends before any interactive call of it starts$"))
def then_ds_before_interactive(akc: ScenarioContext, k: str) -> None:
    """Step 9 before step 9b: the last data-source tool_end precedes the first interactive tool_start."""
    turn = int(k)
    ds_ends = [e for e in ends_in_turn(akc, turn) if tool_kind(akc, e["name"]) == "data_source"]
    int_starts = [e for e in starts_in_turn(akc, turn) if tool_kind(akc, e["name"]) == "interactive"]
    akc.evidence.require(f"data-source calls that ran in model turn {turn}", ds_ends)
    akc.evidence.require(f"interactive calls that ran in model turn {turn}", int_starts)
    if last_seq(ds_ends) > first_seq(int_starts):
        first = min(int_starts, key=lambda e: e["seq"])
        late = [e["call_id"] for e in ds_ends if e["seq"] > first["seq"]]
        raise ConformanceFailure(
            f"model turn {turn}", "every data-source call ended before an interactive call starts", f"{show(late)} ended after {first['call_id']} started"
        )


# ============================================================================ LOOP-009, 010, 011


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched (?P<n>\d+) times? in model call (?P<k>\d+)$'))
def then_point_count_in_turn(akc: ScenarioContext, point: str, n: str, k: str) -> None:
    """Exactly n dispatches of this point in model turn k."""
    akc._check_point(point)
    expect_equal(f"dispatches of {point} in model turn {k}", int(n), len(dispatches(akc, int(k), point)))
    akc.evidence.saw(f"model turn {k} happened; {point} dispatched {n} times in it")


@then(parsers.re(r'"plan-ready" of model call (?P<k>\d+) was dispatched after every data-source and interactive call ended and before any resource call started$'))
def then_plan_ready_between(akc: ScenarioContext, k: str) -> None:
    """Step 11 after steps 9/9b and before step 12."""
    turn = int(k)
    pr = dispatches(akc, turn, "plan-ready")
    if len(pr) != 1:
        raise ConformanceFailure(f"plan-ready dispatches in model turn {turn}", 1, len(pr))
    seq = pr[0]["seq"]
    early = [e["call_id"] for e in ends_in_turn(akc, turn) if tool_kind(akc, e["name"]) != "resource" and e["seq"] > seq]
    if early:
        raise ConformanceFailure(f"plan-ready of model turn {turn}", "after every data-source and interactive call ended", f"before {show(early)} ended")
    late = [e["call_id"] for e in starts_in_turn(akc, turn) if tool_kind(akc, e["name"]) == "resource" and e["seq"] < seq]
    if late:
        raise ConformanceFailure(f"plan-ready of model turn {turn}", "before any resource call started", f"after {show(late)} started")
    akc.evidence.require(f"tool calls in the message of model turn {turn}", turn_calls(akc, turn))
    ran = [e for e in ends_in_turn(akc, turn) if tool_kind(akc, e["name"]) != "resource"]
    applied = [e for e in starts_in_turn(akc, turn) if tool_kind(akc, e["name"]) == "resource"]
    akc.evidence.saw(f"plan-ready of model turn {turn} came after {len(ran)} data-source/interactive calls ended, before {len(applied)} resource calls started")


@then(parsers.re(r'"post-tool-call" of model call (?P<k>\d+) was dispatched once per call, with the call and its result, after every call of it ended$'))
def then_post_tool_call(akc: ScenarioContext, k: str) -> None:
    """Step 13: one dispatch per call of the message (any order), {call, result}; the result of a
    call that ran is what its tool returned; none before the turn's last tool_end."""
    turn = int(k)
    calls = {c.get("id"): c for c in turn_calls(akc, turn)}
    akc.evidence.require(f"tool calls in the message of model turn {turn}", calls)
    ptc = dispatches(akc, turn, "post-tool-call")
    expect_equal(f"post-tool-call dispatches of model turn {turn} (call ids, sorted)", sorted(calls), sorted(map(str, (call_id_of(e["payload"]) for e in ptc))))
    ends = {e["call_id"]: e for e in ends_in_turn(akc, turn)}
    denied = denied_calls(akc)
    for e in ptc:
        payload = e["payload"]
        call, result = payload.get("call"), payload.get("result")
        cid = call_id_of(payload)
        want = calls[cid]
        got_call = {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")} if isinstance(call, dict) else call
        expect_equal(f"call in the post-tool-call payload of {cid}", {"id": cid, "name": want.get("name"), "args": want.get("args")}, got_call)
        if not (isinstance(result, dict) and isinstance(result.get("content"), str) and isinstance(result.get("is_error"), bool)):
            raise ConformanceFailure(f"result in the post-tool-call payload of {cid}", '{"content": str, "is_error": bool}', result)
        end = ends.get(cid)
        if end is not None and "result" in end and cid not in denied:
            expect_equal(f"result content in the post-tool-call payload of {cid}", end["result"], result["content"])
    all_ends = ends_in_turn(akc, turn)
    early = [call_id_of(e["payload"]) for e in ptc if e["seq"] < last_seq(all_ends)]
    if early:
        raise ConformanceFailure(f"post-tool-call of model turn {turn}", "every one after the turn's last tool ended", f"{show(early)} before it")
    akc.evidence.saw(f"post-tool-call dispatched for each of {len(ptc)} calls of model turn {turn}, {len(all_ends)} tool runs ended before")


@then(parsers.re(r'"post-apply" of model call (?P<k>\d+) was dispatched after all its post-tool-call dispatches and carries the plan the veto chain left$'))
def then_post_apply(akc: ScenarioContext, k: str) -> None:
    """Step 14: once, after step 13, with plan-ready's chain output (items in order; extra fields
    allowed)."""
    turn = int(k)
    pa = dispatches(akc, turn, "post-apply")
    if len(pa) != 1:
        raise ConformanceFailure(f"post-apply dispatches in model turn {turn}", 1, len(pa))
    ptc = dispatches(akc, turn, "post-tool-call", recorded=False)
    if pa[0]["seq"] < last_seq(ptc):
        raise ConformanceFailure(f"post-apply of model turn {turn}", "after every post-tool-call of the turn", "before one")
    plan = turn_plan(akc, turn)
    if not contains(pa[0]["payload"], plan):
        raise ConformanceFailure(f"post-apply payload of model turn {turn}", plan, pa[0]["payload"])
    akc.evidence.saw(f"post-apply of model turn {turn} carried the plan ({len(plan.get('items') or []) if isinstance(plan, dict) else '?'} items) after {len(ptc)} post-tool-call dispatches")


# ============================================================================ LOOP-012, 013


@then(parsers.re(r"the history sent in model call (?P<k>\d+) is that of model call (?P<j>\d+) plus its assistant message and one tool_result per call$"))
def then_history_handed_on(akc: ScenarioContext, k: str, j: str) -> None:
    """Step 15: history(k) = history(j) ++ message(j) ++ one tool_result per call of it (any order)."""
    turn, prev = int(k), int(j)
    # No context-assemble to look at is LOOP-001's fault: blocked by it (the model request step still checks).
    akc.require_points_dispatched(["context-assemble"])
    ca_prev, ca_next = dispatches(akc, prev, "context-assemble"), dispatches(akc, turn, "context-assemble")
    akc.evidence.require(f"context-assemble in model turns {prev} and {turn}", bool(ca_prev and ca_next), mandatory=False)
    before = ca_prev[0]["payload"].get("history") or []
    after = ca_next[0]["payload"].get("history") or []
    message = turn_message(akc, prev)
    _expect_handed_on(f"history at context-assemble of model turn {turn}", non_system(before), norm_message(message), non_system(after))
    akc.evidence.saw(f"history at model turn {turn}: {len(non_system(after))} messages, handed on whole")


@then(parsers.re(r"the request of model call (?P<k>\d+) holds the assistant message of model call (?P<j>\d+) and one tool_result per call$"))
def then_request_handed_on(akc: ScenarioContext, k: str, j: str) -> None:
    """The next model request carries the turn's assistant message followed by its tool_results."""
    turn, prev = int(k), int(j)
    before = non_system(akc.model_request(prev).get("messages"))
    after = non_system(akc.model_request(turn).get("messages"))
    message = norm_message(turn_message(akc, prev))
    _expect_handed_on(f"messages of model request {turn}", before, message, after)
    akc.evidence.saw(f"model request {turn}: {len(after)} messages, handed on whole")


def _expect_handed_on(what: str, before: list[Any], message: Any, after: list[Any]) -> None:
    ids = [c["id"] for c in message.get("tool_calls", [])]
    if after[: len(before)] != before:
        raise ConformanceFailure(what, f"to start with the previous {len(before)} messages {show(before)}", after)
    rest = after[len(before) :]
    if not rest or rest[0] != message:
        raise ConformanceFailure(what, f"then the assistant message {show(message)}", rest)
    results = rest[1 : 1 + len(ids)]
    got = sorted(str(m.get("call_id")) for m in results if m.get("role") == "tool_result")
    if got != sorted(ids) or len(results) != len(ids):
        raise ConformanceFailure(what, f"then one tool_result for each of {show(ids)}", rest[1:])
    if rest[1 + len(ids) :]:
        raise ConformanceFailure(what, "nothing after the tool_results", rest[1 + len(ids) :])


# ============================================================================ LOOP-014


@then(parsers.re(r'the hooks at "(?P<point>[^"]+)" run in the order "(?P<ids>[^"]+)" at every dispatch$'))
def then_chain_order(akc: ScenarioContext, point: str, ids: str) -> None:
    """Each dispatch of the point runs its scripted hooks in registration order (the recording
    hook, registered first, runs first). Reading hook-order-outside-chains: 003 makes only steps
    1-2 and 5-7 plain chains; at the other points every hook must run once per dispatch, in any
    order (unless the adapter declared registration order)."""
    order = [rec_id(point)] + split_ids(ids)
    ordered = point in CHAIN_POINTS or "any-order-elsewhere" not in akc.accepts("hook-order-outside-chains")
    events = [e for e in hook_events(akc) if e["point"] == point]
    # A point that was never dispatched has no chain to order: blocked by the requirement that
    # wants it dispatched (or, for this requirement's own points, not exercised).
    akc.require_points_dispatched([point])
    akc.evidence.require(f'dispatches of "{point}"', events, mandatory=False)
    # Per-call points: one chain per call, and chains of different calls may interleave.
    groups: dict[Any, list[str]] = {}
    for e in events:
        key = call_id_of(e["payload"]) if point in ("pre-tool-call", "post-tool-call") else None
        groups.setdefault(key, []).append(e["hook_id"])
    for key, seen in groups.items():
        chunks = [seen[i : i + len(order)] for i in range(0, len(seen), len(order))]
        bad = [c for c in chunks if (c != order if ordered else sorted(c) != sorted(order))]
        if bad:
            where = f" for call {key}" if key is not None else ""
            want = order if ordered else f"each of {show(order)} once, in any order"
            raise ConformanceFailure(f'hooks at "{point}"{where} (each dispatch)', want, seen)
    how = "in registration order" if ordered else "each once (order open at this point)"
    akc.evidence.saw(f'{sum(len(v) for v in groups.values()) // len(order)} dispatches of "{point}" ran hooks {how}')


@then(parsers.re(r'hook "(?P<second>[^"]+)" at "(?P<point>[^"]+)" received the replacement of hook "(?P<first>[^"]+)"$'))
def then_received_replacement(akc: ScenarioContext, second: str, point: str, first: str) -> None:
    """At every dispatch of the point, the second hook got exactly what the first one returned."""
    firsts = akc.hook_dispatches(point, hook_id=first)
    seconds = akc.hook_dispatches(point, hook_id=second)
    if not firsts or len(firsts) != len(seconds):
        raise ConformanceFailure(f'dispatches of hooks {first} and {second} at "{point}"', "the same number, at least one", [len(firsts), len(seconds)])
    replaced = 0
    for a, b in zip(firsts, seconds, strict=True):
        outcome = a.get("outcome") or {}
        if outcome.get("kind") != "replace":
            continue
        replaced += 1
        if not contains(b["payload"], outcome.get("payload")):
            raise ConformanceFailure(f'payload hook {second} got at "{point}"', outcome.get("payload"), b["payload"])
    akc.evidence.require(f'replacements by hook {first} at "{point}" handed to {second}', replaced)


# ============================================================================ LOOP-015 to 018


def _tokens(akc: ScenarioContext) -> list[tuple[int, str]]:
    """(seq, what) for every recorded hook dispatch (its point) and model request ("MODEL")."""
    marks = [(e["seq"], e["point"]) for e in akc.hook_dispatches()]
    marks += [(e["seq"], "MODEL") for e in akc.events("model_request")]
    return sorted(marks)


def run_of_requests(akc: ScenarioContext) -> list[int]:
    """For each model request, the user message (0-based) whose session run it belongs to: the
    latest scenario user message its history holds (a limit-reached instruction is not one)."""
    texts = [m.text for m in akc.scenario.user_messages]
    out = []
    for request in akc.model_requests():
        held = {m.get("text") for m in akc.request_messages(request) if m.get("role") == "user"}
        out.append(max((i for i, t in enumerate(texts) if t in held), default=0))
    return out


@then(parsers.re(r'"session-start" was dispatched first in each session run, before its first "context-assemble"$'))
def then_session_start_opens(akc: ScenarioContext) -> None:
    """Reading session-start-frequency: session-start comes before the first RunTurn of the first
    session run; for each later run of the same session it comes at most once, only between runs
    (never inside a run), and the kernel is consistent: every later run dispatches it, or none."""
    akc.require_kernel_ran()
    ss = akc.evidence.require("session-start dispatches", akc.hook_dispatches("session-start"))
    requests = akc.events("model_request")
    starts = turn_starts(akc)
    runs = run_of_requests(akc)
    first_of_run = {r: j for j, r in reversed(list(enumerate(runs)))}
    per_run = {r: 0 for r in set(runs)}
    for e in ss:
        s = e["seq"]
        inside = [j + 1 for j, (lo, req) in enumerate(zip(starts, requests, strict=True)) if lo <= s <= req["seq"]]
        nxt = next((j for j, lo in enumerate(starts) if lo > s), None)
        if inside or nxt is None or first_of_run.get(runs[nxt]) != nxt:
            where = f"inside model turn {inside[0]}" if inside else "after the last model turn" if nxt is None else f"before model turn {nxt + 1}, which is not the first of its session run"
            raise ConformanceFailure("session-start", "before the first context-assemble of a session run, between runs", where)
        per_run[runs[nxt]] += 1
    expect_equal("session-start dispatches before the first session run", 1, per_run.get(0, 0))
    later = [per_run[r] for r in sorted(per_run) if r > 0]
    allowed = akc.accepts("session-start-frequency")
    legal = ([[1] * len(later)] if "per-session-run" in allowed else []) + ([[0] * len(later)] if "per-session" in allowed else [])
    if later not in legal:
        raise ConformanceFailure(
            "session-start dispatches of the later session runs of one session",
            " or ".join(show(x) for x in legal) + " (once per run, or never again)",
            later,
        )
    akc.evidence.saw(f"session-start dispatches per session run: {show([per_run[r] for r in sorted(per_run)])}")


@then(parsers.re(r'"session-end" was dispatched last in each session run, after every other hook of it$'))
def then_session_end_closes(akc: ScenarioContext) -> None:
    """One session-end per user message, after every other hook of its run: the run's last
    dispatch, followed only by the next run's session-start or first turn."""
    akc.require_kernel_ran()
    akc.require_run_ended_as_scripted()
    tokens = [w for _, w in _tokens(akc) if w != "session-start"]
    expect_equal("session-end dispatches (one per session run)", len(akc.scenario.user_messages), tokens.count("session-end"))
    if tokens[-1:] != ["session-end"]:
        raise ConformanceFailure("the last hook dispatch of the run", "session-end", tokens[-4:])
    for i, w in enumerate(tokens[:-1]):
        if w == "session-end" and tokens[i + 1] not in ("context-assemble", "pre-model-call", "MODEL"):
            raise ConformanceFailure("session-end", "after every other hook of its session run", f"followed by {tokens[i + 1]}")
    akc.evidence.saw(f"session-end closed each of {tokens.count('session-end')} session runs")


@then(parsers.re(r'"session-start" was dispatched once, before the first "context-assemble"$'))
def then_session_start_once(akc: ScenarioContext) -> None:
    """One session run: session-start exactly once, before any context-assemble."""
    akc.require_kernel_ran()
    ss = akc.hook_dispatches("session-start")
    expect_equal("session-start dispatches", 1, len(ss))
    ca = akc.hook_dispatches("context-assemble")
    if ca and ca[0]["seq"] < ss[0]["seq"]:
        raise ConformanceFailure("session-start", "before the first context-assemble", "after it")
    akc.evidence.saw("session-start dispatched once, before the first context-assemble")


@then(parsers.re(r'"session-end" was dispatched once, after the last model call$'))
def then_session_end_after_final(akc: ScenarioContext) -> None:
    """Exactly one session-end, the run's last hook dispatch, after the last model response."""
    akc.require_run_ended_as_scripted()
    se = akc.hook_dispatches("session-end")
    expect_equal("session-end dispatches", 1, len(se))
    points = akc.dispatched_points()
    if points[-1] != "session-end":
        raise ConformanceFailure("the run's last hook dispatch", "session-end", points[-3:])
    responses = akc.require_kernel_ran() and akc.events("model_response", "model_request")
    if se[0]["seq"] < last_seq(responses):
        raise ConformanceFailure("session-end", "after the final model turn's model call", "before it")
    akc.evidence.saw(f"session-end dispatched once, after the last of {len(akc.model_requests())} model calls")


@then(parsers.re(r'"session-end" was dispatched once, after the cancellation$'))
def then_session_end_after_cancel(akc: ScenarioContext) -> None:
    """The harness cancelled the run; session-end then fires exactly once."""
    # A kernel that dispatched nothing never reaches a cancel point: fail, not incomplete.
    akc.evidence.require("hook dispatches or model requests of the kernel", akc.hook_dispatches() or akc.model_requests())
    cancels = akc.events("cancel")
    if not cancels:
        if akc.events("cancel_missing"):
            raise HarnessError("the adapter registered no canceller for the cancelled message (docs/adapter.md, step 3)")
        raise Incomplete("the scenario's cancel point was never reached, so nothing was cancelled")
    se = akc.hook_dispatches("session-end")
    expect_equal("session-end dispatches", 1, len(se))
    if se[0]["seq"] < cancels[0]["seq"]:
        raise ConformanceFailure("session-end", "after the cancellation", "before it")
    akc.evidence.saw(f"the run was cancelled at {cancels[0]['where']}; session-end dispatched once after it")


@then(parsers.re(r'the request of model call (?P<k>\d+) holds an assistant message saying "(?P<text>[^"]*)" and none saying "(?P<bad>[^"]*)"$'))
def then_request_holds_text(akc: ScenarioContext, k: str, text: str, bad: str) -> None:
    """The history sent with model request k has an assistant message with this text, and none
    with the other."""
    texts = [m.get("text") for m in akc.request_messages(akc.model_request(int(k))) if m.get("role") == "assistant"]
    if text not in texts or bad in texts:
        raise ConformanceFailure(f"assistant texts in model request {k}", f"{text!r} and not {bad!r}", texts)
    akc.evidence.saw(f"model request {k} held the assistant text {text!r}, not {bad!r}")


@then(parsers.re(r"every model call with tool calls is followed by another model call$"))
def then_tool_turns_continue(akc: ScenarioContext) -> None:
    """Step 18: no termination condition fired, so each turn whose message had tool_use blocks
    leads to one more model request (the scenario sets no bound and repeats no call)."""
    requests = len(akc.model_requests())
    with_tools = [e for e in akc.events("model_response") if any(c.get("type") == "tool_use" for c in e["chunks"])]
    akc.evidence.require("model responses with tool calls", with_tools)
    for e in with_tools:
        if e["index"] + 1 >= requests:
            raise ConformanceFailure(
                f"model turn {e['index'] + 1} (it had tool calls)", "another model turn after it", f"the loop ended after {requests} model requests"
            )
    # "After" the turn: the next turn's context-assemble does not come before this turn's tool
    # hooks are over (pipelining is allowed only where it cannot be seen).
    for k in range(1, turn_count(akc) + 1):
        events = in_turn(akc, k, "hook")
        tool_hooks = [e for e in events if e["point"] in TOOL_POINTS and e["hook_id"] == rec_id(e["point"])]
        if not tool_hooks:
            continue
        early = [e for e in dispatches(akc, k, "context-assemble") if e["seq"] > first_seq(tool_hooks) and e["seq"] < last_seq(tool_hooks)]
        if early:
            raise ConformanceFailure(
                f"context-assemble of model turn {k + 1}", f"after the tool hooks of model turn {k} (post-apply included)", "among them"
            )


@then(parsers.re(r"every model call's history is the previous one's plus its assistant message and one tool_result per call$"))
@judges("LOOP-012")
def then_every_history_handed_on(akc: ScenarioContext) -> None:
    """Step 15 over a whole (long) session: for every model turn after the first, the history at
    context-assemble and the model request are the previous turn's plus its message and results."""
    n = akc.evidence.require("model turns after the first", max(turn_count(akc) - 1, 0))
    for k in range(2, n + 2):
        then_request_handed_on(akc, str(k), str(k - 1))
        if dispatches(akc, k - 1, "context-assemble") and dispatches(akc, k, "context-assemble"):
            then_history_handed_on(akc, str(k), str(k - 1))
    longest = max(len(akc.request_messages(r)) for r in akc.model_requests())
    akc.evidence.saw(f"{n + 1} model turns; the longest request held {longest} messages")


@given("the model calls, one response per model call:")
def given_calls_per_turn(akc: ScenarioContext, datatable: list[list[str]]) -> None:
    """Several responses from one table: turn | id | name | args (JSON); rows with the same turn
    number are the calls of one response, in row order (long sessions, several calls per turn)."""
    turns: dict[str, list[ScriptedToolCall]] = {}
    for row in table_rows(datatable):
        call = ScriptedToolCall(id=row.get("id") or None, name=row["name"], args=_json(row.get("args") or "{}", "args"))
        turns.setdefault(row["turn"], []).append(call)
    for calls in turns.values():
        akc.add_response(ModelResponse(tool_calls=calls))


# ============================================================================ LOOP-015/016 per session, children included


def _hooks_by_session(akc: ScenarioContext) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """The recorded hook dispatches grouped by the TurnInfo's session_id: {session: (depth, events)}.
    Evidence (mandatory): a delegated child session (depth 1 or more) dispatched hooks."""
    akc.require_kernel_ran()
    out: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    for e in akc.hook_dispatches():
        turn = e.get("turn")
        if isinstance(turn, dict) and turn.get("session_id"):
            depth = turn.get("depth") if isinstance(turn.get("depth"), int) else 0
            out.setdefault(str(turn["session_id"]), (depth, []))[1].append(e)
    akc.evidence.require("hook dispatches of a delegated child session", [s for s, (d, _) in out.items() if d >= 1])
    return out


@then(parsers.re(r'"session-start" was dispatched once in every session, a child\'s included, before its first "context-assemble"$'))
def then_session_start_every_session(akc: ScenarioContext) -> None:
    """Each session (one run each here) dispatches session-start once, before its first context-assemble."""
    groups = _hooks_by_session(akc)
    for sid, (depth, events) in groups.items():
        points = [e["point"] for e in events]
        expect_equal(f"session-start dispatches of the session at depth {depth} ({sid})", 1, points.count("session-start"))
        if "context-assemble" in points and points.index("session-start") > points.index("context-assemble"):
            raise ConformanceFailure(f"session-start of the session at depth {depth}", "before its first context-assemble", "after it")
    akc.evidence.saw(f"session-start once in each of {len(groups)} sessions (depths {show(sorted(d for d, _ in groups.values()))})")


@then(parsers.re(r'"session-end" was dispatched once in every session, a child\'s included, after every other hook of it$'))
def then_session_end_every_session(akc: ScenarioContext) -> None:
    """Each session (one run each here) dispatches session-end once, as its last hook dispatch."""
    groups = _hooks_by_session(akc)
    for sid, (depth, events) in groups.items():
        points = [e["point"] for e in events]
        expect_equal(f"session-end dispatches of the session at depth {depth} ({sid})", 1, points.count("session-end"))
        if points[-1] != "session-end":
            raise ConformanceFailure(f"the last hook dispatch of the session at depth {depth}", "session-end", points[-3:])
    akc.evidence.saw(f"session-end closed each of {len(groups)} sessions (depths {show(sorted(d for d, _ in groups.values()))})")
