"""The harness itself: runner (timeouts, adapter errors, malformed results, a blocked loop),
adapter loading, verdicts, reports, the pytest plugin, and certify() in-process against the
fake kernel, broken wrappers around it, and the reference kernel when it is there."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from conformance import certify  # noqa: E402
from conformance.errors import ConformanceFailure, HarnessError, UsageError  # noqa: E402
from conformance.harness.loading import load_adapter  # noqa: E402
from conformance.report.model import Report  # noqa: E402
from conformance.report.writers import to_junit, to_markdown, write_reports  # noqa: E402
from conformance.harness.runner import PortalRunner, run_sync  # noqa: E402
from conformance.boundary.scenario import Scenario  # noqa: E402
from conformance.report.verdicts import Check, ReqInfo, compute  # noqa: E402
from tests.fakes import broken  # noqa: E402
from tests.fakes.fake_kernel import FakeAdapter  # noqa: E402

SMOKE = ["DONE-001", "LOOP-013", "TOOL-003", "CONC-001", "TURN-001"]
HAS_REFERENCE = importlib.util.find_spec("reference_kernel.adapter") is not None


def scenario(**fields) -> Scenario:
    base = {"name": "t", "profile": "kernel", "model": {"responses": [{"text": "hi"}]}}
    return Scenario.model_validate({**base, **fields})


# --------------------------------------------------------------------------- runner


def test_runner_ok() -> None:
    run = run_sync(FakeAdapter(), scenario(), backend="trio")
    assert run.ok and run.result is not None
    assert run.result.outcomes[0].subtype == "success"
    assert [e["kind"] for e in run.log][:2] == ["model_request", "model_response"]


def test_runner_adapter_raises_is_an_error_not_a_failure() -> None:
    run = run_sync(broken.Raising(FakeAdapter()), scenario())
    assert run.error and "RuntimeError: adapter bug" in run.error
    assert not run.timed_out and run.result is None


def test_runner_timeout_is_a_kernel_failure_with_diagnostic() -> None:
    run = run_sync(broken.Hanging(FakeAdapter()), scenario(timeout_s=0.2))
    assert run.timed_out and run.error is None
    assert "did not finish" in run.diagnostic and "last events" in run.diagnostic


def test_runner_reports_in_flight_calls() -> None:
    s = scenario(model={"responses": [{"text": "partial", "block_until_cancelled": True}]}, timeout_s=0.2)
    run = run_sync(FakeAdapter(), s)
    assert run.timed_out and "model call #0 (blocked until cancelled)" in run.diagnostic


def test_runner_malformed_result_names_the_field() -> None:
    run = run_sync(broken.Malformed(FakeAdapter()), scenario())
    assert run.error and "outcomes.0.message" in run.error


def test_runner_unsupported() -> None:
    run = run_sync(broken.UnsupportedAll(FakeAdapter()), scenario())
    assert run.unsupported and run.error is None


def test_runner_missing_canceller_is_an_adapter_error() -> None:
    class NoCanceller(broken.Wrapper):
        async def run(self, s, doubles):
            doubles.register_canceller = lambda *a: None
            return await self.inner.run(s, doubles)

    s = scenario(
        tools=[{"name": "t"}],
        model={"responses": [{"tool_calls": [{"id": "c1", "name": "t"}]}, {"text": "x"}]},
        cancel={"at": "tool", "call_id": "c1"},
    )
    run = run_sync(NoCanceller(FakeAdapter()), s)
    assert run.error and "no canceller" in run.error


def test_backstop_reports_a_kernel_that_blocks_the_event_loop() -> None:
    adapter = broken.Blocking(FakeAdapter())
    adapter.seconds = 1.2
    runner = PortalRunner().start()
    runner.grace_s = 0.3
    try:
        run = runner.run(adapter, scenario(timeout_s=0.2))
        assert run.timed_out and "blocked the event loop" in run.diagnostic
        again = runner.run(FakeAdapter(), scenario())  # a fresh loop runs the next scenario
        assert again.ok and runner.hung
    finally:
        runner.stop()


# --------------------------------------------------------------------------- loading


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nomodule_xyz.adapter:factory", "module 'nomodule_xyz' not found"),
        ("tests.fakes.broken:nope", "has no attribute 'nope'"),
        ("tests.fakes.broken:factory_raises", "the factory raised ValueError: no kernel configured"),
        ("tests.fakes.broken:not_an_adapter", "has no 'info'"),
        ("tests.fakes.broken:not_callable", "is not callable"),
        ("just-a-name", "pkg.module:factory"),
    ],
)
def test_loading_errors_are_one_line(spec: str, words: str) -> None:
    with pytest.raises(UsageError) as exc:
        load_adapter(spec)
    assert words in str(exc.value) and "\n" not in str(exc.value)


# --------------------------------------------------------------------------- verdicts


def _req(rid: str, **kw) -> ReqInfo:
    return ReqInfo(id=rid, profiles=["kernel"], statement="s" * 10, **kw)


def test_verdict_rules_and_exit_codes() -> None:
    reqs = [
        _req("A-001"),
        _req("A-002"),
        _req("A-003"),
        _req("A-004"),
        _req("A-005", level="SHOULD", capability="max_cost_usd"),
        _req("A-006", testability="untestable", untestable_reason="not observable"),
        _req("A-007", level="SHOULD", capability="soft_limits"),
        ReqInfo(id="B-001", profiles=["commonagent"]),
    ]
    checks = [
        Check(["A-001"], "f", "s1", "pass"),
        Check(["A-001", "A-002"], "f", "s2", "error", "boom"),
        Check(["A-002", "A-003"], "f", "s3", "fail", "expected x / observed y"),
        Check(["A-003"], "f", "s4", "incomplete"),
        Check(["A-007"], "f", "s5", "fail", "bad"),
    ]
    v = compute(reqs, checks, capabilities=["soft_limits"], profiles=["kernel"])
    got = {r.id: r.verdict for r in v.requirements}
    assert got == {
        "A-001": "error",
        "A-002": "error",
        "A-003": "fail",
        "A-004": "incomplete",
        "A-005": "not-offered",
        "A-007": "fail",
    }
    assert [u.id for u in v.untestable] == ["A-006"]
    assert next(r for r in v.requirements if r.id == "A-004").message == "no check ran"
    assert v.exit_code == 1 and v.summary["error"] == 2
    # A failing SHOULD alone: warning (0) unless strict (1); an error alone: 3.
    should_only = compute(reqs, checks, capabilities=["soft_limits"], profiles=["kernel"], selected_ids=["A-007"])
    assert should_only.exit_code == 0
    assert compute(reqs, checks, capabilities=["soft_limits"], profiles=["kernel"], selected_ids=["A-007"], strict=True).exit_code == 1
    assert compute(reqs, checks, capabilities=[], profiles=["kernel"], selected_ids=["A-001"]).exit_code == 3


def test_not_offered_checks_do_not_count_as_a_pass() -> None:
    v = compute([_req("A-001")], [Check(["A-001"], "f", "s", "not-offered", "not offered")], capabilities=[], profiles=["kernel"])
    assert v.requirements[0].verdict == "incomplete"


# --------------------------------------------------------------------------- reports


def _sample_report() -> Report:
    from conformance.report.model import CheckResult, KernelInfo, RequirementResult, SuiteInfo, UntestableEntry

    return Report(
        suite=SuiteInfo(version="0.1.0", catalog_version="x"),
        kernel=KernelInfo(name="k", version="1", profiles=["kernel"]),
        profiles=["kernel"],
        requirements=[
            RequirementResult(id="A-001", level="MUST", verdict="pass", checks=[CheckResult(feature="f", scenario="s", outcome="pass")]),
            RequirementResult(
                id="A-002", level="MUST", verdict="fail",
                checks=[CheckResult(feature="f", scenario="s2", outcome="fail", message="x: expected 1 / observed 2 <&>")],
            ),
            RequirementResult(id="A-003", level="SHOULD", verdict="not-offered", message="capability c not declared"),
        ],
        untestable=[UntestableEntry(id="A-004", reason="r")],
        summary={"pass": 1, "fail": 1, "not-offered": 1, "incomplete": 0, "error": 0},
        exit_code=1,
    )


def test_report_writers(tmp_path: Path) -> None:
    report = _sample_report()
    paths = write_reports(
        report, json_path=str(tmp_path / "r.json"), junit_path=str(tmp_path / "r.xml"), markdown_path=str(tmp_path / "r.md")
    )
    assert len(paths) == 3 and sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.md", "r.xml"]
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(json.loads((tmp_path / "r.json").read_text()), schema)
    suite = ET.fromstring((tmp_path / "r.xml").read_text()).find("testsuite")
    cases = {c.get("name").split()[0]: c for c in suite.findall("testcase")}
    assert set(cases) == {"A-001", "A-002", "A-003", "A-004"}
    assert {c.get("classname") for c in cases.values()} == {"A"}  # the area, not the level
    assert "expected 1 / observed 2" in cases["A-002"].find("failure").get("message")
    assert cases["A-003"].find("skipped").get("message") == "not offered: capability c not declared"
    # The suite's counts are those of the testcases it holds (untestable ones included).
    assert suite.get("tests") == str(len(suite.findall("testcase"))) == "4"
    assert suite.get("skipped") == str(len(suite.findall("testcase/skipped"))) == "2"
    assert suite.get("failures") == "1" and suite.get("errors") == "0"
    md = (tmp_path / "r.md").read_text()
    assert "| A-002 | MUST | fail |" in md and "NOT conformant" in md
    assert to_junit(report) == (tmp_path / "r.xml").read_text() and to_markdown(report) == md


# --------------------------------------------------------------------------- plugin


def _plugin_args() -> list[str]:
    # An inner session's unraisable-exception plugin ends with full garbage collections of this
    # whole test session's heap (~0.3 s each session); without it, an unraisable exception of
    # the inner session reaches this session's own hook instead (and fails here just the same).
    return ["-p", "no:unraisableexception"] + ([] if _autoloaded() else ["-p", "conformance.harness.plugin"])


def test_plugin_is_inert_without_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert True\n")
    code = pytest.main([str(tmp_path), "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *_plugin_args()])
    assert code == 0
    assert "agent kernel conformance" not in capsys.readouterr().out


def test_suite_without_kernel_skips_everything(capsys: pytest.CaptureFixture[str]) -> None:
    suite = ROOT / "conformance" / "suite"
    code = pytest.main(
        ["--pyargs", "conformance.suite", "-c", str(suite / "pytest.ini"), "--rootdir", str(suite), "-q", "-p", "no:cacheprovider", *_plugin_args()]
    )
    out = capsys.readouterr().out
    assert code in (0, 5), out
    assert "failed" not in out and "error" not in out


def test_new_steps_module_is_picked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.steps as steps

    (tmp_path / "zz_area.py").write_text(
        "from pytest_bdd import then\n\n@then('the zz area step holds')\ndef _zz(akc):\n    \"\"\"A test step.\"\"\"\n"
    )
    monkeypatch.setattr(steps, "__path__", [*steps.__path__, str(tmp_path)])
    namespace: dict = {}
    steps.export_steps(namespace)
    names = [n for n in namespace if n.startswith("pytestbdd_stepdef_")]
    assert any("the zz area step holds" in n for n in names)
    assert any("the kernel runs" in n for n in names) and "akc" in namespace
    sys.modules.pop("conformance.steps.zz_area", None)


def _autoloaded() -> bool:
    from conformance.harness.certify import _plugin_autoloaded

    return _plugin_autoloaded()


def test_async_step_is_rejected() -> None:
    from conformance.harness.plugin import pytest_bdd_before_step_call

    async def step_func() -> None: ...

    class Step:
        keyword, name = "Then", "x"

    with pytest.raises(HarnessError, match="async def"):
        pytest_bdd_before_step_call(None, None, None, Step(), step_func, {})


def test_item_failures_are_classified() -> None:
    assert issubclass(ConformanceFailure, AssertionError)
    assert str(ConformanceFailure("calls", [1], [2])) == "calls: expected [1] / observed [2]"


# --------------------------------------------------------------------------- certify, in-process


def test_certify_fake_kernel_passes_smoke() -> None:
    report = certify("tests.fakes.fake_kernel:factory", smoke=True)
    assert report.verdicts() == dict.fromkeys(SMOKE, "pass"), report.failing()
    assert report.exit_code == 0
    assert report.kernel.name == "fake-kernel" and report.profiles == ["kernel", "commonagent"]


def test_certify_accepts_an_adapter_object_and_a_profile() -> None:
    report = certify(FakeAdapter(), profile="commonagent", smoke=True)
    # the kernel smoke scenarios do not run, and kernel requirements are not reported
    assert report.verdicts() == {"TURN-001": "pass"} and report.profiles == ["commonagent"]


def test_certify_raising_adapter_gives_errors_exit_3() -> None:
    report = certify(broken.Raising(FakeAdapter()), reqs=["DONE-001", "TURN-001"], smoke=True)
    assert set(report.verdicts().values()) == {"error"} and report.exit_code == 3
    assert "adapter bug" in report.get("DONE-001").checks[0].message


def test_certify_hanging_adapter_fails_within_timeout() -> None:
    report = certify(broken.Hanging(FakeAdapter()), reqs=["DONE-001"], timeout_cap_s=0.3, smoke=True)
    assert report.verdicts() == {"DONE-001": "fail"} and report.exit_code == 1
    assert "did not finish" in report.get("DONE-001").checks[0].message


def test_certify_unsupported_is_incomplete() -> None:
    report = certify(broken.UnsupportedAll(FakeAdapter()), reqs=["DONE-001"], smoke=True)
    assert report.verdicts() == {"DONE-001": "incomplete"} and report.exit_code == 3


@pytest.mark.parametrize("inner", ["fake", pytest.param("reference", marks=pytest.mark.skipif(not HAS_REFERENCE, reason="no reference adapter"))])
def test_certify_reordering_wrapper_fails_ordered_results(inner: str) -> None:
    adapter = FakeAdapter() if inner == "fake" else load_adapter("reference_kernel.adapter:factory")
    report = certify(broken.Reordering(adapter), reqs=["TOOL-003"], backend="trio", smoke=True)
    assert report.get("TOOL-003").verdict == "fail" and report.exit_code == 1
    assert 'expected ["a1", "a2"] / observed ["a2", "a1"]' in report.get("TOOL-003").checks[0].message


@pytest.mark.skipif(not HAS_REFERENCE, reason="no reference adapter")
def test_certify_reference_kernel_passes_smoke() -> None:
    report = certify("reference_kernel.adapter:factory", smoke=True)
    assert report.verdicts() == dict.fromkeys(SMOKE, "pass"), report.failing()


@pytest.mark.skipif(not HAS_REFERENCE, reason="no reference adapter")
def test_certify_again_in_the_same_process_runs_the_scenarios_of_its_own_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The feature module builds only the selected scenarios when it is imported, once per
    process: a later run wanting others gets it imported again (it got "no check ran" before)."""
    features = "conformance.suite.test_features"
    monkeypatch.delitem(sys.modules, features, raising=False)  # this session's is put back after
    assert certify("reference_kernel.adapter:factory", reqs=["LOOP-001"]).verdicts() == {"LOOP-001": "pass"}
    report = certify("reference_kernel.adapter:factory", reqs=["TOOL-004", "LOOP-005"])
    assert report.verdicts() == {"TOOL-004": "pass", "LOOP-005": "pass"}, report.failing()
    kept = sys.modules[features]
    assert kept.BUILT_FOR == {"TOOL-004", "LOOP-005"}
    assert certify("reference_kernel.adapter:factory", reqs=["LOOP-005", "TOOL-004"]).verdicts() == {"TOOL-004": "pass", "LOOP-005": "pass"}
    assert sys.modules[features] is kept  # the same selection reuses it
    assert certify("reference_kernel.adapter:factory", reqs=["TOOL-004"]).verdicts() == {"TOOL-004": "pass"}


