"""Property of 003's cost roll-up: over random session trees (sub-agent tools, depth <= 2) and
random spends, every session's bound verdict matches 003's arithmetic:

    remaining(root)  = root max_cost_usd ?? +inf
    remaining(child) = min(remaining(parent) at spawn, child's own max_cost_usd ?? +inf)
    every spend is subtracted at every session from the spender up to the root;
    a session whose remaining is <= 0 at its step 17 fires (one final turn, then the end).

The model script is built by simulating that arithmetic (sessions run one after the other: one
call per turn), so it holds exactly the responses a conforming kernel asks for, in call order.
Costs are whole dollars and limits half-dollar amounts (exact in floating point, and never an exact
tie: equality is COST-004's). A spawn is never scripted when the child would
start with no budget left (what a kernel does then is not said): that turn calls a plain tool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from conformance.errors import ConformanceFailure, expect_equal
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ConcurrencySpec, ModelResponse, ScriptedToolCall, SubagentDef, ToolDef, Usage
from conformance.steps.cost import end_subtype, sessions

#: Limits are half-dollar amounts and spends whole dollars, so no remaining budget is ever exactly
#: zero: whether equality fires is COST-004's business, checked on its own.
OWN_LIMITS = (None, 1.5, 2.5)
ROOT_LIMITS = (None, 1.5, 2.5, 3.5, 5.5)


@dataclass
class Plan:
    """What a session would do if no bound stopped it: turns, then an answer."""

    turns: list[tuple[str, int, float | None, Plan | None]]  # (tool | spawn, cost, child's own max, child plan)
    answer_cost: int
    final_cost: int


@st.composite
def plans(draw: Any, depth: int = 0) -> Plan:
    turns: list[tuple[str, int, float | None, Plan | None]] = []
    for _ in range(draw(st.integers(0 if depth else 1, 2))):
        cost = draw(st.integers(0, 2))
        if depth < 2 and draw(st.booleans()):
            turns.append(("spawn", cost, draw(st.sampled_from(OWN_LIMITS)), draw(plans(depth + 1))))
        else:
            turns.append(("tool", cost, None, None))
    return Plan(turns, draw(st.integers(0, 2)), draw(st.integers(0, 1)))


@dataclass
class Expected:
    depth: int
    requests: int = 0
    fired: bool = False


@dataclass
class Simulation:
    """003's arithmetic over a plan: the model script in call order and each session's verdict."""

    script: list[ModelResponse] = field(default_factory=list)
    sessions: list[Expected] = field(default_factory=list)
    n: int = 0
    #: Stream every spend as two usage events of one model call (half each, exact in binary).
    split: bool = False

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def run(self, plan: Plan, start: float, depth: int, chain: list[dict[str, float]]) -> None:
        node = {"remaining": start}
        chain = chain + [node]
        me = Expected(depth)
        self.sessions.append(me)

        def spend(cost: int) -> dict[str, Any]:
            for n in chain:
                n["remaining"] -= cost
            me.requests += 1
            if self.split:
                return {"usage_events": [Usage(input_tokens=500 * cost), Usage(input_tokens=500 * cost)]}
            return {"usage": Usage(input_tokens=1000 * cost)}

        for kind, cost, own, child in plan.turns:
            usage = spend(cost)
            child_start = min(node["remaining"], math.inf if own is None else own)
            if kind == "spawn" and child is not None and child_start > 0:
                call = ScriptedToolCall(id=self._id("d"), name=delegate_name(own), args={"goal": self._id("goal ")})
                self.script.append(ModelResponse(tool_calls=[call], **usage))
                self.run(child, child_start, depth + 1, chain)
            else:
                call = ScriptedToolCall(id=self._id("t"), name="lookup", args={"q": self._id("q")})
                self.script.append(ModelResponse(tool_calls=[call], **usage))
            if node["remaining"] <= 0:  # step 17: fired; one final turn, then the end
                self.script.append(ModelResponse(text=f"final {self._id('f')}", **spend(plan.final_cost)))
                me.fired = True
                return
        self.script.append(ModelResponse(text=f"answer {self._id('a')}", **spend(plan.answer_cost)))


def delegate_name(own: float | None) -> str:
    return f"delegate_{str(own).replace('.', '_') if own is not None else 'unbounded'}"


@requirement("COST-005", "COST-006", "COST-007", profile="kernel", capability="subagents")
@PROPERTY_SETTINGS
@given(plan=plans(), root_max=st.sampled_from(ROOT_LIMITS), split=st.booleans())
# Only a grandchild spends: the root fires through the child (COST-007).
@example(
    plan=Plan([("spawn", 0, None, Plan([("spawn", 0, None, Plan([("tool", 2, None, None)], 2, 0))], 0, 0))], 0, 0),
    root_max=3.5,
    split=True,
)
# The child's own limit (1.5) is below the root's remaining budget (COST-006).
@example(plan=Plan([("spawn", 1, 1.5, Plan([("tool", 1, None, None), ("tool", 1, None, None)], 0, 0))], 0, 0), root_max=None, split=False)
# The root's remaining budget (1.5) is below the child's own limit (2.5); the child's spend fires both.
@example(plan=Plan([("spawn", 1, 2.5, Plan([("tool", 1, None, None), ("tool", 1, None, None)], 0, 0))], 1, 0), root_max=2.5, split=False)
def test_prop_cost_rolls_up_the_session_tree(plan: Plan, root_max: float | None, split: bool) -> None:
    """Each session's verdict (fired or success) and model requests match 003's arithmetic; with
    ``split`` every spend arrives as two usage events of one model call."""
    sim = Simulation(split=split)
    sim.run(plan, math.inf if root_max is None else float(root_max), 0, [])
    ctx = context("kernel", "cost rolls up the session tree")
    ctx.add_tool(ToolDef(name="lookup", concurrency=ConcurrencySpec(safe=True)))
    for own in OWN_LIMITS:
        ctx.add_tool(
            ToolDef(
                name=delegate_name(own),
                concurrency=ConcurrencySpec(safe=True),
                subagent=SubagentDef(max_cost_usd=own),
            )
        )
    for response in sim.script:
        ctx.add_response(response)
    ctx.merge(
        {
            # max_turns far away: the cost dimension is judged with another one configured.
            "bounds": {"max_cost_usd": root_max, "max_turns": 50, "max_depth": 3},
            "model": {"pricing": {"input_usd_per_mtok": 1000.0}},
        }
    )
    ctx.run()
    ctx.require_kernel_ran()
    seen = ctx.evidence.require("sessions that called the model or ended", sessions(ctx))
    shape = [(e.depth, e.requests, "fired" if e.fired else "success") for e in sim.sessions]
    where = f"(root max_cost_usd {root_max}; expected sessions (depth, model requests, verdict) {shape})"
    expect_equal(f"sessions that ran {where}", len(sim.sessions), len(seen))
    for i, (expected, view) in enumerate(zip(sim.sessions, seen, strict=True), 1):
        label = f"session {i} in creation order (depth {expected.depth}) {where}"
        expect_equal(f"depth of {label}", expected.depth, view.depth)
        expect_equal(f"model requests of {label}", expected.requests, len(view.requests))
        subtype = end_subtype(view, ctx)
        if expected.fired and (subtype == "success" or subtype is None):
            raise ConformanceFailure(f"subtype of {label}", "a fired cost bound (not success)", repr(subtype))
        if not expected.fired and subtype != "success":
            raise ConformanceFailure(f"subtype of {label}", "success (its budget never reached <= 0)", repr(subtype))
    fired = sum(e.fired for e in sim.sessions)
    ctx.evidence.saw(f"{len(seen)} sessions (depths {sorted({e.depth for e in sim.sessions})}), {fired} fired, as 003's arithmetic says")
