"""``akc run --jobs N``: several scenarios in flight at once, with the verdicts of a serial run.

A kernel's latency adds up over a serial run (a stdio kernel at 5 ms a message: about two
minutes). With ``--jobs N`` the run is cut into at most N *shards* by requirement, and each shard
is its own supervised child (:mod:`conformance.harness.supervisor`) running the suite with
``--akc-req`` for its requirements, all at once. Each child loads its own adapter, so each has its
own kernel instance (a stdio kernel: its own kernel process): nothing global to a kernel process
is shared between shards, and no scenario needs to declare that it must not overlap.

Why requirements: a requirement's verdict is computed from its own checks only, and selecting a
requirement runs every check that carries it. The shards are the connected components of the
requirement ↔ check graph (read statically from the feature files and the property modules), so
every check runs in exactly one shard; the components are spread over the shards costliest first.

The parent merges what the shards hand back — their checks, harness errors and failed traces —
into one plugin state and builds the report with the plugin's own
:func:`~conformance.harness.plugin.build_report`: the verdicts, checks, counts and exit code are
those of a serial run. It then writes the reports and expectations, as the single child does.

Signals: SIGINT/SIGTERM are passed on to every shard (and a shard interrupted by a signal of its
own stops the others too); the merged report says "interrupted" and the run exits 130/143. A shard
that dies gives its requirements the crash report's verdicts (the others keep theirs): exit 3.
The circuit breaker (``--max-hangs``) counts hangs per shard.
"""

from __future__ import annotations

import ast
import gc
import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conformance.children import Children
from conformance.harness.supervisor import CHILD_GRACE_S, can_fork, crash_state, fork_child, run_supervised

#: The cost of one property, in scenarios: it runs its examples (10 in the ci profile), each a
#: little longer than a scenario (measured over the wire: ~400 kernel messages a property, ~32 a
#: scenario).
PROPERTY_COST = {"ci": 13.0, "explore": 390.0}
#: A scenario tagged ``@slow`` (max_iterations' default of 500: ~2,500 messages).
SLOW_COST = 80.0


@dataclass(frozen=True)
class Unit:
    """One check the run would collect: a scenario (outline examples counted) or a property."""

    key: str
    ids: frozenset[str]
    profiles: frozenset[str]
    smoke: bool
    cost: float


# --------------------------------------------------------------------------- planning


def suite_units(hypothesis_profile: str = "ci") -> list[Unit]:
    """Every check of the suite with its requirement ids, read without importing the suite."""
    from pytest_bdd.parser import FeatureParser

    from conformance.harness.certify import SUITE_DIR
    from conformance.harness.plugin import PROFILES, REQ_ID
    from conformance.paths import features_dir

    units: list[Unit] = []
    base = features_dir()
    for path in sorted(base.rglob("*.feature")):
        feature = FeatureParser(str(base), str(path.relative_to(base))).parse()
        for scenario in feature.scenarios.values():
            tags = set(feature.tags) | set(scenario.tags)
            rows = 0
            for examples in getattr(scenario, "examples", None) or []:
                tags |= set(getattr(examples, "tags", ()) or ())
                rows += len(list(examples.as_contexts()))
            units.append(Unit(
                key=f"{path.name}::{scenario.name}",
                ids=frozenset(t for t in tags if REQ_ID.match(t)),
                profiles=frozenset(p for p in PROFILES if p in tags) or frozenset(PROFILES),
                smoke="smoke" in tags,
                cost=max(rows, 1) * (SLOW_COST if "slow" in tags else 1.0),
            ))
    cost = PROPERTY_COST.get(hypothesis_profile, PROPERTY_COST["ci"])
    for path in sorted(SUITE_DIR.glob("test_prop_*.py")):
        for name, ids, profile in _properties(path):
            units.append(Unit(
                key=f"{path.name}::{name}", ids=frozenset(ids),
                profiles=frozenset([profile]) if profile else frozenset(PROFILES), smoke=False, cost=cost,
            ))
    return units


