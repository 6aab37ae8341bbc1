"""One fault, one verdict at the step (issue 22 §1): a check whose precondition is another
requirement's subject raises ``Blocked`` from the step that sees it unmet, and still fails where
the fault is its own. Each step is driven here over a hand-made log (no kernel)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conformance.errors import Blocked, ConformanceFailure, HarnessError

KINDS = {"fetch": "data_source", "ask": "interactive", "write": "resource"}


class FakeContext:
    """The part of ScenarioContext the steps below read: a log, the scenario's tools and cancel."""

    def __init__(self, log: list[dict[str, Any]], *, profile: str = "kernel", ids: tuple[str, ...] = ("STOP-001",)) -> None:
        self.log = [{**e, "seq": i} for i, e in enumerate(log)]
        self.profile = profile
        self.requirement_ids = list(ids)
        self.evidence = SimpleNamespace(saw=lambda *_: None, require=lambda _what, v, **__: v)
        self.scenario = SimpleNamespace(cancel=SimpleNamespace(at="tool", call_id="x", message=0))
        self.result = SimpleNamespace(rejected=None)

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.log if e["kind"] in kinds]

    def tool_starts(self) -> list[dict[str, Any]]:
        return self.events("tool_start")

    def tool_ends(self) -> list[dict[str, Any]]:
        return self.events("tool_end")

    def tool(self, name: str) -> Any:
        if name not in KINDS:
            raise HarnessError(name)
        return SimpleNamespace(kind=KINDS[name])

    def require_call_served(self, call: str) -> None:
        pass


def start(call: str, name: str) -> dict[str, Any]:
    return {"kind": "tool_start", "call_id": call, "name": name}


def end(call: str) -> dict[str, Any]:
    return {"kind": "tool_end", "call_id": call}


def cancel_at(call: str) -> dict[str, Any]:
    return {"kind": "cancel", "where": {"at": "tool", "call_id": call}}


# --------------------------------------------------------------------------- STOP-001


def test_a_call_started_after_the_cancel_beside_the_running_call_is_blocked_by_its_kind_order() -> None:
    from conformance.steps.stop import then_nothing_after_cancel

    # two interactive calls side by side: CONC-007's subject (one at a time), not cancellation's
    with pytest.raises(Blocked) as caught:
        then_nothing_after_cancel(FakeContext([start("q1", "ask"), cancel_at("q1"), start("q2", "ask"), end("q1")]))
    assert caught.value.by == ["CONC-007"]
    # an interactive call beside a running data-source call: step 9 before 9b, LOOP-008's
    with pytest.raises(Blocked) as caught:
        then_nothing_after_cancel(FakeContext([start("d1", "fetch"), cancel_at("d1"), start("i1", "ask")]))
    assert caught.value.by == ["LOOP-008"]


def test_a_call_started_after_the_cancel_once_the_running_call_ended_fails_stop_001() -> None:
    from conformance.steps.stop import then_nothing_after_cancel

    # one after the other: the kernel had the cancel to see before it started q2
    with pytest.raises(ConformanceFailure):
        then_nothing_after_cancel(FakeContext([start("q1", "ask"), cancel_at("q1"), end("q1"), start("q2", "ask")]))
    # two data-source calls may overlap (003): no order to blame, the late start is STOP-001's
    with pytest.raises(ConformanceFailure):
        then_nothing_after_cancel(FakeContext([start("d1", "fetch"), cancel_at("d1"), start("d2", "fetch")]))
    # the commonagent profile orders no kinds
    with pytest.raises(ConformanceFailure):
        then_nothing_after_cancel(FakeContext([start("q1", "ask"), cancel_at("q1"), start("q2", "ask")], profile="commonagent"))
    # a model call after the cancel is never excused
    with pytest.raises(ConformanceFailure):
        then_nothing_after_cancel(FakeContext([start("q1", "ask"), cancel_at("q1"), start("q2", "ask"), {"kind": "model_request", "index": 1}]))
    then_nothing_after_cancel(FakeContext([start("q1", "ask"), cancel_at("q1"), end("q1")]))


def test_a_resource_call_applied_before_the_cancel_is_blocked_by_the_plan_gate() -> None:
    from conformance.steps.stop import then_resource_not_applied

    # w1 ran ahead of the data-source call the cancel came at: LOOP-009's order, not cancellation
    with pytest.raises(Blocked) as caught:
        then_resource_not_applied(FakeContext([start("w1", "write"), end("w1"), start("d1", "fetch"), cancel_at("d1")]), "w1")
    assert caught.value.by == ["LOOP-009"]
    with pytest.raises(ConformanceFailure):
        then_resource_not_applied(FakeContext([start("d1", "fetch"), cancel_at("d1"), start("w1", "write")]), "w1")
    then_resource_not_applied(FakeContext([start("d1", "fetch"), cancel_at("d1"), end("d1")]), "w1")


# --------------------------------------------------------------------------- CONC-001


