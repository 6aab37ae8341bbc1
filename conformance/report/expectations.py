"""Expectation files: the requirements a kernel is known not to pass, so CI can gate on regressions.

``akc run --write-expectations FILE`` records the run's non-passing requirements (id, verdict, a
one-line reason) with the suite and catalog versions; ``akc run --expect FILE`` marks the listed
ones as *expected* (they no longer decide the exit code), names the new ones, and reports as
*stale* the entries whose requirement now passes (exit 1 with ``--strict``).

One entry per requirement (per-scenario entries proved too coarse for the MCP suite); ``verdict``
may be a list when a result is known to vary (WPT's "known intermittent"). Each entry also records
*which* checks fail (``checks``: "feature / scenario") and a ``fingerprint`` of their messages
(normalised: ids, addresses and decimals left out), so a requirement that keeps failing *for
another reason* is reported ``changed`` (exit 1; ``--warn-changed`` makes it a warning): a
regression inside an already-failing requirement is not invisible. The file is TOML, read with
:mod:`tomllib` and written here by hand in a small, stable, commented layout meant to be committed
and reviewed.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import UsageError
from conformance.report import escape
from conformance.report.model import CheckResult, ExpectationsResult, Report, RequirementResult, explanation
from conformance.report.verdicts import EXIT_FAILED, exit_code

FORMAT = 1
#: Verdicts an entry may list ("pass" only beside another one: a result known to vary).
LISTABLE = ("fail", "error", "blocked", "incomplete", "pass")
NOT_PASSING = ("fail", "error", "blocked", "incomplete")
_ID = re.compile(r"^[A-Z]+-\d{3}$")
#: The largest expectations file read (one entry per requirement is a few tens of kilobytes).
MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class Expectation:
    id: str
    verdicts: tuple[str, ...]
    reason: str = ""
    #: The checks that failed when the entry was written ("feature / scenario"), and a fingerprint
    #: of their messages; None for an entry written without them (no ``changed`` detection).
    checks: tuple[str, ...] | None = None
    fingerprint: str | None = None


@dataclass
class Expectations:
    path: str
    entries: dict[str, Expectation] = field(default_factory=dict)
    suite_version: str | None = None
    catalog_version: str | None = None
    #: ``--warn-changed``: a requirement failing for another reason is a warning, not exit 1.
    warn_changed: bool = False


def load(path: str | Path, known_ids: Iterable[str] | None = None, *, warn_changed: bool = False) -> Expectations:
    """Read and check an expectations file; a UsageError (one line naming the file and the entry)
    for anything wrong, an unknown requirement id included."""
    where = str(path)
    try:
        with open(path, "rb") as fh:
            raw_bytes = fh.read(MAX_BYTES + 1)  # bounded: /dev/zero is a path too
    except OSError as exc:
        raise UsageError(f"expectations file {where}: cannot read it ({exc.strerror or exc})") from None
    if len(raw_bytes) > MAX_BYTES:
        raise UsageError(f"expectations file {where}: larger than {MAX_BYTES // (1 << 20)} MiB (not an expectations file?)")
    try:
        text = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"expectations file {where}: not UTF-8 (byte {exc.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"expectations file {where}: not valid TOML ({exc})") from None
    except RecursionError:
        raise UsageError(f"expectations file {where}: nested too deeply to be an expectations file") from None
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise UsageError(f"expectations file {where}: format {fmt!r} is not supported (this akc reads format {FORMAT})")
    unknown_keys = sorted(set(data) - {"format", "suite_version", "catalog_version", "kernel", "expected"})
    if unknown_keys:
        raise UsageError(f"expectations file {where}: unknown key(s) {', '.join(unknown_keys)}")
    table = data.get("expected", {})
    if not isinstance(table, dict):
        raise UsageError(f"expectations file {where}: 'expected' must be a table of [expected.ID] entries")
    known = set(known_ids) if known_ids is not None else None
    out = Expectations(path=where, suite_version=_str_or_none(data.get("suite_version")),
                       catalog_version=_str_or_none(data.get("catalog_version")), warn_changed=warn_changed)
    for rid, entry in table.items():
        at = f"expectations file {where}, entry [expected.{rid}]"
        if not _ID.match(rid):
            raise UsageError(f"{at}: not a requirement id (expected e.g. LOOP-001)")
        if known is not None and rid not in known:
            raise UsageError(f"{at}: unknown requirement id {rid} (see `akc list`)")
        if not isinstance(entry, dict):
            raise UsageError(f"{at}: must be a table with a verdict")
        extra = sorted(set(entry) - {"verdict", "reason", "checks", "fingerprint"})
        if extra:
            raise UsageError(f"{at}: unknown key(s) {', '.join(extra)} (use verdict, reason, checks and fingerprint)")
        raw = entry.get("verdict")
        verdicts = tuple([raw] if isinstance(raw, str) else raw if isinstance(raw, list) else ())
        if not verdicts or not all(isinstance(v, str) for v in verdicts):
            raise UsageError(f"{at}: verdict must be one of {', '.join(NOT_PASSING)}, or a list of them")
        bad = [v for v in verdicts if v not in LISTABLE]
        if bad:
            raise UsageError(f"{at}: unknown verdict {bad[0]!r} (use {', '.join(LISTABLE)})")
        if not set(verdicts) & set(NOT_PASSING):
            raise UsageError(f"{at}: an entry expecting only 'pass' expects nothing; delete it")
        reason = entry.get("reason", "")
        if not isinstance(reason, str):
            raise UsageError(f"{at}: reason must be a string")
        checks = entry.get("checks")
        if checks is not None and not (isinstance(checks, list) and all(isinstance(c, str) for c in checks)):
            raise UsageError(f"{at}: checks must be a list of \"feature / scenario\" strings")
        fingerprint = entry.get("fingerprint")
        if fingerprint is not None and not isinstance(fingerprint, str):
            raise UsageError(f"{at}: fingerprint must be a string")
        out.entries[rid] = Expectation(rid, verdicts, reason, tuple(checks) if checks is not None else None, fingerprint)
    return out


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


_NOISE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # ids
    r"|0x[0-9a-f]+"  # addresses
    r"|\b[0-9a-f]{16,}\b"  # hashes, long hex ids
    r"|\d+\.\d+",  # durations, costs, seconds
    re.IGNORECASE,
)


def failing_checks(req: RequirementResult) -> list[CheckResult]:
    """The checks that give the requirement its verdict (those with that outcome)."""
    return [c for c in req.checks if c.outcome == req.verdict]


def check_names(req: RequirementResult) -> tuple[str, ...]:
    return tuple(sorted({f"{c.feature} / {c.scenario}" for c in failing_checks(req)}))


def fingerprint(req: RequirementResult) -> str:
    """A stable digest of why the requirement does not pass: its failing checks and their messages
    with what varies run to run (ids, addresses, decimals) left out."""
    parts = sorted(f"{c.feature} / {c.scenario}: {_NOISE.sub('#', ' '.join((c.message or c.outcome).split()))}"
                   for c in failing_checks(req))
    if not parts:
        parts = [_NOISE.sub("#", " ".join((req.message or req.verdict).split()))]
    return "sha256:" + hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def apply(report: Report, expectations: Expectations, *, strict: bool = False) -> Report:
    """Mark the expected results, list the unexpected, changed and stale ones, and recompute the
    exit code: expected results no longer count; a requirement expected to fail that now fails in
    other checks or for another reason is ``changed`` (exit 1 unless ``warn_changed``); stale
    entries count as a failure with ``strict``."""
    result = ExpectationsResult(
        file=expectations.path, suite_version=expectations.suite_version, catalog_version=expectations.catalog_version
    )
    seen = set()
    for req in report.requirements:
        seen.add(req.id)
        entry = expectations.entries.get(req.id)
        if req.verdict in NOT_PASSING:
            if entry is not None and req.verdict in entry.verdicts:
                req.expected = True
                result.expected.append(req.id)
                change = _change(entry, req)
                if change is not None:
                    result.changed.append(change)
            else:
                listed = f" (listed as {' or '.join(entry.verdicts)})" if entry is not None else ""
                result.unexpected.append(f"{req.id}: {req.verdict}{listed}")
        elif entry is not None and req.verdict not in entry.verdicts:
            result.stale.append(f"{req.id}: {req.verdict} (listed as {' or '.join(entry.verdicts)})")
    result.not_run = sorted(set(expectations.entries) - seen)
    report.expectations = result
    code = exit_code([r for r in report.requirements if not r.expected], strict=strict)
    if report.errors and code == 0:
        code = 3
    if strict and result.stale and code != EXIT_FAILED:
        code = EXIT_FAILED
    if result.changed and not expectations.warn_changed:
        code = EXIT_FAILED
    report.exit_code = code
    return report


def _change(entry: Expectation, req: RequirementResult) -> str | None:
    """"ID: …" when an expected failure now fails in other checks or for another reason."""
    if entry.fingerprint is None and entry.checks is None:
        return None  # written without them: nothing to compare
    now = check_names(req)
    if entry.checks is not None and tuple(sorted(entry.checks)) != now:
        gone = sorted(set(entry.checks) - set(now))
        new = sorted(set(now) - set(entry.checks))
        parts = ([f"no longer failing: {'; '.join(gone)}"] if gone else []) + ([f"now failing: {'; '.join(new)}"] if new else [])
        return f"{req.id}: other checks fail ({', '.join(parts)})"
    if entry.fingerprint is not None and entry.fingerprint != fingerprint(req):
        return f"{req.id}: fails for another reason (was: {entry.reason or entry.fingerprint} → now: {explanation(req)})"
    return None


# --------------------------------------------------------------------------- writing

_HEADER = """\
# Expected results of an agent kernel under agent-kernel-conformance (akc).
#
# Written by `akc run --write-expectations FILE`; read by `akc run --expect FILE`, which exits 0
# when every requirement that does not pass is listed here with its verdict, 1 on a new failure,
# and reports an entry whose requirement now passes as stale (exit 1 with --strict): delete it.
# One [expected.ID] table per requirement (`akc show ID` explains it). `verdict` is one of
# "fail", "error", "blocked", "incomplete", or a list when the result is known to vary, e.g.
# ["fail", "pass"]. `reason` is free text for the reader; akc does not compare it. `checks`
# (the failing checks) and `fingerprint` (of their messages) are compared: a requirement that
# fails in other checks or for another reason is reported "changed" (exit 1, or a warning with
# --warn-changed); delete both keys to expect any failure of the requirement.
# not-applicable requirements never affect the exit code: they are recorded as comments only.
"""


_toml_string = escape.toml_string


def one_line(text: str) -> str:
    """The reason on one line, whole (a reason cut mid-word tells the reader less)."""
    return " ".join(text.split())


def render(report: Report, previous: Expectations | None = None) -> str:
    """The expectations file of this run: its non-passing requirements, in catalog order. An entry
    of ``previous`` (the file given to ``--expect``) that still matches keeps its verdict list
    and its reason, so regenerating never loses what a person wrote."""
    lines = [_HEADER]
    lines.append(f"format = {FORMAT}")
    lines.append(f"suite_version = {_toml_string(report.suite.version)}")
    if report.suite.catalog_version:
        lines.append(f"catalog_version = {_toml_string(report.suite.catalog_version)}")
    lines.append(f"kernel = {_toml_string(f'{report.kernel.name} {report.kernel.version}')}")
    bad = [r for r in report.requirements if r.verdict in NOT_PASSING]
    if not bad:
        lines += ["", "# Every requirement of this run passed: nothing is expected to fail."]
    for req in bad:
        old = previous.entries.get(req.id) if previous is not None else None
        same = old is not None and req.verdict in old.verdicts and _change(old, req) is None
        if old is not None and same:
            verdict = _toml_string(old.verdicts[0]) if len(old.verdicts) == 1 else "[" + ", ".join(map(_toml_string, old.verdicts)) + "]"
            reason = old.reason or one_line(explanation(req))
        else:
            verdict, reason = _toml_string(req.verdict), one_line(explanation(req))
        checks = "[" + ", ".join(_toml_string(c) for c in check_names(req)) + "]"
        lines += ["", f"[expected.{req.id}]", f"verdict = {verdict}", f"reason = {_toml_string(reason)}",
                  f"checks = {checks}", f"fingerprint = {_toml_string(fingerprint(req))}"]
    inapplicable = [r for r in report.requirements if r.verdict == "not-applicable"]
    if inapplicable:
        lines += ["", "# not-applicable (no entry needed; listed so a change shows in review):"]
        lines += [f"#   {r.id}: {one_line(r.message or '')}" for r in inapplicable]
    return "\n".join(lines) + "\n"
