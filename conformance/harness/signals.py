"""SIGINT and SIGTERM end a run the same way: as an interruption, never as a verdict.

While the handlers of :func:`install_for_session` are in place (main thread only), the first SIGINT or SIGTERM raises
:class:`Interrupted` (a ``KeyboardInterrupt``, so pytest stops the session and runs its cleanup);
later ones are ignored so that cleanup can finish. :func:`received` says which signal it was, and
:func:`exit_code_for` gives the shell convention the CLI exits with (130 SIGINT, 143 SIGTERM).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_received: int | None = None
#: Set once a run has cleared its report paths (``certify.prepare``): from then on the run
#: itself says what an interruption means for its reports.
_run_began = False
#: A signal the CLI's start-up handler caught (``conformance.cli``), before or after a run.
_early: int | None = None


class Interrupted(KeyboardInterrupt):
    """The run got SIGINT or SIGTERM."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def received() -> int | None:
    """The signal that interrupted the current run (None: none did)."""
    return _received


def reset() -> None:
    global _received
    _received = None


def note(signum: int) -> None:
    """Record an interruption seen another way (pytest's own SIGINT handling, a child's report)."""
    global _received
    if _received is None:
        _received = signum


def cli_ended() -> None:
    """An ``akc`` command ended in this process (a test's): the next one starts afresh."""
    global _run_began, _early
    _run_began, _early = False, None


def early_note(signum: int, frame: Any) -> None:
    """The CLI's handler while its modules import: record the signal (raising there would be a
    traceback); ``main()`` acts on it as soon as it starts."""
    global _early
    _early = signum
    note(signum)


def run_began() -> None:
    global _run_began
    _run_began = True


def began() -> bool:
    return _run_began


def early_handler(signum: int, frame: Any) -> None:
    """The CLI's handler outside a run: record the signal, then stop as :func:`_handler` does."""
    global _early
    _early = signum
    _handler(signum, frame)


def early() -> int | None:
    return _early


def exit_code_for(signum: int) -> int:
    """128 + the signal number: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(signum)


def name(signum: int) -> str:
    return signal.Signals(signum).name


def _handler(signum: int, frame: Any) -> None:
    note(signum)
    for s in SIGNALS:  # the cleanup that follows must not be interrupted in turn
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def install_for_session() -> Any:
    """Install the handlers for a pytest session (the plugin's configure); returns the undo
    function (None outside the main thread, where signals cannot be handled)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    reset()
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _handler)

    def restore() -> None:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)

    return restore
