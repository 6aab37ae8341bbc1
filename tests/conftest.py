"""Fixtures shared across test modules."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.harness.certify import SuiteOptions, SuiteRun, run_suite
from conformance.report.model import Report
from tests.inprocess import Ran, run_akc

try:
    # Idle workers of trio's thread cache retire after 0.5 s instead of 10: a test that runs
    # ``akc run`` in this interpreter needs it without other threads to fork its supervised
    # child (tests/inprocess.py ``alone``), and trio is used by tests all through the session.
    import trio._core._thread_cache as _trio_threads

    _trio_threads.IDLE_TIMEOUT = 0.5
except ImportError:  # no trio: nothing to retire
    pass


def _no_hypothesis_setting_measures_the_machine(config: pytest.Config) -> None:
    """The project's tests pass on a busy machine (a user's loaded CI runner, issue 25): no
    Hypothesis deadline and no health check that measures the machine ("input generation is
    slow"). Built on the profile already loaded (Hypothesis's own CI profile under CI=true), before
    any test module builds its settings. Not in a certification run this file is loaded into
    (``--kernel``: the suite's own session, which imports Hypothesis only for its properties)."""
    if config.getoption("kernel", None):
        return
    from hypothesis import HealthCheck, settings

    settings.register_profile("akc-tests", settings(settings.default, deadline=None, suppress_health_check=[HealthCheck.too_slow]))
    settings.load_profile("akc-tests")


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


@pytest.fixture
def akc_here() -> Callable[..., Ran]:
    """``akc_here("run", ...)``: the ``akc`` entry point called in this interpreter
    (:func:`tests.inprocess.run_akc`), for runs whose point is what akc decides and writes, not
    the process (signals, ``os._exit``, start-up: those keep a real subprocess)."""
    return run_akc


def pytest_configure(config: pytest.Config) -> None:
    """A larger young generation for the test session (10,000 allocations between collections
    instead of 700), as the harness has for its own session: the session's heap (the reference
    run's report and traces, the collected suite) is walked by fewer full collections."""
    import gc

    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    _no_hypothesis_setting_measures_the_machine(config)
