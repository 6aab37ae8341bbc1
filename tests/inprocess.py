"""``akc ARGS`` in the test interpreter: the ``akc`` entry point (``conformance.cli.main``) with
``sys.argv`` set, run from the checkout, its stdout and stderr captured and its exit code caught,
as a subprocess would give them. A run still forks its supervised child as ``akc run`` does, when
this interpreter runs no other thread (:func:`alone` waits for that; otherwise the harness runs
the suite in this process, unsupervised). It saves a fresh interpreter's start-up (about 1.3 s of
CPU for a smoke run: the imports, the suite's first collection). Tests whose point is the real process (signals, ``os._exit``, exit
codes of a dying process, start-up) keep ``python -m conformance`` in a subprocess."""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Ran:
    """What ``akc ARGS`` gave (the fields of subprocess.CompletedProcess the tests read)."""

    returncode: int
    stdout: str
    stderr: str


def run_akc(*args: str, cwd: Path | None = None) -> Ran:
    from conformance import cli

    cli._register()  # every command (a no-op once registered)
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    added = str(ROOT) not in sys.path
    if added:
        sys.path.insert(0, str(ROOT))
    code: int | str | None = 0
    try:
        sys.argv = ["akc", *args]
        os.chdir(cwd or ROOT)
        # The test session's objects are no garbage of this run: the collector skips them (as the
        # harness does before it forks its shards), else a long run pays for the session's heap.
        gc.freeze()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
            except SystemExit as exc:
                code = exc.code
    finally:
        gc.unfreeze()
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        if added:
            sys.path.remove(str(ROOT))
    if isinstance(code, str):  # SystemExit("message"): printed on stderr, exit 1
        err.write(code + "\n")
        code = 1
    return Ran(int(code or 0), out.getvalue(), err.getvalue())


def alone(timeout: float = 20.0) -> None:
    """Wait until this interpreter runs no thread but the main one, then check that ``akc run``
    would fork its supervised child (``--jobs``: its shards) here: it does only then
    (:func:`conformance.harness.supervisor.can_fork`), and without it a misbehaving adapter would
    run in the test interpreter, a sharded run in one process. Earlier tests leave threads that
    end on their own: the idle workers of trio's thread cache (retired after 0.5 s here, see
    tests/conftest.py) and of anyio's, an abandoned event loop's thread (test_harness's backstop)."""
    from conformance.harness.supervisor import can_fork

    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    assert can_fork(), f"akc run could not fork its supervised child here: {threading.enumerate()}"
