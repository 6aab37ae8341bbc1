"""Steps for the STOP features (000 "Stopping a turn"): what may happen after the harness
cancelled a turn, and how the cancelled turn ends."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then

from conformance.errors import Blocked, ConformanceFailure, HarnessError, Incomplete, expect_equal, expect_order, show
from conformance.boundary.scenario import SubagentDef, ToolDef
from conformance.steps.common import ScenarioContext, list_items
from conformance.steps.turn import message_text, project, stored_messages


#: Hook points that open every session, and the requirement whose subject that is.
_SESSION_OPENERS = {"session-start": "LOOP-015"}


def cancel_point(akc: ScenarioContext) -> str:
    """The scenario's cancel point, in words."""
    c = akc.scenario.cancel
    if c is None:
        raise HarnessError("a STOP check in a scenario that cancels nothing")
    if c.at == "model_call":
        return f"model call {c.index + 1}"
    if c.at == "hook":
        return f"dispatch {c.occurrence + 1} of {c.point}"
    return f"the start of call {c.call_id}"


def _missing_dispatch(akc: ScenarioContext) -> str:
    """The dispatch the cancel point waits for, and how far the kernel got towards it."""
    c = akc.scenario.cancel
    assert c is not None
    if c.at == "model_call":
        return f"model call {c.index + 1} (it made {len(akc.model_requests())})"
    if c.at == "hook":
        made = sum(1 for e in akc.events("hook") if e.get("point") == c.point)
        return f"dispatch {c.occurrence + 1} of {c.point} (it dispatched {c.point} {made} times)"
    started = [e["call_id"] for e in akc.tool_starts()]
    return f"the tool call {c.call_id} (it started {', '.join(started) or 'none'})"


def cancel_event(akc: ScenarioContext) -> dict[str, Any]:
    """The harness's cancel, recorded as evidence. Every STOP scenario scripts a run that reaches
    its cancel point, so a kernel that never got there (it never made the model call, dispatched
    the hook or started the tool the scenario cancels at) fails; one that legitimately ended
    first (it rejected the scenario) is incomplete. No canceller is an adapter defect."""
    if akc.events("cancel_missing"):
        raise HarnessError("the adapter registered no canceller for the cancelled message (docs/adapter.md, step 3)")
    cancels = akc.events("cancel")
    if not cancels:
        where = cancel_point(akc)
        if akc.result.rejected is not None:
            raise Incomplete(f"not exercised: the kernel rejected the scenario before its cancel point ({where})")
        c = akc.scenario.cancel
        if c is not None and c.at == "hook" and c.point in _SESSION_OPENERS:
            # Cancelling as a (child) session starts: that every session dispatches its opening
            # hook is another requirement's subject (one fault, one verdict).
            raise Blocked(by=_SESSION_OPENERS[c.point], reason=f"{where} never came: {_missing_dispatch(akc)}")
        raise ConformanceFailure(
            f"the scenario's cancel point ({where})",
            "reached (the scenario scripts a run that gets there)",
            f"never reached: the kernel never made {_missing_dispatch(akc)} "
            f"({len(akc.model_requests())} model calls, {len(akc.tool_starts())} tool calls, "
            f"{len(akc.events('hook'))} hook dispatches in all)",
        )
    akc.evidence.saw(f"the harness cancelled the turn at {cancel_point(akc)}")
    return cancels[0]


@given(parsers.re(r'a delegation tool "(?P<name>[^"]+)"$'))
def given_delegation_tool(akc: ScenarioContext, name: str) -> None:
    """A tool that runs a child session (its "goal" argument is the child's first message)."""
    akc.add_tool(ToolDef(name=name, subagent=SubagentDef()))


#: Kernel profile: the requirement whose subject it is that a call of one kind does not run beside
#: a running call of another (003 steps 8-12): two interactive calls (one at a time, CONC-007); a
#: data-source and an interactive call (step 9 before 9b, LOOP-008); a resource call and a
#: data-source or interactive one (applied after both, at the plan gate: LOOP-009).
_KIND_ORDER_SUBJECTS = {
    frozenset({"interactive"}): "CONC-007",
    frozenset({"data_source", "interactive"}): "LOOP-008",
    frozenset({"resource", "data_source"}): "LOOP-009",
    frozenset({"resource", "interactive"}): "LOOP-009",
}