def _properties(path: Path) -> list[tuple[str, list[str], str | None]]:
    """(test name, requirement ids, profile) of each ``@requirement(...)`` property of a module."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        for deco in node.decorator_list:
            if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "requirement":
                ids = [a.value for a in deco.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                profile = next((k.value.value for k in deco.keywords if k.arg == "profile" and isinstance(k.value, ast.Constant)), None)
                out.append((node.name, ids, profile if isinstance(profile, str) else None))
    return out


def plan(units: list[Unit], jobs: int, *, profiles: list[str], selected: set[str] | None, smoke: bool,
         known: set[str] | None = None) -> list[list[str]]:
    """The requirement ids of each shard (at most ``jobs``; none empty): the connected components
    of the requirement ↔ check graph over the checks this run selects, costliest first onto the
    least loaded shard. A requirement no selected check carries is in no shard (its verdict —
    "no check ran" — is the parent's)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    cost: dict[str, float] = {}
    for unit in units:
        if not unit.profiles & set(profiles) or (smoke and not unit.smoke):
            continue
        ids = [i for i in sorted(unit.ids) if (selected is None or i in selected) and (known is None or i in known)]
        if not ids:
            continue
        root = find(ids[0])
        for other in ids[1:]:
            parent[find(other)] = root
        cost[ids[0]] = cost.get(ids[0], 0.0) + unit.cost
    components: dict[str, list[str]] = {}
    weight: dict[str, float] = {}
    for rid in parent:
        root = find(rid)
        components.setdefault(root, []).append(rid)
        weight[root] = weight.get(root, 0.0) + cost.get(rid, 0.0)
    shards: list[list[str]] = [[] for _ in range(max(1, jobs))]
    load = [0.0] * len(shards)
    for root in sorted(components, key=lambda r: (-weight[r], r)):
        i = load.index(min(load))
        shards[i].extend(components[root])
        load[i] += weight[root]
    return [sorted(s) for s in shards if s]


# --------------------------------------------------------------------------- running


@dataclass
class _Shard:
    reqs: list[str]
    options: Any
    progress: str
    result_path: str
    traces: str | None
    pid: int = 0


def run_sharded(options: Any) -> Any:
    """Run the suite as ``options.jobs`` shards at once; the same SuiteRun as a serial run.
    Falls back to the one supervised child where it cannot fork or there is one shard only."""
    from conformance.harness.certify import SuiteRun, prepare, run_suite
    from conformance.harness.plugin import load_catalog_or_none

    if not can_fork():
        return run_suite(options)
    prepared = prepare(options)  # usage errors (exit 2) are found here, before any fork
    catalog = load_catalog_or_none()
    selected = {r.strip().upper() for r in options.reqs} or None
    groups = plan(suite_units(options.hypothesis_profile), options.jobs, profiles=prepared.profiles, selected=selected,
                  smoke=options.smoke, known=set(catalog.ids()) if catalog is not None else None)
    if len(groups) <= 1:
        return run_supervised(options, prepared=prepared)
    workdir = tempfile.mkdtemp(prefix="akc-run-")
    try:
        shards = [_shard(options, reqs, workdir, k) for k, reqs in enumerate(groups)]
        if options.traces_dir:
            from conformance.trace.canonical import clear_traces

            clear_traces(options.traces_dir)  # once here: each shard writes to its own folder
        _warm(options.reqs or None)
        for shard in shards:
            shard.pid = fork_child(shard.options, prepared, shard.progress, shard.result_path, extra=_handback)
        gc.unfreeze()  # frozen for the forks only (see _warm)
        statuses, signum = _wait_all(shards)
        parts = [_collect(shard, prepared, statuses[shard.pid], signum) for shard in shards]
        report = merge(options, prepared, parts, signum)
        if options.traces_dir:
            _move_traces(shards, options.traces_dir)
        _write(options, report)
        output = "\n".join(f"--- shard {k + 1} of {len(parts)}: {len(s.reqs)} requirements\n{p['output']}"
                           for k, (s, p) in enumerate(zip(shards, parts)))
        pytest_exit = max((p["pytest_exit"] for p in parts), default=0)
        return SuiteRun(report=report, exit_code=report.exit_code, output=output, pytest_exit=pytest_exit)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _warm(reqs: list[str] | None) -> None:
    """Parse and import in the parent what every shard would on its own (the feature files,
    Hypothesis when a property runs): paid once, shared by the forks. Then freeze the heap, so
    the children's garbage collections skip all they inherited (and leave its pages shared).
    Together about 0.7 s of CPU a shard. (Importing the step modules would save a little more,
    but they belong to a higher layer than the harness.)"""
    from pytest_bdd.feature import get_features

    from conformance.harness.certify import SUITE_DIR
    from conformance.harness.plugin import properties_selected
    from conformance.paths import features_dir

    get_features([str(features_dir())])
    if reqs is None or properties_selected(SUITE_DIR, reqs):
        import hypothesis  # noqa: F401
    gc.collect()
    gc.freeze()  # the children's collections skip what they inherited (and leave its pages shared)


def _shard(options: Any, reqs: list[str], workdir: str, k: int) -> _Shard:
    """A shard's own options: its requirements, no report files (the parent writes the merged
    ones), no expectations (applied to the merged report), its own traces folder."""
    traces = os.path.join(workdir, f"traces-{k}") if options.traces_dir else None
    if traces:
        os.mkdir(traces)
    shard_options = replace(
        options, reqs=list(reqs), json_path=None, junit_path=None, markdown_path=None, expect_path=None,
        write_expectations_path=None, traces_dir=traces, extra_args=list(options.extra_args), jobs=1,
    )
    return _Shard(reqs=reqs, options=shard_options, progress=os.path.join(workdir, f"progress-{k}.jsonl"),
                  result_path=os.path.join(workdir, f"result-{k}.json"), traces=traces)


def _handback(run: Any) -> dict[str, Any]:
    """In the shard's child: what the parent needs to merge, beyond the shard's own report."""
    state = run.state
    if state is None or run.report is None:
        return {}
    return {"shard": {
        "checks": {nodeid: asdict(c) for nodeid, c in state.checks.items()},
        "collect_errors": list(state.collect_errors),
        # What the plugin appended after building the report: why the session ended early.
        "ended": list(run.report.errors[len(state.collect_errors):]),
        "failed_traces": [[f, s, t.model_dump(mode="json")] for (f, s), t in state.failed_traces.items()],
    }}


def _signal_of(shard: _Shard, status: int) -> int | None:
    """The signal that interrupted a shard that has ended: its report says so, or it died of it."""
    try:
        code = json.loads(Path(shard.result_path).read_text(encoding="utf-8")).get("exit_code", 0)
    except (OSError, ValueError):
        code = 0
    if code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
        return code - 128
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGINT, signal.SIGTERM):
        return os.WTERMSIG(status)
    return None


