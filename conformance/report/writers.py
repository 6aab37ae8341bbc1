"""The report's files: JSON (the schema's shape), JUnit XML (one testcase per requirement) and
Markdown (a CI step summary), each written atomically (temp file + rename) once the run is complete."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from conformance.files import write_atomic  # noqa: F401 - the writers' own, re-exported for their callers
from conformance.report import escape
from conformance.report.model import UNPROVEN, VERDICTS, Report, RequirementResult, explanation, short_title, summary_line

def to_json(report: Report) -> str:
    """The report as JSON; kernel text holding a lone surrogate (UTF-8 cannot carry it) goes
    through :func:`escape.json_safe` first."""
    try:
        return report.model_dump_json(indent=2) + "\n"
    except ValueError:  # pydantic's "surrogates not allowed"
        return Report.model_validate(escape.json_safe(report.model_dump())).model_dump_json(indent=2) + "\n"


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
    for el in suites.iter():  # kernel text anywhere: only what XML 1.0 allows
        el.attrib.update({k: escape.xml(v) for k, v in el.attrib.items()})
        if el.text:
            el.text = escape.xml(el.text)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _details(req: RequirementResult) -> str:
    return "\n".join(
        f"[{c.outcome}] {c.feature} / {c.scenario}: {c.message or ''}" for c in req.checks if c.outcome != "pass"
    )


_md_cell = escape.markdown_cell


def to_markdown(report: Report) -> str:
    """A CI step summary: the counts, then the requirements that are not a pass (new ones first,
    then the expected ones), and how the run compares with its expectations file."""
    lines = [
        f"## Agent kernel conformance: {_md_cell(report.kernel.name)} {_md_cell(report.kernel.version)}",
        "",
        _md_cell(summary_line(report)),
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
    if exp is not None and exp.changed:
        lines += ["", "### Expected failures that changed (other checks, or another reason)", ""] + [f"- {_md_cell(s)}" for s in exp.changed]
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


#: How a report file that could not be written is named in the report's errors (and by the CLI).
WRITE_FAILED = "cannot write {flag} {path}: {why}"


def write_reports(
    report: Report, *, json_path: str | None = None, junit_path: str | None = None, markdown_path: str | None = None,
    expectations_path: str | None = None, previous: object = None,
) -> list[Path]:
    """Write each requested report atomically (and the expectations file, from ``previous``, the
    file given to ``--expect``); returns the paths written. A file that cannot be written (a full
    disk, a path that passed the checks before the run) never raises: it is one line in the
    report's errors, the run exits 3 unless it already fails (1), and the files that were written
    are written again to say so."""
    from conformance.report.expectations import render

    jobs = [("--json", json_path, to_json), ("--junit", junit_path, to_junit), ("--markdown", markdown_path, to_markdown),
            ("--write-expectations", expectations_path, lambda r: render(r, previous))]  # type: ignore[arg-type]
    written: list[tuple[str, Path, object]] = []
    failed = []
    for flag, path, render_one in jobs:
        if not path:
            continue
        try:
            written.append((flag, write_atomic(path, render_one(report)), render_one))  # type: ignore[operator]
        except OSError as exc:
            failed.append(WRITE_FAILED.format(flag=flag, path=path, why=exc.strerror or exc))
    if failed:
        report.errors.extend(failed)
        if report.exit_code == 0:
            report.exit_code = 3
        for flag, target, render_one in written:
            try:
                write_atomic(target, render_one(report))  # type: ignore[operator]
            except OSError:
                pass  # it was written once: the earlier text stays
    return [target for _, target, _ in written]


def write_failed(report: Report, flag: str) -> bool:
    """Did writing the file of ``flag`` fail (:func:`write_reports`)?"""
    head = WRITE_FAILED.split("{path}")[0].format(flag=flag)
    return any(e.startswith(head) for e in report.errors)
