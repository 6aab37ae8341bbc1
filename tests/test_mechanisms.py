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
    """LOOP-003 (pre-model-call replaces the request) needs the point native. Observe-only: the
    point is dispatched (LOOP-002's subject holds), replacing is LOOP-003's own subject — it fails.
    Emulated or absent: the point is not dispatched by the kernel at all, LOOP-002's subject — LOOP-003
    is blocked by it (one fault, one verdict), never a pass."""
    out = mechanism_verdict(_result(), {"pre-model-call": Mechanism(kind="observe-only", via="RunHooks.on_llm_start")})
    assert out.verdict == "fail" and "cannot pass" in (out.message or "")
    for mech in ({"pre-model-call": Mechanism(kind="emulated")}, {"session-start": Mechanism(kind="native")}):  # no row: absent
        out = mechanism_verdict(_result(), mech)
        assert out.verdict == "blocked" and out.blocked_by == ["LOOP-002"], out
        assert (out.message or "").startswith("blocked by LOOP-002: pre-model-call is ")


def test_a_lacking_mechanism_fails_its_owner_and_blocks_the_rest() -> None:
    """No doom-loop detector: DOOM-001 (whose subject it is) fails; DOOM-004 (the window), whose
    check failed for the same lack, is blocked by DOOM-001 — the lack counted once."""
    mech = {"doom_loop": Mechanism(kind="absent")}
    owner = mechanism_verdict(_result(rid="DOOM-001", verdict="fail", outcome="fail"), mech)
    assert owner.verdict == "fail"
    other = mechanism_verdict(_result(rid="DOOM-004", verdict="fail", outcome="fail"), mech)
    assert other.verdict == "blocked" and other.blocked_by == ["DOOM-001"]


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
    assert v.requirements[0].verdict == "blocked" and v.exit_code == 3  # blocked by LOOP-002, which owns the dispatch
    assert AdapterInfo.model_validate_json(info.model_dump_json()).mechanisms["pre-model-call"].kind == "emulated"


def test_not_wired_earns_no_pass_and_says_the_gap_is_the_adapters() -> None:
    """not-wired: the framework has it, the adapter does not connect it (issue 14: sub-agents)."""
    mech = {"pre-model-call": Mechanism(kind="not-wired", via="Hooks.before_model_request")}
    assert mechanism_verdict(_result(), mech).verdict == "blocked"  # by LOOP-002; never a pass
    assert mechanism_verdict(_result(rid="LOOP-002"), mech).verdict == "fail"
    unwired = {"subagents": Mechanism(kind="not-wired", via="delegate_task"), "turn_info": Mechanism(kind="native")}
    out = mechanism_verdict(
        RequirementResult(id="CHILD-001", level="DESCRIBED", verdict="not-offered", message="capability subagents not declared by the adapter"),
        unwired,
    )
    assert out.verdict == "not-offered"
    assert out.message == "not wired by the adapter (the kernel has it): subagents ↔ delegate_task; capability subagents not declared by the adapter"
    absent = mechanism_verdict(RequirementResult(id="CHILD-001", level="DESCRIBED", verdict="not-offered", message="m"), {"subagents": Mechanism(kind="absent")})
    assert absent.message == "m"


def test_an_owner_is_never_blocked_nor_incomplete_on_its_own_lacking_mechanism() -> None:
    """smolagents without a detector: DOOM-001's checks were blocked by DOOM-010 (the run raised
    once the script ran out), DOOM-010 blocked by DOOM-001 — a cycle, and the fault nowhere. The
    owner of a lacking mechanism fails on it whatever its checks read; so does COST-001 whose
    checks could not observe usage, where the kernel has no cost at all. A non-owner keeps its
    blocked or incomplete verdict."""
    mech = {"doom_loop": Mechanism(kind="absent"), "usage": Mechanism(kind="absent")}
    blocked = _result(rid="DOOM-001", verdict="blocked", outcome="blocked")
    blocked = blocked.model_copy(update={"blocked_by": ["DOOM-010"], "message": "blocked by DOOM-010: the run raised"})
    owner = mechanism_verdict(blocked, mech)
    assert owner.verdict == "fail" and owner.blocked_by == []
    assert "doom_loop is absent" in (owner.message or "") and "its checks could not judge: the run raised" in (owner.message or "")
    assert "DOOM-010" not in (owner.message or "")  # DOOM-010 is blocked by DOOM-001: no cycle in the text either
    cost = mechanism_verdict(_result(rid="COST-001", verdict="incomplete", outcome="incomplete"), mech)
    assert cost.verdict == "fail" and "usage is absent" in (cost.message or "")
    assert mechanism_verdict(_result(rid="COST-001", verdict="incomplete", outcome="incomplete"), {"usage": Mechanism(kind="native")}).verdict == "incomplete"
    other = mechanism_verdict(_result(rid="DOOM-004", verdict="blocked", outcome="blocked"), mech)
    assert other.verdict == "blocked" and other.blocked_by == ["DOOM-001"]
    optional = mechanism_verdict(_result(rid="DOOM-001", level="SHOULD", verdict="incomplete", outcome="incomplete"), mech)
    assert optional.verdict == "incomplete"


def test_committed_reports_have_no_blocked_cell_whose_blocker_does_not_fail() -> None:
    """Every blocked cell of the committed reports names requirements that fail in the same
    column: never one that passes, is itself blocked (a cycle) or could not be judged."""
    import json
    from pathlib import Path

    reports = sorted((Path(__file__).resolve().parent.parent / "docs" / "conformance-reports").glob("*.json"))
    assert reports
    for path in reports:
        reqs = {r["id"]: r for r in json.loads(path.read_text())["requirements"]}
        for r in reqs.values():
            if r["verdict"] == "blocked":
                for b in r["blocked_by"]:
                    assert reqs.get(b, {}).get("verdict") == "fail", f"{path.stem} {r['id']} blocked by {b}: {reqs.get(b, {}).get('verdict')}"
