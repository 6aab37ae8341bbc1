"""From check outcomes to per-requirement verdicts and the run's exit code.

A requirement's verdict (for the profiles that were run and that the adapter claims):

* untestable → not a verdict: listed apart with its reason, never affects the exit code;
* its capability not declared by the adapter → ``not-offered`` (never ``pass``);
* otherwise over its checks, worst first: any error → ``error``; else any fail → ``fail``; else
  any blocked → ``blocked`` (by the requirements named, "blocked by BOUND-008: the run raised";
  also when other checks passed: a requirement is never a pass on part of its checks); else any
  incomplete → ``incomplete``; else all pass → ``pass``; no check at all → ``incomplete`` ("no
  check ran"). Blocked ranks above incomplete because it names what to fix first.
* then the mechanism rule (:func:`mechanism_verdict`): a MUST NOT about a concept the adapter
  declares ``absent`` is ``not-applicable`` (with the reason), never a pass nor a failure; the
  owner of a lacking mechanism fails on it, whatever its checks read (blocked, incomplete).

One fault, one verdict: a check carries the requirement ids it is tagged with, and its failure
may name its *subject* (``ConformanceFailure(subject=...)``): only the tagged ids in the subject
fail, the others are ``blocked`` by them. A ``Blocked(by=X)`` check is ``blocked`` for every tagged
id but X; X itself (when tagged) fails, the unmet precondition being its own subject. A requirement
blocked by one that is itself blocked names the root (:func:`root_blockers`).

Exit codes: 0 conformant; 1 a gating requirement failed (MUST, MUST NOT, gating DESCRIBED; with
``strict`` also SHOULD and MAY); 2 usage error (decided before any run); 3 blocked, incomplete or
error with no gating failure. ``not-offered`` and ``not-applicable`` never affect it.
"""

from __future__ import annotations

import re

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.catalog.mechanisms import depends_on, owner_of, replace_subject
from conformance.report.model import Report, UNPROVEN, VERDICTS, CheckResult, RequirementResult, UntestableEntry

GATING_LEVELS = ("MUST", "MUST NOT")
#: A check starts as ``not-run`` and becomes ``pass`` only when its call ran to the end and passed.
NOT_RUN = "not-run"
_SEVERITY = {NOT_RUN: -1, "pass": 0, "not-offered": 1, "incomplete": 2, "blocked": 3, "fail": 4, "error": 5}
#: How a requirement folds its checks' outcomes: the first present wins (then ``pass``).
FOLD_ORDER = ("error", "fail", "blocked", "incomplete")

EXIT_CONFORMANT = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


@dataclass
class Check:
    """One scenario or property run, with the requirement ids it carries."""

    requirement_ids: list[str]
    feature: str
    scenario: str
    outcome: str = NOT_RUN
    message: str | None = None
    profiles: list[str] = field(default_factory=list)
    #: What the check observed that shows its situation happened (see conformance.harness.evidence).
    evidence: list[str] = field(default_factory=list)
    #: A ``blocked`` check: the requirement(s) whose subject was its unmet precondition.
    blocked_by: list[str] = field(default_factory=list)
    #: A ``fail`` whose failure named the requirement(s) it judges: only those of
    #: ``requirement_ids`` fail, the others are blocked by them. Empty: all of them fail.
    subject: list[str] = field(default_factory=list)
    #: A fault another scenario saw, charged to the requirement it names (``plugin.charge``):
    #: reported under that requirement even when ``--req`` did not select it.
    charged: bool = False

    def worsen(
        self, outcome: str, message: str | None, *, blocked_by: Sequence[str] = (), subject: Sequence[str] = ()
    ) -> None:
        """Keep the most severe outcome seen over setup, call and teardown."""
        if _SEVERITY[outcome] > _SEVERITY[self.outcome]:
            self.outcome = outcome
            self.message = message
            self.blocked_by = list(blocked_by)
            self.subject = list(subject)

    def outcome_for(self, req_id: str) -> tuple[str, str | None, list[str]]:
        """(outcome, message, blocked_by) of this check for one of its requirement ids."""
        if self.outcome == NOT_RUN:
            return "incomplete", self.message or "did not run", []
        if self.outcome == "fail" and self.subject and req_id not in self.subject:
            by = [s for s in self.subject if s in self.requirement_ids] or self.subject[:1]
            return "blocked", f"blocked by {', '.join(by)}: {self.message}", by
        if self.outcome == "blocked" and req_id in self.blocked_by:
            # the unmet precondition is this requirement's own subject: its failure, here
            reason = (self.message or "").split(": ", 1)[-1]
            return "fail", f"{req_id}'s subject did not happen: {reason}", []
        return self.outcome, self.message, list(self.blocked_by)


