"""Steps for the STOP features (000 "Stopping a turn"): what may happen after the harness
cancelled a turn, and how the cancelled turn ends."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then

from conformance.errors import ConformanceFailure, HarnessError, Incomplete, expect_equal, expect_order, show
from conformance.boundary.scenario import SubagentDef, ToolDef
from conformance.steps.common import ScenarioContext, list_items
from conformance.steps.turn import project, stored_messages


def cancel_event(akc: ScenarioContext) -> dict[str, Any]:
    """The harness's cancel; its absence is a broken scenario or adapter, not a kernel failure."""
    if akc.events("cancel_missing"):
        raise HarnessError("the adapter registered no canceller for the cancelled message (docs/adapter.md, step 3)")
    cancels = akc.events("cancel")
    if not cancels:
        raise Incomplete("the scenario's cancel point was never reached, so nothing was cancelled")
    return cancels[0]


@given(parsers.re(r'a delegation tool "(?P<name>[^"]+)"$'))
def given_delegation_tool(akc: ScenarioContext, name: str) -> None:
    """A tool that runs a child session (its "goal" argument is the child's first message)."""
    akc.add_tool(ToolDef(name=name, subagent=SubagentDef()))


@then("no model call and no tool call started after the cancel")
def then_nothing_after_cancel(akc: ScenarioContext) -> None:
    """Every model request and tool start of the log comes before the harness's cancel."""
    seq = cancel_event(akc)["seq"]
    late = [e for e in akc.events("model_request", "tool_start") if e["seq"] > seq]
    if late:
        shown = [f"model call #{e['index'] + 1}" if e["kind"] == "model_request" else f"tool {e['call_id']}" for e in late]
        raise ConformanceFailure("after the cancel", "no model call and no tool call started", f"started: {show(shown)}")


@then(parsers.re(r"at most (?P<n>\d+) assistant messages? (?:is|are) stored$"))
def then_assistant_count(akc: ScenarioContext, n: str) -> None:
    """No more than n assistant messages are in the journal (a cancelled call adds none)."""
    stored = [project(m) for m in stored_messages(akc) if m.get("role") == "assistant"]
    if len(stored) > int(n):
        raise ConformanceFailure("stored assistant messages", f"at most {n}", stored)


@then("the last hook points of the run are:")
def then_last_points(akc: ScenarioContext, datatable: Any = None, docstring: Any = None) -> None:
    """The run's final hook dispatches are exactly these points, in this order."""
    wanted = list_items(datatable, docstring)
    points = akc.dispatched_points()
    expect_order("last hook points of the run", wanted, points[-len(wanted) :] if wanted else [])


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched once, with "(?P<key>[^"]+)" "(?P<value>[^"]*)"$'))
def then_once_with(akc: ScenarioContext, point: str, key: str, value: str) -> None:
    """This point was dispatched exactly once and its payload has this string field."""
    akc._check_point(point)
    dispatches = akc.hook_dispatches(point)
    expect_equal(f"dispatches of {point}", 1, len(dispatches))
    payload = dispatches[0]["payload"] if isinstance(dispatches[0]["payload"], dict) else {}
    expect_equal(f"{key!r} of the {point} payload", value, payload.get(key, "<missing>"))


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched once, after the cancel$'))
def then_once_after_cancel(akc: ScenarioContext, point: str) -> None:
    """This point was dispatched exactly once, after the harness's cancel."""
    akc._check_point(point)
    seq = cancel_event(akc)["seq"]
    dispatches = akc.hook_dispatches(point)
    expect_equal(f"dispatches of {point}", 1, len(dispatches))
    if dispatches[0]["seq"] < seq:
        raise ConformanceFailure(f"{point}", "dispatched after the cancel", "dispatched before it")
