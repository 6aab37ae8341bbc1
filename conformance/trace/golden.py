"""Behaviour goldens: a kernel's canonical traces kept in its own repository, so CI sees a change of
behaviour even while the kernel stays conformant (a refactor that adds a model call, reorders
hooks, changes a stored message).

``akc run --golden DIR`` compares every scenario's canonical trace with ``DIR``; ``--update-golden``
rewrites ``DIR`` from the run. What varies by itself never breaks a golden: ids, timestamps and
durations are already normalised away in the canonical trace (:mod:`conformance.trace.normalise`),
the kernel's version is kept as ``*``, and Hypothesis properties are left out (their examples
depend on the Hypothesis release). ``DIR/akc-golden.toml`` may narrow what is compared, with the
parts ``akc trace diff`` knows::

    only = ["outcome", "hooks", "tools", "messages"]   # or
    ignore = ["spans"]

A divergence is shown as ``akc trace diff`` shows it, grouped by requirement id.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.errors import UsageError
from conformance.files import write_atomic
from conformance.trace.canonical import Trace, dump, trace_filename
from conformance.trace.diff import DiffResult, Selection, compare, parse_categories, read_trace, trace_files

#: The optional configuration file of a golden folder.
CONFIG_NAME = "akc-golden.toml"
#: ``akc run --golden``: the kernel's behaviour changed (documented beside the other exit codes).
EXIT_GOLDEN = 4


def is_property(trace: Trace) -> bool:
    """Hypothesis properties have no golden: their examples change with the Hypothesis release."""
    return trace.feature.startswith("test_prop_")


def golden_text(trace: Trace) -> str:
    """A trace as its golden file holds it: the kernel's version as ``*`` (a version bump is not a
    change of behaviour)."""
    return dump(trace.model_copy(update={"kernel": trace.kernel.model_copy(update={"version": "*"})}))


def read_config(folder: Path) -> Selection:
    """The golden folder's ``akc-golden.toml`` (``only`` / ``ignore`` lists); none: compare all."""
    path = folder / CONFIG_NAME
    if not path.is_file():
        return Selection()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: not a readable TOML file ({exc})") from None
    unknown = sorted(set(data) - {"only", "ignore"})
    if unknown:
        raise UsageError(f"{path}: unknown key(s) {', '.join(unknown)} (use only and ignore)")
    parts: dict[str, frozenset[str]] = {}
    for key in ("only", "ignore"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{path}: {key} must be a list of part names, e.g. [\"spans\"]")
        parts[key] = parse_categories(",".join(value), f"{path}: {key}")
    return Selection(only=parts["only"], ignore=parts["ignore"])


def run_traces(traces_dir: str | Path) -> dict[str, Trace]:
    """The traces a run wrote, by file name, properties left out."""
    out = {}
    for name, path in trace_files(Path(traces_dir)).items():
        trace = read_trace(path)
        if not is_property(trace):
            out[name] = trace
    return out


@dataclass
class GoldenResult:
    """A run's traces against a golden folder."""

    diff: DiffResult
    #: Golden files of scenarios that ran and have no golden yet (a new scenario, a renamed one).
    missing: list[str] = field(default_factory=list)
    #: Golden files whose scenario did not run (a full run only: a subset run compares its own).
    extra: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.diff.differences or self.missing or self.extra)

    def by_requirement(self) -> dict[str, list[str]]:
        """Requirement id → the scenarios of it whose behaviour changed."""
        out: dict[str, list[str]] = {}
        for d in self.diff.differences:
            for rid in d.requirements or ["(no requirement id)"]:
                out.setdefault(rid, []).append(d.scenario)
        return dict(sorted(out.items()))


def check_folder(folder: str | Path, *, update: bool) -> Path:
    """The golden folder given to ``--golden``, checked before the run: it must exist unless the
    run is to write it (``--update-golden``)."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--golden {path}: a file, not a folder")
    if not path.exists() and not update:
        raise UsageError(f"--golden {path}: no such folder (record it first with --update-golden)")
    if path.is_dir():
        read_config(path)
    return path


def compare_golden(traces_dir: str | Path, golden_dir: str | Path, *, partial: bool) -> GoldenResult:
    """Compare a run's traces with the golden folder. ``partial``: a subset run (``--req``,
    ``--smoke``), whose unselected scenarios are not "extra"."""
    golden = Path(golden_dir)
    selection = read_config(golden)
    now = run_traces(traces_dir)
    kept = trace_files(golden)
    result = DiffResult(a=f"golden ({golden})", b="this run", only=sorted(selection.only), ignore=sorted(selection.ignore))
    out = GoldenResult(diff=result)
    for name, trace in sorted(now.items()):
        if name not in kept:
            out.missing.append(name)
            continue
        result.compared += 1
        d = compare(read_trace(kept[name]), trace, name=name, selection=selection)
        if d is None:
            result.equal += 1
        else:
            result.differences.append(d)
    if not partial:
        out.extra = sorted(set(kept) - set(now))
    result.only_in_b = list(out.missing)
    result.only_in_a = list(out.extra)
    return out


def update_golden(traces_dir: str | Path, golden_dir: str | Path, *, partial: bool) -> tuple[int, int]:
    """Write the run's traces as the golden folder (atomically, file by file); a full run also
    removes goldens whose scenario no longer exists. Returns (written, removed)."""
    golden = Path(golden_dir)
    golden.mkdir(parents=True, exist_ok=True)
    now = run_traces(traces_dir)
    for name, trace in now.items():
        write_atomic(golden / name, golden_text(trace))
    removed = 0
    if not partial:
        for name, path in trace_files(golden).items():
            if name not in now:
                os.unlink(path)
                removed += 1
    return len(now), removed


def print_golden(result: GoldenResult, console: Any = None) -> None:
    """The divergences grouped by requirement id, then each as ``akc trace diff`` shows it."""
    from rich.console import Console
    from rich.markup import escape as _markup

    from conformance.report.escape import terminal
    from conformance.trace.diff import print_diff

    def escape(text: str) -> str:
        return _markup(terminal(text))  # scenario names come from feature files, but stay data

    console = console or Console()
    if not result.changed:
        console.print(f"golden: {result.diff.compared} scenario traces unchanged", highlight=False)
        return
    groups = result.by_requirement()
    if groups:
        console.print("golden: behaviour changed, by requirement:", highlight=False)
        for rid, scenarios in groups.items():
            console.print(escape(f"  {rid} ({len(scenarios)} scenario{'s' if len(scenarios) > 1 else ''}):"), highlight=False)
            for name in scenarios:
                console.print(escape(f"    {name}"), highlight=False, soft_wrap=True)
        console.print("")
    print_diff(result.diff, console)
    if result.missing:
        console.print(f"golden: {len(result.missing)} scenario(s) without a golden trace (new or renamed; --update-golden records them)", highlight=False)
    if result.extra:
        console.print(f"golden: {len(result.extra)} golden trace(s) whose scenario did not run (removed or renamed; --update-golden deletes them)", highlight=False)


def snapshot_name(trace: Trace) -> str:
    """The name a trace is kept under as a syrupy snapshot (its file name without ``.json``)."""
    return trace_filename(trace.feature, trace.scenario).removesuffix(".json")
