"""Steps for the GATE features: 003's policy precheck (steps 9, 9b) and the plan/apply gate
(steps 10 to 12) as the harness sees them: the precheck log, plan-ready payloads, tool starts and
the tool_results the model gets back."""

from __future__ import annotations

import json
from typing import Any

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, expect_equal, show
from conformance.harness.doubles import canonical_json
from conformance.steps.common import ScenarioContext, split_ids
from conformance.steps.loop import denied_calls, dispatches, first_seq, last_seq, quoted, starts_in_turn, streamed_message, tool_kind, turn_count


@then(parsers.re(r'the policy precheck is consulted for calls? "(?P<ids>[^"]+)", each before it starts$'))
def then_precheck_before(akc: ScenarioContext, ids: str) -> None:
    """Each call id was put to Doubles.policy_precheck, and before its tool_start (if it ran)."""
    checks = akc.events("policy")
    starts = {e["call_id"]: e for e in akc.tool_starts()}
    for cid in split_ids(ids):
        asked = [e for e in checks if str((e.get("call") or {}).get("id")) == cid]
        if not asked:
            raise ConformanceFailure(f"policy precheck of call {cid}", "consulted", f"calls it was asked about: {show([(e.get('call') or {}).get('id') for e in checks])}")
        start = starts.get(cid)
        if start is not None and first_seq(asked) > start["seq"]:
            raise ConformanceFailure(f"policy precheck of call {cid}", "before the call started", "after it started")
        akc.evidence.saw(f"the precheck was asked about call {cid}" + (" before it started" if start else ""))


def _tool_result(akc: ScenarioContext, k: int, cid: str) -> dict[str, Any]:
    results = [m for m in akc.request_messages(akc.model_request(k)) if m.get("role") == "tool_result" and m.get("call_id") == cid]
    if len(results) != 1:
        raise ConformanceFailure(f"tool_result of call {cid} in model request {k}", "exactly one", len(results))
    return results[0]


@then(parsers.re(r'the tool result of call "(?P<cid>[^"]+)" in the request of model call (?P<k>\d+) is an error mentioning (?P<words>.+)$'))
def then_error_result_mentions(akc: ScenarioContext, cid: str, k: str, words: str) -> None:
    """The call's tool_result is_error, and its text contains each quoted word (any case)."""
    result = _tool_result(akc, int(k), cid)
    flag_carried = akc.carries(int(k), "tool-error-flag") or "is_error" in result
    if flag_carried and result.get("is_error") is not True:
        raise ConformanceFailure(f"tool_result of call {cid} in model request {k}", "is_error: true", result)
    text = str(result.get("content", "")).lower()
    missing = [w for w in quoted(words) if w.lower() not in text]
    if missing:
        raise ConformanceFailure(f"tool_result text of call {cid} in model request {k}", f"mentions {show(missing)}", result.get("content"))
    akc.evidence.saw(f"the result of call {cid} in model request {k} is an error mentioning {words}")


def tool_output(akc: ScenarioContext, cid: str) -> str | None:
    """What the harness's tool would have returned for this call, had it run."""
    call = next((c for e in akc.events("model_response") for c in e["chunks"] if c.get("type") == "tool_use" and c.get("id") == cid), None)
    if call is None:
        return None
    script = akc.scenario.calls.get(cid)
    if script is not None and script.result is not None:
        return script.result
    tool = next((t for t in akc.scenario.tools if t.name == call.get("name")), None)
    template = tool.result if tool is not None else "{name} ok"
    try:
        args = json.loads(call.get("input_json") or "{}")
    except ValueError:
        args = None
    return template.replace("{name}", str(call.get("name"))).replace("{args}", canonical_json(args)).replace("{call_id}", cid)


def expect_refused_result(akc: ScenarioContext, cid: str, k: int, reading: str, strict: str, words: list[str]) -> None:
    """A refused call (vetoed, or denied by the precheck) did not run, and the result the model got
    for it in request k, if any, is not the tool's own output. Only when the adapter declared the
    reading's ``strict`` alternative is it held to an error result mentioning ``words``."""
    if akc.tool_ran(cid):
        raise ConformanceFailure(f"call {cid} (refused)", "it did not run", "it ran")
    results = [m for m in akc.request_messages(akc.model_request(k)) if m.get("role") == "tool_result" and m.get("call_id") == cid]
    own = tool_output(akc, cid)
    for m in results:
        if own is not None and str(m.get("content")) == own:
            raise ConformanceFailure(f"the result of refused call {cid} in model request {k}", "anything but the tool's own output", m.get("content"))
    if akc.accepts(reading) == {strict}:
        then_error_result_mentions(akc, cid, str(k), ", ".join(f'"{w}"' for w in words))
    akc.evidence.saw(f"call {cid} was refused and did not run; model request {k} holds {len(results)} result(s) for it, none its tool's output")