def test_a_rendezvous_beside_an_interactive_call_is_blocked_by_tool_kinds_where_they_are_lacking() -> None:
    """A kernel with no tool kinds keeps interactive calls one at a time only by running every
    call one at a time (strands' SequentialToolExecutor): the data-source calls beside them not
    meeting is LOOP-008's fault, counted there."""
    from conformance.boundary.adapter import Mechanism
    from conformance.steps.common import ScenarioContext

    block = ScenarioContext.block_on_kindless_rendezvous
    tools = [SimpleNamespace(kind="data_source"), SimpleNamespace(kind="interactive")]

    def ctx(mechanisms: dict[str, Any] | None, *, profile: str = "kernel", kinds: list[Any] = tools) -> Any:
        return SimpleNamespace(info=SimpleNamespace(mechanisms=mechanisms), profile=profile, scenario=SimpleNamespace(tools=kinds))

    with pytest.raises(Blocked) as caught:
        block(ctx({"tool_kinds": Mechanism(kind="absent")}), "calls a1 and a2 did not run concurrently")
    assert caught.value.by == ["LOOP-008"]
    with pytest.raises(Blocked):
        block(ctx({"pre-tool-call": Mechanism(kind="native")}), "x")  # not named in a table: absent
    block(ctx({"tool_kinds": Mechanism(kind="native")}), "x")  # the kernel has kinds: the check judges
    block(ctx(None), "x")  # nothing declared
    block(ctx({"tool_kinds": Mechanism(kind="absent")}, kinds=tools[:1]), "x")  # no interactive call
    block(ctx({"tool_kinds": Mechanism(kind="absent")}, profile="commonagent"), "x")


# --------------------------------------------------------------------------- JOURNAL-002


def test_a_stored_turn_check_on_a_journal_without_turns_is_blocked_by_journal_002() -> None:
    """hermes stores sessions and messages, no turns: STOP-004's stored status, JOURNAL-005's
    finished status and SESS-001's stored turns are start_turn's fault, counted at JOURNAL-002."""
    from conformance.steps.turn import require_turn_records, stored_status

    empty = SimpleNamespace(result=SimpleNamespace(journal=SimpleNamespace(turns=[])))
    with pytest.raises(Blocked) as caught:
        stored_status(empty, 1)  # type: ignore[arg-type]
    assert caught.value.by == ["JOURNAL-002"]
    some = SimpleNamespace(result=SimpleNamespace(journal=SimpleNamespace(turns=[object()])))
    require_turn_records(some, "x")  # type: ignore[arg-type]  # turns are stored: the check judges


# --------------------------------------------------------------------------- TURN-002, BUDGET-001


def _turn_log(*events: tuple[str, str]) -> FakeContext:
    """A log of (point, turn id) hook dispatches at depth 0."""
    return FakeContext([{"kind": "hook", "point": p, "turn": {"turn_id": t, "depth": 0}} for p, t in events])


def test_turns_that_overlapped_block_a_check_that_needs_them_apart_by_turn_002() -> None:
    """TURN-003's property with the second message sent while the first turn runs: when the
    turns overlapped (no session lock), the history it would judge was not laid down apart."""
    from conformance.steps.turn import require_turns_one_at_a_time

    ctx = _turn_log(("on_session_start", "t1"), ("on_session_start", "t2"), ("on_session_end", "t1"), ("on_session_end", "t2"))
    ctx.hook_dispatches = lambda point: [e for e in ctx.log if e.get("point") == point]  # type: ignore[attr-defined]
    with pytest.raises(Blocked) as caught:
        require_turns_one_at_a_time(ctx)  # type: ignore[arg-type]
    assert caught.value.by == ["TURN-002"]
    apart = _turn_log(("on_session_start", "t1"), ("on_session_end", "t1"), ("on_session_start", "t2"), ("on_session_end", "t2"))
    apart.hook_dispatches = lambda point: [e for e in apart.log if e.get("point") == point]  # type: ignore[attr-defined]
    require_turns_one_at_a_time(apart)  # type: ignore[arg-type]


def test_a_turn_counted_after_one_over_max_iterations_is_blocked_by_budget_001(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's script is one sequence: an earlier turn over max_iterations (hermes's summary
    call and its retry) used up the responses scripted for the next, BUDGET-005's check."""
    from conformance.steps import budget

    made = {1: 4, 2: 1}
    monkeypatch.setattr(budget, "turn_events", lambda _akc, k, *_: [{}] * made[k])
    ctx = SimpleNamespace(scenario=SimpleNamespace(bounds=SimpleNamespace(max_iterations=2)), require_kernel_ran=lambda: None)
    with pytest.raises(Blocked) as caught:
        budget.then_turn_model_calls(ctx, "2", "2")  # type: ignore[arg-type]
    assert caught.value.by == ["BUDGET-001"]
    made[1] = 2  # the earlier turn kept to its budget: the count is this check's to judge
    with pytest.raises(ConformanceFailure):
        budget.then_turn_model_calls(ctx, "2", "2")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- TOOL-015


