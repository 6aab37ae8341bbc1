"""Steps for the CONC features (003 "Turn-level tool-call concurrency"): overlap of calls from the
tool_start/tool_end seq numbers, helper rendezvous that may fail, the plan handed to plan-ready.

Why helper rendezvous: the harness's tools never yield to the event loop on their own, so two
calls a broken kernel runs "concurrently" could still log start/end/start/end and look sequential.
The feature's Background pairs each call under test with a *helper* call of a distinct key (a call
of the tool "probe" in the same response, or, for interactive calls, the other one), which makes it
wait, inside the tool, until its helper has started. A kernel that overlaps equal-key calls is then
caught whatever order it starts them in. The helpers' meeting is not what such a scenario checks,
so a helper that never came is tolerated after a short wait (a kernel that runs everything one at a
time loses 0.1 s per call there, and is judged on the overlap alone); so is a scripted finish order
whose predecessor never ends (the order only shuffles results).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pytest_bdd import given, parsers, then

from conformance.boundary.adapter import RunResult
from conformance.errors import AdapterError, Blocked, ConformanceFailure, HarnessError, Unsupported, expect_order, show
from conformance.harness.runner import ScenarioRun
from conformance.steps.common import ScenarioContext, split_ids

_QUOTED = r'"([^"]*)"'


# ========================================================================== shared helpers


def soft_groups(akc: ScenarioContext) -> list[list[str]]:
    """The rendezvous groups of this scenario whose failure to meet is tolerated."""
    groups: list[list[str]] = akc.__dict__.setdefault("_conc_soft_groups", [])
    return groups


#: How long a tolerated wait lasts. A helper that does not come in time (a kernel that runs
#: everything one at a time, or a very slow machine) only makes the check less sharp, never
#: wrong, so the wait can be short: a sequential kernel must not pay the default 2 s per call.
SOFT_WAIT_S = 0.1


def _run_with_short_waits(akc: ScenarioContext) -> ScenarioRun:
    """The scenario, with doubles whose rendezvous and finish-order waits are SOFT_WAIT_S."""
    return akc.runner.run(akc.adapter, akc.final_scenario(), rendezvous_timeout_s=SOFT_WAIT_S)


def run_tolerant(akc: ScenarioContext, *, all_soft: bool = False) -> RunResult:
    """Like ``ScenarioContext.run`` but a soft rendezvous that did not meet, or (``all_soft``)
    any rendezvous or finish-order wait that timed out, is not a failure: the scenario checks
    something else (overlap, result order) and the waits only make the tools yield. When every
    wait of the scenario is tolerated, the waits are short (SOFT_WAIT_S)."""
    soft = [sorted(g) for g in soft_groups(akc)]
    soft_finish = all_soft or akc.__dict__.get("_conc_soft_finish", False)
    only_soft = all_soft or (
        all(sorted(g) in soft for g in akc.scenario.rendezvous) and (soft_finish or not akc.scenario.finish_order)
    )
    akc.last = _run_with_short_waits(akc) if only_soft else akc.runner.run(akc.adapter, akc.final_scenario())
    run = akc.last
    if run.unsupported:
        raise Unsupported(run.unsupported)
    if run.error:
        raise AdapterError(run.error)
    if run.timed_out:
        raise ConformanceFailure(run.diagnostic or "the kernel hung", raw=True)
    for e in akc.events("rendezvous_timeout"):
        if all_soft or sorted(e["group"]) in soft:
            continue
        others = " and ".join(e["missing"])
        raise ConformanceFailure(f"calls {e['call_id']} and {others} did not run concurrently", raw=True)
    if not soft_finish:
        for e in akc.events("finish_order_timeout"):
            raise ConformanceFailure(
                f"call {e['call_id']} waited for {e['waited_for']} to finish first, in vain", raw=True
            )
    akc.note_unmet_finish_order()
    assert run.result is not None
    return run.result


def call_spans(akc: ScenarioContext) -> dict[str, tuple[int, int | None]]:
    """call id → (seq of its tool_start, seq of its tool_end or None)."""
    spans: dict[str, tuple[int, int | None]] = {}
    for e in akc.events("tool_start", "tool_end"):
        cid = e["call_id"]
        if e["kind"] == "tool_start":
            spans.setdefault(cid, (e["seq"], None))
        elif cid in spans and spans[cid][1] is None:
            spans[cid] = (spans[cid][0], e["seq"])
    return spans


def overlaps(akc: ScenarioContext, ids: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of these calls that were in flight at the same time (seq numbers of start/end).
    Raises a ConformanceFailure naming a call that did not run or did not end."""
    spans = call_spans(akc)
    ids = list(ids)
    for cid in ids:
        if cid not in spans:
            raise ConformanceFailure(f"tool call {cid}", "it ran", f"tool starts: {show(sorted(spans))}")
        if spans[cid][1] is None:
            raise ConformanceFailure(f"tool call {cid}", "it ended", "no tool_end in the log")
    out = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            (sa, ea), (sb, eb) = spans[a], spans[b]
            assert ea is not None and eb is not None
            if sa < eb and sb < ea:
                out.append((a, b))
    return out


