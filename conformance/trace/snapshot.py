"""Goldens as syrupy snapshots, for a kernel author's own pytest suite (syrupy must be installed;
it is not a dependency of akc itself)::

    from conformance import certify
    from conformance.trace.snapshot import assert_goldens

    def test_behaviour_unchanged(snapshot, tmp_path):
        report = certify("mypkg.akc_adapter:factory", traces_dir=tmp_path)
        assert report.exit_code == 0
        assert_goldens(snapshot, tmp_path)

``pytest --snapshot-update`` records or rewrites them (one text file per scenario, the trace as
``akc run --traces`` writes it, the kernel's version as ``*``); a mismatch fails with the
divergences as ``akc trace diff`` shows them, grouped by requirement id. syrupy's
``--snapshot-update`` deletes files it does not know inside ``__snapshots__``: keep the snapshots
of one kernel in one test module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from conformance.trace.canonical import Trace, load
from conformance.trace.diff import DiffResult, compare, render
from conformance.trace.golden import golden_text, run_traces, snapshot_name


class TraceSnapshot(SingleFileSnapshotExtension):
    """One text file per scenario: the trace exactly as ``akc run --traces`` writes it."""

    _write_mode = WriteMode.TEXT
    file_extension = "json"

    def serialize(self, data: Any, **kwargs: Any) -> str:
        return str(data)


def assert_goldens(snapshot: Any, traces: str | Path | dict[str, Trace], *, shown: int = 5) -> None:
    """Every trace (a folder written by ``--traces``, or name → Trace) equals its snapshot."""
    import pytest

    found = run_traces(traces) if not isinstance(traces, dict) else traces
    snap = snapshot.with_defaults(extension_class=TraceSnapshot)
    changed = [(snapshot_name(t), t) for t in found.values() if not (snap(name=snapshot_name(t)) == golden_text(t))]
    if not changed:
        return
    folder = Path(snap.extension.dirname(test_location=snap.test_location))  # where syrupy keeps them
    lines = []
    for name, trace in changed[:shown]:
        stored = next(folder.glob(f"*[[]{name}[]].json"), None)
        if stored is None:
            lines.append(f"{name}: no golden trace yet [{', '.join(trace.requirements)}]")
            continue
        d = compare(load(stored.read_text(encoding="utf-8")), trace, name=name)
        result = DiffResult(a="golden", b="now", compared=1, differences=[d] if d else [])
        lines.append(render(result, width=160) if d else f"{name}: only the kernel header or formatting changed")
    more = f"\n… and {len(changed) - shown} more" if len(changed) > shown else ""
    pytest.fail(
        f"{len(changed)} golden trace(s) changed (if intended: pytest --snapshot-update):\n\n" + "\n".join(lines) + more,
        pytrace=False,
    )
