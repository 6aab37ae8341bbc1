"""The report's files: JSON (the schema's shape), JUnit XML (one testcase per requirement) and
Markdown (a CI step summary), each written atomically (temp file + rename) once the run is complete."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from xml.etree import ElementTree as ET

from conformance.report.model import UNPROVEN, VERDICTS, Report, RequirementResult, explanation, short_title, summary_line

def _mode_for(target: Path) -> int:
    """An existing file keeps its mode; a new one gets what ``open`` would give (0666 less the umask)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder and a rename (a symlinked
    path is written through, to the file it points to)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def to_json(report: Report) -> str:
    return report.model_dump_json(indent=2) + "\n"


def to_junit(report: Report) -> str:
    """One testcase per requirement (classname = its area, name = "ID short title"), one per
    harness error and per untestable requirement; the suite's counts are those of its testcases.
    An expected failure (``--expect``) is a skipped testcase saying so, as pytest writes an xfail.
    ``blocked`` and ``not-applicable`` are skipped testcases whose message says which requirement
    blocks them or why they do not apply: never a passed testcase, never this one's failure."""
    suite = ET.Element("testsuite", name=f"akc {report.kernel.name} {report.kernel.version}")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="suite_version", value=report.suite.version)
    ET.SubElement(props, "property", name="catalog_version", value=str(report.suite.catalog_version))
    ET.SubElement(props, "property", name="exit_code", value=str(report.exit_code))
    if report.expectations is not None:
        ET.SubElement(props, "property", name="expectations", value=report.expectations.file)
    tally = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def case(classname: str, name: str, kind: str | None = None, message: str = "", text: str | None = None) -> ET.Element:
        el = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
        tally["tests"] += 1
        if kind is not None:
            tally[{"failure": "failures", "error": "errors", "skipped": "skipped"}[kind]] += 1
            child = ET.SubElement(el, kind, message=message)
            if text:
                child.text = text
        return el

    for req in report.requirements:
        name = f"{req.id} {short_title(req.statement)}" if req.statement else req.id
        area = req.id.split("-", 1)[0]
        message = explanation(req)
        if req.expected:
            el = case(area, name, "skipped", f"expected {req.verdict} (listed in {report.expectations.file if report.expectations else 'the expectations'}): {message}")
        elif req.verdict == "fail":
            el = case(area, name, "failure", message, _details(req))
        elif req.verdict == "error":
            el = case(area, name, "error", message, _details(req))
        elif req.verdict == "not-offered":
            el = case(area, name, "skipped", f"not offered: {message}")
        elif req.verdict == "incomplete":
            el = case(area, name, "skipped", f"incomplete: {message}")
        elif req.verdict == "blocked":
            # not a pass and not this requirement's failure: CI shows it skipped, with its blocker
            el = case(area, name, "skipped", message if message.startswith("blocked by") else f"blocked: {message}", _details(req))
        elif req.verdict == "not-applicable":
            el = case(area, name, "skipped", message)
        else:
            el = case(area, name)
        if req.statement:
            ET.SubElement(el, "system-out").text = f"{req.level}: {req.statement}"
    for k, error in enumerate(report.errors):
        case("harness", f"harness-error-{k + 1}", "error", error)
    for entry in report.untestable:
        case(entry.id.split("-", 1)[0], f"{entry.id} (untestable)", "skipped", f"untestable: {entry.reason}")
    for key, value in tally.items():
        suite.set(key, str(value))
    suite.set("time", f"{report.duration_s:.3f}")
    suites = ET.Element("testsuites", {k: str(v) for k, v in tally.items()})
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _details(req: RequirementResult) -> str:
    return "\n".join(
        f"[{c.outcome}] {c.feature} / {c.scenario}: {c.message or ''}" for c in req.checks if c.outcome != "pass"
    )


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report) -> str:
    """A CI step summary: the counts, then the requirements that are not a pass (new ones first,
    then the expected ones), and how the run compares with its expectations file."""
    lines = [
        f"## Agent kernel conformance: {report.kernel.name} {report.kernel.version}",
        "",
        summary_line(report),
        "",
        "| verdict | count |",
        "| --- | --- |",
    ]
    lines += [f"| {v} | {report.summary.get(v, 0)} |" for v in VERDICTS]
    bad = [r for r in report.requirements if r.verdict in ("fail", *UNPROVEN) and not r.expected]
    if bad:
        lines += ["", "### Requirements not passing", "", "| id | level | verdict | why |", "| --- | --- | --- | --- |"]
        lines += [f"| {r.id} | {r.level} | {r.verdict} | {_md_cell(explanation(r))} |" for r in bad]
    expected = [r for r in report.requirements if r.expected]
    if expected:
        lines += ["", "### Expected failures (listed in the expectations file)", "", "| id | level | verdict | why |", "| --- | --- | --- | --- |"]
        lines += [f"| {r.id} | {r.level} | {r.verdict} (expected) | {_md_cell(explanation(r))} |" for r in expected]
    exp = report.expectations
    if exp is not None and exp.stale:
        lines += ["", "### Stale expectations (these now pass: delete their entries)", ""] + [f"- {_md_cell(s)}" for s in exp.stale]
    if report.errors:
        lines += ["", "### Harness errors", ""] + [f"- {_md_cell(e)}" for e in report.errors]
    offered = [r.id for r in report.requirements if r.verdict == "not-offered"]
    if offered:
        lines += ["", f"Not offered: {', '.join(offered)}"]
    inapplicable = [r for r in report.requirements if r.verdict == "not-applicable"]
    if inapplicable:
        lines += ["", "Not applicable: " + "; ".join(f"{r.id} ({_md_cell(r.message or '')})" for r in inapplicable)]
    return "\n".join(lines) + "\n"


def write_reports(
    report: Report, *, json_path: str | None = None, junit_path: str | None = None, markdown_path: str | None = None
) -> list[Path]:
    """Write each requested report atomically; returns the paths written."""
    written = []
    if json_path:
        written.append(write_atomic(json_path, to_json(report)))
    if junit_path:
        written.append(write_atomic(junit_path, to_junit(report)))
    if markdown_path:
        written.append(write_atomic(markdown_path, to_markdown(report)))
    return written
