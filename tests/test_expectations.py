"""Expectation files (``akc run --expect`` / ``--write-expectations``, ``--akc-expect``): known
failures do not fail the run, new ones do, stale entries are reported (and fail with --strict),
a bad file is a usage error. Runs go through the ``akc`` entry point (``conformance.cli.main``) in
this interpreter (tests/conftest.py ``akc_here``: exit code, stdout and stderr as a subprocess
gives them, without a fresh interpreter's start-up); the pytest plugin's options likewise through
``pytest.main``."""

from __future__ import annotations

import contextlib
import io
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from conformance.errors import UsageError
from conformance.report import expectations
from conformance.report.model import CheckResult, Report, RequirementResult, SuiteInfo, KernelInfo

ROOT = Path(__file__).resolve().parents[1]
REORDERING = "tests.fakes.broken:reordering"  # fails TOOL-003 in the smoke set
FAKE = "tests.fakes.fake_kernel:factory"  # passes the smoke set


@pytest.fixture
def akc(akc_here: Callable[..., Any]) -> Callable[..., Any]:
    return akc_here


def test_write_then_expect_turns_known_failures_into_exit_0_and_marks_them(tmp_path: Path, akc: Callable[..., Any]) -> None:
    exp = tmp_path / "akc-expectations.toml"
    first = akc("run", "--adapter", REORDERING, "--smoke", "--write-expectations", str(exp))
    assert first.returncode == 1, first.stdout + first.stderr  # writing does not hide the verdict
    data = tomllib.loads(exp.read_text())
    assert data["format"] == 1 and data["suite_version"] and data["catalog_version"]
    assert data["expected"]["TOOL-003"]["verdict"] == "fail" and data["expected"]["TOOL-003"]["reason"]
    assert exp.read_text().startswith("# Expected results")  # commented for the reader

    files = [str(tmp_path / n) for n in ("r.json", "r.xml", "r.md")]
    second = akc("run", "--adapter", REORDERING, "--smoke", "--expect", str(exp),
                 "--json", files[0], "--junit", files[1], "--markdown", files[2])
    assert second.returncode == 0, second.stdout + second.stderr
    assert "fail (expected)" in second.stdout and "not conformant — no new failures (" in second.stdout
    report = json.loads(Path(files[0]).read_text())
    tool = next(r for r in report["requirements"] if r["id"] == "TOOL-003")
    assert tool["verdict"] == "fail" and tool["expected"] is True
    assert "TOOL-003" in report["expectations"]["expected"] and report["exit_code"] == 0
    assert report["expectations"]["unexpected"] == report["expectations"]["stale"] == []
    suite = ET.parse(files[1]).getroot().find("testsuite")
    case = next(c for c in suite.findall("testcase") if c.get("name").startswith("TOOL-003 "))
    assert case.find("failure") is None and case.find("skipped").get("message").startswith("expected fail")
    assert suite.get("tests") == str(len(suite.findall("testcase")))
    assert suite.get("skipped") == str(len(suite.findall("testcase/skipped")))
    assert "| TOOL-003 | DESCRIBED | fail (expected) |" in Path(files[2]).read_text()


def test_a_new_failure_exits_1_and_is_named(tmp_path: Path, akc: Callable[..., Any]) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text('format = 1\n\n[expected.LOOP-001]\nverdict = "fail"\n')
    out = akc("run", "--adapter", REORDERING, "--smoke", "--expect", str(exp))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "new: TOOL-003: fail" in out.stdout
    assert "not checked in this run (other profile, --req or --smoke): LOOP-001" in out.stdout


