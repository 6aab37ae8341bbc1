"""Evidence before pass: a kernel that does nothing passes no requirement, whatever it claims."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.report.model import Report


@pytest.mark.parametrize("name", ["null_empty", "null_completed"], ids=["empty-result", "completed-only"])
def test_a_do_nothing_kernel_passes_nothing(name: str, null_report: Callable[[str], Report]) -> None:
    """``conformance.certify(factory)`` of tests.fakes.null's kernel (tests/conftest.py)."""
    report = null_report(name)
    passed = [r.id for r in report.requirements if r.verdict == "pass"]
    assert passed == [], f"a kernel that does nothing passed {passed}"
    assert report.exit_code == 1
    # nothing it does not do is excused as "not offered": it claims every capability
    assert not [r.id for r in report.requirements if r.verdict == "not-offered"]
