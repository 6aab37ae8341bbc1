"""Properties of 003's independent bounds: with random settings of max_turns, max_cost_usd and
max_wall_clock_s, and a model whose per-turn cost and clock advance are known, the first bound
crossed fires in that turn with its own subtype (BOUND-006), and whichever it is, exactly one
tool-less final request with a synthetic instruction follows (BOUND-007). Both draw only the
dimensions the adapter offers (the wall clock needs the harness clock, which advances a fixed step
per model call).

The crossing turns of the set bounds are drawn distinct (which subtype wins when two bounds cross
in the same turn is not said), under both readings of final-turn-counts (max_turns = t fires after
t tool turns, or t-1 when the final turn counts). The cost and wall-clock limits are drawn either
exactly at a turn's total (the bound is hit: "reaches <= 0", "hitting any one ... MUST terminate")
or half a step below it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from conformance.errors import ConformanceFailure, expect_order
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ConcurrencySpec, ModelResponse, ScriptedToolCall, ToolDef, Usage
from conformance.steps.bound import bound_stop_problem, limit_path_problem

SUBTYPE = {"turns": "error_max_turns", "cost": "error_max_budget_usd", "wall": "error_max_wall_clock"}
BOUND = {"turns": "max_turns", "cost": "max_cost_usd", "wall": "max_wall_clock_s"}
CLOCK_STEP_S = 10  # harness clock advance per model call


@st.composite
def bound_settings(draw: Any) -> tuple[dict[str, int], int, bool]:
    """({bound: turn in which it is crossed}, USD per turn, limits exactly at a turn's total),
    crossing turns distinct."""
    which = draw(st.lists(st.sampled_from(["turns", "cost", "wall"]), min_size=1, max_size=3, unique=True))
    turns = draw(st.lists(st.integers(1, 4), min_size=len(which), max_size=len(which), unique=True))
    return dict(zip(which, turns, strict=True)), draw(st.sampled_from([1, 2])), draw(st.booleans())


def predictions(ctx: Any, crossing: dict[str, int]) -> set[tuple[str, int]]:
    """(first bound to fire, its turn) under each accepted reading of final-turn-counts: max_turns
    = t fires at step 17 of turn t, or of turn t-1 (at least 1) when the final turn counts. A case
    where two bounds would fire in the same turn under some reading is discarded (which subtype
    wins then is not said)."""
    out = set()
    accepted = ctx.accepts("final-turn-counts")
    for reading in sorted(accepted):
        eff = dict(crossing)
        if "turns" in eff and reading == "counted":
            eff["turns"] = max(1, eff["turns"] - 1)
        assume(len(set(eff.values())) == len(eff))
        first = min(eff, key=lambda b: eff[b])
        out.add((first, eff[first]))
    return out


def build(ctx: Any, crossing: dict[str, int], usd: int, exact: bool = False) -> tuple[set[tuple[str, int]], dict[str, Any]]:
    """Bounds crossed in the drawn turns, tool turns up to the latest turn any reading fires in,
    then a plain answer where the final turn is expected (a kernel that goes on ends with
    "success"). Returns (the accepted (first bound, turn) predictions, bounds)."""
    predicted = predictions(ctx, crossing)
    k = max(turn for _, turn in predicted)
    for i in range(1, k + 1):  # a tool per turn: no doom-loop detector can take these for a loop
        ctx.add_tool(ToolDef(name=f"lookup{i}", concurrency=ConcurrencySpec(safe=True)))
    bounds: dict[str, Any] = {}
    if "turns" in crossing:
        bounds["max_turns"] = crossing["turns"]
    below = 0 if exact else 1  # exact: the limit is the turn's total; else half a step below it
    if "cost" in crossing:  # crossed in turn n: n*usd >= limit > (n-1)*usd
        bounds["max_cost_usd"] = usd * crossing["cost"] - below * usd / 2
    if "wall" in crossing:
        bounds["max_wall_clock_s"] = CLOCK_STEP_S * crossing["wall"] - below * CLOCK_STEP_S // 2
    ctx.merge(
        {
            "bounds": bounds,
            "model": {"pricing": {"input_usd_per_mtok": 1000.0}},
            "clock": {"advance_per_model_call": CLOCK_STEP_S},
        }
    )
    usage = Usage(input_tokens=1000 * usd)
    for i in range(1, k + 1):
        ctx.add_response(
            ModelResponse(tool_calls=[ScriptedToolCall(id=f"c{i}", name=f"lookup{i}", args={"q": i})], usage=usage)
        )
    ctx.add_response(ModelResponse(text="final answer", usage=usage))
    return predicted, bounds


def offered_only(ctx: Any, crossing: dict[str, int]) -> dict[str, int]:
    """The drawn bounds the adapter offers (max_turns always; the wall clock needs the harness
    clock); a case left with none is discarded."""
    offered = set(ctx.info.capabilities)
    needs = {"cost": {"max_cost_usd"}, "wall": {"max_wall_clock_s", "injectable_clock"}, "turns": set()}
    crossing = {b: k for b, k in crossing.items() if needs[b] <= offered}
    assume(crossing)
    return crossing


def observed_turns(ctx: Any) -> int:
    """How many turns ran tools (c1..ck in order), with evidence that the kernel ran."""
    ctx.require_kernel_ran()
    started = [e["call_id"] for e in ctx.tool_starts()]
    ctx.evidence.require("tool calls the kernel ran before a bound fired", started)
    expect_order("tool calls, one per turn", [f"c{i}" for i in range(1, len(started) + 1)], started)
    return len(started)


# Only BOUND-006 (independence): each subtype's own rule (BOUND-013/014/015) has its scenarios, so
# a kernel with one wrong subtype fails that rule alone, not all three.
@requirement("BOUND-006", profile="kernel")
@PROPERTY_SETTINGS
@given(case=bound_settings())
def test_prop_first_bound_crossed_fires(case: tuple[dict[str, int], int, bool]) -> None:
    """The first bound crossed stops the loop in that very turn and names itself in the subtype.
    Only the dimensions the adapter offers are drawn; both readings of final-turn-counts pass."""
    crossing, usd, exact = case
    ctx = context("kernel", "the first bound crossed fires")
    crossing = offered_only(ctx, crossing)
    predicted, bounds = build(ctx, crossing, usd, exact)
    ctx.run()
    where = f"(settings {bounds}, {usd} USD per turn, {CLOCK_STEP_S} s per model call)"
    observed = (ctx.outcome().subtype, observed_turns(ctx))
    accepted = {(SUBTYPE[b], k) for b, k in predicted}
    if observed not in accepted:
        if len(predicted) == 1:  # a stop in the wrong turn that is another requirement's subject is blocked by it
            (first, k), = predicted
            bound_stop_problem(ctx, BOUND[first], k)
        raise ConformanceFailure(
            f"(subtype, turns that ran tools) {where}", " or ".join(map(str, sorted(accepted))), str(observed)
        )
    ctx.evidence.saw(f"{observed[0]} fired after {observed[1]} tool turns")


@requirement("BOUND-007", profile="kernel")
@PROPERTY_SETTINGS
@given(case=bound_settings())
def test_prop_every_bound_takes_the_same_path(case: tuple[dict[str, int], int, bool]) -> None:
    """Whichever bound fires: exactly one more request, no tool specs, a synthetic instruction.
    Only the dimensions the adapter offers are drawn (max_turns always; the wall clock needs the
    harness clock)."""
    crossing, usd, exact = case
    ctx = context("kernel", "every bound takes the same limit-reached path")
    crossing = offered_only(ctx, crossing)
    predicted, bounds = build(ctx, crossing, usd, exact)
    ctx.run()
    k = observed_turns(ctx)
    if k not in {turn for _, turn in predicted}:
        raise ConformanceFailure(f"turns that ran tools (settings {bounds})", sorted(t for _, t in predicted), k)
    problem = limit_path_problem(ctx, k)
    if problem:
        raise ConformanceFailure(f"the limit-reached path (settings {bounds}): {problem}", raw=True)
