"""Steps for the TOOL features (000 "Each tool call"): what the model gets back per call, the
pre_tool_call payload and outcomes (Block, AskUser, Modify), post_tool_call and
transform_tool_result per call, one-at-a-time execution, and what the journal stores per call."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then

from conformance.boundary.adapter import RunResult
from conformance.errors import Blocked, ConformanceFailure, HarnessError, expect_equal, show
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


@given("whichever call of a response starts first is held until another starts")
def given_hold_first(akc: ScenarioContext) -> None:
    """(A Background step, for calls that must not overlap.) In every scripted response with
    several calls, whichever starts first waits (under a timeout) for another to start, so calls
    a kernel lets overlap always overlap in the log; calls run one at a time just wait."""
    akc.run_with = _run_holding_first


def _run_holding_first(akc: ScenarioContext) -> RunResult:
    for response in akc.scenario.model.responses:
        ids = [c.id for c in response.tool_calls]
        if len(ids) > 1 and all(ids) and ids not in akc.scenario.hold_first:
            akc.scenario.hold_first.append(ids)  # type: ignore[arg-type]
    return akc.run_strict()


# ========================================================================== Then: results the model gets


@then(
    parsers.re(
        r'the request of model call (?P<k>\d+) has the (?P<err>error )?tool result "(?P<call_id>[^"]+)" with content "(?P<content>.*)"$'
    )
)
def then_tool_result_content(akc: ScenarioContext, k: str, err: str | None, call_id: str, content: str) -> None:
    """The tool_result of this call in model request k has exactly this text (and, with "error",
    is marked as an error)."""
    akc.require_call_served(call_id)
    result = tool_result(akc, int(k), call_id)
    expect_equal(f"content of the tool result for {call_id} in model request {k}", content, result.get("content"))
    if err and not akc.carries(int(k), "tool-error-flag") and "is_error" not in result:
        akc.evidence.saw(f"the tool result of {call_id} in model request {k} (judged on its text: the kernel's model API has no error flag)")
        return
    if err:
        expect_equal(f"is_error of the tool result for {call_id} in model request {k}", True, result.get("is_error"))
    akc.evidence.saw(f"the tool result of {call_id} in model request {k}")


@then(
    parsers.re(
        r'the request of model call (?P<k>\d+) has the blocked call "(?P<call_id>[^"]+)" with content "(?P<content>.*)", '
        r'or "(?P<blocked>.*)" where blocked results are not transformed$'
    )
)
def then_blocked_result_content(akc: ScenarioContext, k: str, call_id: str, content: str, blocked: str) -> None:
    """The tool_result of this blocked call in model request k: transform_tool_result's text, or
    (reading transform-blocked-result) the Blocked: <reason> text step 3 gives, where the kernel
    did not dispatch transform_tool_result for it. Then another text than that is the blocked
    text's fault (TOOL-007's subject), which blocks the check."""
    akc.require_call_served(call_id)
    got = tool_result(akc, int(k), call_id).get("content")
    what = f"content of the tool result for {call_id} in model request {k}"
    skipped = "not-transformed" in akc.accepts("transform-blocked-result") and not call_dispatches(akc, "transform_tool_result", call_id)
    if got != content and skipped and got != blocked:
        raise Blocked("TOOL-007", f"transform_tool_result was not dispatched for the blocked call {call_id} (a legal reading), and its result is {show(got)}, not {blocked!r}")
    if got != content and not (skipped and got == blocked):
        raise ConformanceFailure(what, repr(content) + (f" or {blocked!r}" if skipped else ""), got)
    akc.evidence.saw(f"the tool result of blocked call {call_id} in model request {k}: {got!r}")


# ========================================================================== Then: hooks per call


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched (?P<n>\d+) times? for call "(?P<call_id>[^"]+)"$'))
def then_point_count_for_call(akc: ScenarioContext, point: str, n: str, call_id: str) -> None:
    """This point was dispatched exactly n times with a payload naming this call."""
    akc.require_call_served(call_id)
    akc.evidence.saw(f"{point} dispatched {n} times for call {call_id}")
    expect_equal(f"dispatches of {point} for call {call_id}", int(n), len(call_dispatches(akc, point, call_id)))


@then(parsers.re(r'the "(?P<point>[^"]+)" payload for call "(?P<call_id>[^"]+)" includes (?P<fields>\{.*\})$'))
def then_call_payload(akc: ScenarioContext, point: str, call_id: str, fields: str) -> None:
    """The payload of this point's dispatch for this call has these fields with these values."""
    expected = parse_json(fields, "payload fields")
    payload = one_dispatch(akc, point, call_id)["payload"]
    for key, value in expected.items():
        expect_equal(f"{key!r} of the {point} payload for call {call_id}", value, payload.get(key, "<missing>"))
    akc.evidence.saw(f"the {point} payload for call {call_id}")


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
    akc.evidence.saw(f"{point} for call {call_id} {rel}")


