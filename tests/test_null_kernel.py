"""Evidence before pass: a kernel that does nothing passes no requirement, whatever it claims.

``null_empty`` is certified over the whole suite in ``python -m pytest`` (once per session, shared
with the self-test's verdict on it, tests/conftest.py ``null_report``). ``null_completed`` over
the whole suite is a second whole-suite certification, marked ``whole_suite`` (``python -m
pytest -m whole_suite``, a step of ``.ci/run``; ``akc selftest`` certifies it over the whole
suite too); the default tier certifies it over the sample of tests/sample.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.report.model import Report
from tests.sample import SAMPLE


def _passes_nothing(report: Report) -> None:
    passed = [r.id for r in report.requirements if r.verdict == "pass"]
    assert passed == [], f"a kernel that does nothing passed {passed}"
    assert report.exit_code == 1
    # nothing it does not do is excused as "not offered": it claims every capability
    assert not [r.id for r in report.requirements if r.verdict == "not-offered"]


@pytest.mark.parametrize("name", [
    "null_empty",
    pytest.param("null_completed", marks=pytest.mark.whole_suite),
], ids=["empty-result", "completed-only"])
def test_a_do_nothing_kernel_passes_nothing(name: str, null_report: Callable[[str], Report]) -> None:
    """``conformance.certify(factory)`` of tests.fakes.null's kernel, the whole suite (tests/conftest.py)."""
    _passes_nothing(null_report(name))


def test_a_do_nothing_kernel_passes_nothing_on_the_sample() -> None:
    """``null_completed`` (it reports a completed turn and nothing else) over tests/sample.py."""
    from conformance import certify
    from tests.fakes import null

    report = certify(null.null_completed, reqs=SAMPLE)
    assert sorted(report.verdicts()) == sorted(SAMPLE)
    _passes_nothing(report)
