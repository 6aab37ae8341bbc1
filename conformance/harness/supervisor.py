"""Run the suite in a supervised child process, so that nothing a kernel does can end the run
without a verdict: an adapter calling ``os._exit``, a crash in native code, a kernel that kills
its own process — the supervisor sees the child end without its result, names the scenario it
was running (from the child's progress file) and writes an incomplete report (exit 3).

The child is a ``fork`` of the CLI process made after the harness and the adapter are imported
and validated, so it costs no start-up time (about a millisecond). Where ``fork`` is missing
(Windows), or unsafe (other threads already running), the suite runs in-process as before.

Signals: SIGINT/SIGTERM reach the supervisor (and, from a terminal, the child too); the
supervisor passes them on to the child, which stops its session and writes an incomplete report;
if the child has not ended within :data:`CHILD_GRACE_S` it is killed. The CLI then exits 130/143.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conformance.children import Children

#: Seconds the child gets to wind down after a signal was passed on, before SIGKILL.
CHILD_GRACE_S = 10.0


def can_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1 and not os.environ.get("AKC_NO_SUPERVISOR")


class _Signalled(Exception):
    pass


def run_supervised(options: Any, prepared: Any = None) -> Any:
    """:func:`conformance.harness.certify.run_suite` in a forked child; same SuiteRun back."""
    from conformance.harness.certify import SuiteRun, prepare, run_suite

    if not can_fork():
        return run_suite(options, prepared=prepared)
    if prepared is None:
        prepared = prepare(options)  # usage errors (exit 2) are found here, before any fork
    workdir = tempfile.mkdtemp(prefix="akc-run-")
    progress = os.path.join(workdir, "progress.jsonl")
    result_path = os.path.join(workdir, "result.json")
    pid = fork_child(options, prepared, progress, result_path)
    # ------------------------------------------------------------------------- the parent
    try:
        status, signum = _wait(pid)
        if os.path.exists(result_path):
            out = json.loads(Path(result_path).read_text(encoding="utf-8"))
            from conformance.report.model import Report

            report = Report.model_validate(out["report"]) if out.get("report") else None
            if out.get("usage_error"):
                from conformance.errors import UsageError

                raise UsageError(out["usage_error"])
            code = out["exit_code"]
            if signum is not None and report is not None and report.exit_code in (0, 1, 3):
                # The child finished just as the signal came: still interrupted, and the reports
                # (written by the child) say so too.
                code = report.exit_code = 128 + signum
                report.errors.append(f"interrupted by {signal.Signals(signum).name} as the run ended")
                from conformance.report.writers import write_reports

                write_reports(report, json_path=options.json_path, junit_path=options.junit_path, markdown_path=options.markdown_path)
            return SuiteRun(report=report, exit_code=code, output=out.get("output", ""), pytest_exit=out.get("pytest_exit", 0))
        report = crash_report(options, prepared, progress, status, signum)
        from conformance.report.writers import write_reports

        write_reports(report, json_path=options.json_path, junit_path=options.junit_path, markdown_path=options.markdown_path)
        return SuiteRun(report=report, exit_code=report.exit_code, output="", pytest_exit=3)
    finally:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)


def fork_child(options: Any, prepared: Any, progress: str, result_path: str, extra: Any = None) -> int:
    """Fork the child that runs the suite with ``options``; it writes its result (JSON, plus
    ``extra(run)`` when given) to ``result_path`` and its progress to ``progress``. Returns its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid != 0:
        return pid
    code = 0
    try:
        out = _child(options, prepared, progress, extra)
        tmp = result_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(out))
        os.replace(tmp, result_path)
    except BaseException:  # noqa: BLE001 - the parent reports a child without a result
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            from conformance.wire.connection import _kill_leftovers

            _kill_leftovers()
        finally:
            os._exit(code)