def _kind_of(akc: ScenarioContext, start: dict[str, Any]) -> str | None:
    try:
        return akc.tool(start["name"]).kind
    except HarnessError:
        return None


def _overlap_blocker(akc: ScenarioContext, cancel: dict[str, Any], start: dict[str, Any]) -> str | None:
    """A tool start after a cancel that came as call X started, while X still ran: the kernel had
    put it beside X (launched with it), so whether it would have honoured the cancel before
    starting it cannot be judged here. Where 003 orders the two calls' kinds (kernel profile),
    running them side by side is that order's requirement's subject: it blocks the check. None:
    the late start is STOP-001's to judge (X had ended, or the kinds may overlap)."""
    where = cancel.get("where") or {}
    if akc.profile != "kernel" or where.get("at") != "tool":
        return None
    first = next((e for e in akc.tool_starts() if e["call_id"] == where.get("call_id")), None)
    if first is None:
        return None
    ended = [e["seq"] for e in akc.tool_ends() if e["call_id"] == first["call_id"]]
    if ended and ended[0] < start["seq"]:
        return None  # started after X ended: one after the other, so the cancel was there to see
    return _KIND_ORDER_SUBJECTS.get(frozenset({_kind_of(akc, first), _kind_of(akc, start)}))


@then("no model call and no tool call started after the cancel")
def then_nothing_after_cancel(akc: ScenarioContext) -> None:
    """Every model request and tool start of the log comes before the harness's cancel. A tool
    started beside the running call the cancel came at, where 003 orders their kinds, is blocked
    by that order's requirement (:func:`_overlap_blocker`), not failed: one fault, one verdict."""
    cancel = cancel_event(akc)
    seq = cancel["seq"]
    akc.evidence.saw("model and tool calls checked against the cancel")
    late = [e for e in akc.events("model_request", "tool_start") if e["seq"] > seq]
    if not late:
        return
    shown = [f"model call #{e['index'] + 1}" if e["kind"] == "model_request" else f"tool {e['call_id']}" for e in late]
    blockers = [_overlap_blocker(akc, cancel, e) if e["kind"] == "tool_start" else None for e in late]
    if all(blockers):
        reason = f"started after the cancel beside the running call {cancel['where'].get('call_id')}: {show(shown)}"
        raise Blocked(by=sorted(set(blockers)), reason=reason)  # type: ignore[arg-type]
    raise ConformanceFailure("after the cancel", "no model call and no tool call started", f"started: {show(shown)}")


@then(parsers.re(r'resource call "(?P<call>[^"]+)" was not applied$'))
def then_resource_not_applied(akc: ScenarioContext, call: str) -> None:
    """The scenario's resource call, first in its message, did not run: a cancel that came while
    a data-source or interactive call of the same response ran stops the run before step 12.
    Where it ran *before* the cancel, the kernel applied it before the turn's data-source and
    interactive calls had finished: that order is the plan gate's (LOOP-009's subject), which
    blocks the check (its start after the cancel failed the step before, STOP-001's own)."""
    cancel = cancel_event(akc)
    akc.require_call_served(call)
    starts = [e for e in akc.tool_starts() if call in (e["call_id"], e["name"])]
    if not starts:
        akc.evidence.saw(f"resource call {call} never started")
        return
    if starts[0]["seq"] < cancel["seq"]:
        raise Blocked(by="LOOP-009", reason=f"resource call {call} ran before the cancel, ahead of the data-source and interactive calls of its response")
    raise ConformanceFailure(f"tool {call}", "it did not run", "it ran")


@then("no assistant message stands for the cancelled model call")
def then_no_husk_stored(akc: ScenarioContext) -> None:
    """000: "Nothing partial is saved from a cancelled model call": beside its text (checked by
    "nothing the cancelled model call streamed is stored"), no assistant message may stand for
    it: one with neither text nor tool calls is its husk. An assistant message with text of the
    kernel's own (a notice that the call was interrupted) is a reading the seeds leave open
    (``akc readings interruption-notice``). Evidence: the cancel happened, and the journal."""
    cancel_event(akc)
    stored = akc.evidence.require("messages the kernel stored", stored_messages(akc), mandatory=False)
    assistant = [m for m in stored if m.get("role") == "assistant"]
    husks = [m for m in assistant if not message_text(m).strip() and not m.get("tool_calls")]
    if husks:
        raise ConformanceFailure(
            "stored assistant messages", "none without text or tool calls (the cancelled call's)", [project(m) for m in assistant]
        )
    akc.evidence.saw(f"{len(assistant)} assistant messages stored, each with text or tool calls: {show([project(m) for m in assistant])}")


