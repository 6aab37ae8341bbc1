"""Fixtures shared across test modules."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.harness.certify import SuiteOptions, SuiteRun, run_suite
from conformance.report.model import Report


@dataclass
class ReferenceRun:
    """One full in-process certification of the reference kernel, with its canonical traces."""

    run: SuiteRun
    traces_dir: Path
    backend: str


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> ReferenceRun:
    """Shared by the golden traces and the wire equivalence test: the suite's costliest run,
    done once per test session (writing the traces changes nothing else in the report)."""
    folder = tmp_path_factory.mktemp("reference-traces")
    backend = os.environ.get("AKC_GOLDEN_BACKEND", "asyncio")  # `trio` re-checks determinism there
    run = run_suite(SuiteOptions(adapter="reference_kernel.adapter:factory", traces_dir=str(folder), backend=backend))
    return ReferenceRun(run=run, traces_dir=folder, backend=backend)


@pytest.fixture(scope="session")
def null_report() -> Callable[[str], Report]:
    """``null_report("null_empty")``: the do-nothing kernel of that name certified once per test
    session with :func:`conformance.certify` (the whole suite, every capability claimed), shared by
    tests/test_null_kernel.py and the self-test's verdict on it (tests/test_selftest.py)."""
    from conformance import certify
    from tests.fakes import null

    reports: dict[str, Report] = {}

    def get(name: str) -> Report:
        if name not in reports:
            reports[name] = certify(getattr(null, name))
        return reports[name]

    return get


@dataclass
class Ran:
    """What ``akc ARGS`` gave: its exit code and what it wrote (as subprocess.CompletedProcess)."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def akc_here(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Ran]:
    """``akc_here("run", ...)``: the ``akc`` entry point (``conformance.cli.main``) called in this
    interpreter, from the checkout, with ``sys.argv`` set and stdout/stderr captured; for runs
    whose point is what akc decides and writes, not the process (signals, ``os._exit``, start-up:
    those keep a real subprocess). A run still forks its supervised child as ``akc run`` does.
    Saves the start-up of a fresh interpreter (about 1.3 s of CPU per smoke run)."""
    import contextlib
    import io
    import sys

    from conformance import cli

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))

    def run(*args: str) -> Ran:
        cli._register()  # every command (a no-op once registered)
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "argv", ["akc", *args])
        code: int | str | None = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
            except SystemExit as exc:
                code = exc.code
        if isinstance(code, str):  # SystemExit("message"): printed on stderr, exit 1
            err.write(code + "\n")
            code = 1
        return Ran(int(code or 0), out.getvalue(), err.getvalue())

    return run
