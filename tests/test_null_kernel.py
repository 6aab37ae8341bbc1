"""Evidence before pass: a kernel that does nothing passes no requirement, whatever it claims."""

from __future__ import annotations

import pytest

from conformance import certify
from tests.fakes.null import null_completed, null_empty


@pytest.mark.parametrize("factory", [null_empty, null_completed], ids=["empty-result", "completed-only"])
def test_a_do_nothing_kernel_passes_nothing(factory) -> None:
    report = certify(factory)
    passed = [r.id for r in report.requirements if r.verdict == "pass"]
    assert passed == [], f"a kernel that does nothing passed {passed}"
    assert report.exit_code == 1
    # nothing it does not do is excused as "not offered": it claims every capability
    assert not [r.id for r in report.requirements if r.verdict == "not-offered"]
