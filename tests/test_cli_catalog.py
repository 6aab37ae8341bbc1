"""``akc list`` / ``akc show`` through the real console entry, errors included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conformance import cli
from conformance.catalog.requirements import load_catalog

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    if not any(c.name == "list" for c in cli.app.registered_commands):
        cli._register()
    # Wide enough that rich does not fold the id column.
    return CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})


def _run(runner: CliRunner, *args: str):
    return runner.invoke(cli.app, list(args))


def _one_line_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("akc: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.output


def test_list_prints_a_table_of_every_requirement(runner: CliRunner) -> None:
    result = _run(runner, "list")
    assert result.exit_code == 0, result.output
    for req in load_catalog().requirements:
        assert req.id in result.stdout
    assert "MUST NOT" in result.stdout and "commonagent" in result.stdout


def test_list_filters_by_profile_and_level(runner: CliRunner) -> None:
    result = _run(runner, "list", "--profile", "kernel", "--level", "must-not")
    assert result.exit_code == 0, result.output
    expected = [
        r.id for r in load_catalog().for_profile("kernel") if r.level == "MUST NOT"
    ]
    assert expected
    for rid in expected:
        assert rid in result.stdout
    assert "TURN-001" not in result.stdout and "LOOP-001" not in result.stdout


def test_list_json_is_the_catalog(runner: CliRunner) -> None:
    result = _run(runner, "list", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == load_catalog().model_dump(mode="json")


def test_list_json_respects_filters(runner: CliRunner) -> None:
    result = _run(runner, "list", "--json", "--profile", "commonagent", "--level", "DESCRIBED")
    data = json.loads(result.stdout)
    assert data["requirements"]
    assert all("commonagent" in r["profiles"] for r in data["requirements"])
    assert {r["level"] for r in data["requirements"]} == {"DESCRIBED"}


def test_show_prints_one_requirement_with_its_source(runner: CliRunner) -> None:
    req = load_catalog().get("BOUND-009")
    result = _run(runner, "show", "bound-009")
    assert result.exit_code == 0, result.output
    assert req.statement in result.stdout
    assert req.source.file in result.stdout and req.source.section in result.stdout
    assert "BUDGET-001" in result.stdout  # its conflict


def test_show_json(runner: CliRunner) -> None:
    result = _run(runner, "show", "COST-005", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    checks = data.pop("checked_by")  # the scenarios and properties that check it
    data.pop("dimensions")  # its input dimensions' grid (tests/test_dimensions.py)
    assert data == load_catalog().get("COST-005").model_dump(mode="json")
    assert checks and all(c["kind"] in ("scenario", "property") for c in checks)


def test_unknown_id_is_a_usage_error(runner: CliRunner) -> None:
    _one_line_error(_run(runner, "show", "NOPE-999"), "NOPE-999")


def test_unknown_profile_is_a_usage_error(runner: CliRunner) -> None:
    _one_line_error(_run(runner, "list", "--profile", "hermes"), "hermes", "kernel")


def test_unknown_level_is_a_usage_error(runner: CliRunner) -> None:
    _one_line_error(_run(runner, "list", "--level", "OUGHT"), "OUGHT", "MUST NOT")


def test_real_entry_point_runs_as_a_module() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run(
        [sys.executable, "-m", "conformance", "show", "DOOM-003"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "DOOM-003" in ok.stdout


def test_a_usage_error_through_the_entry_point_is_one_line_exit_2(akc_here: Any) -> None:
    """``conformance.cli.main`` (what ``python -m conformance`` runs, above) in this interpreter
    (tests/inprocess.py): the exit code and the one line on stderr are no matter of the process."""
    bad = akc_here("list", "--profile", "x")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "unknown profile" in bad.stderr
