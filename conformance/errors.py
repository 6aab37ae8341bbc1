"""What a failed check looks like, and who is to blame.

Three kinds of trouble, kept apart because they give different verdicts:

* :class:`ConformanceFailure` (an ``AssertionError``): the *kernel* did something the requirement
  forbids → verdict ``fail``. Its message always says what was expected and what was observed.
* :class:`HarnessError`: the harness or the adapter broke (not the kernel's fault) → ``error``.
* :class:`Unsupported`: the adapter says it cannot express the scenario → ``incomplete``.
* :class:`Blocked`: a precondition that is another requirement's subject did not happen →
  ``blocked`` (one fault, one verdict: that other requirement fails, this one is not counted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def _plain(value: Any) -> Any:
    """For ``json.dumps``: a read-only sequence (a logged request's messages) as a list, else ``str``."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)) else str(value)


def show(value: Any, limit: int = 300) -> str:
    """A short, stable rendering of a value for messages (JSON where possible)."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, sort_keys=True, default=_plain)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ConformanceFailure(AssertionError):
    """The kernel did not do what a requirement says: verdict ``fail``.

    ``subject`` names the requirement(s) whose subject the failed step judges, where that may not
    be the scenario's own (a rendezvous that did not meet is concurrency's subject): a check tagged
    with other ids is ``blocked`` by these, not their failure. Empty: every tagged id fails."""

    def __init__(
        self, what: str, expected: Any = None, observed: Any = None, *, raw: bool = False, subject: str | Sequence[str] = ()
    ):
        self.what = what
        self.subject = [subject] if isinstance(subject, str) else list(subject)
        self.expected = expected
        self.observed = observed
        if raw:
            message = what
        else:
            message = f"{what}: expected {_text(expected)} / observed {_text(observed)}"
        super().__init__(message)


def _text(value: Any) -> str:
    return value if isinstance(value, str) and not value.startswith(("{", "[")) else show(value)


class HarnessError(Exception):
    """The harness or the adapter broke, not the kernel: verdict ``error``, never ``fail``."""


class AdapterError(HarnessError):
    """The adapter raised, returned a malformed result, or broke the adapter contract."""


class UsageError(Exception):
    """Bad input from the user (flag, adapter spec, requirement id): one line, exit code 2."""


class Unsupported(Exception):
    """Raised by an adapter that cannot express a scenario with its kernel: verdict
    ``incomplete`` (it could not be tested), never ``pass`` nor ``fail``."""


class Incomplete(Unsupported):
    """Raised by a check whose precondition never happened in the run (a cancel point the kernel
    never reached, say): the requirement could not be tested here — ``incomplete``. What the
    kernel failed to do is judged by the requirements that demand it, not by this one."""


class Blocked(Incomplete):
    """Raised by a check whose precondition is *another* requirement's subject, and unmet (the run
    raised at a limit, a hook point the kernel lacks was never dispatched): the check cannot judge
    its own subject. Verdict ``blocked`` — never a pass, never this requirement's failure — listed
    with the requirement that blocks it ("blocked by BOUND-008: the run raised"), as WPT's
    PRECONDITION_FAILED. ``by`` names the blocking requirement id(s)."""

    def __init__(self, by: str | Sequence[str], reason: str):
        self.by = [by] if isinstance(by, str) else list(by)
        self.reason = reason
        super().__init__(f"blocked by {', '.join(self.by)}: {reason}")


# --------------------------------------------------------------------------- helpers


def fail(what: str, expected: Any, observed: Any) -> None:
    """Fail the check now."""
    raise ConformanceFailure(what, expected, observed)


def expect_equal(what: str, expected: Any, observed: Any) -> None:
    """``expected == observed`` or a failure naming both."""
    if expected != observed:
        raise ConformanceFailure(what, expected, observed)


def expect_true(condition: bool, what: str, expected: Any, observed: Any) -> None:
    """Fail with ``expected``/``observed`` unless ``condition`` holds."""
    if not condition:
        raise ConformanceFailure(what, expected, observed)


def expect_in(what: str, member: Any, container: Any) -> None:
    """``member in container`` or a failure."""
    if member not in container:
        raise ConformanceFailure(what, f"{show(member)} among them", container)


def expect_not_in(what: str, member: Any, container: Any) -> None:
    """``member not in container`` or a failure."""
    if member in container:
        raise ConformanceFailure(what, f"no {show(member)}", container)


def expect_order(what: str, expected: list[Any], observed: list[Any]) -> None:
    """``observed`` lists exactly ``expected``, in that order."""
    if list(expected) != list(observed):
        raise ConformanceFailure(what, list(expected), list(observed))


def expect_subsequence(what: str, expected: list[Any], observed: list[Any]) -> None:
    """``expected`` appears in ``observed`` in that order (other items may come between)."""
    it = iter(observed)
    if not all(any(x == y for y in it) for x in expected):
        raise ConformanceFailure(what, f"in this order: {show(list(expected))}", list(observed))
