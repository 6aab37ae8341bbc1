"""One fault, one verdict (issue 22 §1): ``blocked`` and ``not-applicable`` through the pipeline,
from a check's exception to the verdict, the exit code and every report format."""

from __future__ import annotations

import json
import tomllib
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.boundary.adapter import Mechanism
from conformance.errors import Blocked, ConformanceFailure
from conformance.report import expectations, matrix, terminal, writers
from conformance.report.model import KernelInfo, Report, SuiteInfo, explanation, status_label
from conformance.report.verdicts import Check, ReqInfo, compute, mechanism_verdict
from conformance.selftest.registry import Entry
from conformance.selftest.runner import Job, JobResult, Row
from conformance.steps.common import ScenarioContext


def _req(rid: str, **kw: Any) -> ReqInfo:
    return ReqInfo(id=rid, profiles=["kernel"], statement="s" * 10, **kw)


def _verdicts(checks: list[Check], *ids: str, mechanisms: dict[str, Any] | None = None, level: str = "MUST") -> Any:
    return compute([_req(i, level=level) for i in ids], checks, capabilities=[], profiles=["kernel"], mechanisms=mechanisms)


def _blocked(*ids: str, by: str = "BOUND-008") -> Check:
    return Check(list(ids), "bound", "s", "blocked", f"blocked by {by}: the run raised RuntimeError", blocked_by=[by])


# --------------------------------------------------------------------------- folding


def test_blocked_is_its_own_verdict_named_with_its_blocker_and_exits_3() -> None:
    v = _verdicts([_blocked("BOUND-002")], "BOUND-002")
    r = v.requirements[0]
    assert r.verdict == "blocked" and r.blocked_by == ["BOUND-008"]
    assert r.message == "blocked by BOUND-008: the run raised RuntimeError (its only check blocked)"
    assert v.exit_code == 3 and v.summary["blocked"] == 1 and v.summary["pass"] == 0


def test_some_passing_and_some_blocked_checks_are_blocked_not_pass() -> None:
    checks = [Check(["BOUND-006"], "bound", "a", "pass"), _blocked("BOUND-006"), _blocked("BOUND-006")]
    r = _verdicts(checks, "BOUND-006").requirements[0]
    assert r.verdict == "blocked"
    assert "2 of 3 checks blocked, the others passed: not a pass" in (r.message or "")
    every = _verdicts([_blocked("BOUND-006"), _blocked("BOUND-006")], "BOUND-006").requirements[0]
    assert "(every check blocked)" in (every.message or "")


def test_folding_order_error_fail_blocked_incomplete_pass() -> None:
    def fold(*outcomes: str) -> str:
        checks = [
            _blocked("X-001") if o == "blocked" else Check(["X-001"], "f", f"s{i}", o, None if o == "pass" else "why")
            for i, o in enumerate(outcomes)
        ]
        return _verdicts(checks, "X-001").requirements[0].verdict

    assert fold("blocked", "fail") == "fail"
    assert fold("blocked", "error") == "error"
    assert fold("blocked", "incomplete") == "blocked"
    assert fold("pass", "incomplete") == "incomplete"
    assert fold("pass") == "pass"


def test_a_gating_fail_still_exits_1_beside_a_blocked_one() -> None:
    checks = [_blocked("BOUND-002"), Check(["BOUND-008"], "bound", "t", "fail", "the kernel's API: expected a status")]
    assert _verdicts(checks, "BOUND-002", "BOUND-008").exit_code == 1


# --------------------------------------------------------------------------- attribution


def test_a_failure_naming_its_subject_fails_only_that_requirement() -> None:
    check = Check(["TOOL-003", "CONC-001"], "smoke", "s", "fail", "calls a1 and a2 did not run concurrently", subject=["CONC-001", "CONC-005"])
    got = {r.id: (r.verdict, r.blocked_by) for r in _verdicts([check], "TOOL-003", "CONC-001").requirements}
    assert got == {"TOOL-003": ("blocked", ["CONC-001"]), "CONC-001": ("fail", [])}


def test_a_subject_outside_the_tags_blocks_every_tag_by_the_first_one() -> None:
    check = Check(["TOOL-003"], "smoke", "s", "fail", "calls did not meet", subject=["CONC-001", "CONC-005"])
    r = _verdicts([check], "TOOL-003").requirements[0]
    assert (r.verdict, r.blocked_by) == ("blocked", ["CONC-001"])


