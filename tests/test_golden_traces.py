"""Golden traces: the reference kernel's canonical trace of every scenario of the suite, kept as
syrupy snapshots in ``tests/__snapshots__/test_golden_traces/`` (one file per scenario, one event
per line). A change in the kernel's behaviour shows up as a snapshot diff in review;
``pytest tests/test_golden_traces.py --snapshot-update`` is the only way they change.

The suite runs once per test session (module fixture), in-process, with ``--akc-traces``.
Hypothesis properties are left out: the examples they draw depend on the Hypothesis release, and
a golden must change only when the kernel's behaviour does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from conformance.trace.canonical import Trace, dump, load
from conformance.trace.diff import DiffResult, compare, render

SNAPSHOTS = Path(__file__).parent / "__snapshots__" / Path(__file__).stem


class TraceSnapshot(SingleFileSnapshotExtension):
    """One text file per scenario: the trace exactly as ``akc run --traces`` writes it."""

    _write_mode = WriteMode.TEXT
    file_extension = "json"

    def serialize(self, data: Any, **kwargs: Any) -> str:
        return str(data)


def golden_text(trace: Trace) -> str:
    """The trace without the kernel's version (a version bump is not a change of behaviour)."""
    return dump(trace.model_copy(update={"kernel": trace.kernel.model_copy(update={"version": "*"})}))


@pytest.fixture(scope="module")
def reference_traces(reference_run: Any) -> dict[str, Trace]:
    """The traces of the session's full reference run (tests/conftest.py; ``AKC_GOLDEN_BACKEND=trio``
    re-checks determinism on trio)."""
    run, folder = reference_run.run, reference_run.traces_dir
    assert run.report is not None and run.exit_code == 0, run.output[-3000:]
    traces = {p.stem: load(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))}
    return {name: t for name, t in traces.items() if not t.feature.startswith("test_prop_")}


def test_every_scenario_run_has_a_trace(reference_traces: dict[str, Trace]) -> None:
    assert len(reference_traces) > 100
    ends = {t.events[-1].kind for t in reference_traces.values() if t.events}
    assert all(t.events for t in reference_traces.values())
    assert "span" in ends or "end" in ends


def test_golden(reference_traces: dict[str, Trace], snapshot: Any) -> None:
    """Every scenario's trace equals its snapshot; a mismatch is shown as ``akc trace diff`` would."""
    snap = snapshot.with_defaults(extension_class=TraceSnapshot)
    changed = [name for name, trace in reference_traces.items() if not (snap(name=name) == golden_text(trace))]
    if not changed:
        return
    shown = []
    for name in changed[:5]:
        stored = SNAPSHOTS / f"test_golden[{name}].json"
        if stored.exists():
            d = compare(load(stored.read_text(encoding="utf-8")), reference_traces[name], name=name)
            result = DiffResult(a="golden", b="now", compared=1, differences=[d] if d else [])
            shown.append(render(result, width=160) if d else f"{name}: only the kernel header or formatting changed")
        else:
            shown.append(f"{name}: no golden trace yet")
    pytest.fail(
        f"{len(changed)} golden trace(s) changed (if intended: pytest {Path(__file__).name} --snapshot-update):\n\n"
        + "\n".join(shown),
        pytrace=False,
    )