@dataclass
class ReqInfo:
    """What the verdicts need of a catalog requirement (duck-typed over catalog.Requirement)."""

    id: str
    level: str = "MUST"
    gating: bool = False
    profiles: list[str] = field(default_factory=list)
    statement: str = ""
    testability: str = "black-box"
    untestable_reason: str | None = None
    capability: str | None = None
    also_requires: list[str] = field(default_factory=list)

    @property
    def needs(self) -> list[str]:
        """Every capability this requirement depends on."""
        return ([self.capability] if self.capability else []) + [c for c in self.also_requires if c != self.capability]

    @classmethod
    def of(cls, req: Any) -> ReqInfo:
        return cls(
            id=req.id,
            level=getattr(req, "level", "MUST"),
            gating=bool(getattr(req, "gating", False)),
            profiles=list(getattr(req, "profiles", []) or []),
            statement=getattr(req, "statement", "") or "",
            testability=getattr(req, "testability", "black-box") or "black-box",
            untestable_reason=getattr(req, "untestable_reason", None),
            capability=getattr(req, "capability", None),
            also_requires=list(getattr(req, "also_requires", []) or []),
        )


def is_gating(req: ReqInfo | RequirementResult, strict: bool = False) -> bool:
    """Does a failure of this requirement fail the run?"""
    return strict or req.gating or req.level in GATING_LEVELS


def requirement_verdict(req: ReqInfo, checks: list[Check], capabilities: Iterable[str]) -> RequirementResult:
    """The verdict of one (testable) requirement over its checks."""
    results = [_result(c, req.id) for c in checks]
    base = dict(
        id=req.id, level=req.level, profiles=req.profiles, statement=req.statement, gating=is_gating(req), checks=results
    )
    missing = [c for c in req.needs if c not in set(capabilities)]
    if missing:
        return RequirementResult(
            **base, verdict="not-offered", message=f"capability {', '.join(missing)} not declared by the adapter"
        )
    return fold(base, results, had_checks=bool(checks))


def fold(base: dict[str, Any], results: list[CheckResult], *, had_checks: bool) -> RequirementResult:
    """A requirement's verdict from its check results, worst first (:data:`FOLD_ORDER`)."""
    counted = [c for c in results if c.outcome != "not-offered"]
    outcomes = {c.outcome for c in counted}
    if not counted:
        why = "no check ran"
        if had_checks:
            why += " (its checks need capabilities the adapter does not declare)"
        return RequirementResult(**base, verdict="incomplete", message=why)
    for verdict in FOLD_ORDER:
        if verdict == "blocked" and verdict in outcomes:
            return _blocked(base, counted)
        if verdict in outcomes:
            return RequirementResult(**base, verdict=verdict)  # type: ignore[arg-type]
    return RequirementResult(**base, verdict="pass")


def _blocked(base: dict[str, Any], counted: list[CheckResult]) -> RequirementResult:
    """A blocked requirement, named with what blocks it and whether any check judged it at all."""
    blocked = [c for c in counted if c.outcome == "blocked"]
    by = sorted({b for c in blocked for b in c.blocked_by})
    first = blocked[0].message or f"blocked by {', '.join(by)}"
    if len(blocked) == len(counted):
        scope = "every check blocked" if len(counted) > 1 else "its only check blocked"
    else:
        scope = f"{len(blocked)} of {len(counted)} checks blocked, the others passed: not a pass"
    return RequirementResult(**base, verdict="blocked", blocked_by=by, message=f"{first} ({scope})")