def _child(options: Any, prepared: Any, progress: str, extra: Any = None) -> dict[str, Any]:
    from conformance.errors import UsageError
    from conformance.harness.certify import run_suite
    from conformance.report.writers import to_json

    options.extra_args = [*options.extra_args, "--akc-progress", progress]
    try:
        run = run_suite(options, prepared=prepared)
    except UsageError as exc:
        return {"usage_error": str(exc), "exit_code": 2}
    out = {
        "report": json.loads(to_json(run.report)) if run.report is not None else None,
        "exit_code": run.exit_code,
        "output": run.output,
        "pytest_exit": run.pytest_exit,
    }
    if extra is not None:
        out.update(extra(run))
    return out


def _wait(pid: int) -> tuple[int, int | None]:
    """Wait for the child; pass SIGINT/SIGTERM on to it. Returns (wait status, signal received)."""
    got: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        got.append(signum)
        try:
            os.kill(pid, signum)
        except OSError:
            pass
        raise _Signalled

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, handler)
    try:
        deadline: float | None = None
        with Children([pid]) as child:
            while True:
                try:
                    if deadline is None:
                        _, status = os.waitpid(pid, 0)
                        break
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        break
                    if time.monotonic() > deadline:
                        os.kill(pid, signal.SIGKILL)
                        deadline = float("inf")
                    child.wait(None if deadline == float("inf") else deadline - time.monotonic())
                except _Signalled:
                    if deadline is None:
                        deadline = time.monotonic() + CHILD_GRACE_S
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return status, (got[0] if got else None)


def describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        try:
            return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
        except ValueError:
            return f"was killed by signal {os.WTERMSIG(status)}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


def crash_report(options: Any, prepared: Any, progress: str, status: int, signum: int | None) -> Any:
    """The incomplete report of a child that ended without its result, from its progress file."""
    from conformance.harness.plugin import build_report

    report = build_report(crash_state(options, prepared, progress, status, signum))  # type: ignore[arg-type]
    if signum is not None:
        report.exit_code = 128 + signum
    return report


def crash_state(options: Any, prepared: Any, progress: str, status: int, signum: int | None) -> Any:
    """What :func:`~conformance.harness.plugin.build_report` needs of a child that ended without
    its result, from its progress file: the checks (the one running named as the cause)."""
    from conformance.harness.plugin import load_catalog_or_none
    from conformance.report.verdicts import Check

    checks: dict[str, Check] = {}
    profiles = prepared.profiles
    running: str | None = None
    try:
        lines = Path(progress).read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut short by the crash
        if "checks" in event:
            checks = {k: Check(**v) for k, v in event["checks"].items()}
            profiles = event.get("profiles", profiles)
        elif "start" in event:
            running = event["start"]
        elif "end" in event and event["end"] in checks:
            c = checks[event["end"]]
            c.outcome, c.message = event["outcome"], event["message"]
            running = None
    how = describe_status(status)
    if signum is not None:
        cause = f"interrupted by {signal.Signals(signum).name}"
    elif os.WIFEXITED(status) and os.waitstatus_to_exitcode(status) == 0:
        cause = f"the suite process {how} without finishing the run (did the adapter call os._exit?)"
    else:
        cause = f"the suite process {how} without finishing the run (a crash in the adapter or in native code?)"
    where = ""
    if running is not None and running in checks:
        c = checks[running]
        c.outcome, c.message = "error", f"{cause} during this scenario"
        where = f" during {c.feature} / {c.scenario}"
    ran = sum(1 for c in checks.values() if c.outcome != "not-run")
    catalog = load_catalog_or_none()
    expectations = None
    if options.expect_path:
        from conformance.report.expectations import load as load_expectations

        expectations = load_expectations(options.expect_path, catalog.ids() if catalog is not None else None)
    state = SimpleNamespace(
        catalog=catalog, checks=checks, info=prepared.info, profiles=profiles, expectations=expectations,
        req_filter=[r.strip().upper() for r in options.reqs] or None, smoke=options.smoke, strict=options.strict,
        failed_traces={}, collect_errors=[f"{cause}{where}; {ran} of {len(checks)} checks ran; the rest did not run"],
        started=prepared.started,
    )
    return state
