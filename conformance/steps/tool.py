"""Steps for the TOOL features (000 "Each tool call"): what the model gets back per call, the
pre_tool_call payload and outcomes (Block, AskUser, Modify), post_tool_call and
transform_tool_result per call, one-at-a-time execution, and what the journal stores per call."""

from __future__ import annotations

from typing import Any

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, expect_equal, show
from conformance.steps.common import ScenarioContext, split_ids
from conformance.steps.turn import parse_json

# ========================================================================== helpers


def tool_result(akc: ScenarioContext, k: int, call_id: str) -> dict[str, Any]:
    """The tool_result message for this call in model request k."""
    results = [
        m for m in akc.request_messages(akc.model_request(k)) if m.get("role") == "tool_result" and m.get("call_id") == call_id
    ]
    if not results:
        raise ConformanceFailure(
            f"tool result for call {call_id} in model request {k}", "one", f"results for {akc.tool_result_ids(k)}"
        )
    return results[0]


def call_dispatches(akc: ScenarioContext, point: str, call_id: str) -> list[dict[str, Any]]:
    """The recorded dispatches of this point whose payload names this call."""
    akc._check_point(point)
    out = []
    for e in akc.hook_dispatches(point):
        payload = e["payload"] if isinstance(e["payload"], dict) else {}
        call = payload.get("call") if isinstance(payload.get("call"), dict) else {}
        if call_id in (payload.get("call_id"), payload.get("id"), call.get("id")):
            out.append(e)
    return out


def one_dispatch(akc: ScenarioContext, point: str, call_id: str) -> dict[str, Any]:
    found = call_dispatches(akc, point, call_id)
    if not found:
        raise ConformanceFailure(f"{point} for call {call_id}", "dispatched", "not dispatched")
    return found[0]


def tool_event(akc: ScenarioContext, kind: str, call_id: str) -> dict[str, Any]:
    found = [e for e in akc.events(kind) if e["call_id"] == call_id]
    if not found:
        raise ConformanceFailure(f"tool {call_id}", "it ran", f"tool starts: {show([e['call_id'] for e in akc.tool_starts()])}")
    return found[0]


# ========================================================================== Then: results the model gets


@then(
    parsers.re(
        r'model request (?P<k>\d+) has the (?P<err>error )?tool result "(?P<call_id>[^"]+)" with content "(?P<content>.*)"$'
    )
)
def then_tool_result_content(akc: ScenarioContext, k: str, err: str | None, call_id: str, content: str) -> None:
    """The tool_result of this call in model request k has exactly this text (and, with "error",
    is marked as an error)."""
    result = tool_result(akc, int(k), call_id)
    expect_equal(f"content of the tool result for {call_id} in model request {k}", content, result.get("content"))
    if err:
        expect_equal(f"is_error of the tool result for {call_id} in model request {k}", True, result.get("is_error"))


# ========================================================================== Then: hooks per call


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched (?P<n>\d+) times? for call "(?P<call_id>[^"]+)"$'))
def then_point_count_for_call(akc: ScenarioContext, point: str, n: str, call_id: str) -> None:
    """This point was dispatched exactly n times with a payload naming this call."""
    expect_equal(f"dispatches of {point} for call {call_id}", int(n), len(call_dispatches(akc, point, call_id)))


@then(parsers.re(r'the "(?P<point>[^"]+)" payload for call "(?P<call_id>[^"]+)" includes (?P<fields>\{.*\})$'))
def then_call_payload(akc: ScenarioContext, point: str, call_id: str, fields: str) -> None:
    """The payload of this point's dispatch for this call has these fields with these values."""
    expected = parse_json(fields, "payload fields")
    payload = one_dispatch(akc, point, call_id)["payload"]
    for key, value in expected.items():
        expect_equal(f"{key!r} of the {point} payload for call {call_id}", value, payload.get(key, "<missing>"))


@then(
    parsers.re(
        r'"(?P<point>[^"]+)" for call "(?P<call_id>[^"]+)" was dispatched (?P<rel>before tool "[^"]+" started|after tool "[^"]+" ended)$'
    )
)
def then_call_hook_vs_tool(akc: ScenarioContext, point: str, call_id: str, rel: str) -> None:
    """The hook for this call was dispatched before the tool started / after it ended."""
    tool_id = rel.split('"')[1]
    hook = one_dispatch(akc, point, call_id)
    if rel.startswith("before"):
        start = tool_event(akc, "tool_start", tool_id)
        if hook["seq"] > start["seq"]:
            raise ConformanceFailure(f"{point} for call {call_id}", f"before tool {tool_id} started", "after it started")
    else:
        end = tool_event(akc, "tool_end", tool_id)
        if hook["seq"] < end["seq"]:
            raise ConformanceFailure(f"{point} for call {call_id}", f"after tool {tool_id} ended", "before it ended")