def mechanism_verdict(
    result: RequirementResult, mechanisms: Mapping[str, Any] | None, missing: Sequence[str] = ()
) -> RequirementResult:
    """Mechanisms are declared: a requirement whose checks depend on a mechanism the adapter
    declares absent, observe-only (where the checks need to change a value) or emulated cannot
    pass. It fails where the rule is mandatory, else it is not offered. Every non-passing check's
    message is prefixed with the mechanisms it went through ("pre-tool-call ↔ X (observe-only): …").
    A requirement not offered because a mechanism is ``not-wired`` (the kernel has it, the adapter
    does not connect it) says so in its message — only when every capability it lacks
    (``missing``) is itself not-wired: a kernel with no cost limit at all does not offer COST-005,
    whatever its sub-agents' wiring. No declared table (``mechanisms`` empty): the rule
    does not apply.

    A MUST NOT whose every mechanism is declared ``absent`` (the kernel has no such concept, e.g.
    no ConcurrencySpec to declare for CONC-008) is ``not-applicable`` with that reason, unless a
    check saw the kernel do what it forbids (``fail`` stays) or broke (``error`` stays).

    A mandatory requirement that owns a lacking mechanism (``[owners]`` / ``[dispatch]`` of
    mechanisms.toml) fails on it even where its checks were blocked or could not observe: the lack
    is its own subject, counted there once and never handed on to another requirement."""
    if not mechanisms:
        return result
    deps = depends_on(result.id)
    if not deps:
        return result

    def row(name: str) -> tuple[str, str | None]:
        m = mechanisms.get(name)
        if m is None:
            return "absent", None
        return (m.get("kind"), m.get("via")) if isinstance(m, dict) else (m.kind, m.via)

    used = {d.name: row(d.name) for d in deps}
    prefix = "; ".join(f"{name} ↔ {via} ({kind})" if via else f"{name} ({kind})" for name, (kind, via) in used.items())
    named = tuple(f"{name} {sep}" for name in used for sep in ("(", "↔ "))  # prefixed before (a rejudged report)
    for c in result.checks:
        if c.outcome != "pass" and c.message is not None and not c.message.startswith(named):
            c.message = f"{prefix}: {c.message}"
    lacking = [
        f"{d.name} is {used[d.name][0]}"
        for d in deps
        if used[d.name][0] != "native" and not (d.observe and used[d.name][0] == "observe-only")
    ]
    unwired = [f"{name} ↔ {via}" if via else name for name, (kind, via) in used.items() if kind == "not-wired"]
    if result.level == "MUST NOT" and all(kind == "absent" for kind, _ in used.values()) and result.verdict not in ("fail", "error"):
        why = f"not applicable: {', '.join(used)} declared absent, the kernel has no such thing to do what this MUST NOT forbids"
        return result.model_copy(update={"verdict": "not-applicable", "message": why, "blocked_by": []})
    cause_unwired = all(row(c)[0] == "not-wired" for c in missing)
    if result.verdict == "not-offered" and unwired and cause_unwired:
        # the framework has it, the adapter does not connect it: say so, not "not offered" alone
        why = f"not wired by the adapter (the kernel has it): {', '.join(unwired)}"
        return result.model_copy(update={"message": f"{why}; {result.message}" if result.message else why})
    mandatory = result.level not in ("SHOULD", "MAY")
    # a lacking mechanism whose owner this requirement is: its own subject is missing, so it fails
    # on it, never blocked by another requirement (a cycle: DOOM-001 blocked by DOOM-010, blocked by
    # DOOM-001) nor incomplete for what the checks could not observe (COST-001 without usage)
    owned = [f"{d.name} is {used[d.name][0]}" for d in deps
             if f"{d.name} is {used[d.name][0]}" in lacking and owner_of(d.name, result.profiles) == result.id]
    if mandatory and owned and result.verdict in ("blocked", "incomplete"):
        why = f"{prefix}: cannot pass, {', '.join(owned)} (the rule requires it; its own subject)"
        seen = (result.message or "").removeprefix(f"{prefix}: ")
        if result.verdict == "blocked":  # what blocked them is moot: the lack came first (no cycle in the text)
            seen = re.sub(r"^blocked by [A-Z]+-\d+(?:, [A-Z]+-\d+)*: ", "", seen)
            why = f"{why}; its checks could not judge: {seen}" if seen else why
        else:
            why = f"{why}; its checks read: {seen}" if seen else why
        return result.model_copy(update={"verdict": "fail", "message": why, "blocked_by": []})
    if not lacking or result.verdict not in ("pass", "fail", "blocked"):
        return result
    blockers = [_blocker(d.name, used[d.name][0], result) for d in deps if f"{d.name} is {used[d.name][0]}" in lacking]
    saw_forbidden = result.level == "MUST NOT" and result.verdict == "fail"  # a check saw it: never hidden
    if mandatory and not saw_forbidden and all(b is not None for b in blockers):
        # the lacking mechanism is another requirement's subject: counted there, blocked here
        by = sorted(set(blockers))  # type: ignore[arg-type]
        why = f"blocked by {', '.join(by)}: {', '.join(lacking)} ({'their' if len(by) > 1 else 'its'} subject)"
        return result.model_copy(update={"verdict": "blocked", "blocked_by": by, "message": why})
    if result.verdict == "blocked":
        return result
    verdict = "fail" if mandatory else "not-offered"
    why = f"{prefix}: cannot pass, {', '.join(lacking)}" + (" (the rule requires it)" if mandatory else "")
    if result.verdict == "fail" and mandatory:
        why = f"{why}; {result.message}" if result.message else why
    return result.model_copy(update={"verdict": verdict, "message": why})


