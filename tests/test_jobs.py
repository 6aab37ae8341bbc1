"""``akc run --jobs N`` (issue 17 §3): shards of requirements run at once give the report a serial
run gives; a usage error for N < 1; a shard that dies costs only its own requirements (exit 3);
an interrupted sharded run still exits 130/143 with an "interrupted" report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from conformance.cli import run as cli_run  # noqa: E402
from conformance.harness.shards import Unit, plan, suite_units  # noqa: E402
from conformance.trace.canonical import load  # noqa: E402
from conformance.trace.normalise import UUID  # noqa: E402
from test_zoo import akc, inproc, messages, report, run_case, verdicts  # noqa: E402
from tests.inprocess import alone  # noqa: E402
from tests.sample import SAMPLE, req_args  # noqa: E402

SMOKE = {"DONE-001", "LOOP-013", "TOOL-003", "CONC-001", "TURN-001"}


def comparable(data: dict[str, Any]) -> dict[str, Any]:
    """A report without what differs between two runs of the same kernel: timings, the session
    ids in the evidence, the failed checks' traces, and how the run was cut up."""
    data = json.loads(UUID.sub("<id>", json.dumps(data)))
    return {
        "requirements": [
            {**{k: v for k, v in r.items() if k != "checks"},
             "checks": [{k: v for k, v in c.items() if k != "trace"} for c in r["checks"]]}
            for r in data["requirements"]
        ],
        **{k: data[k] for k in ("summary", "untestable", "errors", "exit_code", "profiles", "selected", "kernel")},
    }


def test_jobs_gives_the_verdicts_checks_and_traces_of_a_serial_run_on_the_sample(tmp_path: Path, reference_run: Any,
                                                                                 akc_here: Any) -> None:
    """The reference kernel over the sample of tests/sample.py (every area, concurrency,
    cancellation, children, the journal, cost): ``akc run --jobs 2`` (its entry point in this
    interpreter, the two shards forked from it) against the shared serial run's entries for those
    requirements, and the traces of the scenarios it ran. The whole suite is the ``whole_suite``
    test below."""
    traces = tmp_path / "traces"
    alone()  # else the harness could not fork the shards and would run the sample serially here
    out = akc_here("run", "--jobs", "2", *req_args(), "--json", str(tmp_path / "r.json"), "--traces", str(traces))
    assert out.returncode == 0, out.stdout + out.stderr
    data = report(tmp_path / "r.json")
    serial = reference_run.run.report.model_dump(mode="json")
    assert data["jobs"] == 2 and serial["jobs"] == 1
    assert len(plan(suite_units(), 2, profiles=data["profiles"], selected=set(SAMPLE), smoke=False)) == 2  # two shards ran
    ours, theirs = comparable(data), comparable(serial)
    theirs["requirements"] = [r for r in theirs["requirements"] if r["id"] in SAMPLE]
    assert [r["id"] for r in ours["requirements"]] == [r["id"] for r in theirs["requirements"]] and len(ours["requirements"]) == len(SAMPLE)
    assert ours["requirements"] == theirs["requirements"]
    assert ours["summary"] == {v: sum(r["verdict"] == v for r in ours["requirements"]) for v in ours["summary"]}
    assert sorted(data["selected"]) == sorted(SAMPLE)
    for key in ("errors", "exit_code", "profiles", "kernel"):  # "untestable" is listed by a run of every requirement only
        assert ours[key] == theirs[key], key
    ran = {(c["feature"], c["scenario"]) for r in data["requirements"] for c in r["checks"]}
    assert len(list(traces.iterdir())) == len(ran)
    for path in traces.iterdir():  # canonical traces are deterministic (the golden traces rely on it)
        text = path.read_text()
        assert (load(text).feature, load(text).scenario) in ran, path.name
        assert text == (reference_run.traces_dir / path.name).read_text(), path.name


