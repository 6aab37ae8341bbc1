"""One fault, one verdict in the distinct-keys properties: calls of distinct keys that did not
overlap are CONC-006's subject when an unsafe call's provider-wide key is among them, else the
safe keys' rule (CONC-001 for data sources, CONC-005 for resources), so a kernel whose only fault
is a global barrier for unsafe calls fails CONC-006 once and CONC-001 is blocked by it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.errors import Blocked, ConformanceFailure
from conformance.suite import test_prop_conc as prop


class FakeContext:
    def __init__(self, keys: str = "native") -> None:
        self.scenario = SimpleNamespace(rendezvous=[], timeout_s=None)
        self.keys = keys

    def block_on_lacking_mechanism(self, mechanism: str, what: str) -> None:
        if mechanism == "concurrency_keys" and self.keys != "native":
            raise Blocked("CONC-002", what)

    def add_tool(self, tool: Any) -> None:
        pass

    def add_response(self, response: Any) -> None:
        pass

    def run(self) -> None:
        raise ConformanceFailure("calls did not run concurrently", raw=True, subject=("CONC-001", "CONC-005", "CONC-006", "CONC-009"))


@pytest.mark.parametrize(
    ("kind", "tools", "subject"),
    [
        ("data_source", ["ka", "sa"], "CONC-001"),  # safe keys only
        ("data_source", ["sa", "ua"], "CONC-006"),  # an unsafe call's provider key among them
        ("resource", ["ka", "kc"], "CONC-005"),
        ("resource", ["na", "uc"], "CONC-006"),
    ],
)
def test_an_unmet_rendezvous_names_one_subject(monkeypatch: pytest.MonkeyPatch, kind: str, tools: list[str], subject: str) -> None:
    monkeypatch.setattr(prop, "context", lambda *_a, **_k: FakeContext())
    calls = [(f"x{i}", t, {"path": "a", "mode": "r", "n": i}) for i, t in enumerate(tools, 1)]
    with pytest.raises(ConformanceFailure) as info:
        prop.check_distinct_keys("p", (kind, calls))
    assert info.value.subject == [subject]


def test_provider_keys_held_apart_on_a_kernel_without_concurrency_keys_are_conc_002s(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unsafe calls of two providers serialised by one global barrier: the kernel has no
    concurrency keys (CONC-002's subject), so CONC-006's check is blocked by it; safe keys that
    did not meet stay CONC-001's own failure."""
    monkeypatch.setattr(prop, "context", lambda *_a, **_k: FakeContext(keys="absent"))
    unsafe = [(f"x{i}", t, {"path": "a", "mode": "r", "n": i}) for i, t in enumerate(["sa", "ua"], 1)]
    with pytest.raises(Blocked) as blocked:
        prop.check_distinct_keys("p", ("data_source", unsafe))
    assert blocked.value.by == ["CONC-002"]
    safe = [(f"x{i}", t, {"path": "a", "mode": "r", "n": i}) for i, t in enumerate(["ka", "sa"], 1)]
    with pytest.raises(ConformanceFailure) as failed:
        prop.check_distinct_keys("p", ("data_source", safe))
    assert failed.value.subject == ["CONC-001"]
