"""The report's files: JSON (the schema's shape), JUnit XML (one testcase per requirement) and
Markdown (a CI step summary), each written atomically (temp file + rename) once the run is complete."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from xml.etree import ElementTree as ET

from conformance.report.model import VERDICTS, Report, RequirementResult, explanation, summary_line

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
    """One testcase per requirement; failure/error/skipped elements by verdict."""
    counts = report.summary
    suite = ET.Element(
        "testsuite",
        name=f"akc {report.kernel.name} {report.kernel.version}",
        tests=str(len(report.requirements)),
        failures=str(counts.get("fail", 0)),
        errors=str(counts.get("error", 0)),
        skipped=str(counts.get("not-offered", 0) + counts.get("incomplete", 0)),
        time=f"{report.duration_s:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="suite_version", value=report.suite.version)
    ET.SubElement(props, "property", name="catalog_version", value=str(report.suite.catalog_version))
    ET.SubElement(props, "property", name="exit_code", value=str(report.exit_code))
    for req in report.requirements:
        case = ET.SubElement(suite, "testcase", classname=f"{req.level}", name=req.id)
        message = explanation(req)
        if req.verdict == "fail":
            el = ET.SubElement(case, "failure", message=message)
            el.text = _details(req)
        elif req.verdict == "error":
            el = ET.SubElement(case, "error", message=message)
            el.text = _details(req)
        elif req.verdict == "not-offered":
            ET.SubElement(case, "skipped", message="not offered")
        elif req.verdict == "incomplete":
            ET.SubElement(case, "skipped", message=f"incomplete: {message}")
        if req.statement:
            ET.SubElement(case, "system-out").text = req.statement
    for k, error in enumerate(report.errors):
        case = ET.SubElement(suite, "testcase", classname="harness", name=f"harness-error-{k + 1}")
        ET.SubElement(case, "error", message=error)
    for entry in report.untestable:
        case = ET.SubElement(suite, "testcase", classname="untestable", name=entry.id)
        ET.SubElement(case, "skipped", message=f"untestable: {entry.reason}")
    suites = ET.Element("testsuites")
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
    """A CI step summary: the counts, then the requirements that are not a pass."""
    lines = [
        f"## Agent kernel conformance: {report.kernel.name} {report.kernel.version}",
        "",
        summary_line(report),
        "",
        "| verdict | count |",
        "| --- | --- |",
    ]
    lines += [f"| {v} | {report.summary.get(v, 0)} |" for v in VERDICTS]
    bad = [r for r in report.requirements if r.verdict in ("fail", "error", "incomplete")]
    if bad:
        lines += ["", "### Requirements not passing", "", "| id | level | verdict | why |", "| --- | --- | --- | --- |"]
        lines += [f"| {r.id} | {r.level} | {r.verdict} | {_md_cell(explanation(r))} |" for r in bad]
    if report.errors:
        lines += ["", "### Harness errors", ""] + [f"- {_md_cell(e)}" for e in report.errors]
    offered = [r.id for r in report.requirements if r.verdict == "not-offered"]
    if offered:
        lines += ["", f"Not offered: {', '.join(offered)}"]
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
