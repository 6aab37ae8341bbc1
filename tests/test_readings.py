"""The readings table stays consistent with the catalog and the self-test, and `akc readings`
prints it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.boundary.adapter import AdapterInfo
from conformance.catalog.readings import load_readings, validate_declared
from conformance.errors import UsageError
from conformance.harness.loading import check_adapter
from conformance.selftest.registry import entries


def test_every_open_point_names_its_variants_and_they_exist() -> None:
    variants = {e.name for e in entries("variant")}
    for row in load_readings().reading:
        missing = [v for v in row.variants if v not in variants]
        assert not missing, f"reading {row.id}: no self-test variant {missing}"
        if row.handling == "decision":
            assert not row.alternatives and not row.variants, row.id


def test_the_readings_the_issue_named_are_recorded() -> None:
    ids = {r.id for r in load_readings().reading}
    assert {
        "session-start-frequency", "final-turn-counts", "kernel-result-order", "interactive-concurrency-spec",
        "invalid-tag", "veto-result", "precheck-denial-result", "cost-precision", "sequential-order",
        "session-end-payload", "uuid7-same-millisecond", "hook-order-outside-chains", "post-tool-call-payload",
        "imported-000-rules", "span-005-scope", "tags-no-meaning", "three-dimensions-vs-should", "child-profile",
    } <= ids


def test_declared_readings_are_validated() -> None:
    assert validate_declared({"final-turn-counts": "counted"}) == []
    assert "unknown reading" in validate_declared({"nope": "x"})[0]
    assert "no alternative" in validate_declared({"final-turn-counts": "sometimes"})[0]
    assert "cannot be declared" in validate_declared({"imported-000-rules": "x"})[0]


class _Adapter:
    def __init__(self, readings: dict[str, str]) -> None:
        self.info = AdapterInfo(name="x", version="1", profiles=["kernel"], readings=readings)

    async def run(self, scenario, doubles):  # pragma: no cover - never run
        raise AssertionError


def test_an_adapter_declaring_an_unknown_reading_is_a_usage_error() -> None:
    check_adapter(_Adapter({"final-turn-counts": "counted"}), "test")
    with pytest.raises(UsageError, match="info.readings.*no alternative 'maybe'"):
        check_adapter(_Adapter({"final-turn-counts": "maybe"}), "test")


def test_akc_readings_lists_shows_and_refuses(akc_here: Any) -> None:
    _akc = akc_here  # the entry point, in this interpreter (tests/inprocess.py)
    listed = _akc("readings", "--json")
    assert listed.returncode == 0
    assert {r["id"] for r in json.loads(listed.stdout)} == {r.id for r in load_readings().reading}
    shown = _akc("readings", "final-turn-counts")
    assert shown.returncode == 0 and "counted" in shown.stdout and "BOUND-002" in shown.stdout
    bad = _akc("readings", "no-such-reading")
    assert bad.returncode == 2 and "unknown reading" in bad.stderr