def expect_no_overlap(akc: ScenarioContext, ids: Iterable[str], why: str = "") -> None:
    """Fail naming the first pair of these calls that overlapped."""
    ids = list(ids)
    bad = overlaps(akc, ids)
    if bad:
        a, b = bad[0]
        spans = call_spans(akc)
        from conformance.steps.loop import tool_kind

        names = {e["call_id"]: e["name"] for e in akc.events("tool_start")}
        if "interactive" not in {tool_kind(akc, names.get(a)), tool_kind(akc, names.get(b))}:
            # two calls held apart by their shared concurrency key (003's one key computation:
            # key-field values, safe: false, the provider-wide lock), which CONC-002 answers for
            akc.block_on_lacking_mechanism("concurrency_keys", f"calls {a} and {b}{why} overlapped")
        raise ConformanceFailure(
            f"calls {a} and {b}{why}",
            "one after the other (the second starts after the first ended)",
            f"both in flight: {a} ran from seq {spans[a][0]} to {spans[a][1]}, {b} from seq {spans[b][0]} to {spans[b][1]}",
        )


def plan_call_ids(akc: ScenarioContext, k: int) -> list[str]:
    """The call ids of the plan items handed to plan-ready in model turn k (1-based)."""
    turns = akc.model_turns()
    if not 1 <= k <= len(turns):
        raise ConformanceFailure(f"model turn {k}", f"at least {k} model turns", f"{len(turns)}")
    plans = [e["payload"] for e in turns[k - 1] if e["point"] == "plan-ready"]
    if not plans:
        raise ConformanceFailure(f"plan-ready in model turn {k}", "dispatched once", "not dispatched")
    payload = plans[0]
    items = payload.get("items") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise ConformanceFailure(f"the plan-ready payload of model turn {k}", '{"items": [...]}', show(payload))
    return [str(i.get("call_id")) for i in items if isinstance(i, dict)]


# ========================================================================== Given


#: The tool whose calls are helpers: they only give the calls under test something to wait for.
HELPER_TOOL = "probe"


def helper_groups(akc: ScenarioContext) -> list[list[str]]:
    """The helper rendezvous of the scripted responses: in each response, the calls that are not
    helpers, in order, each paired with a helper call, in order; without helpers, the response's
    interactive calls (two or more) wait for one another."""
    groups: list[list[str]] = []
    for response in akc.scenario.model.responses:
        calls = response.tool_calls
        helpers = [c.id for c in calls if c.name == HELPER_TOOL]
        checked = [c.id for c in calls if c.name != HELPER_TOOL]
        if helpers:
            groups += [[a, b] for a, b in zip(checked, helpers, strict=False)]
            continue
        kinds = {t.name: t.kind for t in akc.scenario.tools}
        interactive = [c.id for c in calls if kinds.get(c.name) == "interactive"]
        if len(interactive) >= 2:
            groups.append(interactive)
    return [[i for i in g if i] for g in groups]