@then(parsers.re(r'for call "(?P<call_id>[^"]+)", "(?P<a>[^"]+)" was dispatched before "(?P<b>[^"]+)"$'))
def then_call_hook_order(akc: ScenarioContext, call_id: str, a: str, b: str) -> None:
    """For this call, the first point's dispatch precedes the second's."""
    first, second = one_dispatch(akc, a, call_id), one_dispatch(akc, b, call_id)
    if first["seq"] > second["seq"]:
        raise ConformanceFailure(f"hooks for call {call_id}", f"{a} before {b}", f"{b} before {a}")
    akc.evidence.saw(f"for call {call_id}, {a} before {b}")


# ========================================================================== Then: the tool itself


@then(parsers.re(r'tool "(?P<call_id>[^"]+)" received the args (?P<args>\{.*\})$'))
def then_tool_args(akc: ScenarioContext, call_id: str, args: str) -> None:
    """The harness's tool was invoked for this call with exactly these arguments."""
    start = tool_event(akc, "tool_start", call_id)
    expect_equal(f"arguments tool {call_id} received", parse_json(args, "tool args"), start["args"])
    akc.evidence.saw(f"tool {call_id} received {args}")


@then(parsers.re(r'call "(?P<call_id>[^"]+)" ran the tool "(?P<name>[^"]+)"$'))
def then_call_ran_tool(akc: ScenarioContext, call_id: str, name: str) -> None:
    """The tool invoked for this call is the one registered under this name."""
    expect_equal(f"tool invoked for call {call_id}", name, tool_event(akc, "tool_start", call_id)["name"])
    akc.evidence.saw(f"call {call_id} ran the tool {name}")


@then("the tool calls ran one at a time")
def then_one_at_a_time(akc: ScenarioContext) -> None:
    """Every tool ended before the next one started (no overlap of start/end in the log), in
    whatever order the kernel ran them (reading sequential-order). The scenario holds the first
    call to start until another starts (``hold_first``), so a kernel that overlaps them always
    shows it."""
    served = akc.evidence.require("tool calls the model asked for", akc.served_calls())
    if not akc.scenario.hold_first:
        raise HarnessError("hold the first call until another starts (Given the first call to start is held ...)")
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
    akc.evidence.saw(f"{len(akc.tool_starts())} of {len(served)} calls ran, one at a time")


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
    akc.evidence.saw(f"the approver was asked about call {call_id}")


# ========================================================================== Then: the journal


def _records(akc: ScenarioContext, call_id: str) -> list[Any]:
    return [r for r in akc.result.journal.tool_calls if r.call_id == call_id]


@then(parsers.re(r'the journal stores each of the tool calls "(?P<ids>[^"]+)" once$'))
def then_calls_stored_once(akc: ScenarioContext, ids: str) -> None:
    """Each of these call ids has exactly one ToolCallRecord."""
    stored = akc.evidence.require("tool calls the journal stored", [r.call_id for r in akc.result.journal.tool_calls])
    for call_id in split_ids(ids):
        expect_equal(f"stored records of tool call {call_id} (stored: {show(stored)})", 1, stored.count(call_id))


@then(parsers.re(r'the journal stores call "(?P<call_id>[^"]+)" with the approval "(?P<decision>[^"]+)"$'))
def then_call_approval(akc: ScenarioContext, call_id: str, decision: str) -> None:
    """The stored record of this call carries the approver's decision (any capitalisation)."""
    records = _records(akc, call_id)
    if not records:
        raise ConformanceFailure(f"stored record of tool call {call_id}", "one", "none")
    akc.require_approver_asked(call_id)
    approval = records[0].approval
    if approval is None or decision.lower() not in str(approval).lower():
        raise ConformanceFailure(f"approval stored with tool call {call_id}", decision, approval)
    akc.evidence.saw(f"call {call_id} stored with the approval {approval!r}")


# ========================================================================== Then: post_tool_call, payload free


