"""Steps for the COST features (003 "Cost accounting"): usage events against the pricing formula
of docs/adapter.md, and the sessions of a run (root and sub-agents) as the doubles saw them.

A sub-agent session is told apart from its parent by the TurnInfo the kernel hands every callback
(``session_id``, ``depth``); its end is its own ``session-end`` dispatch, whose payload carries the
subtype (docs/adapter.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, expect_equal, show
from conformance.boundary.scenario import Pricing, Usage
from conformance.steps.common import ScenarioContext

#: Absolute tolerance for comparing costs (floating point sums of exact inputs).
COST_TOLERANCE = 1e-9


def pricing_cost(pricing: Pricing, usage: Usage | dict[str, Any]) -> float:
    """docs/adapter.md: (input*in + cached*cached_in + output*out) / 1e6, input = non-cached."""
    u = usage if isinstance(usage, dict) else usage.model_dump()
    return (
        int(u.get("input_tokens") or 0) * pricing.input_usd_per_mtok
        + int(u.get("cached_input_tokens") or 0) * pricing.cached_input_usd_per_mtok
        + int(u.get("output_tokens") or 0) * pricing.output_usd_per_mtok
    ) / 1e6


def streamed_usages(akc: ScenarioContext) -> list[dict[str, Any]]:
    """The usage chunks the scripted model streamed, in call order."""
    out = []
    for e in akc.events("model_response"):
        out.extend(c for c in e["chunks"] if c.get("type") == "usage")
    return out


@dataclass
class SessionView:
    """One session run as the doubles saw it: its model requests and its session-end subtypes."""

    session_id: str
    depth: int
    requests: list[dict[str, Any]] = field(default_factory=list)
    end_subtypes: list[Any] = field(default_factory=list)


def sessions(akc: ScenarioContext) -> list[SessionView]:
    """Every session that called the model or ended, in the order it first appeared in the log
    (a child appears after its parent's spawning turn, so this is creation order)."""
    views: dict[str, SessionView] = {}
    for e in akc.events("model_request", "hook"):
        turn = e.get("turn")
        if not isinstance(turn, dict) or not turn.get("session_id"):
            continue
        sid = str(turn["session_id"])
        view = views.get(sid)
        if view is None:
            view = views[sid] = SessionView(sid, int(turn.get("depth") or 0))
        if e["kind"] == "model_request":
            view.requests.append(e["request"])
        elif e["point"] == "session-end" and (not akc.record_hooks or e["hook_id"].startswith("rec:")):
            payload = e.get("payload")
            view.end_subtypes.append(payload.get("subtype") if isinstance(payload, dict) else None)
    return list(views.values())


def end_subtype(view: SessionView) -> Any:
    """The subtype of the session's session-end (the first, if a kernel dispatched more: how often
    it fires is LOOP-017's business); a failure if it never ended."""
    if not view.end_subtypes:
        raise ConformanceFailure(
            f"session-end of the session at depth {view.depth} ({view.session_id})", "dispatched", "never"
        )
    return view.end_subtypes[0]


# ========================================================================== Then


@then("there is one usage event per model response, carrying the token counts the model streamed")
def cost_then_usage_events(akc: ScenarioContext) -> None:
    """RunResult.usage lists one event per streamed usage, in order, with its token counts."""
    keys = ("input_tokens", "output_tokens", "cached_input_tokens")
    streamed = [{k: int(u.get(k) or 0) for k in keys} for u in streamed_usages(akc)]
    reported = [{k: getattr(e, k) for k in keys} for e in akc.result.usage]
    expect_equal("usage events (token counts, in order)", streamed, reported)


@then("every usage event's cost_usd is the pricing formula applied to its tokens")
def cost_then_cost_formula(akc: ScenarioContext) -> None:
    """cost_usd of each usage event = docs/adapter.md's formula with the scenario's pricing."""
    pricing = akc.scenario.model.pricing
    events = akc.result.usage
    if not events:
        raise ConformanceFailure("usage events", "one per model response", "none")
    for i, e in enumerate(events, 1):
        expected = pricing_cost(pricing, e.model_dump())
        if not math.isclose(e.cost_usd, expected, rel_tol=1e-9, abs_tol=COST_TOLERANCE):
            raise ConformanceFailure(
                f"cost_usd of usage event {i} ({e.input_tokens} in, {e.cached_input_tokens} cached, {e.output_tokens} out)",
                repr(expected),
                repr(e.cost_usd),
            )


@then(parsers.re(r'every session at depth (?P<d>\d+) ends with a subtype other than "(?P<value>[^"]*)"$'))
def cost_then_depth_subtype_other(akc: ScenarioContext, d: str, value: str) -> None:
    """Each sub-agent session at this depth ended once, with a subtype that is not this one."""
    found = [v for v in sessions(akc) if v.depth == int(d)]
    if not found:
        raise ConformanceFailure(f"sessions at depth {d}", "at least one (a sub-agent ran)", "none")
    for view in found:
        subtype = end_subtype(view)
        if subtype == value or subtype is None:
            raise ConformanceFailure(
                f"subtype of the session at depth {d} (session-end payload)",
                f"a subtype other than {value!r}",
                show(subtype),
            )


@then(parsers.re(r'every session at depth (?P<d>\d+) ends with subtype "(?P<value>[^"]*)"$'))
def cost_then_depth_subtype(akc: ScenarioContext, d: str, value: str) -> None:
    """Each session at this depth ended once, with this subtype."""
    found = [v for v in sessions(akc) if v.depth == int(d)]
    if not found:
        raise ConformanceFailure(f"sessions at depth {d}", "at least one", "none")
    for view in found:
        expect_equal(f"subtype of the session at depth {d} (session-end payload)", value, end_subtype(view))
