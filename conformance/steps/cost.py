"""Steps for the COST features (003 "Cost accounting"): usage events against the pricing formula
of docs/adapter.md, and the sessions of a run (root and sub-agents) as the doubles saw them.

A sub-agent session is told apart from its parent by the TurnInfo the kernel hands every callback
(``session_id``, ``depth``); its end is its own ``session-end`` dispatch, whose payload carries the
subtype (docs/adapter.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_bdd import parsers, then

from conformance.boundary.adapter import UsageEvent
from conformance.boundary.scenario import Pricing, Usage
from conformance.errors import Blocked, ConformanceFailure, Incomplete, expect_equal, show
from conformance.httpmodel.dialect import delivered_usage
from conformance.steps.common import ScenarioContext

#: Reading cost-precision: a persisted cost_usd may be float dollars, decimal or whole
#: micro-dollars; it must match the formula within 1e-6 USD or 1e-6 of its value, whichever is
#: larger. Scenarios use prices and token counts for which a wrong formula is off by far more.
COST_TOLERANCE = 1e-6
_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens")


def cost_matches(observed: float, expected: float) -> bool:
    return abs(observed - expected) <= max(COST_TOLERANCE, COST_TOLERANCE * abs(expected))


def pricing_cost(pricing: Pricing, usage: Usage | dict[str, Any]) -> float:
    """docs/adapter.md: (input*in + cached*cached_in + output*out) / 1e6, input = non-cached."""
    u = usage if isinstance(usage, dict) else usage.model_dump()
    return (
        int(u.get("input_tokens") or 0) * pricing.input_usd_per_mtok
        + int(u.get("cached_input_tokens") or 0) * pricing.cached_input_usd_per_mtok
        + int(u.get("output_tokens") or 0) * pricing.output_usd_per_mtok
    ) / 1e6


def streamed_usages(akc: ScenarioContext) -> list[dict[str, Any]]:
    """The usage chunks the scripted model streamed, in call order — over a model API that has
    one usage figure per call (an HTTP dialect's, or the framework's own as its adapter
    declares), the usage it delivered (``delivered_usage``)."""
    return [u for _, delivered in _usage_by_call(akc) for u in delivered]


def _usage_by_call(akc: ScenarioContext) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each model call's ``model_response`` event with the usage its model API delivered."""
    dialects = {e["index"]: e.get("dialect") for e in akc.events("model_request")}
    in_process = akc.info.model_api_cannot_carry
    return [
        (e, delivered_usage(dialects.get(e["index"]), e["chunks"], bool(e.get("complete")), in_process))
        for e in akc.events("model_response")
    ]


def require_cut_usage_delivered(akc: ScenarioContext) -> None:
    """A call cut short after it streamed usage is COST-002's situation only where the kernel's
    model API delivered some of that usage (readings: dialect-limits); where it delivered none,
    nothing was received to persist: not exercised, never a pass."""
    for e, delivered in _usage_by_call(akc):
        streamed = any(c.get("type") == "usage" for c in e["chunks"])
        if not e.get("complete") and streamed and not delivered:
            raise Incomplete("not exercised: a model call cut short after streaming usage, which its model API does not deliver (readings: dialect-limits)")


@dataclass
class SessionView:
    """One session run as the doubles saw it: its model requests and its session-end subtypes."""

    session_id: str
    depth: int
    requests: list[dict[str, Any]] = field(default_factory=list)
    end_subtypes: list[Any] = field(default_factory=list)


def sessions(akc: ScenarioContext) -> list[SessionView]:
    """Every session that called the model or ended, in the order it first appeared in the log
    (a child appears after its parent's spawning turn, so this is creation order)."""
    views: dict[str, SessionView] = {}
    for e in akc.events("model_request", "hook"):
        turn = e.get("turn")
        if not isinstance(turn, dict) or not turn.get("session_id"):
            continue
        sid = str(turn["session_id"])
        view = views.get(sid)
        if view is None:
            view = views[sid] = SessionView(sid, int(turn.get("depth") or 0))
        if e["kind"] == "model_request":
            view.requests.append(e["request"])
        elif e["point"] == "session-end" and (not akc.record_hooks or e["hook_id"].startswith("rec:")):
            payload = e.get("payload")
            view.end_subtypes.append(payload.get("subtype") if isinstance(payload, dict) else None)
    return list(views.values())


def end_subtype(view: SessionView, akc: ScenarioContext | None = None) -> Any:
    """The subtype of the session's session-end (the first, if a kernel dispatched more: how often
    it fires is LOOP-017's business); blocked by LOOP-016 when it never ended (that the kernel
    dispatches session-end at all, for every session, is LOOP-016's subject)."""
    if not view.end_subtypes and akc is not None:
        akc.require_points_dispatched(["session-end"])
    if not view.end_subtypes:
        # Whether every session, a child's included, dispatches session-end is LOOP-016's subject.
        raise Blocked(by="LOOP-016", reason=f"the session at depth {view.depth} ({view.session_id}) never dispatched session-end")
    return view.end_subtypes[0]