@then(parsers.re(r'for call "(?P<call_id>[^"]+)", "(?P<a>[^"]+)" was dispatched before "(?P<b>[^"]+)"$'))
def then_call_hook_order(akc: ScenarioContext, call_id: str, a: str, b: str) -> None:
    """For this call, the first point's dispatch precedes the second's."""
    first, second = one_dispatch(akc, a, call_id), one_dispatch(akc, b, call_id)
    if first["seq"] > second["seq"]:
        raise ConformanceFailure(f"hooks for call {call_id}", f"{a} before {b}", f"{b} before {a}")


# ========================================================================== Then: the tool itself


@then(parsers.re(r'tool "(?P<call_id>[^"]+)" received the args (?P<args>\{.*\})$'))
def then_tool_args(akc: ScenarioContext, call_id: str, args: str) -> None:
    """The harness's tool was invoked for this call with exactly these arguments."""
    start = tool_event(akc, "tool_start", call_id)
    expect_equal(f"arguments tool {call_id} received", parse_json(args, "tool args"), start["args"])


@then(parsers.re(r'call "(?P<call_id>[^"]+)" ran the tool "(?P<name>[^"]+)"$'))
def then_call_ran_tool(akc: ScenarioContext, call_id: str, name: str) -> None:
    """The tool invoked for this call is the one registered under this name."""
    expect_equal(f"tool invoked for call {call_id}", name, tool_event(akc, "tool_start", call_id)["name"])


@then("the tool calls ran one at a time")
def then_one_at_a_time(akc: ScenarioContext) -> None:
    """Every tool ended before the next one started (no overlap of start/end in the log)."""
    running: str | None = None
    for e in akc.events("tool_start", "tool_end"):
        if e["kind"] == "tool_start":
            if running is not None:
                raise ConformanceFailure("tool calls", "one at a time", f"{e['call_id']} started while {running} was running")
            running = e["call_id"]
        elif e["call_id"] == running:
            running = None
    if len(akc.tool_starts()) < 2:
        raise ConformanceFailure("tool calls that ran", "at least two", len(akc.tool_starts()))


# ========================================================================== Then: the approver


@then(
    parsers.re(
        r'the approver was asked about call "(?P<call_id>[^"]+)" with the prompt "(?P<prompt>[^"]*)"'
        r'(?P<before> before the tool ran)?$'
    )
)
def then_approver_asked(akc: ScenarioContext, call_id: str, prompt: str, before: str | None) -> None:
    """The approver got a request for this call carrying the hook's prompt (and, optionally,
    before the tool started)."""
    asked = [e for e in akc.events("approval") if e["request"].get("call_id") == call_id]
    if not asked:
        others = [e["request"].get("call_id") for e in akc.events("approval")]
        raise ConformanceFailure(f"the approver, about call {call_id}", "asked", f"asked about {show(others)}")
    expect_equal(f"prompt the approver got for call {call_id}", prompt, asked[0]["request"].get("prompt"))
    if before:
        start = tool_event(akc, "tool_start", call_id)
        if asked[0]["seq"] > start["seq"]:
            raise ConformanceFailure(f"the approver, about call {call_id}", "asked before the tool ran", "asked after it started")


# ========================================================================== Then: the journal


def _records(akc: ScenarioContext, call_id: str) -> list[Any]:
    return [r for r in akc.result.journal.tool_calls if r.call_id == call_id]


@then(parsers.re(r'the journal stores each of the tool calls "(?P<ids>[^"]+)" once$'))
def then_calls_stored_once(akc: ScenarioContext, ids: str) -> None:
    """Each of these call ids has exactly one ToolCallRecord."""
    stored = [r.call_id for r in akc.result.journal.tool_calls]
    for call_id in split_ids(ids):
        expect_equal(f"stored records of tool call {call_id} (stored: {show(stored)})", 1, stored.count(call_id))


@then(parsers.re(r'the journal stores call "(?P<call_id>[^"]+)" with the approval "(?P<decision>[^"]+)"$'))
def then_call_approval(akc: ScenarioContext, call_id: str, decision: str) -> None:
    """The stored record of this call carries the approver's decision (any capitalisation)."""
    records = _records(akc, call_id)
    if not records:
        raise ConformanceFailure(f"stored record of tool call {call_id}", "one", "none")
    approval = records[0].approval
    if approval is None or decision.lower() not in str(approval).lower():
        raise ConformanceFailure(f"approval stored with tool call {call_id}", decision, approval)

