"""One fault, one verdict over the bounds dimension: a check that a bound stopped the loop after
the tools of the turn it was reached in (``bound_stop_problem``) is blocked by BOUND-001 when that
turn's tools did not run, by COST-001 when a cost bound never fired on a kernel without usage,
by the bound's own requirement where the firing is not the check's subject; and it fails where
the fault is the check's own. Driven over a hand-made log (no kernel)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.errors import Blocked
from conformance.steps.bound import bound_stop_problem


class FakeContext:
    """The part of ScenarioContext bound_stop_problem reads."""

    def __init__(self, answers: list[list[str]], ran: list[str], *, ids: tuple[str, ...] = ("BOUND-006",),
                 subtype: str | None = "error_max_budget_usd", raised: Any = None, usage: str = "native") -> None:
        self.log = [{"kind": "model_request", "request": {}} for _ in answers]
        self.log += [{"kind": "model_response", "index": i, "chunks": [{"type": "tool_use", "id": c} for c in calls]} for i, calls in enumerate(answers)]
        self.log += [{"kind": "tool_start", "call_id": c, "name": "lookup"} for c in ran]
        self.requirement_ids = list(ids)
        self.result = SimpleNamespace(raised=raised, outcomes=[SimpleNamespace(subtype=subtype)] if raised is None else [])
        self.usage = usage

    def require_kernel_ran(self) -> None:
        pass

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.log if e["kind"] in kinds]

    def model_requests(self) -> list[dict[str, Any]]:
        return [e["request"] for e in self.events("model_request")]

    def tool_starts(self) -> list[dict[str, Any]]:
        return self.events("tool_start")

    def tool_ran(self, call: str) -> bool:
        return any(e["call_id"] == call for e in self.tool_starts())

    def outcome(self) -> Any:
        return self.result.outcomes[-1]

    def block_on_lacking_mechanism(self, mechanism: str, what: str) -> None:
        if mechanism == "usage" and self.usage != "native" and "COST-001" not in self.requirement_ids:
            raise Blocked("COST-001", what)


THREE = [["c1"], ["c2"], ["c3"]]


def test_stopped_after_the_limiting_turn_passes() -> None:
    assert bound_stop_problem(FakeContext(THREE, ["c1", "c2", "c3"]), "max_cost_usd", 3) is None


@pytest.mark.parametrize("bound", ["max_turns", "max_cost_usd", "max_wall_clock_s"])
def test_limiting_turn_without_its_tools_is_bound_001s(bound: str) -> None:
    # the bound fired right after model call 3's answer, before its tools (pydantic-ai's cost_limit)
    ctx = FakeContext(THREE, ["c1", "c2"], raised=SimpleNamespace(type="UsageLimitExceeded", message=""))
    with pytest.raises(Blocked) as info:
        bound_stop_problem(ctx, bound, 3)
    assert info.value.by == ["BOUND-001"]


def test_limiting_turn_without_its_tools_fails_bound_001_itself() -> None:
    ctx = FakeContext(THREE, ["c1", "c2"], ids=("BOUND-001",))
    assert "did not run" in (bound_stop_problem(ctx, "max_cost_usd", 3) or "")


def test_cost_bound_never_fired_without_usage_is_cost_001s() -> None:
    # the kernel priced the calls with its own table: the loop went on to the plain answer
    ctx = FakeContext([*THREE, []], ["c1", "c2", "c3"], subtype="success", usage="not-wired")
    with pytest.raises(Blocked) as info:
        bound_stop_problem(ctx, "max_cost_usd", 3)
    assert info.value.by == ["COST-001"]


def test_cost_bound_never_fired_with_usage_fails_bound_006() -> None:
    ctx = FakeContext([*THREE, []], ["c1", "c2", "c3"], subtype="success")
    assert "did not stop the loop" in (bound_stop_problem(ctx, "max_cost_usd", 3) or "")


def test_firing_is_the_bounds_own_requirement_in_a_bound_001_check() -> None:
    ctx = FakeContext([*THREE, ["c4"]], ["c1", "c2", "c3", "c4"], ids=("BOUND-001",))
    with pytest.raises(Blocked) as info:
        bound_stop_problem(ctx, "max_wall_clock_s", 3)
    assert info.value.by == ["BOUND-005"]


def test_a_bound_that_fired_early_fails_bound_006() -> None:
    ctx = FakeContext(THREE[:2], ["c1", "c2"])
    assert "before model call 3" in (bound_stop_problem(ctx, "max_turns", 3) or "")
