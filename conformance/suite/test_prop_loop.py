"""Properties of 003's RunTurn step order over random mixes of tool kinds in one response.

Each property builds the same kind of scenario (one response with 1-5 calls of random kinds,
some of them refused by the precheck, then a plain answer) and checks one requirement's rule
with the same check the feature steps use, so a failure names exactly that requirement.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ConcurrencySpec, ModelResponse, ScriptedToolCall, ToolDef
from conformance.steps import gate, loop

KIND_TOOL = {"data_source": "fetch", "interactive": "ask", "resource": "write"}

#: A turn's calls: (kind, denied by the precheck?, repeats the first call's arguments?) in
#: declaration order. Only data-source and interactive calls go through the precheck, so a denial
#: is drawn for those only. Repeated arguments make identical blocks of one message (same tool,
#: same arguments), which a kernel must still handle one by one.
calls_strategy = st.lists(
    st.tuples(st.sampled_from(sorted(KIND_TOOL)), st.booleans(), st.booleans()),
    min_size=1,
    max_size=8,
)


def _run(name: str, calls: list[tuple[str, bool, bool]]) -> tuple[Any, list[str]]:
    """Run one response with these calls, then a plain answer; returns (context, call ids)."""
    ctx = context("kernel", name)
    ctx.add_tool(ToolDef(name="fetch", kind="data_source", concurrency=ConcurrencySpec(safe=True)))
    ctx.add_tool(ToolDef(name="ask", kind="interactive"))
    ctx.add_tool(ToolDef(name="write", kind="resource", concurrency=ConcurrencySpec(safe=True)))
    ids = [f"c{i}" for i in range(len(calls))]
    ctx.add_response(
        ModelResponse(
            tool_calls=[
                ScriptedToolCall(id=cid, name=KIND_TOOL[kind], args={"n": 0 if same else i})
                for i, (cid, (kind, _, same)) in enumerate(zip(ids, calls))
            ]
        )
    )
    ctx.add_response(ModelResponse(text="done"))
    deny = {cid: "refused" for cid, (kind, denied, _) in zip(ids, calls) if denied and kind != "resource"}
    if deny:
        ctx.merge({"policy_deny": deny})
    ctx.run()
    return ctx, ids


@requirement("LOOP-007", profile="kernel")
@PROPERTY_SETTINGS
@given(calls=calls_strategy)
def test_prop_pre_tool_call_in_declaration_order(calls: list[tuple[str, bool, bool]]) -> None:
    """pre-tool-call: one per block, declaration order, all before the first tool start."""
    ctx, ids = _run("pre-tool-call order", calls)
    loop.then_pre_tool_call_order(ctx, "1", ", ".join(ids))


@requirement("LOOP-008", profile="kernel")
@PROPERTY_SETTINGS
@given(calls=calls_strategy)
@example(calls=[("interactive", False, False), ("data_source", False, False), ("interactive", False, True), ("data_source", True, True)])
def test_prop_data_sources_before_interactive(calls: list[tuple[str, bool, bool]]) -> None:
    """Every data-source call that ran ended before any interactive call started."""
    ctx, _ = _run("data sources before interactive", calls)
    ctx.require_kernel_ran()  # the explicit example makes both kinds run; a kernel that ran nothing fails
    ran = {e["name"] for e in ctx.tool_starts()}
    if {"fetch", "ask"} <= ran:
        loop.then_ds_before_interactive(ctx, "1")


@requirement("LOOP-009", profile="kernel")
@PROPERTY_SETTINGS
@given(calls=calls_strategy)
def test_prop_plan_ready_between(calls: list[tuple[str, bool, bool]]) -> None:
    """plan-ready once, after the data-source and interactive calls, before any resource call."""
    ctx, _ = _run("plan-ready placement", calls)
    loop.then_plan_ready_between(ctx, "1")


@requirement("LOOP-010", profile="kernel")
@PROPERTY_SETTINGS
@given(calls=calls_strategy)
def test_prop_post_tool_call_after_every_tool(calls: list[tuple[str, bool, bool]]) -> None:
    """post-tool-call once per call (refused ones included), each after every tool ended."""
    ctx, _ = _run("post-tool-call placement", calls)
    loop.then_post_tool_call(ctx, "1")


@requirement("GATE-004", profile="kernel")
@PROPERTY_SETTINGS
@given(calls=calls_strategy)
def test_prop_plan_holds_the_resource_calls(calls: list[tuple[str, bool, bool]]) -> None:
    """The plan holds exactly the resource calls, whatever else the message asks for."""
    ctx, ids = _run("plan contents", calls)
    resources = [cid for cid, (kind, _, _) in zip(ids, calls) if kind == "resource"]
    if resources:
        gate.then_plan_items(ctx, "1", ", ".join(resources), None)
    else:
        gate.then_plan_items(ctx, "1", None, "no item")