def test_a_failure_without_a_subject_fails_every_tag() -> None:
    check = Check(["BOUND-002", "BOUND-006"], "bound", "s", "fail", "turns that ran tools")
    assert {r.verdict for r in _verdicts([check], "BOUND-002", "BOUND-006").requirements} == {"fail"}


def test_blocked_by_a_tagged_requirement_fails_that_one() -> None:
    """The unmet precondition is the blocker's own subject: where the check carries it, it fails."""
    got = {r.id: r.verdict for r in _verdicts([_blocked("BOUND-008", "BOUND-002")], "BOUND-002", "BOUND-008").requirements}
    assert got == {"BOUND-002": "blocked", "BOUND-008": "fail"}


def test_exceptions_carry_blocker_and_subject() -> None:
    assert Blocked("BOUND-008", "the run raised").by == ["BOUND-008"]
    assert str(Blocked(["LOOP-009", "LOOP-011"], "x")) == "blocked by LOOP-009, LOOP-011: x"
    assert ConformanceFailure("w", 1, 2, subject="CONC-001").subject == ["CONC-001"]
    assert ConformanceFailure("w", 1, 2).subject == []


def test_check_keeps_the_blocker_of_its_worst_phase() -> None:
    c = Check(["A-001"], "f", "s")
    c.worsen("blocked", "blocked by B-001: x", blocked_by=["B-001"])
    c.worsen("pass", None)
    assert (c.outcome, c.blocked_by) == ("blocked", ["B-001"])
    c.worsen("error", "teardown failed")
    assert (c.outcome, c.blocked_by) == ("error", [])


# --------------------------------------------------------------------------- not-applicable


def test_a_must_not_about_an_absent_concept_is_not_applicable() -> None:
    mech = {"tool_kinds": Mechanism(kind="absent")}
    v = _verdicts([Check(["CONC-008"], "conc", "s", "pass")], "CONC-008", mechanisms=mech, level="MUST NOT")
    r = v.requirements[0]
    assert r.verdict == "not-applicable" and "tool_kinds declared absent" in (r.message or "")
    assert v.exit_code == 0 and v.summary["not-applicable"] == 1


def test_not_applicable_needs_absent_and_never_hides_a_failure() -> None:
    failing = [Check(["CONC-008"], "conc", "s", "fail", "accepted a ConcurrencySpec")]
    absent = {"tool_kinds": Mechanism(kind="absent")}
    assert _verdicts(failing, "CONC-008", mechanisms=absent, level="MUST NOT").requirements[0].verdict == "fail"
    unwired = {"tool_kinds": Mechanism(kind="not-wired", via="X")}
    passing = [Check(["CONC-008"], "conc", "s", "pass")]
    # not wired: the kernel has kinds, the adapter does not connect them: LOOP-008's lack, not n/a
    assert _verdicts(passing, "CONC-008", mechanisms=unwired, level="MUST NOT").requirements[0].verdict == "blocked"
    # a MUST about an absent mechanism is never n/a (only a MUST NOT cannot be broken without the
    # concept): the requirement owning the mechanism fails, the others are blocked by it
    base = _verdicts([Check(["GATE-004"], "gate", "s", "pass")], "GATE-004").requirements[0]
    gate = mechanism_verdict(base, {"plan-ready": Mechanism(kind="absent")})
    assert (gate.verdict, gate.blocked_by) == ("blocked", ["LOOP-009"])
    owner = _verdicts([Check(["LOOP-009"], "loop", "s", "pass")], "LOOP-009").requirements[0]
    assert mechanism_verdict(owner, {"plan-ready": Mechanism(kind="absent")}).verdict == "fail"


# --------------------------------------------------------------------------- report formats


def _report() -> Report:
    checks = [
        _blocked("BOUND-002"),
        Check(["BOUND-008"], "bound", "t", "fail", "the kernel's API: expected a status / observed raised RuntimeError"),
        Check(["CONC-008"], "conc", "u", "pass", evidence=["refused"]),
    ]
    reqs = [_req("BOUND-002"), _req("BOUND-008", level="MUST NOT"), _req("CONC-008", level="MUST NOT")]
    v = compute(reqs, checks, capabilities=[], profiles=["kernel"], mechanisms={"tool_kinds": Mechanism(kind="absent"), "max_turns": Mechanism(kind="native")})
    return Report(
        suite=SuiteInfo(version="0.1.0", catalog_version="x"),
        kernel=KernelInfo(name="k", version="1", profiles=["kernel"]),
        profiles=["kernel"],
        requirements=v.requirements,
        summary=v.summary,
        exit_code=v.exit_code,
    )


