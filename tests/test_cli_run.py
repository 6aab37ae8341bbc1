"""``akc run``: exit codes, report files, one-line usage errors, and the same verdicts as the
pytest plugin. Runs go through the ``akc`` entry point (``conformance.cli.main``: its exit code,
stdout and stderr) in the test interpreter (tests/conftest.py ``akc_here``); usage errors, which
stop before pytest starts, through the typer app. The real process (``python -m conformance``) is
tested by tests/test_cli_catalog.py, tests/test_zoo.py and tests/test_jobs.py."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonschema
import pytest
import typer
from typer.testing import CliRunner

from conformance.cli import run as cli_run

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the fakes are imported as tests.fakes.*
    sys.path.insert(0, str(ROOT))
#: The requirement ids the smoke feature checks.
SMOKE = ["DONE-001", "LOOP-013", "TOOL-003", "CONC-001", "TURN-001"]
FAKE = "tests.fakes.fake_kernel:factory"


@pytest.fixture
def akc(akc_here: Callable[..., Any]) -> Callable[..., Any]:
    """``akc run ARGS``."""
    return lambda *args: akc_here("run", *args)


def test_run_writes_valid_reports_and_exits_0(tmp_path: Path, akc: Callable[..., Any]) -> None:
    out = akc("--adapter", FAKE, "--smoke", "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
              "--markdown", str(tmp_path / "r.md"), "--backend", "trio", "--all")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "conformant" in out.stdout and "DONE-001" in out.stdout  # --all: passing rows too
    assert "passed" not in out.stdout  # pytest's own output is captured without -v
    data = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(data, json.loads((ROOT / "schemas" / "report.schema.json").read_text()))
    assert {r["id"]: r["verdict"] for r in data["requirements"]} == dict.fromkeys(SMOKE, "pass")
    assert data["exit_code"] == 0 and data["kernel"]["name"] == "fake-kernel"
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert sorted(c.get("name").split()[0] for c in suite.findall("testcase")) == sorted(SMOKE)
    assert "| pass | 5 |" in (tmp_path / "r.md").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_run_reordering_adapter_exits_1_and_plugin_agrees(tmp_path: Path, akc: Callable[..., Any]) -> None:
    out = akc("--adapter", "tests.fakes.broken:reordering", "--smoke", "--json", str(tmp_path / "cli.json"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "TOOL-003" in out.stdout and "fail" in out.stdout and "NOT conformant" in out.stdout
    # The same run through the pytest plugin (in-process, to keep the test fast).
    from conformance.harness.certify import _plugin_autoloaded

    suite = ROOT / "conformance" / "suite"
    code = pytest.main(
        ["--pyargs", "conformance.suite", "-c", str(suite / "pytest.ini"), "--rootdir", str(suite),
         "-p", "no:cacheprovider", "-q", "--kernel", "tests.fakes.broken:reordering", "--akc-smoke",
         "--akc-json", str(tmp_path / "plugin.json"),
         *([] if _plugin_autoloaded() else ["-p", "conformance.harness.plugin"])]
    )
    assert code == 1

    def verdicts(name: str) -> dict[str, str]:
        return {r["id"]: r["verdict"] for r in json.loads((tmp_path / name).read_text())["requirements"]}

    assert verdicts("cli.json") == verdicts("plugin.json")
    assert verdicts("cli.json")["TOOL-003"] == "fail"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None: ...

    cli_run.register(app)
    return app


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--req", "NOPE-001"], "unknown requirement id"),
        (["--req", "lowercase"], "not a requirement id"),
        (["--adapter", "no_such_module_q:factory"], "module 'no_such_module_q' not found"),
        (["--adapter", "tests.fakes.broken:factory_raises"], "the factory raised ValueError"),
        (["--profile", "everything"], "unknown profile"),
        (["--backend", "curio"], "unknown backend"),
    ],
)
def test_usage_errors_exit_2_with_one_line(app: typer.Typer, args: list[str], words: str) -> None:
    result = CliRunner().invoke(app, ["run", "--adapter", FAKE, *args])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in result.output


def test_profile_not_claimed_is_a_usage_error(app: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.fake_kernel import FakeAdapter

    monkeypatch.setattr(FakeAdapter, "info", FakeAdapter.info.model_copy(update={"profiles": ["kernel"]}))
    result = CliRunner().invoke(app, ["run", "--adapter", FAKE, "--profile", "commonagent"])
    assert result.exit_code == 2 and "does not claim the commonagent profile" in result.output


@pytest.fixture
def _akc_cmd(akc_here: Callable[..., Any]) -> Callable[..., Any]:
    return akc_here


def test_version_help_and_unknown_flags(_akc_cmd: Callable[..., Any]) -> None:
    from conformance import __version__

    version = _akc_cmd("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"akc {__version__}"
    assert "stdio:CMD" in _akc_cmd("run", "--help").stdout
    kernel = _akc_cmd("run", "--kernel", "x")
    assert kernel.returncode == 2 and "did you mean --adapter?" in kernel.stderr
    unrelated = _akc_cmd("run", "--version")
    assert unrelated.returncode == 2 and "--json" not in unrelated.stderr and "--verbose" not in unrelated.stderr
    bad = _akc_cmd("run", "--adapter", "just-a-name")
    assert bad.returncode == 2 and "stdio:CMD" in bad.stderr and "pkg.module:factory" in bad.stderr


def test_show_lists_the_checks_of_a_requirement(_akc_cmd: Callable[..., Any]) -> None:
    out = _akc_cmd("show", "CONC-001")
    assert out.returncode == 0 and "checked by:" in out.stdout
    assert "scenario  smoke.feature / " in out.stdout and "property  test_prop_conc / " in out.stdout
    data = json.loads(_akc_cmd("show", "CONC-001", "--json").stdout)
    assert {c["kind"] for c in data["checked_by"]} == {"scenario", "property"}


def test_plain_output_collapses_identical_errors_and_says_where_to_look(tmp_path: Path, akc: Callable[..., Any]) -> None:
    out = akc("--adapter", "tests.fakes.broken:raising", "--smoke", "--junit", str(tmp_path / "r.xml"))
    assert out.returncode == 3, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "─" not in out.stdout and "│" not in out.stdout  # not a terminal: no box art
    assert sum("the same adapter error in 5 requirements" in ln for ln in lines) == 1
    assert out.stdout.count("RuntimeError: adapter bug") == 1
    assert lines[-3].startswith("legend: ") and "adapter error in 5 requirements" in lines[-2]
    assert lines[-1].startswith("next: `akc show ID`")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite.get("tests") == str(len(suite.findall("testcase"))) and suite.get("errors") == "5"
    assert {c.get("classname") for c in suite.findall("testcase")} <= {"LOOP", "CONC", "DONE", "TURN", "TOOL"}


def test_honest_labels_for_a_selection_and_a_non_gating_failure() -> None:
    from conformance.report.model import KernelInfo, Report, RequirementResult, SuiteInfo, status_label

    def report(*reqs: RequirementResult, selected: list[str] | None = None, code: int = 0) -> Report:
        return Report(suite=SuiteInfo(version="0"), kernel=KernelInfo(name="k", version="1"), requirements=list(reqs),
                      exit_code=code, selected=selected)

    ok = RequirementResult(id="LOOP-001", level="MUST", gating=True, verdict="pass")
    should = RequirementResult(id="COST-010", level="MAY", verdict="fail")
    assert status_label(report(ok, should)) == "conformant (1 non-gating failure)"
    assert status_label(report(ok, selected=["LOOP-001"])) == "conformant on the 1 selected requirement"


def test_every_command_is_mapped_to_its_module() -> None:
    """``akc CMD`` imports only CMD's module: the map must name every command (a missing one
    would still work, by importing them all, only slower)."""
    from conformance import cli

    cli._registered = False
    cli._register()
    names = {c.name for c in cli.app.registered_commands} | {g.name for g in cli.app.registered_groups}
    assert names == set(cli.COMMANDS)