def test_certify_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown requirement id"):
        certify(FakeAdapter(), reqs=["NOPE-001"])
    with pytest.raises(UsageError, match="unknown profile"):
        certify(FakeAdapter(), profile="both-ish")


def test_step_vocabulary_against_the_fake_kernel() -> None:
    from conformance.harness.certify import _Collector

    vocab = ROOT / "tests" / "fakes" / "vocab"
    collector = _Collector()
    code = pytest.main(
        [str(vocab / "run_vocabulary.py"), "-c", str(vocab / "pytest.ini"), "--rootdir", str(vocab), "-q", "-p", "no:cacheprovider",
         "--kernel", "tests.fakes.fake_kernel:factory", *_plugin_args()],
        plugins=[collector],
    )
    report = collector.report
    assert report is not None, code
    got = {r.id: (r.verdict, r.checks[0].message if r.checks else None) for r in report.requirements if r.checks}
    assert got["DONE-001"] == ("pass", None)
    assert got["LOOP-001"] == ("fail", 'model calls: expected 5 / observed 1 (at step: Then the model was called 5 times)')
    assert got["LOOP-002"][0] == "error" and "Step definition is not found" in got["LOOP-002"][1]
    assert got["STOP-004"] == ("pass", None)
    # a failed "must meet" is concurrency's subject (CONC-001): a CONC-002 check is blocked by it
    assert got["CONC-002"][0] == "blocked" and "blocked by CONC-001: calls x1 and never did not run concurrently" in got["CONC-002"][1]
    assert code == report.exit_code == 1


