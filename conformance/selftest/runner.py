"""Run the suite against every mutant and variant and build the matrix (``akc selftest``).

A mutant is *killed* when a requirement it violates has the verdict ``fail`` — in every one of its
runs: mutants of concurrency and cancellation rules are certified several times
(:data:`~conformance.selftest.registry.STABILITY_RUNS`), since a check that catches its mutant only
sometimes is not a check. A do-nothing mutant (``passes_nothing``) is killed only when not one
requirement of the full suite passes.
A variant *passes* when its run of the full suite exits 0 (for a variant that changes one face
only, the full suite of that face's profile). What a mutant runs is its *scope*, always in the
profile it changes: ``target`` (the default, fast enough for CI) runs the requirement it breaks and
those it is expected to break; ``area`` adds the gating rows of the same area and the
requirements the smoke scenarios of that profile check; ``full`` runs the whole suite, which is
what shows every requirement a mutant fails (how coarse the checks are).

The jobs are spread over worker processes. Each worker runs one pytest session that collects the
suite once and certifies its jobs one after the other on that collection
(:mod:`conformance.harness.batch`), so imports, pytest's start-up and collection are paid once per
worker, not once per job; a mutant that corrupts process state cannot touch the parent.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.catalog.requirements import load_catalog
from conformance.paths import features_dir
from conformance.selftest.registry import PARALLEL_REQUIREMENTS, Entry, entries

if TYPE_CHECKING:  # pragma: no cover
    from conformance.harness.batch import Certify

#: A mutant that hangs (waits for a terminal tool that never comes...) should not cost the
#: scenario's whole hard timeout; the reference kernel finishes every scenario far below this
#: (its slowest, 500 iterations, in about 0.1 s). The cap also sets the rendezvous wait
#: (timeout / 2.5) and the backstop's grace for a mutant that ignores cancellation.
MUTANT_TIMEOUT_CAP_S = 1.0

#: pytest options that only cost time here: the matrix needs verdicts, not tracebacks, and the
#: unraisable/thread-exception plugins run gc.collect() several times per session (half the time
#: of a small run).
FAST_ARGS = ("-p", "no:unraisableexception", "-p", "no:threadexception", "--tb=line")

REQ_TAG = re.compile(r"@([A-Z]+-[0-9]{3})\b")


@dataclass
class Job:
    name: str
    kind: str
    spec: str
    profile: str | None
    reqs: list[str] | None  # None: the full suite
    runs: int = 1
    #: Cap the scenarios' timeouts (:data:`MUTANT_TIMEOUT_CAP_S`): a mutant may hang. A
    #: single-fault mutant does not, and on the whole suite a capped timeout under load would be a
    #: second verdict of its own (the 500-iteration budget scenario).
    capped: bool = True
    #: What the runs after the first certify (None: ``reqs`` again): a variant certified several
    #: times reruns the checks involving parallel calls only.
    rerun_reqs: list[str] | None = None


@dataclass
class JobResult:
    name: str
    kind: str
    exit_code: int
    verdicts: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0
    error: str | None = None
    #: The verdicts of the further runs of a mutant certified several times (the first run's are
    #: ``verdicts``).
    reruns: list[dict[str, str]] = field(default_factory=list)
    rerun_exit_codes: list[int] = field(default_factory=list)


@dataclass
class Row:
    entry: Entry
    job: Job
    result: JobResult

    @property
    def ok(self) -> bool:
        """Mutant: killed by its own requirement (a single-fault one failing nothing else).
        Variant: passes everything."""
        if self.entry.kind == "mutant":
            return self.killed and not (self.entry.single_fault and self.others)
        return self.result.error is None and all(c == 0 for c in [self.result.exit_code, *self.result.rerun_exit_codes])

    def _kills(self, verdicts: dict[str, str]) -> bool:
        """Only a ``fail`` of a requirement it violates kills it: ``blocked`` (its check could not
        get past another requirement's subject) and ``incomplete`` never do."""
        if self.entry.passes_nothing:
            return bool(verdicts) and "pass" not in verdicts.values()
        return any(verdicts.get(rid) == "fail" for rid in self.entry.killed_by)

    @property
    def killed(self) -> bool:
        """Killed by a requirement it violates, in every run (never by an unrelated failure)."""
        if self.result.error is not None:
            return False
        return all(self._kills(v) for v in [self.result.verdicts, *self.result.reruns])

    @property
    def unstable(self) -> bool:
        """Killed in some runs and not in others: the check races the kernel."""
        runs = [self._kills(v) for v in [self.result.verdicts, *self.result.reruns]]
        return any(runs) and not all(runs)

    @property
    def passed(self) -> list[str]:
        """For a do-nothing mutant: the requirements it wrongly passed."""
        return sorted(r for r, v in self.result.verdicts.items() if v == "pass")

    @property
    def failed(self) -> list[str]:
        """Requirements that did not pass (blocked ones included: a variant must pass them all)."""
        return sorted(r for r, v in self.result.verdicts.items() if v in ("fail", "blocked", "error", "incomplete"))

    @property
    def blocked(self) -> list[str]:
        return sorted(r for r, v in self.result.verdicts.items() if v == "blocked")

    @property
    def others(self) -> list[str]:
        """Failing requirements besides the ones the mutant violates (a blocked one is not failing:
        one fault, one verdict)."""
        return [r for r in self.failed if r not in self.entry.killed_by and r not in self.blocked]

    @property
    def unexpected(self) -> list[str]:
        return [r for r in self.others if r not in self.entry.also_expected]


@dataclass
class Matrix:
    rows: list[Row]
    duration_s: float
    workers: int
    scope: str
    partial: bool = False  # only some entries were run (--only): coverage is not judged

    @property
    def mutants(self) -> list[Row]:
        return [r for r in self.rows if r.entry.kind == "mutant"]

    @property
    def variants(self) -> list[Row]:
        return [r for r in self.rows if r.entry.kind == "variant"]

    @property
    def ok(self) -> bool:
        """Every mutant killed (a single-fault one failing nothing but its fault), every variant
        passing, and every gating requirement covered by a mutant that is killed."""
        return all(r.ok for r in self.rows) and not self.uncovered

    @property
    def survivors(self) -> list[Row]:
        return [r for r in self.mutants if not r.killed]

    @property
    def uncovered(self) -> list[str]:
        """Gating black-box requirements with no killed mutant (of their profile) breaking them."""
        return [] if self.partial else uncovered([r.entry for r in self.mutants if r.killed])

    def coarsest(self, n: int = 3) -> list[tuple[str, int, str]]:
        """The requirements whose mutants fail the most other requirements: (id, count, mutant).
        Meaningful with scope ``full``; a high count points at checks that are too coarse (or
        at a mutant that breaks the loop itself)."""
        best: dict[str, tuple[int, str]] = {}
        for r in self.mutants:
            count = len(r.others)
            if r.entry.breaks and count > best.get(r.entry.breaks, (-1, ""))[0]:
                best[r.entry.breaks] = (count, r.entry.name)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return [(rid, count, name) for rid, (count, name) in ranked[:n] if count > 0]

    def summary_line(self) -> str:
        killed = sum(r.killed for r in self.mutants)
        passing = sum(r.ok for r in self.variants)
        return f"mutants killed {killed}/{len(self.mutants)}, variants passing {passing}/{len(self.variants)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary_line(),
            "ok": self.ok,
            "duration_s": round(self.duration_s, 2),
            "workers": self.workers,
            "scope": self.scope,
            "uncovered": self.uncovered,
            "coarsest": [{"breaks": rid, "other_failures": count, "mutant": name} for rid, count, name in self.coarsest()],
            "mutants": [
                {
                    "name": r.entry.name, "spec": r.entry.spec, "profile": r.entry.profile, "breaks": r.entry.breaks,
                    "violates": list(r.entry.killed_by), "runs": r.job.runs, "unstable": r.unstable,
                    "wrongly_passed": r.passed if r.entry.passes_nothing else [],
                    "description": r.entry.description, "killed": r.killed, "verdict": r.result.verdicts.get(r.entry.breaks or ""),
                    "exit_code": r.result.exit_code, "also_failed": r.others, "unexpected": r.unexpected,
                    "single_fault": r.entry.single_fault, "ok": r.ok, "blocked": r.blocked,
                    "requirements_run": r.job.reqs, "duration_s": round(r.result.duration_s, 2), "error": r.result.error,
                }
                for r in self.mutants
            ],
            "variants": [
                {
                    "name": r.entry.name, "spec": r.entry.spec, "description": r.entry.description, "passed": r.ok,
                    "exit_code": r.result.exit_code, "failed": r.failed, "duration_s": round(r.result.duration_s, 2),
                    "error": r.result.error,
                }
                for r in self.variants
            ],
        }