def _blocker(mechanism: str, kind: str, result: RequirementResult) -> str | None:
    """The requirement that answers for ``mechanism`` being ``kind`` in ``result``'s place: its
    owner (a hook point's dispatch requirement, else ``[owners]`` of mechanisms.toml), when the
    owner lacks it too — a point that is observe-only satisfies an owner that only watches it, and
    then the missing ability (to replace, to veto) is ``result``'s own subject. None: ``result``
    answers for it itself."""
    owner = owner_of(mechanism, result.profiles)
    if owner is None or owner == result.id:
        return None
    watches = any(d.name == mechanism and d.observe for d in depends_on(owner))
    owner_lacks = kind != "native" and not (watches and kind == "observe-only")
    if not owner_lacks and kind == "observe-only":
        # dispatched but not acted on: the replacement's requirement answers for it, if it has one
        owner = replace_subject(mechanism)
        return owner if owner not in (None, result.id) else None
    return owner if owner_lacks else None


def _result(c: Check, req_id: str) -> CheckResult:
    """The check as seen by one of its requirements (:meth:`Check.outcome_for`); a check that
    never ran to its end is ``incomplete`` (never a pass)."""
    outcome, message, by = c.outcome_for(req_id)
    return CheckResult(feature=c.feature, scenario=c.scenario, outcome=outcome, message=message, blocked_by=by, evidence=c.evidence)  # type: ignore[arg-type]


@dataclass
class Verdicts:
    requirements: list[RequirementResult]
    untestable: list[UntestableEntry]
    summary: dict[str, int]
    exit_code: int


