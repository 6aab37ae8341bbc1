"""Waiting on child processes with a deadline, without a polling loop: on Linux a pidfd per child
(``os.pidfd_open``) turns readable when the child exits, and one ``select`` waits on them all
until then or the deadline. A signal handler that raises interrupts the wait, as it interrupts
``os.waitpid``; one that returns wakes it with :meth:`Children.wake`. Where pidfds are missing (not Linux, a kernel before 5.3) the wait is a short
sleep, and the caller's ``waitpid(WNOHANG)`` loop polls as it did before."""

from __future__ import annotations

import os
import select
import time

#: The fallback's poll period, where no pidfd can be opened.
POLL_S = 0.02


class Children:
    """Exit notifications of some child processes (their pids; the caller still reaps them)."""

    def __init__(self, pids: list[int]) -> None:
        self._fds: dict[int, int] = {}
        self._polled = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        for pid in pids:
            self.add(pid)

    def wake(self) -> None:
        """End a :meth:`wait` now (safe in a signal handler: one non-blocking write)."""
        try:
            os.write(self._wake_w, b"\0")
        except OSError:  # the pipe is full: a wake is already pending
            pass

    def add(self, pid: int) -> None:
        try:
            self._fds[pid] = os.pidfd_open(pid)
        except (AttributeError, OSError):  # no pidfds here, or the pid is already reaped
            self._polled = True

    def discard(self, pid: int) -> None:
        """Stop watching ``pid`` (reaped): its pidfd stays readable for good."""
        fd = self._fds.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def wait(self, timeout: float | None) -> None:
        """Return once some watched child has exited, or after ``timeout`` seconds (None: no limit)."""
        if self._polled or not self._fds:
            time.sleep(POLL_S if timeout is None else max(0.0, min(timeout, POLL_S)))
            return
        ready, _, _ = select.select([self._wake_r, *self._fds.values()], [], [], None if timeout is None else max(0.0, timeout))
        if self._wake_r in ready:
            os.read(self._wake_r, 4096)

    def close(self) -> None:
        for fd in (*self._fds.values(), self._wake_r, self._wake_w):
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reap(pid: int, grace: float) -> int:
    """Wait for the child ``pid`` to exit, killing it after ``grace`` seconds; its wait status."""
    import signal

    deadline = time.monotonic() + grace
    with Children([pid]) as child:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                return os.waitpid(pid, 0)[1]
            child.wait(left)
