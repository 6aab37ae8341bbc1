"""Steps for the SPAN features: the trace a kernel reports (RunResult.spans) against what the
doubles saw. Span names, attributes and nesting are not specified by 003; kinds are (turn,
model_call, tool, veto_chain; docs/adapter.md), so the checks count kinds against what the harness
saw happen (model requests, tool runs per step, plan-ready dispatches). 003 makes these spans
mandatory, so a kernel that reports none fails (evidence is mandatory), and a kernel that never
ran the situation (no model request, no tool run, no veto chain) fails too: the scenarios leave it
no legal way around them. Reading span-granularity: tool execution may be one span per call or one
per step (9, 9b, 12)."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then

from conformance.errors import ConformanceFailure, Incomplete, expect_equal, show
from conformance.steps.common import ScenarioContext
from conformance.steps.loop import starts_in_turn, tool_kind, turn_count


def _spans(akc: ScenarioContext, kind: str) -> list[Any]:
    return [s for s in akc.result.spans if s.kind == kind]


def _required(akc: ScenarioContext, kind: str) -> list[Any]:
    """The spans of this kind, which must exist (003: a mandatory instrumentation point)."""
    return akc.evidence.require(f'spans of kind "{kind}" reported', _spans(akc, kind))


def _tool_steps(akc: ScenarioContext) -> int:
    """How many tool-running steps (9, 9b, 12) ran at least one call, over all model turns."""
    return sum(len({tool_kind(akc, e["name"]) for e in starts_in_turn(akc, k)}) for k in range(1, turn_count(akc) + 1))


@then(parsers.re(r'the trace has one "turn" span per model call$'))
def then_turn_spans(akc: ScenarioContext) -> None:
    """One span of kind turn per RunTurn (each RunTurn makes one model request)."""
    requests = akc.require_kernel_ran()
    expect_equal('spans of kind "turn" (one per RunTurn)', len(requests), len(_required(akc, "turn")))


@then(parsers.re(r'the trace has one "model_call" span per model call$'))
def then_model_call_spans(akc: ScenarioContext) -> None:
    """One span of kind model_call per model request."""
    requests = akc.require_kernel_ran()
    expect_equal('spans of kind "model_call" (one per model request)', len(requests), len(_required(akc, "model_call")))


@then(parsers.re(r'the trace has a "tool" span for every tool execution$'))
def then_tool_spans(akc: ScenarioContext) -> None:
    """At least one span of kind tool per tool-running step of every turn (reading
    span-granularity: a span per call gives at least as many as a span per step)."""
    akc.evidence.require("tool calls that ran", akc.tool_starts())
    steps = _tool_steps(akc)
    tools = _required(akc, "tool")
    if len(tools) < steps:
        raise ConformanceFailure('spans of kind "tool"', f"at least {steps} (one per step 9, 9b, 12 that ran calls, or one per call)", len(tools))
    akc.evidence.saw(f"{len(tools)} tool spans for {steps} tool-running steps ({len(akc.tool_starts())} calls)")


@then(parsers.re(r'the trace has one "veto_chain" span per veto chain run$'))
def then_veto_chain_spans(akc: ScenarioContext) -> None:
    """One span of kind veto_chain per run of the veto chain: per plan-ready dispatch (not per
    response with tool calls: the final limit-reached answer may carry tool calls that never
    reach step 11)."""
    akc.require_kernel_ran()
    chains = akc.evidence.require("plan-ready dispatches (veto chain runs)", akc.hook_dispatches("plan-ready"))
    expect_equal('spans of kind "veto_chain" (one per plan-ready dispatch)', len(chains), len(_required(akc, "veto_chain")))


@then(parsers.re(r"every span's parent is a span of the trace$"))
def then_parents_resolve(akc: ScenarioContext) -> None:
    """parent_id is empty or the id of a reported span (the trace is one tree, reconstructible)."""
    spans = akc.evidence.require("spans reported", akc.result.spans)
    ids = {s.span_id for s in spans}
    dangling = [(s.kind, s.name, s.parent_id) for s in spans if s.parent_id and s.parent_id not in ids]
    if dangling:
        raise ConformanceFailure("span parents", "each the id of a reported span", f"unknown parents: {show(dangling)}")


@then(parsers.re(r'the trace has a "hook" span for every hook dispatch$'))
def then_hook_spans(akc: ScenarioContext) -> None:
    """Every hook dispatch (every hook of every chain) is an instrumentation point."""
    n = len(akc.evidence.require("hook dispatches", akc.events("hook")))
    got = len(_spans(akc, "hook"))
    if got < n:
        raise ConformanceFailure('spans of kind "hook"', f"at least {n} (one per hook dispatch)", got)


@then(parsers.re(r"every model_call, tool and veto_chain span lies under a turn span$"))
def then_nested_under_turns(akc: ScenarioContext) -> None:
    """The step spans are nested (through any depth) under a span of kind turn."""
    by_id = {s.span_id: s for s in akc.evidence.require("spans reported", akc.result.spans)}
    _required(akc, "turn")
    loose = []
    for s in akc.result.spans:
        if s.kind not in ("model_call", "tool", "veto_chain"):
            continue
        parent, hops = by_id.get(s.parent_id or ""), 0
        while parent is not None and parent.kind != "turn" and hops < 100:
            parent, hops = by_id.get(parent.parent_id or ""), hops + 1
        if parent is None or parent.kind != "turn":
            loose.append((s.kind, s.name))
    if loose:
        raise ConformanceFailure("step spans", "each under a turn span", f"not under one: {show(loose)}")


# ----------------------------------------------------------------- spans enclose what they name


@given("the clock advances at every event")
def given_event_clock(akc: ScenarioContext) -> None:
    """Step the harness clock at every model request, stream end, tool start and end and hook
    dispatch, and stamp each event with its time (for kernels that time spans with that clock)."""
    akc.merge({"clock": {"advance_per_event": 0.001}})


def _timed(akc: ScenarioContext, kind: str) -> list[Any]:
    """The spans of ``kind`` with a start and an end in the harness clock's time base."""
    spans = _required(akc, kind)
    events = akc.evidence.require("observed events stamped by the harness clock", [e for e in akc.log if "t" in e])
    low, high = akc.scenario.clock.start, events[-1]["t"] + 1.0
    timed = [s for s in spans if s.start is not None and s.end is not None and low <= s.start <= s.end <= high]
    if not timed:
        raise Incomplete(f'not exercised: no "{kind}" span is timed with the harness clock (start/end in [{low}, {high}])')
    return timed