def test_stale_entries_warn_and_fail_only_with_strict(tmp_path: Path, akc: Callable[..., Any]) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text('format = 1\n\n[expected.TOOL-003]\nverdict = "fail"\nreason = "was broken"\n')
    warn = akc("run", "--adapter", FAKE, "--smoke", "--expect", str(exp))
    assert warn.returncode == 0, warn.stdout + warn.stderr
    assert "stale" in warn.stdout and "TOOL-003" in warn.stdout
    strict = akc("run", "--adapter", FAKE, "--smoke", "--expect", str(exp), "--strict")
    assert strict.returncode == 1 and "stale expectation" in strict.stdout


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[expected.ZZZ-999]\nverdict = "fail"\n', "unknown requirement id ZZZ-999"),
        ('[expected.LOOP-001]\nverdict = "broken"\n', "unknown verdict 'broken'"),
        ('[expected.LOOP-001]\nverdict = "pass"\n', "expects nothing"),
        ("[expected.LOOP-001\n", "not valid TOML"),
        ("format = 7\n", "format 7 is not supported"),
    ],
)
def test_a_bad_expectations_file_is_a_usage_error(tmp_path: Path, text: str, words: str) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(text)
    from conformance.catalog.requirements import load_catalog

    with pytest.raises(UsageError) as exc:
        expectations.load(exp, load_catalog().ids())
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_id_through_the_entry_point_exits_2_before_running(tmp_path: Path, akc: Callable[..., Any]) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text('[expected.ZZZ-999]\nverdict = "fail"\n')
    out = akc("run", "--adapter", FAKE, "--smoke", "--expect", str(exp))
    assert out.returncode == 2 and "unknown requirement id ZZZ-999" in out.stderr and "Traceback" not in out.stderr
    missing = akc("run", "--adapter", FAKE, "--expect", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and "cannot read it" in missing.stderr


def test_the_pytest_plugin_has_the_same_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest --pyargs conformance.suite --kernel ...`` as a user runs it, through ``pytest.main``
    in this interpreter (as tests/test_cli_run.py runs the plugin), its output captured."""
    from conformance.harness.certify import _plugin_autoloaded

    exp = tmp_path / "e.toml"
    suite = ROOT / "conformance" / "suite"
    base = ["--pyargs", "conformance.suite", "-c", str(suite / "pytest.ini"), "--rootdir", str(suite),
            "-p", "no:cacheprovider", "-q", "--kernel", REORDERING, "--akc-smoke",
            *([] if _plugin_autoloaded() else ["-p", "conformance.harness.plugin"])]
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))

    def plugin_run(*args: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = pytest.main([*base, *args])
        return int(code), out.getvalue()

    wrote, output = plugin_run("--akc-write-expectations", str(exp))
    assert wrote == 1, output[-2000:]
    assert "TOOL-003" in tomllib.loads(exp.read_text())["expected"]
    expect, output = plugin_run("--akc-expect", str(exp))
    assert expect == 0, output[-2000:]
    assert "fail (expected)" in output


def _report(*reqs: RequirementResult) -> Report:
    return Report(suite=SuiteInfo(version="0", catalog_version="c"), kernel=KernelInfo(name="k", version="1"),
                  requirements=list(reqs), exit_code=1)


def _req(rid: str, verdict: str, level: str = "MUST") -> RequirementResult:
    checks = [CheckResult(feature="f", scenario="s", outcome=verdict, message="m")] if verdict != "pass" else []
    return RequirementResult(id=rid, level=level, gating=level == "MUST", verdict=verdict, checks=checks)  # type: ignore[arg-type]


def test_apply_a_verdict_list_accepts_a_result_known_to_vary() -> None:
    entries = expectations.Expectations(path="e.toml", entries={
        "A-001": expectations.Expectation("A-001", ("fail", "pass")),
        "A-002": expectations.Expectation("A-002", ("fail",)),
    })
    passing = expectations.apply(_report(_req("A-001", "pass"), _req("A-002", "fail")), entries, strict=True)
    assert passing.exit_code == 0 and passing.expectations.stale == []  # type: ignore[union-attr]
    erroring = expectations.apply(_report(_req("A-001", "fail"), _req("A-002", "error")), entries)
    assert erroring.exit_code == 3  # listed as fail, now an error: not expected, and never a pass
    assert erroring.expectations.unexpected == ["A-002: error (listed as fail)"]  # type: ignore[union-attr]


def test_rewriting_keeps_a_verdict_list_and_its_reason() -> None:
    previous = expectations.Expectations(path="e.toml", entries={
        "A-001": expectations.Expectation("A-001", ("fail", "error"), "flaky under load")})
    text = expectations.render(_report(_req("A-001", "fail")), previous)
    entry = tomllib.loads(text)["expected"]["A-001"]
    assert entry["verdict"] == ["fail", "error"] and entry["reason"] == "flaky under load"
    assert entry["checks"] == ["f / s"] and entry["fingerprint"].startswith("sha256:")


def test_a_reason_is_kept_whole() -> None:
    long = "word " * 100 + "end"
    req = RequirementResult(id="A-001", level="MUST", gating=True, verdict="fail",
                            checks=[CheckResult(feature="f", scenario="s", outcome="fail", message=long)])
    entry = tomllib.loads(expectations.render(_report(req)))["expected"]["A-001"]
    assert entry["reason"].endswith("word end") and "…" not in entry["reason"]


def test_an_expected_failure_failing_for_another_reason_is_changed(tmp_path: Path, akc: Callable[..., Any]) -> None:
    """Written while TOOL-003 failed by reordering; the kernel now drops a result instead: the same
    requirement fails, for another reason — ``changed``, exit 1 (a warning with --warn-changed)."""
    exp = tmp_path / "e.toml"
    assert akc("run", "--adapter", REORDERING, "--req", "TOOL-003", "--write-expectations", str(exp)).returncode == 1
    entry = tomllib.loads(exp.read_text())["expected"]["TOOL-003"]
    assert entry["checks"] and entry["fingerprint"].startswith("sha256:")
    same = akc("run", "--adapter", REORDERING, "--req", "TOOL-003", "--expect", str(exp))
    assert same.returncode == 0, same.stdout
    assert "0 changed" in same.stdout and "not conformant — no new failures" in same.stdout

    other = akc("run", "--adapter", "tests.fakes.broken:dropping", "--req", "TOOL-003", "--expect", str(exp), "--json", str(tmp_path / "r.json"))
    assert other.returncode == 1, other.stdout + other.stderr
    assert "changed: TOOL-003: " in other.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["expectations"]["changed"] and report["expectations"]["changed"][0].startswith("TOOL-003: ")
    warned = akc("run", "--adapter", "tests.fakes.broken:dropping", "--req", "TOOL-003", "--expect", str(exp), "--warn-changed")
    assert warned.returncode == 0 and "changed: TOOL-003: " in warned.stdout


def test_the_summary_never_says_conformant_with_gating_failures_expected() -> None:
    from conformance.report.model import status_label

    entries = expectations.Expectations(path="e.toml", entries={"A-001": expectations.Expectation("A-001", ("fail",))})
    report = expectations.apply(_report(_req("A-001", "fail"), _req("A-002", "pass")), entries)
    assert report.exit_code == 0
    assert status_label(report) == "not conformant — no new failures (1 expected)"