@then("the last hook points of the run are:")
def then_last_points(akc: ScenarioContext, datatable: Any = None, docstring: Any = None) -> None:
    """The run's final hook dispatches are exactly these points, in this order."""
    wanted = list_items(datatable, docstring)
    points = akc.evidence.require("hook dispatches of the run", akc.dispatched_points())
    expect_order("last hook points of the run", wanted, points[-len(wanted) :] if wanted else [])


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched once, with "(?P<key>[^"]+)" "(?P<value>[^"]*)"$'))
def then_once_with(akc: ScenarioContext, point: str, key: str, value: str) -> None:
    """This point was dispatched exactly once and its payload has this string field."""
    akc._check_point(point)
    dispatches = akc.hook_dispatches(point)
    expect_equal(f"dispatches of {point}", 1, len(dispatches))
    payload = dispatches[0]["payload"] if isinstance(dispatches[0]["payload"], dict) else {}
    expect_equal(f"{key!r} of the {point} payload", value, payload.get(key, "<missing>"))
    akc.evidence.saw(f"{point} dispatched once with {key} {value!r}")


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched once, after the cancel$'))
def then_once_after_cancel(akc: ScenarioContext, point: str) -> None:
    """This point was dispatched exactly once, after the harness's cancel."""
    akc._check_point(point)
    seq = cancel_event(akc)["seq"]
    dispatches = akc.hook_dispatches(point)
    expect_equal(f"dispatches of {point}", 1, len(dispatches))
    if dispatches[0]["seq"] < seq:
        raise ConformanceFailure(f"{point}", "dispatched after the cancel", "dispatched before it")
    akc.evidence.saw(f"{point} dispatched once, after the cancel")


@then("nothing the cancelled model call streamed is stored")
def then_cancelled_stream_not_stored(akc: ScenarioContext) -> None:
    """000: "Nothing partial is saved from a cancelled model call." Evidence: the harness cancelled
    during a model call that had streamed text (its chunks are in the log) and the journal shows
    what the kernel stored; then no stored message holds any streamed chunk of that call."""
    cancel = cancel_event(akc)
    where = cancel.get("where") or {}
    if where.get("at") != "model_call":
        raise HarnessError("'nothing the cancelled model call streamed is stored' needs a cancel at a model call")
    index = where.get("index")
    chunks = [
        c.get("text", "")
        for e in akc.events("model_response")
        if e["index"] == index
        for c in e["chunks"]
        if c.get("type") == "text" and c.get("text")
    ]
    # the double logs what it streamed when the stream closes: a kernel process that abandons the
    # cancelled stream (hermes over HTTP) may end the run first, leaving nothing to judge
    akc.evidence.require(f"text chunks model call {int(index) + 1} streamed before the cancel", chunks, mandatory=False)
    stored = akc.evidence.require("messages the kernel stored", stored_messages(akc), mandatory=False)
    for m in stored:
        text = message_text(m)
        kept = [c for c in chunks if c in text]
        if kept:
            raise ConformanceFailure(
                "stored messages", f"nothing of cancelled model call {int(index) + 1}", f"{project(m)!r} holds {show(kept)}"
            )


@then(parsers.re(r'only one of the calls "(?P<ids>[^"]+)" ran$'))
def stop_then_only_one_ran(akc: ScenarioContext, ids: str) -> None:
    """The calls run one at a time in an order the seeds leave open (reading sequential-order): the
    cancel came when the first of them started, so none of the others may start after it."""
    from conformance.steps.common import split_ids

    wanted = split_ids(ids)
    for cid in wanted:
        akc.require_call_served(cid)
    started = [e["call_id"] for e in akc.tool_starts() if e["call_id"] in wanted]
    akc.evidence.require("a cancel when the first of the calls started", akc.events("cancel"))
    if len(started) != 1:
        raise ConformanceFailure(f"calls {', '.join(wanted)} that started", "exactly one (the cancel came as it started)", started)
    akc.evidence.saw(f"only {started[0]} of {', '.join(wanted)} ran")