# --------------------------------------------------------------------------- what to run


def gating_rows(profile: str) -> list[str]:
    return [r.id for r in load_catalog().gating(profile) if r.testability == "black-box"]


def uncovered(mutants: list[Entry]) -> list[str]:
    covered = {(rid, p) for m in mutants for rid in m.killed_by for p in ([m.profile] if m.profile else ["kernel", "commonagent"])}
    missing = []
    for profile in ("kernel", "commonagent"):
        missing += [f"{rid} ({profile})" for rid in gating_rows(profile) if (rid, profile) not in covered]
    return missing


@cache
def smoke_reqs(profile: str) -> frozenset[str]:
    """Requirement ids the smoke scenarios of a profile check (parsed from the smoke feature)."""
    ids: set[str] = set()
    for path in features_dir().rglob("*.feature"):
        text = path.read_text(encoding="utf-8")
        if "@smoke" not in text.split("Feature:", 1)[0]:
            continue
        tags: list[str] = []
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("@"):
                tags += line.split()
            elif line.startswith(("Scenario", "Scenario Outline")):
                if f"@{profile}" in tags or not ({"@kernel", "@commonagent"} & set(tags)):
                    ids.update(REQ_TAG.findall(" ".join(tags)))
                tags = []
    return frozenset(ids)


