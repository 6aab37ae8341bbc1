"""Kernel text is data (issue 25): arbitrary text — all of Unicode, controls, lone surrogates,
a megabyte — in every kernel-sourced field of a report goes through every writer, and each
output is parsed back with its own parser: JSON (json), JUnit (xml.etree), Markdown (each table
row keeps its column count), expectations (tomllib, and its own ``--expect`` loader), the
terminal (no control character but the line ends, one line per message)."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from xml.etree import ElementTree as ET

from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.report import escape
from conformance.report.expectations import load, render
from conformance.report.model import (
    CheckResult, ExpectationsResult, KernelInfo, Report, RequirementResult, SuiteInfo, UntestableEntry,
)
from conformance.report.terminal import render_text
from conformance.report.writers import to_json, to_junit, to_markdown, write_atomic

#: All of Unicode, surrogates and controls included (``characters()`` leaves surrogates out by default).
ANY = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)
HOSTILE = (
    "\x1b[2J\x1b[H\x1b]0;title\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
    "\r\nconformant\n\x00\ud800\udfff\u202eevil\u2066\x9b31m\x85|<b>&</b>\\|\"'\u2028"
)
MEGABYTE = ("A|\x1b\ud800\r\n" * ((1 << 20) // 6 + 1))[: 1 << 20]  # one million characters


def hostile_report(text: str) -> Report:
    """A report whose every kernel-sourced field holds ``text``."""
    def check(outcome: str) -> CheckResult:
        return CheckResult(feature="f", scenario=f"s {outcome}", outcome=outcome, message=text, evidence=[text])  # type: ignore[arg-type]

    reqs = [
        RequirementResult(id=f"LOOP-00{i}", level="MUST", statement="st", gating=True, verdict=v, message=text,  # type: ignore[arg-type]
                          checks=[check(v if v != "not-offered" else "pass")], expected=(v == "incomplete"))
        for i, v in enumerate(("fail", "error", "incomplete", "not-offered", "pass"), start=1)
    ]
    return Report(
        suite=SuiteInfo(version="1", catalog_version="1"),
        kernel=KernelInfo(name=text, version=text, capabilities=[text]),
        profiles=["kernel"], requirements=reqs, untestable=[UntestableEntry(id="LOOP-009", reason=text)],
        summary={"fail": 1}, errors=[text, text], exit_code=1,
        expectations=ExpectationsResult(file=text, unexpected=[f"LOOP-001: fail{text}"], stale=[f"LOOP-005: {text}"]),
    )


def _columns(row: str) -> int:
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", row)) - 1


#: What a terminal would act on: C0 (but LF), DEL, C1, and the invisible reordering characters.
_ACTIONABLE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


@settings(max_examples=25, derandomize=True, database=None, deadline=None)
@given(text=ANY)
@example(text=HOSTILE)
@example(text=MEGABYTE)
def test_every_writer_parses_back_whatever_the_kernel_sent(text: str) -> None:
    report = hostile_report(text)
    # JSON: parses, encodes as UTF-8, the kernel's name survives (lone surrogates as U+FFFD).
    data = json.loads(to_json(report).encode("utf-8"))
    assert data["kernel"]["name"] == escape.json_safe(text)
    # JUnit: well-formed XML 1.0; the failure message is the kernel's text, visibly escaped.
    root = ET.fromstring(to_junit(report).encode("utf-8"))
    failure = root.find(".//failure")
    assert failure is not None and escape.xml(text) in failure.get("message", "")
    # Markdown: every row of a table has its header's column count; no raw HTML, no CR.
    md = to_markdown(report)
    md.encode("utf-8")
    width = None
    for line in md.splitlines():
        if not line.startswith("|"):
            width = None
        elif width is None:
            width = _columns(line)
        else:
            assert _columns(line) == width, line[:200]
    assert "<b>" not in md and "\r" not in md
    # Expectations: TOML that tomllib reads and that --expect accepts, reasons on one line.
    toml = render(report)
    parsed = tomllib.loads(toml)
    assert set(parsed["expected"]) == {"LOOP-001", "LOOP-002", "LOOP-003"}
    # The terminal: nothing a terminal acts on, and the lines are ours (a message is one line).
    out = render_text(report, all_rows=True)
    assert not _ACTIONABLE.search(out)
    assert not any(line == "conformant" for line in out.splitlines())
    assert len(out.splitlines()) == len(render_text(hostile_report("x"), all_rows=True).splitlines())


def test_expectations_written_for_a_hostile_kernel_are_read_back_by_expect(tmp_path) -> None:
    path = tmp_path / "exp.toml"
    write_atomic(path, render(hostile_report(HOSTILE)))
    loaded = load(path)
    assert set(loaded.entries) == {"LOOP-001", "LOOP-002", "LOOP-003"}
    assert "\ufffd" in loaded.entries["LOOP-001"].reason and "\x1b" in loaded.entries["LOOP-001"].reason


def test_terminal_escapes_are_visible_and_one_line() -> None:
    assert escape.terminal("a\x1b[2Jb\r\nc\u202e\ud800") == "a\\x1b[2Jb\\r\\nc\\u202e\\ud800"
    assert escape.xml("a\x00b\tc\nd") == "a\\x00b\tc\nd"
    assert escape.markdown_cell("a|b\\|<i>\n") == "a\\|b\\\\\\|&lt;i&gt;\\\\n"  # renders as a|b\|<i>\n
    assert tomllib.loads("k = " + escape.toml_string("q\"\\\x7f\ud800\x00"))["k"] == "q\"\\\x7f\ufffd\x00"


def test_no_hypothesis_setting_measures_the_machine(monkeypatch) -> None:
    """Every property of the project's tests and of the suite runs without a deadline or the
    "too slow" health check (a loaded machine must not fail them; issue 25)."""
    import importlib.util
    from pathlib import Path

    from hypothesis import HealthCheck, settings

    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "tests" / "kernel"))
    files = [*sorted((root / "conformance" / "suite").glob("test_prop_*.py")), *sorted((root / "tests" / "kernel").glob("test_k_*.py")),
             root / "tests" / "test_trace.py"]
    found = 0
    for path in files:
        spec = importlib.util.spec_from_file_location(f"_akc_settings_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look themselves up there
        spec.loader.exec_module(module)
        for obj in vars(module).values():
            if getattr(getattr(obj, "hypothesis", None), "inner_test", None) is None:
                continue
            found += 1
            chosen = getattr(obj, "_hypothesis_internal_use_settings", None) or settings.default
            assert chosen.deadline is None and HealthCheck.too_slow in chosen.suppress_health_check, f"{path.name}: {obj.__name__}"
    assert found >= 10, found


def test_the_coloured_terminal_view_shows_hostile_text_as_escapes() -> None:
    """On a TTY the report is a rich table: its own colours are the only escape sequences."""
    import io

    from conformance.report.terminal import print_report

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    print_report(hostile_report(HOSTILE), all_rows=True, file=out)
    text = out.getvalue()
    own = re.sub(r"\x1b\[[0-9;]*m", "", text)  # rich's SGR colours
    assert not _ACTIONABLE.search(own.replace("\n", "")), [c for c in own if _ACTIONABLE.match(c)][:5]
    assert "\\x1b]52;" in own and "conformant" not in own.splitlines()