def test_report_formats_show_blocked_and_not_applicable_never_as_pass() -> None:
    report = _report()
    assert report.verdicts() == {"BOUND-002": "blocked", "BOUND-008": "fail", "CONC-008": "not-applicable"}
    data = json.loads(writers.to_json(report))
    assert data["requirements"][0]["blocked_by"] == ["BOUND-008"]
    junit = writers.to_junit(report)
    assert '<skipped message="blocked by BOUND-008: the run raised RuntimeError (its only check blocked)"' in junit
    assert '<skipped message="not applicable: tool_kinds declared absent' in junit
    md = writers.to_markdown(report)
    assert "| BOUND-002 | MUST | blocked | blocked by BOUND-008" in md and "Not applicable: CONC-008" in md
    text = terminal.render_text(report)
    assert "blocked" in text and "BOUND-002" in text and "blocked = another requirement's failure" in terminal.LEGEND
    assert explanation(report.requirements[0]).startswith("blocked by BOUND-008")
    assert "1 gating failure" in status_label(report) and "1 blocked" in status_label(report)


def test_expectations_record_and_accept_blocked() -> None:
    report = _report()
    text = expectations.render(report)
    data = tomllib.loads(text)
    assert data["expected"]["BOUND-002"]["verdict"] == "blocked"
    assert "CONC-008" not in data["expected"] and "#   CONC-008: not applicable" in text
    exp = expectations.Expectations(path="e.toml", entries={
        i: expectations.Expectation(i, (e["verdict"],)) for i, e in data["expected"].items()})
    applied = expectations.apply(report, exp)
    assert applied.exit_code == 0 and sorted(applied.expectations.expected) == ["BOUND-002", "BOUND-008"]


def test_matrix_cell_and_legend_name_the_blocker() -> None:
    col = matrix.Column(name="k", adapter="x:y", description="", status="ok", report=_report())
    doc = matrix.build([col], [{"id": i, "level": "MUST", "statement": "s"} for i in ("BOUND-002", "BOUND-008", "CONC-008")])
    row = next(r for r in doc["requirements"] if r["id"] == "BOUND-002")
    assert row["blocked_by"] == {"k": ["BOUND-008"]}
    md = matrix.to_markdown(doc)
    assert "| BOUND-002 | MUST | blk (BOUND-008) |" in md and "| CONC-008 | MUST | n/a |" in md
    assert "blk (ID) = blocked" in md and "n/a = not applicable" in md
    assert "blocked by another's failure (BOUND-008)" in doc["kernels"][0]["failures"]


# --------------------------------------------------------------------------- self-test


def _row(verdicts: dict[str, str], killed_by: str = "BOUND-008") -> Row:
    entry = Entry("mutant", "m", "mod", "kernel", "d", killed_by)
    return Row(entry, Job("m", "mutant", "mod:m", "kernel", None), JobResult("m", "mutant", 1, verdicts))


def test_a_mutant_is_not_killed_by_blocked_and_blocked_is_not_counted_against_it() -> None:
    assert not _row({"BOUND-008": "blocked"}).killed
    row = _row({"BOUND-008": "fail", "BOUND-002": "blocked", "LOOP-001": "pass"})
    assert row.killed and row.others == [] and row.blocked == ["BOUND-002"]


# --------------------------------------------------------------------------- steps


def test_a_step_that_judges_a_subject_names_it_in_its_failure() -> None:
    import inspect

    import pytest

    from conformance.steps.common import judges

    @judges("LOOP-001")
    def step(akc: object, k: str) -> None:
        raise ConformanceFailure("x", 1, 2)

    assert list(inspect.signature(step).parameters) == ["akc", "k"]  # pytest-bdd still injects them
    with pytest.raises(ConformanceFailure) as exc:
        step(None, "1")
    assert exc.value.subject == ["LOOP-001"]


def test_a_missing_hook_point_blocks_only_checks_not_about_it() -> None:
    from conformance.catalog.mechanisms import blocker_for_missing_point, dispatch_subject

    assert blocker_for_missing_point("plan-ready", ["BOUND-001"]) == "LOOP-009"
    assert blocker_for_missing_point("plan-ready", ["LOOP-009"]) is None  # its own subject
    assert blocker_for_missing_point("plan-ready", ["GATE-004"]) is None  # depends on plan-ready
    assert blocker_for_missing_point("post_tool_call", ["CHILD-001"]) == "TOOL-012"
    from conformance.boundary.scenario import COMMONAGENT_HOOK_POINTS, KERNEL_HOOK_POINTS

    assert all(dispatch_subject(p) for p in (*KERNEL_HOOK_POINTS, *COMMONAGENT_HOOK_POINTS))