def _wait_all(shards: list[_Shard]) -> tuple[dict[int, int], int | None]:
    """Wait for every shard. A SIGINT/SIGTERM to this process is passed on to every shard still
    running, and so is the signal that interrupted one shard; a shard not ended
    :data:`CHILD_GRACE_S` after that is killed. Returns (wait status by pid, the signal)."""
    statuses: dict[int, int] = {}
    sent: list[int] = []

    def pass_on(signum: int) -> None:
        sent.append(signum)
        for shard in shards:
            if shard.pid not in statuses:
                try:
                    os.kill(shard.pid, signum)
                except OSError:
                    pass

    def handler(signum: int, frame: Any) -> None:
        pass_on(signum)
        children.wake()  # the grace deadline starts now

    children = Children([shard.pid for shard in shards])
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, handler)
    deadline: float | None = None
    try:
        while len(statuses) < len(shards):
            for shard in shards:
                if shard.pid in statuses:
                    continue
                done, status = os.waitpid(shard.pid, os.WNOHANG)
                if done:
                    statuses[shard.pid] = status
                    children.discard(shard.pid)
                    own = _signal_of(shard, status)
                    if own is not None and not sent:
                        pass_on(own)
            if sent and deadline is None:
                deadline = time.monotonic() + CHILD_GRACE_S
            if deadline is not None and time.monotonic() > deadline:
                for shard in shards:
                    if shard.pid not in statuses:
                        try:
                            os.kill(shard.pid, signal.SIGKILL)
                        except OSError:
                            pass
                deadline = float("inf")
            if len(statuses) < len(shards):
                # until a shard exits, a signal comes (its handler wakes us) or the grace deadline
                children.wait(None if deadline in (None, float("inf")) else deadline - time.monotonic())
    finally:
        children.close()
        for s, h in previous.items():
            signal.signal(s, h)
    return statuses, (sent[0] if sent else None)


