"""Kernels that do nothing: the suite must pass none of their requirements (evidence before pass).

``null_empty`` answers every scenario with an empty RunResult; ``null_completed`` reports a
successful outcome for every user message and nothing else (no model call, no tool, no hook, no
journal, no span). Both claim both profiles and every capability, so no requirement can hide
behind "not offered". The self-test kills them only when not one requirement passes.
"""

from __future__ import annotations

from typing import Any

from conformance.boundary.adapter import CAPABILITIES, AdapterInfo, Outcome, RunResult
from conformance.selftest.registry import Entry, _add


class NullAdapter:
    """Claims everything, does nothing."""

    def __init__(self, name: str = "null", *, report_outcomes: bool = False) -> None:
        self.info = AdapterInfo(name=name, version="0", profiles=["kernel", "commonagent"], capabilities=list(CAPABILITIES))
        self.report_outcomes = report_outcomes

    async def run(self, scenario: Any, doubles: Any) -> RunResult:
        if not self.report_outcomes:
            return RunResult()
        return RunResult(
            outcomes=[Outcome(message=i, status="completed", subtype="success") for i, _ in enumerate(scenario.user_messages)]
        )


def null_empty() -> NullAdapter:
    return NullAdapter("mutant:null_empty")


def null_completed() -> NullAdapter:
    return NullAdapter("mutant:null_completed", report_outcomes=True)


for _make, _doc in (
    (null_empty, "A kernel that does nothing: an empty RunResult for every scenario."),
    (null_completed, "A kernel that does nothing but report a successful outcome for every message."),
):
    _add(Entry("mutant", _make.__name__, __name__, None, _doc, None, (), _make, passes_nothing=True))