def test_a_wrong_type_inside_a_kernel_record_is_kept_for_the_check_that_reads_it() -> None:
    """docs/adapter.md, "Wrong types": a field of a record the kernel produced with a wrong type
    (or missing) is named and kept as made; a malformed wrapping is the adapter's error."""
    import pytest as _pytest

    from conformance.harness.runner import lenient_result

    call = {"session_id": "s", "call_id": "c1", "name": "t", "args": {}, "result": "r", "is_error": False}
    raw = {"journal": {"tool_calls": [dict(call, approval=True), dict(call, call_id="c2")], "sessions": [{"profile_id": "p"}]}}
    result, malformed = lenient_result(raw)
    assert result.journal.tool_calls[0].approval is True and result.journal.tool_calls[1].call_id == "c2"
    assert any(m.startswith("journal.tool_calls[0].approval: ") and "True" in m for m in malformed)
    assert any(m.startswith("journal.sessions[0].id: ") for m in malformed)
    assert lenient_result({"journal": {"tool_calls": [call]}}) == (lenient_result({"journal": {"tool_calls": [call]}})[0], [])
    for wrapping in ({"outcomes": "none"}, {"journal": {"tool_calls": ["not an object"]}}, ["a list"]):
        with _pytest.raises(ValueError, match="malformed RunResult|not a RunResult"):
            lenient_result(wrapping)