def stored_usage(akc: ScenarioContext) -> list[UsageEvent]:
    """The usage events the kernel persisted (JournalDump.usage), with evidence that the kernel
    called the model; ``incomplete`` when the adapter cannot show what its kernel stored."""
    akc.require_kernel_ran()
    stored = akc.result.journal.usage
    if stored is None:
        raise Incomplete("persisted usage not observable: the adapter's JournalDump has no usage (docs/adapter.md)")
    return stored


def _tokens(u: Any) -> tuple[int, ...]:
    d = u if isinstance(u, dict) else u.model_dump()
    return tuple(int(d.get(k) or 0) for k in _KEYS)


# ========================================================================== Then


@then("every usage chunk the model streamed is persisted as one usage event with its token counts")
def cost_then_usage_events(akc: ScenarioContext) -> None:
    """JournalDump.usage holds one event per usage chunk the model streamed — several per model
    call where it streamed several, and the one a cancelled or failed call streamed before it was
    cut short — with its token counts; what the adapter reports from memory (RunResult.usage), if
    anything, is the same."""
    stored = stored_usage(akc)
    one_figure = not akc.carries(-1, "usage-events")
    streamed = akc.evidence.require(
        "usage chunks the model streamed" + (" (as the kernel's model API delivered them)" if one_figure else ""),
        [_tokens(u) for u in streamed_usages(akc)],
        mandatory=not one_figure,  # a dialect that delivers no usage before a failure: nothing to judge
    )
    persisted = [_tokens(e) for e in stored]
    if one_figure:
        # One cumulative figure per call (readings: dialect-limits): a kernel may store it as one
        # event or as the part it had at the stream's start and the rest; the totals must agree.
        def total(events: list[tuple[int, ...]]) -> tuple[int, ...]:
            return tuple(sum(col) for col in zip(*events)) if events else (0,) * len(_KEYS)

        expect_equal("persisted usage (token totals; the kernel's model API has one usage figure per call)", total(streamed), total(persisted))
        require_cut_usage_delivered(akc)
        akc.evidence.saw(f"{len(persisted)} persisted usage events, totals as delivered over the kernel's model API")
        return
    expect_equal("persisted usage events (token counts, in storing order)", sorted(streamed), sorted(persisted))
    reported = [_tokens(e) for e in akc.result.usage]
    if reported:
        expect_equal("reported usage events against the persisted ones (token counts)", sorted(persisted), sorted(reported))
    akc.evidence.saw(f"{len(persisted)} persisted usage events for {len(streamed)} streamed usage chunks")


@then("every persisted usage event's cost_usd is the pricing formula applied to its tokens")
def cost_then_cost_formula(akc: ScenarioContext) -> None:
    """cost_usd of each persisted usage event = docs/adapter.md's formula with the scenario's
    pricing, within the cost-precision tolerance; a reported event's cost matches its stored one."""
    pricing = akc.scenario.model.pricing
    events = akc.evidence.require("persisted usage events", stored_usage(akc))
    for i, e in enumerate(events, 1):
        expected = pricing_cost(pricing, e.model_dump())
        if not cost_matches(e.cost_usd, expected):
            raise ConformanceFailure(
                f"cost_usd of persisted usage event {i} ({e.input_tokens} in, {e.cached_input_tokens} cached, {e.output_tokens} out)",
                f"{expected!r} (within {COST_TOLERANCE:g})",
                repr(e.cost_usd),
            )
    for i, e in enumerate(akc.result.usage, 1):
        expected = pricing_cost(pricing, e.model_dump())
        if not cost_matches(e.cost_usd, expected):
            raise ConformanceFailure(f"cost_usd of reported usage event {i}", f"{expected!r} (as persisted)", repr(e.cost_usd))
    akc.evidence.saw(f"{len(events)} persisted costs match the pricing formula")


@then(parsers.re(r'every session at depth (?P<d>\d+) ends with a subtype other than "(?P<value>[^"]*)"$'))
def cost_then_depth_subtype_other(akc: ScenarioContext, d: str, value: str) -> None:
    """Each sub-agent session at this depth ended once, with a subtype that is not this one."""
    found = akc.evidence.require(f"sessions at depth {d} (a sub-agent ran)", [v for v in sessions(akc) if v.depth == int(d)])
    for view in found:
        subtype = end_subtype(view, akc)
        if subtype == value or subtype is None:
            raise ConformanceFailure(
                f"subtype of the session at depth {d} (session-end payload)",
                f"a subtype other than {value!r}",
                show(subtype),
            )
        akc.evidence.saw(f"the session at depth {d} ended with {subtype!r}")


@then(parsers.re(r'every session at depth (?P<d>\d+) ends with subtype "(?P<value>[^"]*)"$'))
def cost_then_depth_subtype(akc: ScenarioContext, d: str, value: str) -> None:
    """Each session at this depth ended once, with this subtype."""
    found = akc.evidence.require(f"sessions at depth {d} (a sub-agent ran)", [v for v in sessions(akc) if v.depth == int(d)])
    for view in found:
        expect_equal(f"subtype of the session at depth {d} (session-end payload)", value, end_subtype(view, akc))
        akc.evidence.saw(f"the session at depth {d} ended with {value!r}")