@pytest.mark.whole_suite
def test_jobs_gives_the_verdicts_checks_and_traces_of_a_serial_run(tmp_path: Path, reference_run: Any) -> None:
    """The reference kernel, whole suite: ``akc run --jobs 2`` (a real process, as a user runs
    it) against the shared serial run (``python -m pytest -m whole_suite``)."""
    traces = tmp_path / "traces"
    out = akc("--jobs", "2", "--json", str(tmp_path / "r.json"), "--traces", str(traces), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    data = report(tmp_path / "r.json")
    serial = reference_run.run.report.model_dump(mode="json")
    assert data["jobs"] == 2 and serial["jobs"] == 1
    assert comparable(data) == comparable(serial)
    assert sorted(p.name for p in traces.iterdir()) == sorted(p.name for p in reference_run.traces_dir.iterdir())
    for path in traces.iterdir():  # canonical traces are deterministic (the golden traces rely on it)
        assert path.read_text() == (reference_run.traces_dir / path.name).read_text(), path.name


def test_plan_keeps_checks_sharing_requirements_together_and_balances_cost() -> None:
    units = [
        Unit("a", frozenset({"A-001", "B-001"}), frozenset({"kernel"}), False, 5.0),
        Unit("b", frozenset({"B-001", "C-001"}), frozenset({"kernel"}), False, 5.0),
        Unit("c", frozenset({"D-001"}), frozenset({"kernel"}), False, 4.0),
        Unit("d", frozenset({"E-001"}), frozenset({"kernel"}), True, 3.0),
        Unit("e", frozenset({"F-001"}), frozenset({"commonagent"}), False, 1.0),
    ]
    assert plan(units, 2, profiles=["kernel"], selected=None, smoke=False) == [["A-001", "B-001", "C-001"], ["D-001", "E-001"]]
    assert plan(units, 8, profiles=["kernel"], selected={"A-001", "C-001", "E-001"}, smoke=False) == [["A-001"], ["C-001"], ["E-001"]]
    assert plan(units, 8, profiles=["kernel", "commonagent"], selected=None, smoke=True) == [["E-001"]]


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_jobs_below_1_is_a_usage_error(jobs: str) -> None:
    app = typer.Typer()

    @app.callback()
    def main() -> None: ...

    cli_run.register(app)
    result = CliRunner().invoke(app, ["run", "--adapter", "tests.fakes.fake_kernel:factory", "--jobs", jobs])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"--jobs {jobs}: must be 1" in lines[0]


def test_a_shard_that_dies_costs_only_its_own_requirements(tmp_path: Path) -> None:
    out, data = run_case(tmp_path, inproc("OsExitInOrderScenario"), "--smoke", "--jobs", "2", code=3)
    v = verdicts(data)
    assert set(v) == SMOKE and v["TOOL-003"] == "error"
    dead = {rid for rid, verdict in v.items() if verdict != "pass"}
    assert dead <= {"TOOL-003", "CONC-001"} and len(dead) < len(v)  # the other shard kept its verdicts
    assert "os._exit" in messages(data) and "in the order the model asked" in messages(data)
    assert data["jobs"] == 2


@pytest.mark.parametrize(("name", "code", "signame"), [("SignalOwnProcess", 130, "SIGINT"), ("SignalParent", 143, "SIGTERM")])
def test_an_interrupted_sharded_run_exits_130_or_143_with_an_interrupted_report(tmp_path: Path, name: str, code: int, signame: str) -> None:
    out, data = run_case(tmp_path, inproc(name), "--jobs", "2", "--req", "DONE-001", "--req", "TOOL-004", "--req", "LOOP-001",
                         "--req", "TOOL-003", code=code)
    assert f"interrupted by {signame}" in out.stderr and "conformant" not in out.stdout
    assert data["exit_code"] == code and f"interrupted by {signame}" in data["errors"][-1]
    assert "incomplete" in verdicts(data).values()


def test_jobs_1_is_the_serial_path(tmp_path: Path, akc_here: Any) -> None:
    """Through the entry point in this interpreter (tests/inprocess.py): nothing here is about the
    process (but the run is the supervised child's, as with ``--jobs`` left out)."""
    alone()
    out = akc_here("run", "--adapter", inproc("Wrapper"), "--req", "DONE-001", "--jobs", "1", "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert report(tmp_path / "r.json")["jobs"] == 1


def test_jobs_above_the_cores_is_said_once(akc_here: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    alone()
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    out = akc_here("run", "--adapter", "tests.fakes.fake_kernel:factory", "--req", "DONE-001", "--jobs", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr.count("--jobs 2 is more than this machine's 1 cores") == 1