def test_no_adapter_translates_a_limit_exception_into_a_subtype() -> None:
    """Issue 22 §3, one rule for every adapter: a limit that makes a framework raise is reported
    as raised (BOUND-008's subject); a subtype comes only from what the framework reports when it
    does not raise. No ``except`` clause of an adapter may produce an ``error_max_*`` subtype."""
    import ast
    from pathlib import Path

    import conformance.adapters as pkg

    offenders = []
    for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for handler in (n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)):
            for node in ast.walk(handler):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("error_max"):
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


# --------------------------------------------------------------------------- hangs after a cancel


def test_a_hang_on_a_model_call_still_in_flight_after_the_cancel_is_stop_002s() -> None:
    """A run that timed out after the cancel on a model call still streaming (smolagents) judges
    nothing but STOP-002: another requirement's check is blocked by it, STOP-002's own fails."""
    run = SimpleNamespace(log=[{"kind": "model_request"}, {"kind": "cancel"}], in_flight_at_timeout=["model call #1 (blocked until cancelled)"])
    block = ScenarioContext.block_on_uncancelled_model_call
    with pytest.raises(Blocked) as caught:
        block(SimpleNamespace(requirement_ids=["COST-002"]), run)
    assert caught.value.by == ["STOP-002"]
    block(SimpleNamespace(requirement_ids=["STOP-002"]), run)  # its own subject: left to fail
    block(SimpleNamespace(requirement_ids=["COST-002"]), SimpleNamespace(log=run.log, in_flight_at_timeout=["tool call c1 (lookup)"]))
    block(SimpleNamespace(requirement_ids=["COST-002"]), SimpleNamespace(log=[], in_flight_at_timeout=run.in_flight_at_timeout))


# --------------------------------------------------------------------------- concurrency keys


def _overlap_ctx(ids: list[str], keys: str | None, kinds: dict[str, str], *, overlapping: bool = True) -> Any:
    """A check's context whose calls c1 and c2 ran (overlapping or one after the other), on an
    adapter declaring ``concurrency_keys`` as ``keys`` (None: no mechanism table)."""
    starts = [(1, "c1"), (2, "c2")] if overlapping else [(1, "c1"), (3, "c2")]
    ends = [(3, "c1"), (4, "c2")] if overlapping else [(2, "c1"), (4, "c2")]
    log = [{"kind": "tool_start", "seq": s, "call_id": c, "name": f"t{c}"} for s, c in starts]
    log += [{"kind": "tool_end", "seq": s, "call_id": c} for s, c in ends]
    table = {} if keys is None else {"concurrency_keys": Mechanism(kind=keys), "max_turns": Mechanism(kind="native")}
    ctx = SimpleNamespace(
        requirement_ids=ids, profile="kernel", info=SimpleNamespace(mechanisms=table),
        scenario=SimpleNamespace(tools=[SimpleNamespace(name=f"t{c}", kind=kinds[c]) for c in ("c1", "c2")]),
        events=lambda *kinds_: [e for e in log if e["kind"] in kinds_],
    )
    ctx.block_on_lacking_mechanism = ScenarioContext.block_on_lacking_mechanism.__get__(ctx)
    return ctx


def test_calls_overlapping_for_want_of_concurrency_keys_are_conc_002s_alone() -> None:
    """One missing concurrency-key mechanism (003 computes one key for key-field values, safe:
    false and the provider-wide lock) fails CONC-002 and blocks CONC-003/004's overlap checks;
    a kernel declaring keys, CONC-002's own check, interactive calls (CONC-007's subject) and a
    kernel that kept the calls apart anyway are judged by the check itself."""
    from conformance.steps.conc import expect_no_overlap

    data = {"c1": "data_source", "c2": "data_source"}
    with pytest.raises(Blocked) as caught:
        expect_no_overlap(_overlap_ctx(["CONC-003", "CONC-004"], "absent", data), ["c1", "c2"])
    assert caught.value.by == ["CONC-002"] and "concurrency_keys (declared absent)" in str(caught.value)
    left_out = _overlap_ctx(["CONC-004"], "native", data)
    del left_out.info.mechanisms["concurrency_keys"]  # a table that leaves it out declares it absent
    for ctx in (left_out, _overlap_ctx(["CONC-004"], "emulated", data)):
        with pytest.raises(Blocked):
            expect_no_overlap(ctx, ["c1", "c2"])
    for ctx in (
        _overlap_ctx(["CONC-002"], "absent", data),  # the owner fails on it
        _overlap_ctx(["CONC-003"], "native", data),  # claimed: the check judges it
        _overlap_ctx(["CONC-003"], None, data),  # no mechanism table: the check judges it
        _overlap_ctx(["CONC-007"], "absent", {"c1": "interactive", "c2": "interactive"}),
    ):
        with pytest.raises(ConformanceFailure):
            expect_no_overlap(ctx, ["c1", "c2"])
    expect_no_overlap(_overlap_ctx(["CONC-003"], "absent", data, overlapping=False), ["c1", "c2"])  # a pass stays a pass


