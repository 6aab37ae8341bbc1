"""The proof of issue 7: the reference kernel served over the stdio wire protocol gets exactly
the verdicts it gets in-process, requirement by requirement and check by check.

The in-process run is the session's shared serial run (tests/conftest.py ``reference_run``).
Two tiers: ``python -m pytest`` compares the representative sample of tests/sample.py (every area,
concurrency, cancellation, children, the journal and cost; about a quarter of the suite); the
whole suite over stdio is marked ``whole_suite`` (about 10 s of CPU on top of the shared run),
run by ``python -m pytest -m whole_suite``, its own step of ``.ci/run``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog.requirements import load_catalog
from conformance.harness.certify import SuiteOptions, run_suite
from tests.sample import SAMPLE

ROOT = Path(__file__).resolve().parents[1]


def _checks(report, ids: set[str] | None = None) -> dict[tuple[str, str, str], str]:
    return {(r.id, c.feature, c.scenario): c.outcome for r in report.requirements for c in r.checks if ids is None or r.id in ids}


def _stdio_run(monkeypatch: pytest.MonkeyPatch, backend: str, reqs: list[str]) -> Any:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    started = time.perf_counter()
    wire = run_suite(SuiteOptions(adapter=f"stdio:{sys.executable} -m reference_kernel.stdio", backend=backend, reqs=reqs))
    print(f"stdio {time.perf_counter() - started:.1f} s")
    return wire


def _assert_same(local: Any, wire: Any, ids: set[str] | None) -> None:
    """``wire`` (over ``ids``, or the whole suite) gives what ``local`` gives for those ids."""
    assert local.report is not None and wire.report is not None, wire.output[-2000:]
    a, b = local.report.verdicts(), wire.report.verdicts()
    if ids is not None:
        a = {req: v for req, v in a.items() if req in ids}
    assert set(a) == set(b)
    differ = {req: (a[req], b[req]) for req in a if a[req] != b[req]}
    assert not differ, f"in-process vs stdio verdicts differ: {differ}"
    ca, cb = _checks(local.report, ids), _checks(wire.report)
    # No difference allowed: over stdio the kernel reads the harness clock from its `clock`
    # notifications, so the live_clock checks (spans timed with the harness clock) run there too.
    assert ca == cb
    assert wire.exit_code == local.exit_code == 0
    assert wire.report.kernel.name == local.report.kernel.name


def test_the_sample_covers_every_area_of_the_catalog() -> None:
    catalog = load_catalog()
    assert set(SAMPLE) <= set(catalog.ids())
    assert {rid.split("-")[0] for rid in catalog.ids()} == {rid.split("-")[0] for rid in SAMPLE}


def test_stdio_gives_the_same_verdicts_as_in_process_on_the_sample(monkeypatch: pytest.MonkeyPatch, reference_run: Any) -> None:
    """The sample of tests/sample.py over stdio against the shared run's verdicts and checks for
    those requirements; the whole suite is the ``whole_suite`` test below."""
    wire = _stdio_run(monkeypatch, reference_run.backend, SAMPLE)
    _assert_same(reference_run.run, wire, set(SAMPLE))
    assert wire.report is not None and sorted(wire.report.verdicts()) == sorted(SAMPLE)
    # SPAN-001's check timed with the harness clock runs over stdio too (the `clock` notification)
    assert any(c.outcome == "pass" and "harness clock" in c.scenario
               for r in wire.report.requirements if r.id == "SPAN-001" for c in r.checks)


@pytest.mark.whole_suite
def test_stdio_gives_the_same_verdicts_as_in_process(monkeypatch: pytest.MonkeyPatch, reference_run: Any) -> None:
    """Every requirement: the whole suite over stdio (``python -m pytest -m whole_suite``)."""
    _assert_same(reference_run.run, _stdio_run(monkeypatch, reference_run.backend, []), None)
