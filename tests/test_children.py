"""Waiting on child processes without a polling loop (conformance/children.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from conformance.children import Children, reap


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


def test_wait_returns_when_a_child_exits_not_at_its_timeout() -> None:
    gate_r, gate_w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", f"import os; os.read({gate_r}, 1)"], pass_fds=(gate_r,))
    os.close(gate_r)
    with Children([proc.pid]) as children:
        os.write(gate_w, b"x")  # the child exits now
        children.wait(None)  # no timeout: only the exit can end it (a broken wait hangs the test)
        assert proc.poll() == 0  # it has exited (reaped here by Popen)
    os.close(gate_w)


def test_wake_ends_a_wait_on_children_still_running() -> None:
    proc = _child("import time; time.sleep(60)")
    try:
        with Children([proc.pid]) as children:
            threading.Timer(0.0, children.wake).start()
            children.wait(None)  # would block for the child's 60 s without the wake
            assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_reap_kills_a_child_that_outlives_its_grace() -> None:
    pid = os.fork()
    if pid == 0:  # a child that ignores SIGTERM and never exits on its own
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            signal.pause()
    status = reap(pid, 0.2)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_reap_returns_the_status_of_a_child_that_exits() -> None:
    proc = _child("raise SystemExit(3)")
    status = reap(proc.pid, 60)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3
    proc.returncode = 3  # reaped here, not by Popen