# --------------------------------------------------------------------------- the closing answer


def _answer_ctx(ids: list[str], *, extra: int, last_calls: bool = False, terminal: bool = False, max_turns: int | None = None, profile: str = "kernel") -> Any:
    """A check's context whose script closes on an answer (or on tool calls), with ``extra``
    model calls made past the script."""
    responses = [SimpleNamespace(tool_calls=["c1"], error=None), SimpleNamespace(tool_calls=["c2"] if last_calls else [], error=None)]
    ctx = SimpleNamespace(
        requirement_ids=ids, profile=profile,
        scenario=SimpleNamespace(
            model=SimpleNamespace(responses=responses), tools=[SimpleNamespace(terminates_turn=terminal)],
            doom_loop=SimpleNamespace(threshold=None), cancel=None,
            bounds=SimpleNamespace(max_turns=max_turns, max_cost_usd=None, max_wall_clock_s=None)),
        events=lambda kind: [{"kind": kind, "index": 2 + i} for i in range(extra)],
    )
    for name in ("require_answer_ended_run", "require_run_ended_as_scripted"):
        setattr(ctx, name, getattr(ScenarioContext, name).__get__(ctx))
    return ctx


def test_model_calls_past_the_closing_answer_are_done_001s() -> None:
    """A kernel that asks the model again after the script's closing answer without tool calls
    (smolagents: a plain answer is not final) fails DONE-001; LOOP-013's or LOOP-004's check
    that counts those calls is blocked by it. DONE-001's own check, a script closing on tool
    calls or a terminal tool, a bound, another profile and a run within its script are judged by
    the check itself."""
    with pytest.raises(Blocked) as caught:
        _answer_ctx(["LOOP-013"], extra=11).require_answer_ended_run()
    assert caught.value.by == ["DONE-001"] and "asked 11 times past its script" in str(caught.value)
    for ctx in (
        _answer_ctx(["DONE-001"], extra=11),
        _answer_ctx(["LOOP-013"], extra=0),
        _answer_ctx(["BUDGET-001"], extra=3, last_calls=True),
        _answer_ctx(["DONE-004"], extra=3, terminal=True),
        _answer_ctx(["BOUND-009"], extra=3, max_turns=1),
        _answer_ctx(["TURN-016"], extra=3, profile="commonagent"),
    ):
        ctx.require_answer_ended_run()  # no block: the check judges it


def test_interactive_calls_that_meet_with_or_without_a_spec_block_conc_008_by_conc_007(tmp_path: Any, akc_here: Any) -> None:
    """CONC-008 forbids honouring a ConcurrencySpec on an interactive tool. Interactive calls that
    overlap also once the declaration is taken away (the scenario run again without it) were not
    run together by the spec: that is CONC-007's fault, and CONC-008 is blocked by it; a kernel
    that serialises them without the spec and not with it honoured the spec (its mutant fails)."""
    verdicts = {}
    for spec in ("tests.fakes.broken:interactive_together", "conformance.selftest.mutants.tools:interactive_spec_honoured"):
        out = tmp_path / "r.json"
        akc_here("run", "--adapter", spec, "--req", "CONC-007", "--req", "CONC-008", "--json", str(out))
        verdicts[spec] = {r["id"]: (r["verdict"], r.get("blocked_by")) for r in json.loads(out.read_text())["requirements"]}
    assert verdicts["tests.fakes.broken:interactive_together"] == {"CONC-007": ("fail", []), "CONC-008": ("blocked", ["CONC-007"])}
    assert verdicts["conformance.selftest.mutants.tools:interactive_spec_honoured"]["CONC-008"][0] == "fail"
