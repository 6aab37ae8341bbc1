"""What a model API cannot carry (readings row ``dialect-limits``), in process as over HTTP: an
adapter declares its framework's own limits in ``AdapterInfo.model_api_cannot_carry``, and the
checks judge an in-process request on them as they judge an HTTP one on its dialect's. Driven over
a hand-made log (no kernel)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from conformance.boundary.adapter import AdapterInfo, JournalDump, ModelApiLimit, RunResult, UsageEvent
from conformance.boundary.scenario import Scenario
from conformance.errors import ConformanceFailure, Incomplete
from conformance.harness.runner import ScenarioRun
from conformance.httpmodel.dialect import CANNOT_CARRY, delivered_usage
from conformance.steps.common import ScenarioContext
from conformance.steps.cost import cost_then_usage_events

#: One model call streaming three usage chunks (COST-001's "several usage events" scenario).
CHUNKS = [
    {"type": "usage", "input_tokens": 77, "output_tokens": 0, "cached_input_tokens": 0},
    {"type": "tool_use", "id": "c3", "name": "lookup", "input_json": "{}"},
    {"type": "usage", "input_tokens": 0, "output_tokens": 5, "cached_input_tokens": 0},
    {"type": "usage", "input_tokens": 0, "output_tokens": 9000, "cached_input_tokens": 1},
]


def context(cannot_carry: list[str], persisted: list[tuple[int, int, int]], *, complete: bool = True, first: bool = False) -> ScenarioContext:
    """One model call streaming CHUNKS (``complete`` or cut short); ``first``: after a completed
    call that streamed one usage chunk (100, 10, 0)."""
    info = AdapterInfo(name="k", version="1", profiles=["kernel"], model_api_cannot_carry=cannot_carry)  # type: ignore[arg-type]
    akc = ScenarioContext(adapter=None, info=info, runner=None, profile="kernel")  # type: ignore[arg-type]
    usage = [UsageEvent(session_id="s", input_tokens=i, output_tokens=o, cached_input_tokens=c, cost_usd=0.0) for i, o, c in persisted]
    log: list[dict[str, Any]] = []
    if first:
        log += [
            {"kind": "model_request", "index": 0, "request": {"messages": []}},
            {"kind": "model_response", "index": 0, "chunks": [{"type": "usage", "input_tokens": 100, "output_tokens": 10}], "complete": True},
        ]
    log += [
        {"kind": "model_request", "index": 1, "request": {"messages": []}},
        {"kind": "model_response", "index": 1, "chunks": CHUNKS, "complete": complete},
    ]
    akc.last = ScenarioRun(scenario=Scenario(name="s", profile="kernel"), result=RunResult(journal=JournalDump(usage=usage)), log=log)
    return akc


def test_the_limit_names_are_the_dialects() -> None:
    assert set().union(*CANNOT_CARRY.values()) <= set(get_args(ModelApiLimit))


def test_an_undeclared_in_process_model_api_carries_everything() -> None:
    akc = context([], [])
    assert akc.carries(-1, "usage-events") and akc.carries(1, "tool-error-flag")
    assert delivered_usage(None, CHUNKS, True) == [c for c in CHUNKS if c["type"] == "usage"]


def test_a_declared_in_process_limit_is_judged_as_a_dialects() -> None:
    akc = context(["usage-events"], [])
    assert not akc.carries(-1, "usage-events") and akc.carries(1, "tool-error-flag")
    summed = {"type": "usage", "input_tokens": 77, "output_tokens": 9005, "cached_input_tokens": 1}
    assert delivered_usage(None, CHUNKS, True, ["usage-events"]) == [summed]
    # a call cut short: the one figure comes with the completed response, none before
    assert delivered_usage(None, CHUNKS, False, ["usage-events"]) == []
    # a dialect's own table wins over the in-process declaration
    assert len(delivered_usage("anthropic", CHUNKS, True, [])) == 1


def test_one_figure_per_call_in_process_compares_totals() -> None:
    # pydantic-ai's one RequestUsage per ModelResponse: the stream's chunks summed
    cost_then_usage_events(context(["usage-events"], [(77, 9005, 1)]))
    # undeclared, the same store misses two of the three events
    with pytest.raises(ConformanceFailure):
        cost_then_usage_events(context([], [(77, 9005, 1)]))


def test_one_figure_per_call_never_passes_without_evidence() -> None:
    # totals that disagree fail
    with pytest.raises(ConformanceFailure):
        cost_then_usage_events(context(["usage-events"], [(77, 9000, 1)]))
    # a call cut short delivered nothing: nothing to judge, never a pass
    with pytest.raises(Incomplete):
        cost_then_usage_events(context(["usage-events"], [], complete=False))
    # after a completed call: the cut call's usage was never received, so COST-002's situation
    # did not happen, though the totals of the completed call agree
    with pytest.raises(Incomplete):
        cost_then_usage_events(context(["usage-events"], [(100, 10, 0)], complete=False, first=True))
    # undeclared, the cut call's chunks are each an event to persist: missing them fails
    with pytest.raises(ConformanceFailure):
        cost_then_usage_events(context([], [(100, 10, 0)], complete=False, first=True))
