"""The suite's self-test as a CI gate: every mutant of the reference kernel is killed by the
requirement it breaks, every legal variant passes, every gating requirement has a mutant.

The matrix test runs ``akc selftest``'s engine (worker processes, twice the cores); a check that stops
catching its mutant, or starts rejecting an allowed variant, fails here with the matrix.
"""

from __future__ import annotations

from collections.abc import Callable

import typer
from typer.testing import CliRunner

from conformance.catalog.requirements import load_catalog
from conformance.harness.loading import load_adapter
from conformance.selftest.registry import entries
from conformance.report.model import Report
from conformance.selftest.runner import JobResult, Row, job_for, render, run_selftest, uncovered


def _app() -> typer.Typer:
    from conformance.cli import selftest as cli_selftest

    app = typer.Typer()
    cli_selftest.register(app)

    @app.command("noop")
    def noop() -> None:  # a second command keeps typer from collapsing the app into one command
        pass

    return app


def test_every_gating_requirement_has_a_mutant() -> None:
    assert uncovered(entries("mutant")) == []


def test_every_mutant_names_requirements_of_its_profile() -> None:
    """Our own mutants break a gating requirement; the blind round's may violate advisory ones
    too (each violation is a real one); a do-nothing mutant names none."""
    catalog = load_catalog()
    for e in entries("mutant"):
        if e.passes_nothing:
            assert not e.killed_by, e.name
            continue
        assert e.killed_by, e.name
        for rid in e.killed_by:
            req = catalog.get(rid)
            assert e.profile in req.profiles, (e.name, rid, e.profile)
        assert catalog.get(e.breaks or "").gating or e.name.startswith(("k_", "a_")), (e.name, e.breaks)


def test_concurrency_and_cancellation_mutants_run_several_times() -> None:
    by_name = {e.name: e for e in entries("mutant")}
    assert by_name["pre_tool_calls_reversed"].runs == 1
    # (a single-fault mutant runs the whole suite once: it names its fault, it does not race)
    assert all(e.runs > 1 for e in by_name.values() if {r.split("-")[0] for r in e.killed_by} & {"CONC", "STOP"} and not e.single_fault)


def test_do_nothing_kernels_are_mutants_of_everything() -> None:
    nulls = [e for e in entries("mutant") if e.passes_nothing]
    assert {e.name for e in nulls} == {"null_empty", "null_completed"}
    assert all(job_for(e).reqs is None for e in nulls)


def test_factories_are_reachable_as_specs() -> None:
    for e in entries():
        adapter = load_adapter(e.spec)
        assert adapter.info.name == f"{e.kind}:{e.name}"


def test_a_mutant_runs_only_its_own_requirements_by_default() -> None:
    e = next(e for e in entries("mutant") if e.name == "pre_tool_calls_reversed")
    assert job_for(e).reqs == ["LOOP-007"]
    assert job_for(e, "full").reqs is None
    assert "LOOP-001" in (job_for(e, "area").reqs or [])


def test_cli_lists_and_refuses_unknown_names() -> None:
    runner = CliRunner()
    listed = runner.invoke(_app(), ["selftest", "--list"])
    assert listed.exit_code == 0
    assert "pre_tool_calls_reversed" in listed.output and "sqlite_journal" in listed.output
    bad = runner.invoke(_app(), ["selftest", "--only", "no_such_mutant"])
    assert bad.exit_code == 2
    assert "unknown mutant or variant" in bad.output
    scope = runner.invoke(_app(), ["selftest", "--scope", "some"])
    assert scope.exit_code == 2


#: A representative sample for the project's tests (the whole matrix runs as its own step of
#: .ci/run, `akc selftest`): one mutant per area and face, two blind-round mutants, a racy mutant
#: (several runs) and one legal variant, a full-suite job (the reference kernel's own full run is
#: tests/test_golden_traces.py and tests/test_cli_run.py). Two workers: the machine's two cores.
#: The do-nothing kernels are certified once per session (tests/conftest.py ``null_report``):
#: tests/test_null_kernel.py checks their reports, and the self-test's verdict on one of them is
#: test_the_selftest_kills_a_do_nothing_kernel below.
SAMPLE = [
    "pre_tool_calls_reversed", "k_pre_tool_call_dedup",
    "a_modify_chain_from_original", "other_limit_wording",
]