def run_with_helpers(akc: ScenarioContext) -> RunResult:
    """The feature's way to run (its Background): the helper rendezvous (:func:`helper_groups`)
    and any finish order are waits a kernel may leave unmet, after a short wait; a "must meet"
    rendezvous stays a requirement. Without helpers or a finish order this is the plain run."""
    if not akc.__dict__.get("_conc_helpers_added"):
        akc.__dict__["_conc_helpers_added"] = True
        for group in helper_groups(akc):
            akc.scenario.rendezvous.append(group)
            soft_groups(akc).append(group)
    if not soft_groups(akc) and not akc.scenario.finish_order:
        return akc.run_strict()
    akc.__dict__["_conc_soft_finish"] = True
    return run_tolerant(akc)


@given("every call waits a moment for a helper call to start: a probe call, or the other interactive call of its response")
def conc_given_helpers(akc: ScenarioContext) -> None:
    """Make the calls under test yield inside the tool (see the module docstring): each waits for
    its helper to start; a helper, or a predecessor of a finish order, that never comes is not
    held against the kernel (the scenario checks overlap or result order, not the wait)."""
    akc.run_with = run_with_helpers


# ========================================================================== Then


@then(parsers.re(r"calls (?P<ids>.+) never overlap$"))
def conc_then_never_overlap(akc: ScenarioContext, ids: str) -> None:
    """No two of these calls were in flight at once (tool_start/tool_end seq numbers)."""
    group = re.findall(_QUOTED, ids)
    if len(group) < 2:
        raise HarnessError(f"overlap step: name at least two quoted call ids, got {ids!r}")
    expect_no_overlap(akc, group)  # fails naming a call that did not run or did not end
    helpers = [g for g in soft_groups(akc) if set(g) & set(group)]
    met = [g for g in helpers if not any(sorted(e["group"]) == sorted(g) for e in akc.events("rendezvous_timeout"))]
    akc.evidence.saw(f"calls {', '.join(group)} all ran and ended, one at a time ({len(met)} of {len(helpers)} helper rendezvous met)")


@then(parsers.re(r"calls (?P<ids>.+) ran at the same time$"))
def conc_then_overlapped(akc: ScenarioContext, ids: str) -> None:
    """Every pair of these calls was in flight at once (the rendezvous made them wait for each
    other; this states the evidence that they all ran)."""
    group = re.findall(_QUOTED, ids)
    if len(group) < 2:
        raise HarnessError(f"overlap step: name at least two quoted call ids, got {ids!r}")
    pairs = overlaps(akc, group)
    want = len(group) * (len(group) - 1) // 2
    if len(pairs) != want:
        raise ConformanceFailure(f"calls {', '.join(group)}", "all in flight at once", f"overlapping pairs: {show(pairs)}")
    akc.evidence.saw(f"calls {', '.join(group)} were in flight at the same time")


_KIND_RANK = {"data_source": 0, "interactive": 1, "resource": 2}


@then(parsers.re(r'the latest tool results sent in model call (?P<k>\d+) are in an order the profile allows for "(?P<ids>[^"]*)"$'))
def conc_then_result_order(akc: ScenarioContext, k: str, ids: str) -> None:
    """TOOL-003 with reading kernel-result-order: the results of the previous turn are in the
    order of the calls in the message ("ids"), or (kernel profile) grouped data-source,
    interactive, resource with each group in call order. Never the order the calls finished in."""
    from conformance.steps.common import block_on_no_tool_results
    from conformance.steps.loop import tool_kind, turn_message

    asked = split_ids(ids)
    observed = akc.latest_tool_result_ids(int(k))
    block_on_no_tool_results(akc, int(k), observed)
    akc.evidence.require(f"tool results in model request {k}", observed)
    legal = {"request-order": asked}
    if akc.profile == "kernel":
        kinds = {c.get("id"): tool_kind(akc, c.get("name")) for c in turn_message(akc, int(k) - 1).get("tool_calls") or []}
        legal["grouped-by-kind"] = sorted(asked, key=lambda cid: _KIND_RANK.get(kinds.get(cid) or "", 3))
        legal = {a: order for a, order in legal.items() if a in akc.accepts("kernel-result-order")}
    if observed not in legal.values():
        if "grouped-by-kind" in legal and observed == _grouped_without_kinds(asked, kinds):
            # 003's grouping, with data-source and interactive calls one group: telling them apart
            # is tool kinds' subject (LOOP-008), counted there
            akc.block_on_lacking_mechanism(
                "tool_kinds", f"tool results in model request {k} came back {show(observed)}: in call order, resource calls last"
            )
        raise ConformanceFailure(
            f"tool results in model request {k}", " or ".join(f"{show(o)} ({a})" for a, o in legal.items()), observed
        )
    akc.evidence.saw(f"tool results in model request {k}: {show(observed)}")