def _enclosed(what: str, first: float, last: float, spans: list[Any]) -> bool:
    return any(s.start <= first and last <= s.end for s in spans)


def _check_enclosing(akc: ScenarioContext, kind: str, intervals: list[tuple[str, float, float]]) -> None:
    spans = _timed(akc, kind)
    akc.evidence.require(f"situations a {kind} span must enclose", intervals)
    bare = [(what, a, b) for what, a, b in intervals if not _enclosed(what, a, b, spans)]
    if bare:
        what, a, b = bare[0]
        raise ConformanceFailure(
            f'a "{kind}" span around {what}',
            f"a span from at most {a:.3f} to at least {b:.3f}",
            show([(round(s.start, 3), round(s.end, 3)) for s in spans]),
        )
    akc.evidence.saw(f'every one of {len(intervals)} situations lies inside a "{kind}" span')


def _model_calls(akc: ScenarioContext) -> list[tuple[str, float, float]]:
    """Each model call from its request to the end of its stream."""
    ends = {e["index"]: e["t"] for e in akc.events("model_response") if "t" in e}
    return [(f"model call {e['index'] + 1}", e["t"], ends.get(e["index"], e["t"])) for e in akc.events("model_request") if "t" in e]


@then(parsers.re(r'every model call lies inside a "model_call" span$'))
def then_model_call_spans_enclose(akc: ScenarioContext) -> None:
    """SPAN-002: the span covers steps 3-4, the request and the whole stream."""
    _check_enclosing(akc, "model_call", _model_calls(akc))


@then(parsers.re(r'every model call lies inside a "turn" span$'))
def then_turn_spans_enclose(akc: ScenarioContext) -> None:
    """SPAN-001: each model call happens inside the turn span of its RunTurn."""
    _check_enclosing(akc, "turn", _model_calls(akc))


@then(parsers.re(r'every tool call lies inside a "tool" span$'))
def then_tool_spans_enclose(akc: ScenarioContext) -> None:
    """SPAN-003: each call, from its start to its end, inside a tool span (per call or per step)."""
    ends = {e["call_id"]: e["t"] for e in akc.tool_ends() if "t" in e}
    calls = [(f"tool call {e['call_id']}", e["t"], ends.get(e["call_id"], e["t"])) for e in akc.tool_starts() if "t" in e]
    _check_enclosing(akc, "tool", calls)


@then(parsers.re(r'every plan-ready dispatch lies inside a "veto_chain" span$'))
def then_veto_chain_spans_enclose(akc: ScenarioContext) -> None:
    """SPAN-004: the veto chain's span covers the plan-ready dispatches of step 11."""
    plans = [(f"plan-ready dispatch {i + 1}", e["t"], e["t"]) for i, e in enumerate(akc.hook_dispatches("plan-ready")) if "t" in e]
    _check_enclosing(akc, "veto_chain", plans)
