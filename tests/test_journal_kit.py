"""The journal kit (``akc journal``, issue 27): the built-in journals pass it, mutant journals are
killed by the requirement they break, bad input is one line and exit 2, and the Postgres journal
passes it and certifies the reference kernel (those tests start a throwaway cluster with
scripts/postgres.sh and skip, saying why, when none can be started; under
``AKC_REQUIRE_POSTGRES=1``, as in .ci/run, they fail instead)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.journalkit.mutants import ENTRIES
from conformance.journalkit.requirements import journal_rows
from conformance.journalkit.runner import run_kit
from conformance.journalkit.selftest import run_entry
from tests.inprocess import run_akc

ROOT = Path(__file__).resolve().parents[1]
#: The default tier's size: fewer Hypothesis examples and kills than ``akc journal``'s defaults.
SMALL = {"examples_scale": 0.2, "kills": 2}


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    if os.environ.get("AKC_JOURNAL_DSN"):
        yield os.environ["AKC_JOURNAL_DSN"]
        return
    # in /tmp itself: the server's user must reach the folder (pytest's tmp_path is root's alone)
    folder = Path(tempfile.mkdtemp(prefix="akc-pg-"))
    started = subprocess.run(["bash", str(ROOT / "scripts/postgres.sh"), "start", str(folder)],
                             check=False, capture_output=True, text=True, timeout=120)
    if started.returncode != 0:
        why = f"no Postgres server could be started: {started.stderr.strip() or started.stdout.strip()}"
        if os.environ.get("AKC_REQUIRE_POSTGRES") == "1":
            pytest.fail(why)
        pytest.skip(why)
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", str(ROOT / "scripts/postgres.sh"), "stop", str(folder)], check=False, capture_output=True, timeout=120)


def test_every_requirement_has_a_check_and_a_killed_mutant() -> None:
    from conformance.journalkit.checks import CHECKS

    ids = {r.id for r in journal_rows()}
    assert ids == {c.req for c in CHECKS}
    assert ids == {e.breaks for e in ENTRIES.values() if e.kind == "mutant"}
    assert len([e for e in ENTRIES.values() if e.kind == "mutant"]) >= 15


@pytest.mark.parametrize("spec, offered", [("memory", 10), ("sqlite", 12)])
def test_builtin_journals_pass(spec: str, offered: int) -> None:
    report = run_kit(spec, **SMALL)
    assert report.exit_code == 0, [(r.id, r.verdict, r.checks[0].message if r.checks else r.message) for r in report.requirements]
    passing = [r for r in report.requirements if r.verdict == "pass"]
    assert len(passing) == offered and all(c.evidence for r in passing for c in r.checks)
    if spec == "memory":  # it claims neither durability nor a connection: not offered, never a pass
        assert report.get("JKIT-009").verdict == report.get("JKIT-012").verdict == "not-offered"


@pytest.mark.parametrize("name", ["newest_first_history", "lost_write_under_concurrency", "ack_before_durable",
                                  "duration_in_seconds", "non_json_half_stored", "lost_connection_acknowledged"])
def test_mutant_journals_are_killed_by_their_requirement(name: str) -> None:
    row = run_entry(ENTRIES[name], kills=2)
    assert row.ok, row.line()


def test_a_journal_over_stdio_passes() -> None:
    report = run_kit("stdio:python examples/journal-stdio/journal.py", **SMALL)
    assert report.exit_code == 0, [(r.id, r.verdict, r.checks[0].message if r.checks else r.message) for r in report.requirements]
    assert report.get("JKIT-009").verdict == "pass" and report.get("JKIT-011").verdict == "not-offered"


def test_a_journal_that_cannot_start_is_one_line_and_exit_3() -> None:
    ran = run_akc("journal", "--adapter", "stdio:false")
    assert ran.returncode == 3 and "could not be opened" in ran.stderr and "Traceback" not in ran.stderr


def test_one_fault_one_verdict() -> None:
    """A create_session that fails is JKIT-002's failure; the check that needed it is blocked."""
    report = run_kit("conformance.journalkit.mutants:create_session_fails", **SMALL)
    verdicts = report.verdicts()
    assert verdicts["JKIT-002"] == "fail" and verdicts["JKIT-005"] == "blocked"
    assert report.get("JKIT-005").blocked_by == ["JKIT-002"]
    assert [r for r, v in verdicts.items() if v == "fail"] == ["JKIT-002"]


def test_cli_reports_and_expectations(tmp_path: Path) -> None:
    spec = "conformance.journalkit.mutants:newest_first_history"
    failed = run_akc("journal", "--adapter", spec, "--req", "JKIT-003", "--json", str(tmp_path / "r.json"),
                     "--write-expectations", str(tmp_path / "known.toml"))
    assert failed.returncode == 1, failed.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["profiles"] == ["journal"] and report["requirements"][0]["verdict"] == "fail"
    assert "oldest first" in report["requirements"][0]["checks"][0]["message"]
    known = run_akc("journal", "--adapter", spec, "--req", "JKIT-003", "--expect", str(tmp_path / "known.toml"))
    assert known.returncode == 0, known.stdout + known.stderr


@pytest.mark.parametrize("args, says", [
    (["--adapter", "nope"], "bad journal adapter 'nope'"),
    (["--adapter", "no_such_module:f"], "cannot import 'no_such_module'"),
    (["--adapter", "memory", "--req", "JKIT-999"], "unknown journal requirement JKIT-999"),
    (["--adapter", "postgres"], "needs a server"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AKC_JOURNAL_DSN", raising=False)
    ran = run_akc("journal", *args)
    assert ran.returncode == 2 and says in ran.stderr and "Traceback" not in ran.stderr, ran.stderr


def test_postgres_journal_passes_the_kit(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AKC_JOURNAL_DSN", postgres_dsn)
    report = run_kit("postgres", **SMALL)
    assert report.exit_code == 0, [(r.id, r.verdict, r.checks[0].message if r.checks else r.message) for r in report.requirements]
    assert report.summary == {"pass": 12}


def test_reference_kernel_on_postgres(postgres_dsn: str) -> None:
    # its own process: the run's Postgres journal and environment stay out of this test session
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("AKC_JOURNAL", "AKC_JOURNAL_DSN")}
    ran = subprocess.run([sys.executable, "-m", "conformance", "run", "--journal", "postgres", "--dsn", postgres_dsn,
                          "--req", "JOURNAL-001", "--req", "JOURNAL-003", "--req", "JOURNAL-004", "--req", "JOURNAL-005"],
                         check=False, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr
    assert "4 pass" in ran.stdout


def test_benchmark_prints_one_row_per_journal_and_load() -> None:
    import sys

    out = subprocess.run([sys.executable, str(ROOT / "benchmarks/journal.py"), "--turns", "4", "--sessions", "1", "2", "--json"],
                         check=True, capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "AKC_JOURNAL_DSN"}).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["journal"], r["sessions"]) for r in rows] == [("memory", 1), ("memory", 2), ("sqlite", 1), ("sqlite", 2)]
    assert all(r["turns_per_s"] > 0 and r["p99_write_ms"] >= r["p50_write_ms"] >= 0 for r in rows)
