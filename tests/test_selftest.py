"""The suite's self-test as a CI gate: every mutant of the reference kernel is killed by the
requirement it breaks, every legal variant passes, every gating requirement has a mutant.

The matrix test runs ``akc selftest``'s engine (worker processes, twice the cores); a check that stops
catching its mutant, or starts rejecting an allowed variant, fails here with the matrix.
"""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from conformance.catalog.requirements import load_catalog
from conformance.harness.loading import load_adapter
from conformance.selftest.registry import entries
from conformance.selftest.runner import job_for, render, run_selftest, uncovered


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


def test_every_mutant_names_a_gating_requirement_of_its_profile() -> None:
    catalog = load_catalog()
    for e in entries("mutant"):
        req = catalog.get(e.breaks or "")
        assert e.profile in req.profiles, (e.name, e.breaks, e.profile)
        assert req.gating, (e.name, e.breaks)


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


def test_selftest_matrix() -> None:
    matrix = run_selftest()
    assert matrix.ok, render(matrix)
    assert matrix.summary_line().startswith("mutants killed ")
