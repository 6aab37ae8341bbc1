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


# --------------------------------------------------------------------------- TOOL-003

_TOOLS = [SimpleNamespace(name="write", kind="resource"), SimpleNamespace(name="read", kind="data_source"), SimpleNamespace(name="ask", kind="interactive")]
_CALLS = [{"id": "w1", "name": "write"}, {"id": "r1", "name": "read"}, {"id": "q1", "name": "ask"}, {"id": "r2", "name": "read"}]


def _ctx(observed: list[str], tool_kinds: str, ids: tuple[str, ...] = ("TOOL-003",)) -> Any:
    ns = SimpleNamespace(
        profile="kernel", requirement_ids=list(ids), scenario=SimpleNamespace(tools=_TOOLS),
        info=SimpleNamespace(mechanisms={"tool_kinds": Mechanism(kind=tool_kinds)}),  # type: ignore[arg-type]
        evidence=SimpleNamespace(require=lambda what, found: found, saw=lambda what: None),
        latest_tool_result_ids=lambda k: observed, accepts=lambda reading: {"request-order", "grouped-by-kind"},
    )
    ns.block_on_lacking_mechanism = lambda m, what: ScenarioContext.block_on_lacking_mechanism(ns, m, what)
    return ns


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(loop, "turn_message", lambda akc, k: {"role": "assistant", "tool_calls": _CALLS})
    return "w1, r1, q1, r2"


def test_results_grouped_without_interactive_apart_are_blocked_by_tool_kinds(asked: str) -> None:
    """openai-agents with its approval gate: the calls it ran first, in call order, then the
    approved resource call — 003's grouping but for telling data-source from interactive."""
    with pytest.raises(Blocked) as caught:
        conc.conc_then_result_order(_ctx(["r1", "q1", "r2", "w1"], "absent"), "2", asked)
    assert caught.value.by == ["LOOP-008"]
    for observed, kinds in ((["r1", "q1", "r2", "w1"], "native"), (["r2", "r1", "q1", "w1"], "absent")):
        with pytest.raises(ConformanceFailure):  # a kernel with kinds, or the finish order: fails
            conc.conc_then_result_order(_ctx(observed, kinds), "2", asked)
    with pytest.raises(ConformanceFailure):  # LOOP-008's own check judges it
        conc.conc_then_result_order(_ctx(["r1", "q1", "r2", "w1"], "absent", ("TOOL-003", "LOOP-008")), "2", asked)
    conc.conc_then_result_order(_ctx(["r1", "r2", "q1", "w1"], "absent"), "2", asked)  # 003's grouping passes


# --------------------------------------------------------------------------- chains of blocks


def test_a_requirement_blocked_by_a_blocked_one_names_the_root() -> None:
    """Blocks elsewhere name CONC-007 (two interactive calls ran together); on a kernel without
    tool kinds CONC-007 is itself blocked by LOOP-008, which is the fault to fix."""
    from conformance.report.verdicts import root_blockers

    def blocked(rid: str, *by: str) -> RequirementResult:
        return RequirementResult(id=rid, level="MUST", verdict="blocked", blocked_by=list(by), message=f"blocked by {', '.join(by)}: x", checks=[])  # type: ignore[arg-type]

    fail = RequirementResult(id="LOOP-008", level="MUST", verdict="fail", checks=[])  # type: ignore[arg-type]
    out = {r.id: r for r in root_blockers([blocked("CONC-008", "CONC-007"), blocked("CONC-007", "LOOP-008"), fail])}
    assert out["CONC-008"].blocked_by == ["LOOP-008"] and "CONC-007 blocked in turn by LOOP-008" in (out["CONC-008"].message or "")
    assert out["CONC-007"].blocked_by == ["LOOP-008"] and out["LOOP-008"].verdict == "fail"
    cycle = {r.id: r for r in root_blockers([blocked("A-001", "B-001"), blocked("B-001", "A-001")])}
    assert cycle["A-001"].blocked_by == ["B-001"] and cycle["B-001"].blocked_by == ["A-001"]  # left as it is
    alone = root_blockers([blocked("CONC-008", "CONC-007")])  # the blocker not judged in this run
    assert alone[0].blocked_by == ["CONC-007"]
