"""The proof of issue 7: the reference kernel served over the stdio wire protocol gets exactly
the verdicts it gets in-process, requirement by requirement and check by check.

Slow by nature (two full certification runs, about 25-40 s on a 2-core machine; the stdio run is
the larger part): it runs in CI like every other test. ``AKC_SKIP_SLOW=1`` skips it locally.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.harness.certify import SuiteOptions, run_suite

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(bool(os.environ.get("AKC_SKIP_SLOW")), reason="AKC_SKIP_SLOW is set")


def _checks(report) -> dict[tuple[str, str, str], str]:
    return {(r.id, c.feature, c.scenario): c.outcome for r in report.requirements for c in r.checks}


def test_stdio_gives_the_same_verdicts_as_in_process(monkeypatch: pytest.MonkeyPatch, reference_run: Any) -> None:
    """The in-process run is the session's shared reference run (tests/conftest.py)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    local = reference_run.run
    started = time.perf_counter()
    wire = run_suite(SuiteOptions(adapter=f"stdio:{sys.executable} -m reference_kernel.stdio", backend=reference_run.backend))
    ended = time.perf_counter()
    assert local.report is not None and wire.report is not None, wire.output[-2000:]
    a, b = local.report.verdicts(), wire.report.verdicts()
    assert set(a) == set(b)
    differ = {req: (a[req], b[req]) for req in a if a[req] != b[req]}
    assert not differ, f"in-process vs stdio verdicts differ: {differ}"
    ca, cb = _checks(local.report), _checks(wire.report)
    # The one difference allowed: checks of the live_clock capability, which a kernel over stdio
    # cannot offer (it computes scenario.clock itself), are not offered there.
    live_only = {k for k, v in cb.items() if v == "not-offered" and ca.get(k) == "pass" and "harness clock" in k[2]}
    assert {k[0] for k in live_only} <= {"SPAN-001", "SPAN-002", "SPAN-003", "SPAN-004"}
    assert {k: v for k, v in ca.items() if k not in live_only} == {k: v for k, v in cb.items() if k not in live_only}
    assert wire.exit_code == local.exit_code == 0
    assert wire.report.kernel.name == local.report.kernel.name
    print(f"stdio {ended - started:.1f} s")
