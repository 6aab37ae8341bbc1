"""Steps for the BUDGET features (000 "The budget"): model calls counted per turn."""

from __future__ import annotations

from pytest_bdd import parsers, then

from conformance.errors import Blocked, HarnessError, expect_equal
from conformance.steps.common import ScenarioContext
from conformance.steps.turn import turn_events


@then(parsers.re(r"user message (?P<k>\d+) made (?P<n>\d+) model calls?$"))
def then_turn_model_calls(akc: ScenarioContext, k: str, n: str) -> None:
    """User message k's turn (its own TurnInfo) sent exactly n model requests (evidence: the
    kernel ran the earlier messages' turns too)."""
    akc.require_kernel_ran()
    calls = turn_events(akc, int(k), "model_request")
    if len(calls) != int(n):
        block_on_an_earlier_turn_over_budget(akc, int(k))
    expect_equal(f"model calls of the turn of message {k}", int(n), len(calls))
    akc.evidence.saw(f"the turn of message {k} made {n} model calls")


@then(parsers.re(r"user message (?P<k>\d+) made no model call past max_iterations$"))
def then_turn_within_budget(akc: ScenarioContext, k: str) -> None:
    """Precondition of a check on a later turn's budget: the turn that ran out of iterations made
    at most max_iterations model calls. More (a summary or grace call after the budget is spent)
    is BUDGET-001's subject, and it shifts the model's script under the later turn: a check on
    that turn is blocked by BUDGET-001, not failed (one fault, one verdict)."""
    cap = akc.scenario.bounds.max_iterations
    if cap is None:
        raise HarnessError("a max_iterations precondition in a scenario without max_iterations")
    akc.require_kernel_ran()
    calls = turn_events(akc, int(k), "model_request")
    if len(calls) > cap:
        raise Blocked("BUDGET-001", f"the turn of message {k} made {len(calls)} model calls under max_iterations = {cap}")
    akc.evidence.saw(f"the turn of message {k} made {len(calls)} model calls under max_iterations = {cap}")


def block_on_an_earlier_turn_over_budget(akc: ScenarioContext, k: int) -> None:
    """Precondition of counting message k's model calls: the turns before it kept to
    max_iterations (BUDGET-001's subject). The model's script is one sequence for the session,
    so an earlier turn that made more calls used up the responses scripted for this one: what
    this turn did with its own cannot be judged, the check is blocked by BUDGET-001."""
    cap = akc.scenario.bounds.max_iterations
    if cap is None:
        return
    for j in range(1, k):
        made = len(turn_events(akc, j, "model_request"))
        if made > cap:
            raise Blocked(
                "BUDGET-001",
                f"the turn of message {j} made {made} model calls under max_iterations = {cap}, "
                f"using up responses scripted for message {k}",
            )