def _several_calls(step: Any) -> bool:
    """Does this step script a model response with two or more tool calls (calls that run in
    parallel, or one at a time in an order the seeds leave open)?"""
    table = step.datatable.raw() if step.datatable is not None else None
    if table and step.name.startswith("the model calls in one response"):
        return len(table) > 2  # the header and two calls or more
    if table and step.name.startswith("the model calls, one response per model call"):
        turns = [row[0] for row in table[1:]]
        return len(set(turns)) < len(turns)
    if step.docstring:
        try:
            data = json.loads(step.docstring)
        except ValueError:
            return False
        responses = data if isinstance(data, list) else (data.get("model") or {}).get("responses", []) if isinstance(data, dict) else []
        return any(isinstance(r, dict) and len(r.get("tool_calls") or []) > 1 for r in responses)
    return False


@cache
def parallel_reqs() -> frozenset[str]:
    """Requirement ids whose checks involve several calls of one response: every scenario that
    scripts one (read from the feature files), and the properties' (registry.PARALLEL_REQUIREMENTS).
    A variant certified several times reruns these."""
    from pytest_bdd.parser import FeatureParser

    base = features_dir()
    ids: set[str] = set(PARALLEL_REQUIREMENTS)
    for path in sorted(base.rglob("*.feature")):
        feature = FeatureParser(str(base), str(path.relative_to(base))).parse()
        for scenario in feature.scenarios.values():
            if any(_several_calls(step) for step in scenario.steps):
                ids.update(REQ_TAG.findall(" ".join("@" + t for t in (*feature.tags, *scenario.tags))))
    return frozenset(ids)