def test_selftest_sample() -> None:
    known = {e.name for e in entries()}
    assert set(SAMPLE) <= known, set(SAMPLE) - known
    matrix = run_selftest(names=SAMPLE, workers=2)
    assert all(r.ok for r in matrix.rows), render(matrix)
    assert matrix.summary_line().startswith("mutants killed ")


def test_the_selftest_kills_a_do_nothing_kernel(null_report: Callable[[str], Report]) -> None:
    """The self-test's row for ``null_empty``, judged on its full-suite report: killed because
    not one requirement passes (and a row that passed one would not be)."""
    entry = next(e for e in entries("mutant") if e.name == "null_empty")
    job = job_for(entry)
    assert job.reqs is None and job.spec == entry.spec
    report = null_report("null_empty")
    row = Row(entry, job, JobResult(entry.name, entry.kind, report.exit_code, report.verdicts()))
    assert row.ok and row.killed and row.passed == [] and not row.unstable
    some = dict(report.verdicts(), **{next(iter(report.verdicts())): "pass"})
    assert not Row(entry, job, JobResult(entry.name, entry.kind, 1, some)).killed


def test_one_batch_session_gives_each_job_the_verdicts_of_its_own_run() -> None:
    """The workers certify their jobs in one pytest session (conformance.harness.batch): each job
    gets the verdicts a session of its own gives (certify), and nothing of one job (a not-offered
    skip, a failure) reaches the next."""
    from conformance.harness.batch import run_batch
    from conformance.harness.certify import certify

    jobs = [
        ("conformance.selftest.variants.choices:minimal_capabilities", "kernel", ["BOUND-004", "LOOP-001"], None),
        ("conformance.selftest.mutants.loop:pre_tool_calls_reversed", "kernel", ["LOOP-007"], 2.0),
        ("reference_kernel.adapter:factory", "kernel", ["BOUND-004", "LOOP-001", "LOOP-007"], None),
    ]
    alone = [certify(spec, profile=p, reqs=reqs, timeout_cap_s=cap).verdicts() for spec, p, reqs, cap in jobs]
    batched: list[dict[str, str]] = []
    run_batch(lambda certify: batched.extend(certify(spec, profile=p, reqs=reqs, timeout_cap_s=cap).verdicts()
                                             for spec, p, reqs, cap in jobs))
    assert batched == alone
    assert alone[0]["BOUND-004"] == "not-offered" and alone[2]["BOUND-004"] == "pass"
    assert alone[1]["LOOP-007"] == "fail" and alone[2]["LOOP-007"] == "pass"


# --------------------------------------------------------------------------- one fault, one verdict


def test_every_hook_point_of_both_profiles_has_a_single_fault_mutant() -> None:
    from conformance.boundary.scenario import COMMONAGENT_HOOK_POINTS, KERNEL_HOOK_POINTS

    singles = [e for e in entries("mutant") if e.single_fault]
    described = {e.description.split(" is never")[0] for e in singles}
    assert set(KERNEL_HOOK_POINTS) | set(COMMONAGENT_HOOK_POINTS) <= described
    assert any(e.breaks == "BOUND-008" for e in singles)
    assert all(job_for(e).reqs is None and e.runs == 1 for e in singles)  # the whole suite, once


def test_a_single_fault_mutant_fails_only_what_names_its_fault() -> None:
    entry = next(e for e in entries("mutant") if e.name == "single_fault_kernel_no_plan_ready")
    job = job_for(entry)

    def row(verdicts: dict[str, str]) -> Row:
        return Row(entry, job, JobResult(entry.name, entry.kind, 1, verdicts))

    assert row({"LOOP-009": "fail", "BOUND-001": "blocked", "LOOP-001": "pass"}).ok
    assert row({"LOOP-009": "fail", "GATE-004": "fail"}).ok  # GATE-004 depends on plan-ready
    counted_twice = row({"LOOP-009": "fail", "LOOP-014": "incomplete"})
    assert counted_twice.killed and not counted_twice.ok and counted_twice.others == ["LOOP-014"]
    assert not row({"LOOP-009": "blocked"}).killed