def _collect(shard: _Shard, prepared: Any, status: int, signum: int | None) -> dict[str, Any]:
    """A shard's part of the merge: its checks, harness errors, early-end messages, failed traces;
    from its progress file when it died without a result (as the single child's crash report)."""
    from conformance.report.verdicts import Check

    try:
        out = json.loads(Path(shard.result_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        out = None
    if out is not None and out.get("usage_error"):
        from conformance.errors import UsageError

        raise UsageError(out["usage_error"])
    if out is None:
        state = crash_state(shard.options, prepared, shard.progress, status, signum)
        return {"checks": state.checks, "collect_errors": state.collect_errors, "ended": [], "failed_traces": {},
                "exit_code": 128 + signum if signum else 3, "output": "", "pytest_exit": 3}
    part = out.get("shard")
    if part is None:  # pytest ran but the plugin made no report
        tail = (out.get("output") or "").strip().splitlines()[-1:] or ["no output"]
        return {"checks": {}, "collect_errors": [f"a shard ({', '.join(shard.reqs)}) produced no report (pytest exit {out.get('pytest_exit')}): {tail[0]}"],
                "ended": [], "failed_traces": {}, "exit_code": 3, "output": out.get("output", ""), "pytest_exit": out.get("pytest_exit", 3)}
    from conformance.trace.canonical import Trace

    return {
        "checks": {nodeid: Check(**c) for nodeid, c in part["checks"].items()},
        "collect_errors": part["collect_errors"],
        "ended": part["ended"],
        "failed_traces": {(f, s): Trace.model_validate(t) for f, s, t in part["failed_traces"]},
        "exit_code": out.get("exit_code", 3),
        "output": out.get("output", ""),
        "pytest_exit": out.get("pytest_exit", 0),
    }


def merge(options: Any, prepared: Any, parts: list[dict[str, Any]], signum: int | None) -> Any:
    """The report of the whole run from the shards' parts, built as the plugin builds a serial
    run's (same catalog, selection, profiles, strictness and expectations), then the early end:
    interrupted (130/143) or stopped (exit 3), with one line saying so."""
    from conformance.harness.plugin import build_report, load_catalog_or_none

    catalog = load_catalog_or_none()
    expectations = None
    if options.expect_path:
        from conformance.report.expectations import load as load_expectations

        expectations = load_expectations(options.expect_path, catalog.ids() if catalog is not None else None,
                                         warn_changed=options.warn_changed)
    checks: dict[str, Any] = {}
    failed_traces: dict[Any, Any] = {}
    errors: list[str] = []
    for part in parts:
        checks.update(part["checks"])
        failed_traces.update(part["failed_traces"])
        errors += [e for e in part["collect_errors"] if e not in errors]
    state = SimpleNamespace(
        catalog=catalog, checks=checks, info=prepared.info, profiles=prepared.profiles, expectations=expectations,
        req_filter=[r.strip().upper() for r in options.reqs] or None, smoke=options.smoke, strict=options.strict,
        failed_traces=failed_traces, collect_errors=errors, started=prepared.started,
    )
    report = build_report(state)  # type: ignore[arg-type]
    report.jobs = len(parts)  # in flight at once: at most --jobs, at most one per component
    ran = sum(1 for c in checks.values() if c.outcome != "not-run")
    interrupted = signum or next((p["exit_code"] - 128 for p in parts if p["exit_code"] > 128), None)
    if interrupted:
        report.errors.append(f"interrupted by {signal.Signals(interrupted).name}: {ran} of {len(checks)} checks ran "
                             f"(in {len(parts)} shards); no verdict for this run")
        report.exit_code = 128 + interrupted
    elif any(p["ended"] for p in parts):
        report.errors += [e for p in parts for e in p["ended"]]
        report.exit_code = 3
    return report


def _write(options: Any, report: Any) -> None:
    from conformance.report.writers import write_reports

    previous = None
    if options.write_expectations_path and options.expect_path:  # as the plugin does, interrupted or not
        from conformance.report.expectations import load as load_expectations

        previous = load_expectations(options.expect_path, None)
    write_reports(report, json_path=options.json_path, junit_path=options.junit_path, markdown_path=options.markdown_path,
                  expectations_path=options.write_expectations_path, previous=previous)


def _move_traces(shards: list[_Shard], target: str) -> None:
    """Each shard's traces into the run's folder (their names differ: a scenario runs in one shard)."""
    for shard in shards:
        if shard.traces and os.path.isdir(shard.traces):
            for name in sorted(os.listdir(shard.traces)):
                os.replace(os.path.join(shard.traces, name), os.path.join(target, name))

