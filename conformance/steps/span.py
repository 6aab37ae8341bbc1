"""Steps for the SPAN features: the trace a kernel reports (RunResult.spans) against what the
doubles saw. Span names, attributes and nesting are not specified by 003; kinds are (turn,
model_call, tool, veto_chain; docs/adapter.md), so the checks count kinds."""

from __future__ import annotations

from typing import Any

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, expect_equal, show
from conformance.steps.common import ScenarioContext


def _spans(akc: ScenarioContext, kind: str) -> list[Any]:
    return [s for s in akc.result.spans if s.kind == kind]


def _tool_turns(akc: ScenarioContext) -> int:
    """Model responses with at least one tool_use block."""
    return sum(1 for e in akc.events("model_response") if any(c.get("type") == "tool_use" for c in e["chunks"]))


@then(parsers.re(r'the trace has one "turn" span per model turn$'))
def then_turn_spans(akc: ScenarioContext) -> None:
    """One span of kind turn per RunTurn (each RunTurn makes one model request)."""
    expect_equal('spans of kind "turn" (one per RunTurn)', len(akc.model_requests()), len(_spans(akc, "turn")))


@then(parsers.re(r'the trace has one "model_call" span per model request$'))
def then_model_call_spans(akc: ScenarioContext) -> None:
    """One span of kind model_call per model request."""
    expect_equal('spans of kind "model_call" (one per model request)', len(akc.model_requests()), len(_spans(akc, "model_call")))


@then(parsers.re(r'the trace has a "tool" span for every tool execution$'))
def then_tool_spans(akc: ScenarioContext) -> None:
    """At least one span of kind tool per executed call. The scenario runs one call per step, so a
    span per call and a span per step (9, 9b, 12) both give this many."""
    executed = len(akc.tool_starts())
    if executed == 0:
        raise ConformanceFailure("tool executions", "at least one", 0)
    tools = _spans(akc, "tool")
    if len(tools) < executed:
        raise ConformanceFailure('spans of kind "tool"', f"at least {executed} (one per executed call or step)", len(tools))


@then(parsers.re(r'the trace has one "veto_chain" span per model turn with tool calls$'))
def then_veto_chain_spans(akc: ScenarioContext) -> None:
    """One span of kind veto_chain per RunTurn whose message had tool_use blocks."""
    expect_equal('spans of kind "veto_chain" (one per turn with tool calls)', _tool_turns(akc), len(_spans(akc, "veto_chain")))


@then(parsers.re(r"every span's parent is a span of the trace$"))
def then_parents_resolve(akc: ScenarioContext) -> None:
    """parent_id is empty or the id of a reported span (the trace is one tree, reconstructible)."""
    spans = akc.result.spans
    ids = {s.span_id for s in spans}
    dangling = [(s.kind, s.name, s.parent_id) for s in spans if s.parent_id and s.parent_id not in ids]
    if dangling:
        raise ConformanceFailure("span parents", "each the id of a reported span", f"unknown parents: {show(dangling)}")


@then(parsers.re(r'the trace has a "hook" span for every hook dispatch$'))
def then_hook_spans(akc: ScenarioContext) -> None:
    """Every hook dispatch (every hook of every chain) is an instrumentation point."""
    n = len(akc.events("hook"))
    got = len(_spans(akc, "hook"))
    if got < n:
        raise ConformanceFailure('spans of kind "hook"', f"at least {n} (one per hook dispatch)", got)


@then(parsers.re(r"every model_call, tool and veto_chain span lies under a turn span$"))
def then_nested_under_turns(akc: ScenarioContext) -> None:
    """The step spans are nested (through any depth) under a span of kind turn."""
    by_id = {s.span_id: s for s in akc.result.spans}
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