SCOPES = ("target", "area", "full")


def job_for(entry: Entry, scope: str = "target") -> Job:
    if entry.kind == "variant" and entry.runs > 1:
        rerun = [r for r in load_catalog().ids() if r in parallel_reqs()]
        return Job(entry.name, entry.kind, entry.spec, entry.profile, None, entry.runs, rerun_reqs=rerun)
    if entry.kind == "variant" or scope == "full" or entry.passes_nothing or entry.single_fault:
        return Job(entry.name, entry.kind, entry.spec, entry.profile, None, entry.runs, capped=not entry.single_fault)
    profile = entry.profile or "kernel"
    reqs = [*entry.killed_by, *entry.also_expected]
    if scope == "area":
        reqs += [r for r in gating_rows(profile) if r.split("-", 1)[0] == entry.area] + sorted(smoke_reqs(profile))
    known = set(load_catalog().ids())
    return Job(entry.name, entry.kind, entry.spec, entry.profile, [r for r in dict.fromkeys(reqs) if r in known], entry.runs)


# --------------------------------------------------------------------------- running


@cache
def slow_requirements() -> frozenset[str]:
    """Requirements with a scenario tagged ``@slow`` (BUDGET-003's 500 iterations take 1-2 s on
    their own): a mutant certified on one keeps its scenarios' own timeouts, since the cap would
    turn a loaded machine into an *incomplete* survivor rather than a verdict."""
    out: set[str] = set()
    for path in features_dir().rglob("*.feature"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if "@slow" in line.split():
                out.update(REQ_TAG.findall(line))
    return frozenset(out)


def run_job(job: Job, certify: Certify) -> JobResult:
    """Certify one mutant or variant with ``certify`` (a batch's: see :func:`run_here`)."""
    started = time.perf_counter()
    reports = []
    try:
        slow = bool(set(job.reqs or []) & slow_requirements())
        cap = MUTANT_TIMEOUT_CAP_S if job.kind == "mutant" and job.capped and not slow else None
        for i in range(max(1, job.runs)):
            reqs = job.reqs if i == 0 or job.rerun_reqs is None else job.rerun_reqs
            reports.append(certify(job.spec, profile=job.profile, reqs=reqs, timeout_cap_s=cap))
    except Exception as exc:  # a harness error: neither killed nor passing, say why
        return JobResult(job.name, job.kind, 3, {}, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"[:500])
    first = reports[0]
    return JobResult(job.name, job.kind, first.exit_code, first.verdicts(), time.perf_counter() - started,
                     reruns=[r.verdicts() for r in reports[1:]], rerun_exit_codes=[r.exit_code for r in reports[1:]])


def run_here(jobs: Iterable[Job], done: Callable[[JobResult], None]) -> None:
    """Run ``jobs`` one after the other in this process, in one pytest session that collects the
    suite once (:func:`conformance.harness.batch.run_batch`); ``done`` gets each result as it
    comes. ``jobs`` may be lazy (a worker claims its next job only when it is free)."""
    from conformance.harness.batch import run_batch

    entries()  # the mutant and variant modules register their factories (the specs)

    def body(certify: Certify) -> None:
        for i, job in enumerate(jobs):
            done(run_job(job, certify))
            if i == 0:
                gc.freeze()  # what the first job imported stays: later collections skip it

    run_batch(body, extra_args=FAST_ARGS)


def _claimed(jobs: list[Job], claims: Path) -> Iterator[Job]:
    """The jobs no other worker has claimed (a claim is a file created with O_EXCL in
    ``claims``), so the workers share one queue without talking to each other."""
    claims.mkdir(exist_ok=True)
    for job in jobs:
        try:
            os.close(os.open(claims / job.name, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        yield job


def _worker(jobs_path: str, out_path: str) -> None:
    """Run the jobs of ``jobs_path`` this worker claims, writing each result as a JSON line."""
    jobs = [Job(**j) for j in json.loads(Path(jobs_path).read_text(encoding="utf-8"))]
    with open(out_path, "w", encoding="utf-8") as out:

        def done(result: JobResult) -> None:
            out.write(json.dumps(asdict(result)) + "\n")
            out.flush()

        run_here(_claimed(jobs, Path(jobs_path).with_suffix(".claims")), done)


def _cost(job: Job) -> float:
    first = 20.0 if job.reqs is None else 1.0 + len(job.reqs)
    rerun = first if job.rerun_reqs is None else 1.0 + len(job.rerun_reqs)
    return first + rerun * (max(1, job.runs) - 1)


def _spawn(jobs: list[Job], workers: int, tmp: Path, env: dict[str, str]) -> tuple[dict[str, JobResult], str]:
    """Run ``jobs`` (costliest first) on ``workers`` processes; the results that came back, and
    the last stderr line of a worker that died (empty when none did)."""
    tmp.mkdir()
    jobs_path = tmp / "jobs.json"
    jobs_path.write_text(json.dumps([asdict(j) for j in sorted(jobs, key=_cost, reverse=True)]), encoding="utf-8")
    procs = []
    for i in range(workers):
        out_path, err_path = tmp / f"out-{i}.jsonl", tmp / f"err-{i}.txt"
        with open(err_path, "w", encoding="utf-8") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "conformance.selftest.runner", "--worker", str(jobs_path), str(out_path)],
                env=env, stdout=subprocess.DEVNULL, stderr=err,
            )
        procs.append((proc, out_path, err_path))
    done: dict[str, JobResult] = {}
    died = ""
    for proc, out_path, err_path in procs:
        proc.wait()
        if out_path.exists():
            for line in out_path.read_text(encoding="utf-8").splitlines():
                r = JobResult(**json.loads(line))
                done[r.name] = r
        if proc.returncode != 0:
            tail = err_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
            died = f"worker exited {proc.returncode}: {tail[0] if tail else 'no output'}"
    return done, died


def run_jobs(jobs: list[Job], workers: int) -> list[JobResult]:
    if workers <= 1:
        results: list[JobResult] = []
        run_here(jobs, results.append)
        return results
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(tempfile.gettempdir()) / "akc-hypothesis"))
    with tempfile.TemporaryDirectory(prefix="akc-selftest-") as tmp:
        done, died = _spawn(jobs, min(workers, len(jobs)), Path(tmp, "run"), env)
        missing = [j for j in jobs if j.name not in done]
        if missing and died:  # a worker died (a mutant took its process down): once more, alone
            again, died = _spawn(missing, 1, Path(tmp, "retry"), env)
            done.update(again)
        retry_incomplete(jobs, done, lambda retry: _spawn(retry, 1, Path(tmp, "incomplete"), env)[0])
    return [done.get(j.name) or JobResult(j.name, j.kind, 3, {}, 0.0, died or "no result") for j in jobs]


