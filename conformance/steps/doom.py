"""Steps for the DOOM features (003 "Doom-loop detection").

The seeds name no status subtype for a fired detector; each adapter declares its kernel's choice in
``AdapterInfo.doom_loop_subtype`` and the checks hold the kernel to that declaration.
"""

from __future__ import annotations

from pytest_bdd import then

from conformance.errors import Unsupported, expect_equal
from conformance.steps.common import ScenarioContext


def doom_subtype(akc: ScenarioContext) -> str:
    """The adapter's declared doom-loop subtype (incomplete when it declares none)."""
    subtype = akc.info.doom_loop_subtype
    if not subtype:
        raise Unsupported("the adapter declares no doom_loop_subtype, so the doom-loop subtype cannot be checked")
    return subtype


@then("the run ends with the adapter's doom-loop subtype")
def doom_then_subtype(akc: ScenarioContext) -> None:
    """The last user message's subtype is AdapterInfo.doom_loop_subtype."""
    expect_equal("subtype of the run (the adapter's doom_loop_subtype)", doom_subtype(akc), akc.outcome().subtype)