def compute(
    catalog_requirements: Iterable[Any] | None,
    checks: list[Check],
    *,
    capabilities: Iterable[str],
    profiles: Iterable[str],
    selected_ids: Iterable[str] | None = None,
    strict: bool = False,
    mechanisms: Mapping[str, Any] | None = None,
) -> Verdicts:
    """Verdicts for every requirement of ``profiles`` (the ones run and claimed).

    Without a catalog (``None``), the requirements are the ids the checks carry, taken as MUSTs.
    """
    profiles = list(profiles)
    capabilities = list(capabilities)
    selected = set(selected_ids) if selected_ids is not None else None
    if catalog_requirements is None:
        ids = sorted({i for c in checks for i in c.requirement_ids})
        reqs = [ReqInfo(id=i, profiles=list(profiles)) for i in ids]
    else:
        reqs = [ReqInfo.of(r) for r in catalog_requirements]
    by_id: dict[str, list[Check]] = {}
    for c in checks:
        for i in c.requirement_ids:
            by_id.setdefault(i, []).append(c)

    results: list[RequirementResult] = []
    untestable: list[UntestableEntry] = []
    for req in reqs:
        if req.profiles and not set(req.profiles) & set(profiles):
            continue
        if selected is not None and req.id not in selected:
            continue
        if req.testability == "untestable":
            untestable.append(UntestableEntry(id=req.id, reason=req.untestable_reason or "untestable"))
            continue
        missing = [c for c in req.needs if c not in capabilities]
        results.append(mechanism_verdict(requirement_verdict(req, by_id.get(req.id, []), capabilities), mechanisms, missing))
    results = root_blockers(results)

    summary = {v: 0 for v in VERDICTS}
    for r in results:
        summary[r.verdict] += 1
    return Verdicts(results, untestable, summary, exit_code(results, strict=strict))


def rejudge(report: Report) -> Report:
    """A report made earlier, under the rules of this version: each requirement the run judged
    (not one not offered for a capability) folded again from its checks, then the mechanism rule
    applied with the kernel's declared mechanisms; summary and exit code recomputed. Used by
    ``akc matrix --from-reports`` so a change of the verdict rules reaches the committed matrix
    without re-running every framework."""
    mechanisms = report.kernel.mechanisms
    out = []
    for r in report.requirements:
        if r.verdict in ("pass", "fail", "blocked", "not-applicable", "incomplete") and r.checks:
            base = dict(id=r.id, level=r.level, profiles=r.profiles, statement=r.statement, gating=r.gating, checks=r.checks)
            r = mechanism_verdict(fold(base, list(r.checks), had_checks=True), mechanisms).model_copy(
                update={"expected": r.expected})
        out.append(r)
    out = root_blockers(out)
    summary = {v: 0 for v in VERDICTS}
    for r in out:
        summary[r.verdict] += 1
    code = exit_code(out)
    if report.errors and code == 0:
        code = EXIT_INCOMPLETE
    return report.model_copy(update={"requirements": out, "summary": summary, "exit_code": code})


def root_blockers(results: list[RequirementResult]) -> list[RequirementResult]:
    """A requirement blocked by one that is itself blocked is blocked by what blocks that one (to
    the root): the fault to fix first is the root's (CONC-008 blocked by CONC-007, itself blocked
    by LOOP-008 on a kernel without tool kinds, is LOOP-008's). A blocker this run did not judge
    stays as it is."""
    by_id = {r.id: r for r in results}

    def roots(ids: list[str], seen: frozenset[str]) -> list[str]:
        out: list[str] = []
        for b in ids:
            r = by_id.get(b)
            up = r.blocked_by if r is not None and r.verdict == "blocked" and b not in seen else []
            out += roots(list(up), seen | {b}) if up else [b]
        return sorted(set(out))

    out = []
    for r in results:
        if r.verdict == "blocked" and r.blocked_by:
            root = roots(list(r.blocked_by), frozenset({r.id}))
            if root != sorted(r.blocked_by) and r.id not in root:  # a cycle stays as it is
                via = ", ".join(b for b in r.blocked_by if b not in root)
                r = r.model_copy(update={"blocked_by": root, "message": f"{r.message}; {via} blocked in turn by {', '.join(root)}"})
        out.append(r)
    return out


def exit_code(results: list[RequirementResult], *, strict: bool = False) -> int:
    """0 conformant, 1 a gating requirement failed, 3 blocked, incomplete or error without that."""
    if any(r.verdict == "fail" and is_gating(r, strict) for r in results):
        return EXIT_FAILED
    if any(r.verdict in UNPROVEN for r in results):
        return EXIT_INCOMPLETE
    return EXIT_CONFORMANT
