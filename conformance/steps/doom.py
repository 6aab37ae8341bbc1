"""Steps for the DOOM features (003 "Doom-loop detection").

The seeds name no status subtype for a fired detector; each adapter declares its kernel's choice in
``AdapterInfo.doom_loop_subtype`` and the checks hold the kernel to that declaration.
"""

from __future__ import annotations

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, Unsupported, expect_equal
from conformance.harness.doubles import canonical_json
from conformance.steps.common import ScenarioContext
from conformance.steps.loop import tool_kind


def doom_subtype(akc: ScenarioContext) -> str:
    """The adapter's declared doom-loop subtype (incomplete when it declares none)."""
    subtype = akc.info.doom_loop_subtype
    if not subtype:
        raise Unsupported("the adapter declares no doom_loop_subtype, so the doom-loop subtype cannot be checked")
    return subtype


@then("the run ends with the adapter's doom-loop subtype")
def doom_then_subtype(akc: ScenarioContext) -> None:
    """The last user message's subtype is AdapterInfo.doom_loop_subtype (a run that raised blocks
    the check: DOOM-010's subject)."""
    akc.require_no_raise_at_limit()
    expect_equal("subtype of the run (the adapter's doom_loop_subtype)", doom_subtype(akc), akc.outcome().subtype)
    akc.evidence.saw(f"the run ended with the declared doom-loop subtype {doom_subtype(akc)!r}")


def identical_run(akc: ScenarioContext) -> int:
    """The longest run of consecutive identical (tool name, canonical arguments) resource or
    data-source calls that ran, interactive calls skipped (003 compares only those kinds)."""
    best, run, last = 0, 0, None
    for e in akc.tool_starts():
        if tool_kind(akc, e["name"]) == "interactive":
            continue
        key = (e["name"], canonical_json(e["args"]))
        run = run + 1 if key == last else 1
        last = key
        best = max(best, run)
    return best


@then(parsers.re(r"(?P<n>\d+) identical calls ran in a row$"))
def doom_then_identical_calls(akc: ScenarioContext, n: str) -> None:
    """The detector's situation happened: the longest run of consecutive identical calls that
    ran is exactly n (evidence for every doom-loop verdict; a kernel that ran no call fails)."""
    akc.evidence.require("tool calls that ran", akc.tool_starts())
    longest = identical_run(akc)
    if longest != int(n):
        raise ConformanceFailure("consecutive identical calls that ran", int(n), longest)
    akc.evidence.saw(f"the detector's situation happened: {n} identical calls ran in a row")
