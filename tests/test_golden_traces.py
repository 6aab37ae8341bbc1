"""Golden traces: the reference kernel's canonical trace of every scenario of the suite, kept as
syrupy snapshots in ``tests/__snapshots__/test_golden_traces/`` (one file per scenario, one event
per line). A change in the kernel's behaviour shows up as a snapshot diff in review;
``pytest tests/test_golden_traces.py --snapshot-update`` is the only way they change.

The suite runs once per test session (module fixture), in-process, with ``--akc-traces``.
Hypothesis properties are left out: the examples they draw depend on the Hypothesis release, and
a golden must change only when the kernel's behaviour does.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.trace.canonical import Trace, load
from conformance.trace.golden import is_property
from conformance.trace.snapshot import assert_goldens


@pytest.fixture(scope="module")
def reference_traces(reference_run: Any) -> dict[str, Trace]:
    """The traces of the session's full reference run (tests/conftest.py; ``AKC_GOLDEN_BACKEND=trio``
    re-checks determinism on trio)."""
    run, folder = reference_run.run, reference_run.traces_dir
    assert run.report is not None and run.exit_code == 0, run.output[-3000:]
    traces = {p.stem: load(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))}
    return {name: t for name, t in traces.items() if not is_property(t)}


def test_every_scenario_run_has_a_trace(reference_traces: dict[str, Trace]) -> None:
    assert len(reference_traces) > 100
    ends = {t.events[-1].kind for t in reference_traces.values() if t.events}
    assert all(t.events for t in reference_traces.values())
    assert "span" in ends or "end" in ends
    assert all(t.requirements for t in reference_traces.values()), "every trace names its requirement ids"


def test_golden(reference_traces: dict[str, Trace], snapshot: Any) -> None:
    """Every scenario's trace equals its snapshot (the public syrupy extension a kernel author uses,
    conformance.trace.snapshot); a mismatch is shown as ``akc trace diff`` would."""
    assert_goldens(snapshot, reference_traces)
