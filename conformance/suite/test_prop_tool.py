"""Properties of the TOOL area: whatever order the calls of one response finish in, their results
go back to the model in the order the model asked (TOOL-003, both profiles), and the result
texts stay with their own calls."""

from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import expect_equal, expect_order
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.steps.common import block_on_no_tool_results
from conformance.boundary.scenario import ConcurrencySpec, ModelResponse, ScriptedToolCall, ToolDef


def _finish_orders(max_calls: int = 4) -> st.SearchStrategy[list[int]]:
    """A permutation of 0..n-1 for some n in [2, max_calls]: the order the calls finish in."""
    return st.integers(2, max_calls).flatmap(lambda n: st.permutations(list(range(n))))


def _run(profile: str, finish: list[int]) -> None:
    ctx = context(profile, "tool results in the order asked")
    # data_source, concurrency safe with no key fields: distinct keys, so concurrent in both profiles
    ctx.add_tool(ToolDef(name="probe", result="probe {call_id}", concurrency=ConcurrencySpec(safe=True)))
    ids = [f"p{i}" for i in range(len(finish))]
    ctx.add_response(ModelResponse(tool_calls=[ScriptedToolCall(id=c, name="probe", args={"i": i}) for i, c in enumerate(ids)]))
    ctx.add_response(ModelResponse(text="done"))
    ctx.scenario.finish_order = [ids[i] for i in finish]
    ctx.record_hooks = False
    ctx.run()
    ctx.require_kernel_ran()
    block_on_no_tool_results(ctx, 2, ctx.tool_result_ids(2))
    ctx.evidence.require("tool results in model request 2", ctx.tool_result_ids(2))
    expect_order("tool results in model request 2", ids, ctx.tool_result_ids(2))
    for m in ctx.request_messages(ctx.model_request(2)):
        if m.get("role") == "tool_result":
            expect_equal(f"content of the result for {m.get('call_id')}", f"probe {m.get('call_id')}", m.get("content"))


@requirement("TOOL-003", profile="commonagent")
@PROPERTY_SETTINGS
@given(finish=_finish_orders())
def test_prop_commonagent_results_in_the_order_asked(finish: list[int]) -> None:
    _run("commonagent", finish)


@requirement("TOOL-003", profile="kernel")
@PROPERTY_SETTINGS
@given(finish=_finish_orders())
def test_prop_kernel_results_in_the_order_asked(finish: list[int]) -> None:
    _run("kernel", finish)