def call_anchors(akc: ScenarioContext) -> dict[str, int]:
    """For every call the model asked for: the log seq after which its post_tool_call is due — its
    tool's end if the tool ran, else its pre_tool_call dispatch (000 fixes that payload: it names
    the call), else the model response that asked for it."""
    served = akc.evidence.require("tool calls the model asked for", akc.served_calls())
    anchors: dict[str, int] = {}
    for c in served:
        cid = c["id"]
        ends = [e["seq"] for e in akc.events("tool_end") if e["call_id"] == cid]
        pre = [e["seq"] for e in call_dispatches(akc, "pre_tool_call", cid)]
        asked = [e["seq"] for e in akc.events("model_response") if any(ch.get("id") == cid for ch in e["chunks"])]
        anchors[cid] = (ends or pre or asked or [0])[-1]
    return anchors


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched once per call, after the call\'s tool ended or was refused$'))
def then_once_per_call_after(akc: ScenarioContext, point: str) -> None:
    """As many dispatches of this point as calls the model asked for, and they can be paired one
    to one with the calls so that each comes after its call's tool ended (or, for a call that
    did not run, after its pre_tool_call). The payload is free (reading post-tool-call-payload):
    a payload naming a call ties the dispatch to that call, otherwise any pairing is accepted."""
    anchors = call_anchors(akc)
    dispatches = akc.hook_dispatches(point)
    if len(dispatches) < len(anchors):
        # a call that neither ran nor reached pre_tool_call was not carried out at all (e.g. an
        # identical call dropped): "each call runs the tool" is TOOL-004's subject
        started = {e["call_id"] for e in akc.tool_starts()}
        skipped = [c for c in anchors if c not in started and not call_dispatches(akc, "pre_tool_call", c)]
        if skipped:
            raise Blocked(by="TOOL-004", reason=f"calls {', '.join(skipped)} never ran and never reached pre_tool_call")
    expect_equal(f"dispatches of {point} ({len(anchors)} calls)", len(anchors), len(dispatches))
    free: list[int] = []
    for e in dispatches:
        payload = e["payload"] if isinstance(e["payload"], dict) else {}
        call = payload.get("call") if isinstance(payload.get("call"), dict) else {}
        named = next((c for c in (payload.get("call_id"), payload.get("id"), call.get("id")) if c in anchors), None)
        if named is not None:
            if e["seq"] < anchors[named]:
                raise ConformanceFailure(f"{point} for call {named}", "after its tool ended (or was refused)", "before")
            anchors.pop(named)
        else:
            free.append(e["seq"])
    # Hall's condition for "each remaining call gets its own dispatch after its anchor".
    for k, anchor in enumerate(sorted(anchors.values(), reverse=True), start=1):
        if sum(1 for seq in free if seq > anchor) < k:
            raise ConformanceFailure(
                f"{point} dispatches", "one after each call's tool ended (or was refused)",
                f"only {sum(1 for seq in free if seq > anchor)} after log seq {anchor}, {k} calls due by then",
            )
    akc.evidence.saw(f"{point} fired {len(dispatches)} times, once per call, each after its tool")


@then(parsers.re(r'every "(?P<b>[^"]+)" dispatch comes after one more "(?P<a>[^"]+)" dispatch$'))
def then_each_after_one_more(akc: ScenarioContext, a: str, b: str) -> None:
    """The i-th dispatch of ``b`` has at least i dispatches of ``a`` before it: per call, ``a``
    fires before ``b``, whatever the payloads say."""
    akc.require_points_dispatched([a, b])
    bs = akc.evidence.require(f"dispatches of {b}", akc.hook_dispatches(b))
    a_seqs = [e["seq"] for e in akc.hook_dispatches(a)]
    for i, e in enumerate(bs, start=1):
        before = sum(1 for s in a_seqs if s < e["seq"])
        if before < i:
            raise ConformanceFailure(f"dispatch {i} of {b}", f"after {i} dispatches of {a}", f"after {before}")
    akc.evidence.saw(f"each {b} after its {a}")


@then("every call that went to the approver is stored with the decision the approver gave for it")
def tool_then_each_approval_stored(akc: ScenarioContext) -> None:
    """TOOL-017 over several approvals in one response: the approver's log says which call got
    which decision (calls of one response may be asked about in any order); each call's stored
    record holds its own decision."""
    asked = akc.evidence.require("calls the approver was asked about", akc.events("approval"))
    records = akc.result.journal.tool_calls
    for e in asked:
        request = e.get("request") if isinstance(e.get("request"), dict) else {}
        call_id = request.get("call_id")
        found = [r for r in records if r.call_id == call_id]
        if len(found) != 1:
            raise ConformanceFailure(f"journal records of call {call_id}", "exactly one", [r.call_id for r in records])
        expect_equal(f"approval stored for call {call_id} (the approver answered {e['decision']!r})", e["decision"], found[0].approval)
    akc.evidence.saw(f"{len(asked)} approvals, each stored with its own call")