def _grouped_without_kinds(asked: list[str], kinds: dict[Any, str | None]) -> list[str]:
    """The order of 003 step 15 for a kernel that holds resource calls back (a plan gate) but has
    no other tool kind: the other calls in call order, then the resource calls in call order."""
    return sorted(asked, key=lambda cid: kinds.get(cid) == "resource")


@then(parsers.re(r'the plan of model call (?P<k>\d+) lists exactly the calls "(?P<ids>[^"]*)", in this order$'))
def conc_then_plan_items(akc: ScenarioContext, k: str, ids: str) -> None:
    """The plan-ready payload of model turn k holds one item per listed call id, in this order."""
    items = plan_call_ids(akc, int(k))
    expect_order(f"plan items handed to plan-ready in model turn {k}", split_ids(ids), items)
    akc.evidence.saw(f"the plan of model turn {k} listed {show(items)}")


@then(parsers.re(r'the kernel rejected the scenario naming "(?P<field>[^"]+)", or ran calls "(?P<a>[^"]+)" and "(?P<b>[^"]+)" one at a time$'))
def conc_then_refused_or_sequential(akc: ScenarioContext, field: str, a: str, b: str) -> None:
    """CONC-008, reading interactive-concurrency-spec: the MUST NOT binds the declarer; a kernel
    upholds it by refusing the declaration (naming it) or by ignoring it (the interactive calls
    still run one at a time although their spec gives them distinct keys)."""
    rejected = akc.result.rejected
    allowed = akc.accepts("interactive-concurrency-spec")
    if rejected is not None and "refuse" in allowed:
        if field not in rejected.field:
            raise ConformanceFailure("the rejected field", field, rejected.field)
        akc.evidence.saw(f"the kernel refused the declaration, naming {rejected.field!r}")
        return
    if "ignore" not in allowed:
        raise ConformanceFailure("the configuration", f"rejected, naming {field}", "accepted")
    if overlaps(akc, [a, b]) and _overlap_without_spec(akc, a, b):
        # the calls run together whatever the tool declares: not the declaration honoured (this
        # rule's subject) but interactive calls run at once, CONC-007's
        raise Blocked("CONC-007", f"interactive calls {a} and {b} overlap with and without the ConcurrencySpec declared")
    expect_no_overlap(akc, [a, b])  # honouring the declaration is this rule's own subject
    akc.evidence.saw(f"the declaration was ignored: interactive calls {a} and {b} ran one at a time")


def _overlap_without_spec(akc: ScenarioContext, a: str, b: str) -> bool:
    """Do calls ``a`` and ``b`` overlap also in the same scenario with no ConcurrencySpec on its
    interactive tools (run again, its own log)? A call that did not run there: no answer (False)."""
    twin = ScenarioContext(
        adapter=akc.adapter, info=akc.info, runner=akc.runner, profile=akc.profile,
        name=f"{akc.scenario.name} (without the ConcurrencySpec)", feature=akc.feature, requirement_ids=akc.requirement_ids,
    )
    twin.scenario = akc.scenario.model_copy(deep=True)
    for tool in twin.scenario.tools:
        if tool.kind == "interactive":
            tool.concurrency = None
    twin.run_with = akc.run_with
    twin.__dict__["_conc_helpers_added"] = akc.__dict__.get("_conc_helpers_added", False)  # copied with the scenario
    twin.__dict__["_conc_soft_groups"] = [list(g) for g in soft_groups(akc)]
    try:
        twin.run()
        return bool(overlaps(twin, [a, b]))
    except ConformanceFailure:  # the twin run hung or a call did not run: no answer, the check judges
        return False
