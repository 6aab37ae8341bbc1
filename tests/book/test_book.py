"""The spec book: every catalog id appears, every internal link resolves, everything is escaped,
failing traces render as timelines, optional data (mechanisms, readings) renders when present."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conformance.book import data, timeline
from conformance.book.render import build_site, mechanism_rows, step_parts
from conformance.catalog.requirements import load_catalog
from tests.book.conftest import MUTANT_PAGE, akc


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        for key in ("href", "src"):
            if a.get(key) and not (tag == "form"):
                self.links.append(a[key] or "")


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_every_catalog_id_appears_on_its_area_page_and_in_the_search_index(site: Path) -> None:
    index = (site / "search-index.js").read_text(encoding="utf-8")
    entries = json.loads(index.removeprefix("window.AKC_INDEX = ").rstrip().rstrip(";"))
    in_index = {e["id"] for e in entries}
    anchors: dict[str, set[str]] = {}  # each area page parsed once
    for req in load_catalog().requirements:
        page = site / f"area-{req.area.lower()}.html"
        if page.name not in anchors:
            anchors[page.name] = _parse(page).ids
        assert req.id in anchors[page.name], f"{req.id} has no anchor on {page.name}"
        assert req.id in in_index
    assert f'href="area-loop.html"' in (site / "index.html").read_text(encoding="utf-8")


def test_every_internal_link_resolves(site: Path) -> None:
    """Walk the whole site: every relative href/src names a file of the site and, with a
    fragment, an id on that page."""
    pages = {p.relative_to(site).as_posix(): _parse(p) for p in site.rglob("*.html")}
    assert len(pages) >= 20
    broken = []
    checked = 0
    for name, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = (Path(name).parent / unquote(parts.path)).as_posix() if parts.path else name
            target = str(Path(target))
            if not (site / target).is_file():
                broken.append(f"{name}: {link} (no file)")
                continue
            checked += 1
            if parts.fragment and target.endswith(".html") and parts.fragment not in pages[target].ids:
                broken.append(f"{name}: {link} (no id {parts.fragment})")
    assert not broken, "\n".join(broken[:20])
    assert checked > 1000


def test_kernel_page_shows_the_failing_requirement_with_message_and_timeline(site: Path) -> None:
    html = (site / MUTANT_PAGE).read_text(encoding="utf-8")
    assert 'id="LOOP-001"' in html
    assert "expected" in html and "observed" in html
    assert "Model call 1" in html and "Model call 2" in html
    assert "hook context-assemble" in html
    # the verdict of the area page links to it
    area = (site / "area-loop.html").read_text(encoding="utf-8")
    assert f'href="{MUTANT_PAGE}#LOOP-001"' in area


def test_committed_matrix_kernels_have_pages_with_their_counts(site: Path) -> None:
    matrix = json.loads(data.MATRIX_JSON.read_text(encoding="utf-8"))
    index = (site / "index.html").read_text(encoding="utf-8")
    for k in matrix["kernels"]:
        page = site / f"kernel-{data.kernel_slug(k['name'])}.html"
        assert page.is_file()
        if "summary" in k:
            failing = [r["id"] for r in matrix["requirements"] if r["verdicts"].get(k["name"]) == "fail"]
            ids = _parse(page).ids
            assert set(failing) <= ids, f"{k['name']}: a failing requirement has no entry"
        assert f'href="kernel-{data.kernel_slug(k["name"])}.html"' in index


def test_kernel_pages_show_why_each_fail_holds_beside_its_message(site: Path) -> None:
    """Issue 22 §4: the cause of every FAIL of a committed report and its citation (or
    "unconfirmed") stand beside the message on the kernel's page."""
    import html as html_lib

    shown = 0
    for path in sorted(data.REPORTS_DIR.glob("*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        page = html_lib.unescape((site / f"kernel-{data.kernel_slug(path.stem)}.html").read_text(encoding="utf-8"))
        for req in report["requirements"]:
            cause = req.get("fail_cause")
            if req.get("verdict") != "fail" or not cause:
                continue
            entry = page[page.index(f'id="{req["id"]}"'):]
            entry = entry[: entry.find('<section class="fail"', 1) if '<section class="fail"' in entry[1:] else len(entry)]
            assert "Why:" in entry and cause["cause"] in entry
            assert (cause.get("source") or "unconfirmed") in entry
            shown += 1
    assert shown, "no committed report carries a fail_cause"


def test_search_page_is_readable_without_javascript(site: Path) -> None:
    html = (site / "search.html").read_text(encoding="utf-8")
    assert "<noscript>" in html
    assert all(f'#{r.id}"' in html for r in load_catalog().requirements)
    assert '<script src="search-index.js">' in html  # embedded index, no fetch()
    assert "fetch(" not in (site / "static" / "search.js").read_text(encoding="utf-8")


def _report(name: str, **kernel: object) -> dict[str, object]:
    return {
        "suite": {"version": "0.1.0"},
        "kernel": {"name": name, "version": "1<2>", "profiles": ["kernel"], **kernel},
        "profiles": ["kernel"],
        "requirements": [
            {"id": "LOOP-001", "level": "MUST", "verdict": "fail", "gating": True,
             "checks": [{"feature": "f", "scenario": "<b>s</b>", "outcome": "fail", "message": "expected <i>x</i> / observed & y"}]},
            {"id": "LOOP-002", "level": "MUST", "verdict": "pass", "checks": []},
        ],
        "summary": {"pass": 1, "fail": 1},
        "exit_code": 1,
    }


def test_everything_is_escaped_and_optional_fields_render(tmp_path: Path) -> None:
    readings = tmp_path / "readings.toml"
    readings.write_text(
        '[[readings]]\nid = "RD-1"\ntitle = "Session start <once>?"\nrequirements = ["LOOP-015", "TURN-009"]\n'
        'alternatives = ["once per session", "once per session run"]\nhandling = "accepts all"\n',
        encoding="utf-8",
    )
    evil = "<script>alert(1)</script>"
    report = _report(evil, mechanisms={"pre-tool-call": {"mechanism": "native", "via": "Hooks.before_tool <x>"}}, readings={"RD-1": "once per session"})
    book = data.gather(matrix_path=None, extra_reports=[(report, "pkg:<f>")], readings_path=readings)
    build_site(book, tmp_path / "site")
    for page in (tmp_path / "site").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert evil not in text and "<i>x</i>" not in text and "<b>s</b>" not in text, page.name
    kpage = next((tmp_path / "site").glob("kernel-*.html")).read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in kpage
    assert "Hooks.before_tool &lt;x&gt;" in kpage and ">native<" in kpage  # the mechanism table
    assert 'href="readings.html#RD-1"' in kpage and "once per session" in kpage  # declared readings
    rpage = (tmp_path / "site" / "readings.html").read_text(encoding="utf-8")
    assert "Session start &lt;once&gt;?" in rpage and "accepts all" in rpage
    assert 'href="area-turn.html#TURN-009"' in rpage
    assert 'href="readings.html#RD-1"' in (tmp_path / "site" / "area-loop.html").read_text(encoding="utf-8")


def test_absent_mechanisms_and_readings_are_said_plainly(tmp_path: Path) -> None:
    book = data.gather(matrix_path=None, extra_reports=[(_report("k"), "")], readings_path=tmp_path / "none.toml")
    build_site(book, tmp_path / "site")
    kpage = (tmp_path / "site" / "kernel-k.html").read_text(encoding="utf-8")
    assert "declares no mechanism table" in kpage and "No readings declared" in kpage
    assert not (tmp_path / "site" / "readings.html").exists()


def test_mechanism_tables_of_any_shape() -> None:
    assert mechanism_rows({"a": "native"}) == (["point", "mechanism"], [["a", "native"]])
    assert mechanism_rows([{"point": "a", "mechanism": "absent"}]) == (["point", "mechanism"], [["a", "absent"]])
    assert mechanism_rows(None) == ([], [])


def test_step_parts_split_values_from_words() -> None:
    parts = step_parts('the model calls "lookup" with {"q": "1"} as "a" 2 times')
    assert ("q", '"lookup"') in parts and ("j", '{"q": "1"}') in parts and ("n", "2") in parts


def test_timeline_groups_by_model_call_and_puts_tools_in_lanes(failing_report: Path) -> None:
    report = json.loads(failing_report.read_text(encoding="utf-8"))
    trace = next(c["trace"] for r in report["requirements"] for c in r["checks"] if c.get("trace"))
    tl = timeline.build(trace)
    titles = [b.title for b in tl.blocks]
    assert titles[0] == "Before the first model call" and "Model call 1" in titles and titles[-1] == "How the run ended"
    assert [cid for cid, _ in tl.lanes] == ["a", "b"]
    tool_rows = [r for b in tl.blocks for r in b.rows if r.group == "tool"]
    assert tool_rows and all(r.lane in ("a", "b") for r in tool_rows)
    # an unknown event kind still renders
    assert timeline.build({"events": [{"kind": "future_thing", "call_id": "z"}]}).blocks[0].rows[0].title == "harness: future_thing"


def test_cli_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("x", encoding="utf-8")
    for args, words in (
        (["book", str(afile)], "not a folder"),
        (["book", str(tmp_path / "s"), "--report", str(tmp_path / "missing.json")], "cannot read"),
        (["book", str(tmp_path / "s"), "--report", str(afile)], "not valid JSON"),
    ):
        proc = akc(*args)
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()  # nothing half-written


def test_trace_diff_html_shows_both_sides_with_the_divergence_highlighted(tmp_path: Path, failing_report: Path) -> None:
    report = json.loads(failing_report.read_text(encoding="utf-8"))
    trace = next(c["trace"] for r in report["requirements"] for c in r["checks"] if c.get("trace"))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(trace), encoding="utf-8")
    changed = json.loads(json.dumps(trace))
    i = next(i for i, e in enumerate(changed["events"]) if e["kind"] == "tool_end")
    changed["events"][i]["result"] = "<changed>"
    b.write_text(json.dumps(changed), encoding="utf-8")
    out = tmp_path / "diff" / "d.html"
    proc = akc("trace", "diff", str(a), str(b), "--html", str(out))
    assert proc.returncode == 1, proc.stderr
    html = out.read_text(encoding="utf-8")
    assert 'class="d-diverge"' in html and "&lt;changed&gt;" in html and "<changed>" not in html
    assert re.search(r"first divergence at event %d" % i, html, re.I)
    assert "<style>" in html  # self-contained
    same = akc("trace", "diff", str(a), str(a), "--html", str(out))
    assert same.returncode == 0 and "equivalent" in out.read_text(encoding="utf-8")
    bad = akc("trace", "diff", str(a), str(b), "--html", str(a / "under-a-file.html"))
    assert bad.returncode == 2 and "cannot write" in bad.stderr and "Traceback" not in bad.stderr


def test_build_is_deterministic_apart_from_the_date(tmp_path: Path) -> None:
    book = data.gather()
    one = build_site(book, tmp_path / "one")
    two = build_site(book, tmp_path / "two")
    strip = lambda p: re.sub(r"built [0-9-]+ [0-9:]+ UTC", "", p.read_text(encoding="utf-8"))  # noqa: E731
    assert [strip(p) for p in one] == [strip(p) for p in two]


@pytest.mark.parametrize("page", ["glossary.html"])
def test_glossary_is_rendered(site: Path, page: str) -> None:
    html = (site / page).read_text(encoding="utf-8")
    assert "Step glossary" in html and "<table>" in html


def test_blocked_and_not_applicable_show_their_blocker_and_reason(tmp_path: Path) -> None:
    """One fault, one verdict (issue 22): a blocked requirement links to what blocks it; a
    not-applicable one says why; neither reads as a pass or a FAIL."""
    report = _report("k")
    report["requirements"] += [  # type: ignore[operator]
        {"id": "BOUND-002", "level": "MUST", "verdict": "blocked", "blocked_by": ["BOUND-008"],
         "message": "blocked by BOUND-008: the run raised X (its only check blocked)",
         "checks": [{"feature": "f", "scenario": "s", "outcome": "blocked", "blocked_by": ["BOUND-008"], "message": "blocked by BOUND-008: the run raised X"}]},
        {"id": "CONC-008", "level": "MUST NOT", "verdict": "not-applicable", "message": "not applicable: tool_kinds declared absent", "checks": []},
    ]
    book = data.gather(matrix_path=None, extra_reports=[(report, "")], readings_path=tmp_path / "none.toml")
    build_site(book, tmp_path / "site")
    kpage = (tmp_path / "site" / "kernel-k.html").read_text(encoding="utf-8")
    # BOUND-008 did not run here: the link goes to its catalog entry
    assert 'Blocked by <a href="area-bound.html#BOUND-008">BOUND-008</a>' in kpage and "(its only check blocked)" in kpage
    assert ">blocked<" in kpage and ">n/a<" in kpage and "tool_kinds declared absent" in kpage
    area = (tmp_path / "site" / "area-bound.html").read_text(encoding="utf-8")
    assert "v-blocked" in area