def retry_incomplete(jobs: list[Job], done: dict[str, JobResult], run: Callable[[list[Job]], dict[str, JobResult]]) -> None:
    """A run whose only shortfall is *incomplete* requirements (a scenario out of time on a loaded
    machine: no verdict either way) certifies those requirements once more, alone, after the pool
    has finished; their verdicts replace the incomplete ones. Anything else it got stays."""
    retry: list[Job] = []
    for job in jobs:
        result = done.get(job.name)
        if result is None or result.error is not None or result.reruns or result.exit_code != 3:
            continue
        short = sorted(r for r, v in result.verdicts.items() if v == "incomplete")
        if short and all(v in ("pass", "not-offered", "not-applicable", "incomplete") for v in result.verdicts.values()):
            retry.append(Job(job.name, job.kind, job.spec, job.profile, short, capped=job.capped))
    if not retry:
        return
    for name, again in run(retry).items():
        first = done[name]
        first.verdicts.update({r: v for r, v in again.verdicts.items() if r in first.verdicts})
        first.exit_code = again.exit_code
        first.duration_s += again.duration_s


def run_selftest(*, scope: str = "target", workers: int | None = None, names: list[str] | None = None) -> Matrix:
    """Run every mutant and variant (or only ``names``) and return the matrix."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r} (use {', '.join(SCOPES)})")
    started = time.perf_counter()
    chosen = [e for e in entries() if names is None or e.name in names]
    jobs = [job_for(e, scope) for e in chosen]
    # Twice the cores: a mutant that hangs sleeps until its capped timeout, and another job can
    # use the core meanwhile.
    workers = max(1, min(workers or 2 * (os.cpu_count() or 1), len(jobs)))
    by_name = {r.name: r for r in run_jobs(jobs, workers)}
    rows = [Row(e, j, by_name[e.name]) for e, j in zip(chosen, jobs)]
    return Matrix(rows, time.perf_counter() - started, workers, scope, partial=names is not None)


# --------------------------------------------------------------------------- printing


def render(matrix: Matrix, *, verbose: bool = False) -> str:
    lines = ["MUTANTS (breaks -> killed?; other requirements failed)"]
    for r in matrix.mutants:
        mark = "killed  " if r.killed else "UNSTABLE" if r.unstable else "SURVIVED"
        if r.killed and not r.ok:
            mark = "COUNTED+"  # single fault counted more than once: the others are listed
        verdict = r.result.verdicts.get(r.entry.breaks or "", "not run")
        if r.entry.passes_nothing:
            passed = f"  wrongly passed: {', '.join(r.passed)}" if r.passed else ""
            lines.append(f"  {mark} {'(nothing)':<11} {'both':<11} {r.entry.name} (passes nothing?){passed}")
            continue
        extra = f"  also: {', '.join(r.others)}" if r.others else ""
        if r.entry.single_fault:
            extra += f"  (single fault, full suite; {len(r.blocked)} blocked)"
        err = f"  [{r.result.error}]" if r.result.error else ""
        lines.append(f"  {mark} {r.entry.breaks:<11} {r.entry.profile or '':<11} {r.entry.name} ({verdict}, exit {r.result.exit_code}){extra}{err}")
        if verbose:
            lines.append(f"           {r.entry.description.rstrip('.')}; ran {'full suite' if r.job.reqs is None else ', '.join(r.job.reqs)}")
    lines.append("VARIANTS (full suite -> passes?)")
    for r in matrix.variants:
        mark = "pass" if r.ok else "FAIL"
        failed = f"  failed: {', '.join(r.failed)}" if r.failed else ""
        err = f"  [{r.result.error}]" if r.result.error else ""
        lines.append(f"  {mark} {r.entry.name} (exit {r.result.exit_code}){failed}{err}")
        if verbose:
            lines.append(f"       {r.entry.description}")
    if matrix.uncovered:
        lines.append(f"NO KILLED MUTANT for: {', '.join(matrix.uncovered)}")
    coarse = matrix.coarsest() if matrix.scope == "full" else []
    if coarse:
        lines.append("most other requirements failed by one mutant: " + "; ".join(f"{rid} {count} ({name})" for rid, count, name in coarse))
    scope = {
        "full": "the full suite of their profile",
        "area": "their requirement(s) + the gating rows of their area + the smoke requirements, in their profile",
        "target": "the requirement they break (+ those they are expected to break), in their profile",
    }[matrix.scope]
    lines.append(f"mutants ran: {scope}; variants ran: the full suite; {matrix.workers} worker(s), {matrix.duration_s:.1f} s")
    lines.append(matrix.summary_line())
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3])
    else:
        print("usage: python -m conformance.selftest.runner --worker JOBS.json OUT.jsonl", file=sys.stderr)
        sys.exit(2)