def test_single_fault_mutants_on_the_whole_suite() -> None:
    """Two of them for real (the rest run in `akc selftest`): no hook point plan-ready, and a
    bound that raises. Each fails its own requirement; every other one passes or is blocked."""
    names = ["single_fault_kernel_no_plan_ready", "single_fault_limit_raises"]
    matrix = run_selftest(names=names, workers=2)
    assert all(r.ok for r in matrix.rows), render(matrix)
    by_name = {r.entry.name: r for r in matrix.rows}
    raises = by_name["single_fault_limit_raises"]
    assert raises.result.verdicts["BOUND-008"] == "fail" and {"BOUND-002", "BOUND-013"} <= set(raises.blocked)
    assert by_name["single_fault_kernel_no_plan_ready"].result.verdicts["BOUND-001"] == "blocked"


def test_tag_007_passes_a_random_start_order_every_time() -> None:
    """Issue 21 §2: TAG-007 compares two runs of one scenario whose calls run in parallel; a
    correct kernel that starts them in a random order (variants/start_order.py) passes it in
    every one of 20 runs (compared in start order, it failed about one run in two)."""
    from conformance.harness.batch import run_batch
    from conformance.selftest.variants.start_order import RandomToolStartOrder  # noqa: F401 - registers it

    spec = "conformance.selftest.variants.start_order:random_tool_start_order"
    verdicts: list[str] = []
    run_batch(lambda certify: verdicts.extend(
        certify(spec, profile="commonagent", reqs=["TAG-007"]).verdicts()["TAG-007"] for _ in range(20)))
    assert verdicts == ["pass"] * 20


def test_a_variant_certified_several_times_reruns_the_parallel_checks() -> None:
    """The random-start-order variant runs the full suite once, then the checks involving
    parallel calls again; it passes only when every run passes."""
    entry = next(e for e in entries("variant") if e.name == "random_tool_start_order")
    job = job_for(entry)
    assert job.reqs is None and job.runs > 1
    assert {"TAG-007", "TOOL-001", "CONC-001"} <= set(job.rerun_reqs or [])
    ok = Row(entry, job, JobResult(entry.name, "variant", 0, {}, rerun_exit_codes=[0] * (job.runs - 1)))
    flaky = Row(entry, job, JobResult(entry.name, "variant", 0, {}, rerun_exit_codes=[0, 1] + [0] * (job.runs - 3)))
    assert ok.ok and not flaky.ok


def test_a_run_short_only_of_incomplete_requirements_certifies_them_again_alone() -> None:
    """A variant whose only shortfall is a scenario out of time gets those requirements once more;
    a failing one is never retried (its verdict stands)."""
    from conformance.selftest.runner import Job, JobResult, retry_incomplete

    jobs = [Job("v", "variant", "x:f", None, None), Job("w", "variant", "x:g", None, None)]
    done = {
        "v": JobResult("v", "variant", 3, {"CONC-003": "incomplete", "LOOP-001": "pass"}),
        "w": JobResult("w", "variant", 1, {"CONC-003": "incomplete", "LOOP-001": "fail"}),
    }
    asked: list[Job] = []

    def run(retry: list[Job]) -> dict[str, JobResult]:
        asked.extend(retry)
        return {j.name: JobResult(j.name, j.kind, 0, {"CONC-003": "pass"}) for j in retry}

    retry_incomplete(jobs, done, run)
    assert [(j.name, j.reqs) for j in asked] == [("v", ["CONC-003"])]
    assert done["v"].verdicts == {"CONC-003": "pass", "LOOP-001": "pass"} and done["v"].exit_code == 0
    assert done["w"].verdicts["CONC-003"] == "incomplete" and done["w"].exit_code == 1