def test_a_blocked_result_past_the_transform_is_legal_and_its_text_is_tool_007s(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading transform-blocked-result: a kernel may give a blocked call's result past
    transform_tool_result (hermes); then a text other than Blocked: <reason> is TOOL-007's."""
    from conformance.steps import tool

    sent: dict[str, Any] = {}
    dispatched: list[Any] = []
    monkeypatch.setattr(tool, "tool_result", lambda _akc, _k, _c: sent)
    monkeypatch.setattr(tool, "call_dispatches", lambda _akc, _p, _c: dispatched)
    ctx = SimpleNamespace(require_call_served=lambda _c: None, accepts=lambda _r: {"transformed", "not-transformed"},
                          evidence=SimpleNamespace(saw=lambda *_: None))

    def check() -> None:
        tool.then_blocked_result_content(ctx, "2", "b1", "REDACTED-B", "Blocked: no")  # type: ignore[arg-type]

    for text in ("REDACTED-B", "Blocked: no"):
        sent["content"] = text
        check()
    sent["content"] = '{"error": "no"}'
    with pytest.raises(Blocked) as caught:
        check()
    assert caught.value.by == ["TOOL-007"]
    dispatched.append({})  # dispatched, its replacement ignored: TOOL-015's own fault
    for text in ('{"error": "no"}', "Blocked: no"):
        sent["content"] = text
        with pytest.raises(ConformanceFailure):
            check()


# --------------------------------------------------------------------------- TOOL-003 / LOOP-012


def test_an_order_check_on_a_request_without_tool_results_is_blocked_by_loop_012() -> None:
    """smolagents hands a step's results back as one Observation text: no tool_result message to
    order, which is LOOP-012's subject (one tool_result per call in the history), counted there."""
    from conformance.steps.common import block_on_no_tool_results

    def ctx(requests: int, ran: bool, profile: str = "kernel", ids: tuple[str, ...] = ("TOOL-003",)) -> Any:
        return SimpleNamespace(
            profile=profile, requirement_ids=list(ids),
            events=lambda *_k: [{}] * requests, tool_starts=lambda: [{}] if ran else [],
        )

    with pytest.raises(Blocked) as caught:
        block_on_no_tool_results(ctx(2, True), 2, [])
    assert caught.value.by == ["LOOP-012"]
    block_on_no_tool_results(ctx(2, True), 2, ["a1"])  # results there: the order is judged
    block_on_no_tool_results(ctx(1, True), 2, [])  # no such request: the check's own evidence fails
    block_on_no_tool_results(ctx(2, False), 2, [])  # no tool ran: nothing to hand back
    block_on_no_tool_results(ctx(2, True, ids=("LOOP-012",)), 2, [])  # its own subject
    block_on_no_tool_results(ctx(2, True, profile="commonagent"), 2, [])


# --------------------------------------------------------------------------- COST-003/004


def cost_bound_run(ids: list[str], ran: list[str]) -> Any:
    """A real ScenarioContext over a hand-made log: three model calls asking for c1, c2, c3, the
    tools ``ran`` started, and the run raised at the cost limit."""
    from conformance.boundary.adapter import AdapterInfo, KernelRaised, RunResult
    from conformance.boundary.scenario import Scenario
    from conformance.harness.runner import ScenarioRun
    from conformance.steps.common import ScenarioContext

    info = AdapterInfo(name="k", version="1", profiles=["kernel"])
    akc = ScenarioContext(adapter=None, info=info, runner=None, profile="kernel", requirement_ids=ids)  # type: ignore[arg-type]
    log: list[dict[str, Any]] = []
    for i in range(3):
        log.append({"kind": "model_request", "index": i, "request": {"messages": []}})
        log.append({"kind": "model_response", "index": i, "chunks": [{"type": "tool_use", "id": f"c{i + 1}", "name": "fetch", "input_json": "{}"}], "complete": True})
    log += [start(c, "fetch") for c in ran]
    raised = KernelRaised(type="UsageLimitExceeded", message="cost_limit")
    akc.last = ScenarioRun(scenario=Scenario(name="s", profile="kernel"), result=RunResult(raised=raised), log=log)
    return akc


def test_the_cost_bound_firing_before_its_turns_tools_is_bound_001s_fault_not_the_running_sums() -> None:
    from conformance.steps.bound import bound_stop_problem

    # the sum fired in the right turn (c3 asked for, nothing later), only c3 did not run
    for req in ("COST-003", "COST-004"):
        with pytest.raises(Blocked) as caught:
            bound_stop_problem(cost_bound_run([req], ["c1", "c2"]), "max_cost_usd", 3)
        assert caught.value.by == ["BOUND-001"]


def test_the_cost_bound_firing_in_the_wrong_turn_fails_the_running_sums_requirement() -> None:
    from conformance.steps.bound import bound_stop_problem

    # an earlier turn's tools did not run: not the limiting turn's, so not BOUND-001's
    assert bound_stop_problem(cost_bound_run(["COST-003"], ["c1"]), "max_cost_usd", 3) is not None
    # went on past the turn it was reached in (the sum was reached in call 2)
    assert bound_stop_problem(cost_bound_run(["COST-004"], ["c1", "c2", "c3"]), "max_cost_usd", 2) is not None
