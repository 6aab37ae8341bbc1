"""Every FAIL defended (issue 22 §4): each FAIL cell of the committed matrix carries its root cause
with a citation in the pinned framework's source, or says it is unconfirmed, in the matrix, the
per-kernel reports and the book; and the table they come from (conformance/catalog/fail_causes.toml)
is well formed."""

from __future__ import annotations

import json
import tomllib

import pytest

from conformance.adapters import KERNELS
from conformance.catalog.mechanisms import dependencies
from conformance.report import fail_causes as fc
from conformance.report import matrix as m

MATRIX = json.loads(m.DEFAULT_JSON.read_text(encoding="utf-8"))


def _fail_cells() -> list[tuple[str, str]]:
    return [(k, row["id"]) for row in MATRIX["requirements"] for k, v in row["verdicts"].items() if v == "fail" and k != "reference"]


def test_the_table_names_registered_kernels_and_known_mechanisms() -> None:
    data = tomllib.loads(fc.CAUSES_PATH.read_text(encoding="utf-8"))
    kernels = {k.name for k in KERNELS}
    known = {d.name for deps in dependencies().values() for d in deps}
    table = fc.causes()  # raises on a malformed entry or citation
    assert set(data) <= kernels - {"reference"}
    for kernel, parts in table.items():
        assert set(parts["mechanisms"]) <= known, (kernel, set(parts["mechanisms"]) - known)


def test_every_fail_cell_of_the_matrix_has_a_cause_with_a_citation_or_says_unconfirmed() -> None:
    cells = _fail_cells()
    assert cells, "the committed matrix has no FAIL cell: nothing to defend?"
    missing = []
    for kernel, rid in cells:
        got = MATRIX_KERNELS[kernel].get("fail_causes", {}).get(rid)
        if not got or not got.get("cause") or not (got.get("unconfirmed") is True or fc.CITATION.match(got.get("source") or "")):
            missing.append((kernel, rid))
    assert not missing


def test_the_per_kernel_reports_carry_the_same_causes() -> None:
    for kernel, rid in _fail_cells():
        path = m.DEFAULT_REPORTS / f"{kernel}.json"
        report = json.loads(path.read_text(encoding="utf-8"))
        req = next(r for r in report["requirements"] if r["id"] == rid)
        assert req.get("fail_cause") == MATRIX_KERNELS[kernel]["fail_causes"][rid], (kernel, rid)


MATRIX_KERNELS = {k["name"]: k for k in MATRIX["kernels"]}


def test_a_requirement_entry_wins_then_the_lacking_mechanisms_then_unconfirmed(monkeypatch) -> None:
    table = {
        "fw": {
            "requirements": {"BOUND-008": fc.Cause("raises at the limit", "fw/limits.py:10-12")},
            "mechanisms": {"plan-ready": fc.Cause("no plan gate", "fw/hooks.py:1-40"), "post-apply": fc.Cause("no apply step", "fw/hooks.py:41")},
        }
    }
    monkeypatch.setattr(fc, "causes", lambda: table)
    mech = {"plan-ready": {"kind": "absent"}, "post-apply": {"kind": "absent"}, "max_turns": {"kind": "native"}}
    assert fc.cause_of("fw", "BOUND-008", mech) == fc.Cause("raises at the limit", "fw/limits.py:10-12")
    both = fc.cause_of("fw", "LOOP-011", mech)  # depends on post-apply:observe and plan-ready
    assert both.source == "fw/hooks.py:41; fw/hooks.py:1-40" and both.cause.startswith("post-apply: no apply step; plan-ready:")
    assert not fc.cause_of("fw", "BOUND-010", mech, "observed x").confirmed  # final_turn has no entry
    assert fc.cause_of("fw", "BOUND-010", mech, "observed x").as_json() == {"cause": "observed x", "unconfirmed": True}


@pytest.mark.parametrize("source", ["a/b.py:1", "a.py:1-4, 9; b/c.py:2 (x)", "claude@351354460", "claude@1, 2-3; a.py:1"])
def test_a_citation_is_a_source_line_or_a_compiled_binarys_byte_offset(source: str) -> None:
    assert fc.CITATION.match(source)


@pytest.mark.parametrize("source", ["claude", "claude@", "a.py", "claude@x1"])
def test_a_citation_without_a_line_or_offset_is_refused(source: str) -> None:
    assert not fc.CITATION.match(source)


@pytest.mark.parametrize("entry", [{"cause": "x"}, {"cause": "x", "source": "no line"}, {"cause": "x", "source": "a.py:1", "unconfirmed": True}])
def test_a_malformed_entry_is_refused_with_where_it_is(entry: dict) -> None:
    with pytest.raises(ValueError, match=r"\[fw.requirements.X-1\]"):
        fc._entry("[fw.requirements.X-1]", entry)


def test_every_requirement_entry_defends_a_fail_cell_of_the_matrix() -> None:
    """No stale entries: a requirement the table explains fails in the committed matrix."""
    rows = {row["id"]: row["verdicts"] for row in MATRIX["requirements"]}
    stale = [
        (kernel, rid, rows.get(rid, {}).get(kernel))
        for kernel, parts in fc.causes().items()
        for rid in parts["requirements"]
        if rows.get(rid, {}).get(kernel) != "fail"
    ]
    assert not stale
