"""Mechanisms are declared: the dependency table and the verdict rule (issue 14)."""

from __future__ import annotations

from conformance.boundary.adapter import CAPABILITIES, OBSERVATIONS, AdapterInfo, Mechanism
from conformance.boundary.scenario import COMMONAGENT_HOOK_POINTS, KERNEL_HOOK_POINTS
from conformance.catalog.mechanisms import dependencies
from conformance.catalog.requirements import load_catalog
from conformance.report.model import CheckResult, RequirementResult
from conformance.report.verdicts import Check, compute, mechanism_verdict

KNOWN = {*KERNEL_HOOK_POINTS, *COMMONAGENT_HOOK_POINTS, *CAPABILITIES, *OBSERVATIONS}


def test_table_names_known_requirements_and_mechanisms() -> None:
    ids = {r.id for r in load_catalog().requirements}
    for rid, deps in dependencies().items():
        assert rid in ids, f"mechanisms.toml names unknown requirement {rid}"
        for d in deps:
            assert d.name in KNOWN, f"{rid}: unknown mechanism {d.name!r}"


def _result(verdict: str = "pass", level: str = "MUST", rid: str = "LOOP-003", outcome: str = "pass") -> RequirementResult:
    checks = [CheckResult(feature="loop", scenario="s", outcome=outcome, message=None if outcome == "pass" else "observed x")]  # type: ignore[arg-type]
    return RequirementResult(id=rid, level=level, verdict=verdict, checks=checks)  # type: ignore[arg-type]


def test_no_table_changes_nothing() -> None:
    assert mechanism_verdict(_result(), {}).verdict == "pass"


def test_native_keeps_a_pass() -> None:
    mech = {"pre-model-call": Mechanism(kind="native", via="Hooks.before_model_request")}
    assert mechanism_verdict(_result(), mech).verdict == "pass"


def test_observe_only_or_emulated_or_missing_cannot_pass_a_must() -> None:
    for mech in (
        {"pre-model-call": Mechanism(kind="observe-only", via="RunHooks.on_llm_start")},
        {"pre-model-call": Mechanism(kind="emulated")},
        {"session-start": Mechanism(kind="native")},  # declared table without it: absent
    ):
        out = mechanism_verdict(_result(), mech)
        assert out.verdict == "fail" and "cannot pass" in (out.message or "")


def test_observe_suffices_where_the_check_only_watches() -> None:
    mech = {"post-model-response": Mechanism(kind="observe-only", via="on_llm_end")}
    assert mechanism_verdict(_result(rid="LOOP-004"), mech).verdict == "pass"
    assert mechanism_verdict(_result(rid="LOOP-005"), mech).verdict == "fail"


def test_optional_rule_without_its_mechanism_is_not_offered() -> None:
    mech = {"max_cost_usd": Mechanism(kind="absent")}
    out = mechanism_verdict(_result(rid="BOUND-004", level="SHOULD", verdict="fail", outcome="fail"), mech)
    assert out.verdict == "not-offered"


def test_failing_check_messages_name_the_mechanism() -> None:
    mech = {"pre-model-call": Mechanism(kind="observe-only", via="RunHooks.on_llm_start")}
    out = mechanism_verdict(_result(verdict="fail", outcome="fail"), mech)
    assert out.checks[0].message == "pre-model-call ↔ RunHooks.on_llm_start (observe-only): observed x"


def test_compute_applies_the_rule_and_info_carries_the_table() -> None:
    info = AdapterInfo(name="k", version="1", profiles=["kernel"], mechanisms={"pre-model-call": {"kind": "emulated", "via": "adapter"}})
    checks = [Check(requirement_ids=["LOOP-003"], feature="loop", scenario="s", outcome="pass")]  # a check that ran and passed (checks start not-run)
    v = compute(None, checks, capabilities=[], profiles=["kernel"], mechanisms=info.mechanisms)
    assert v.requirements[0].verdict == "fail" and v.exit_code == 1
    assert AdapterInfo.model_validate_json(info.model_dump_json()).mechanisms["pre-model-call"].kind == "emulated"


def test_not_wired_earns_no_pass_and_says_the_gap_is_the_adapters() -> None:
    """not-wired: the framework has it, the adapter does not connect it (issue 14: sub-agents)."""
    mech = {"pre-model-call": Mechanism(kind="not-wired", via="Hooks.before_model_request")}
    assert mechanism_verdict(_result(), mech).verdict == "fail"
    unwired = {"subagents": Mechanism(kind="not-wired", via="delegate_task"), "turn_info": Mechanism(kind="native")}
    out = mechanism_verdict(
        RequirementResult(id="CHILD-001", level="DESCRIBED", verdict="not-offered", message="capability subagents not declared by the adapter"),
        unwired,
    )
    assert out.verdict == "not-offered"
    assert out.message == "not wired by the adapter (the kernel has it): subagents ↔ delegate_task; capability subagents not declared by the adapter"
    absent = mechanism_verdict(RequirementResult(id="CHILD-001", level="DESCRIBED", verdict="not-offered", message="m"), {"subagents": Mechanism(kind="absent")})
    assert absent.message == "m"
