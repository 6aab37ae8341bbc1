"""Steps for the BUDGET features (000 "The budget"): model calls counted per turn."""

from __future__ import annotations

from pytest_bdd import parsers, then

from conformance.errors import expect_equal
from conformance.steps.common import ScenarioContext
from conformance.steps.turn import turn_events


@then(parsers.re(r"user message (?P<k>\d+) made (?P<n>\d+) model calls?$"))
def then_turn_model_calls(akc: ScenarioContext, k: str, n: str) -> None:
    """User message k's turn (its own TurnInfo) sent exactly n model requests (evidence: the
    kernel ran the earlier messages' turns too)."""
    akc.require_kernel_ran()
    calls = turn_events(akc, int(k), "model_request")
    expect_equal(f"model calls of the turn of message {k}", int(n), len(calls))
    akc.evidence.saw(f"the turn of message {k} made {n} model calls")
