"""One fault, one verdict for two lacking abilities (audit-2 of openai-agents and langchain):
telling tool kinds apart (LOOP-008's subject) and acting on a hook's replacement (LOOP-002/003/005's)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.boundary.adapter import Mechanism
from conformance.errors import Blocked, ConformanceFailure
from conformance.report.model import CheckResult, RequirementResult
from conformance.report.verdicts import mechanism_verdict
from conformance.steps import conc, loop
from conformance.steps.common import ScenarioContext


def _result(rid: str, verdict: str = "pass") -> RequirementResult:
    checks = [CheckResult(feature="f", scenario="s", outcome=verdict, message=None if verdict == "pass" else "observed x")]  # type: ignore[arg-type]
    return RequirementResult(id=rid, level="MUST", profiles=["kernel"], verdict=verdict, checks=checks)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- CONC-007


@pytest.mark.parametrize("verdict", ["pass", "fail"])
def test_conc_007_without_tool_kinds_is_blocked_by_loop_008_whatever_its_check_saw(verdict: str) -> None:
    """A kernel without kinds keeps interactive calls apart only by running every call one at a
    time (CONC-001's failure) or runs them together (CONC-007's): either way the fault is
    LOOP-008's, and an adapter-wide cap no longer decides which requirement pays for it."""
    out = mechanism_verdict(_result("CONC-007", verdict), {"tool_kinds": Mechanism(kind="absent")})
    assert out.verdict == "blocked" and out.blocked_by == ["LOOP-008"], out
    native = mechanism_verdict(_result("CONC-007", verdict), {"tool_kinds": Mechanism(kind="native")})
    assert native.verdict == verdict


# --------------------------------------------------------------------------- [replace]


def test_a_chain_rule_on_an_observe_only_point_is_blocked_by_the_replacement_requirement() -> None:
    """openai-agents: on_llm_end is observe-only. LOOP-014's chains ran right (each hook got the
    previous one's output); that the kernel ignores the last replacement is LOOP-005's subject."""
    mech = {
        "context-assemble": Mechanism(kind="native"),
        "pre-model-call": Mechanism(kind="native"),
        "post-model-response": Mechanism(kind="observe-only", via="RunHooks.on_llm_end"),
    }
    out = mechanism_verdict(_result("LOOP-014"), mech)
    assert out.verdict == "blocked" and out.blocked_by == ["LOOP-005"], out
    assert mechanism_verdict(_result("LOOP-005", "fail"), mech).verdict == "fail"  # its own subject
    assert mechanism_verdict(_result("LOOP-004"), mech).verdict == "pass"  # the dispatch only watches
    absent = mech | {"post-model-response": Mechanism(kind="absent")}
    assert mechanism_verdict(_result("LOOP-014"), absent).blocked_by == ["LOOP-004"]  # never dispatched