@then(parsers.re(r'the plan of model call (?P<k>\d+) holds (?:exactly the calls "(?P<ids>[^"]+)"|(?P<none>no item))$'))
def then_plan_items(akc: ScenarioContext, k: str, ids: str | None, none: str | None) -> None:
    """plan-ready's payload (as the first hook gets it) has one item per listed call, nothing else
    (any order); each item names its call's tool."""
    turn = int(k)
    pr = dispatches(akc, turn, "plan-ready")
    expected = [] if none else split_ids(ids or "")
    _, calls_k = streamed_message(akc, turn - 1)
    akc.evidence.require(f"tool calls in the message of model turn {turn}", calls_k)
    # No plan handed over: blocked by LOOP-009 when the kernel never dispatches it (a check not
    # about plan-ready), else not exercised in this turn.
    akc.require_points_dispatched(["plan-ready"])
    akc.evidence.require(f"plan-ready dispatched in model turn {turn}", pr, mandatory=False)
    if len(pr) != 1:
        raise ConformanceFailure(f"plan-ready dispatches in model turn {turn}", 1, len(pr))
    items = (pr[0]["payload"] or {}).get("items") if isinstance(pr[0]["payload"], dict) else None
    if not isinstance(items, list):
        raise ConformanceFailure(f"plan of model turn {turn}", '{"items": [...]}', pr[0]["payload"])
    expect_equal(f"call ids of the plan items of model turn {turn} (sorted)", sorted(expected), sorted(str(i.get("call_id")) for i in items if isinstance(i, dict)))
    names = {e["call_id"]: e["name"] for e in akc.events("tool_start")}
    calls = {c["id"]: c["name"] for resp in akc.events("model_response") for c in resp["chunks"] if c.get("type") == "tool_use"}
    for item in items:
        cid = item.get("call_id")
        want = calls.get(cid, names.get(cid))
        if item.get("name") != want:
            raise ConformanceFailure(f"tool name of plan item {cid}", want, item.get("name"))
    akc.evidence.saw(f"the plan of model turn {turn} held {len(items)} items: {show(sorted(expected))}")


@then(parsers.re(r"the plan-ready chain of model call (?P<k>\d+) has run over every resource call before it starts$"))
def then_chain_before_resources(akc: ScenarioContext, k: str) -> None:
    """Every resource call that started in turn k was in a plan dispatched before, and the last
    hook of the chain had been dispatched before the first resource call started."""
    turn = int(k)
    resource_starts = [e for e in starts_in_turn(akc, turn) if tool_kind(akc, e["name"]) == "resource"]
    chain = dispatches(akc, turn, "plan-ready", recorded=False)
    if resource_starts and not chain:
        raise ConformanceFailure(f"plan-ready in model turn {turn}", "dispatched before resource calls run", f"not dispatched; {show([e['call_id'] for e in resource_starts])} ran")
    if resource_starts and last_seq(chain) > first_seq(resource_starts):
        raise ConformanceFailure(f"model turn {turn}", "the whole plan-ready chain before the first resource call starts", "a resource call started during or before it")
    planned = {
        str(i.get("call_id"))
        for e in chain
        if isinstance(e["payload"], dict)
        for i in e["payload"].get("items") or []
        if isinstance(i, dict)
    }
    unplanned = [e["call_id"] for e in resource_starts if e["call_id"] not in planned]
    if unplanned:
        raise ConformanceFailure(f"resource calls of model turn {turn}", "each in the plan the chain ran over", f"{show(unplanned)} ran without being in it")
    if resource_starts:
        akc.evidence.saw(f"{len(resource_starts)} resource calls of model turn {turn} started after the whole plan-ready chain ({len(chain)} hook runs)")


@then(parsers.re(r"the plan-ready chain ran before the resource calls of every model call$"))
def then_chain_before_resources_all(akc: ScenarioContext) -> None:
    """The check above, for every model turn of the run; resource calls must have run (else the
    check is not exercised)."""
    akc.require_kernel_ran()
    for k in range(1, turn_count(akc) + 1):
        then_chain_before_resources(akc, str(k))
    akc.evidence.require("resource calls that ran", [e for e in akc.tool_starts() if tool_kind(akc, e["name"]) == "resource"], mandatory=False)


@then(parsers.re(r'call "(?P<cid>[^"]+)", denied by the precheck(?: because "(?P<reason>[^"]*)")?, did not run and the request of model call (?P<k>\d+) holds no output of its tool$'))
def then_denied_call(akc: ScenarioContext, cid: str, reason: str | None, k: str) -> None:
    """GATE-003, reading precheck-denial-result: the precheck was asked and denied the call; it
    never started, and its result (if any) is not the tool's output. An error naming the reason
    is required only of an adapter that declared that alternative."""
    akc.require_kernel_ran()
    # A kernel that never asked the precheck about the call fails GATE-001/002, not this.
    akc.evidence.require(f"the precheck denied call {cid}", cid in denied_calls(akc), mandatory=False)
    expect_refused_result(akc, cid, int(k), "precheck-denial-result", "error-naming-reason", [reason] if reason else [])


@then(parsers.re(r'call "(?P<cid>[^"]+)", vetoed(?: because "(?P<reason>[^"]*)")?, did not run and the request of model call (?P<k>\d+) holds no output of its tool$'))
def then_vetoed_call(akc: ScenarioContext, cid: str, reason: str | None, k: str) -> None:
    """GATE-006, reading veto-result: the plan-ready chain vetoed the call; it never started, and
    its result (if any) is not the tool's output. An error mentioning "veto" and the reason is
    required only of an adapter that declared that alternative."""
    akc.evidence.require("plan-ready dispatches", akc.hook_dispatches("plan-ready"))
    akc.require_call_served(cid)
    expect_refused_result(akc, cid, int(k), "veto-result", "error-naming-veto", ["veto"] + ([reason] if reason else []))
