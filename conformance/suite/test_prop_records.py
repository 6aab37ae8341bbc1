"""Properties of what is stored for each tool call, over what becomes of it (000 "Each tool
call": it runs, its tool fails, pre_tool_call blocks it, the approver approves, denies or times
out) and how many calls a response holds (1-3, run in parallel).

The model's view is the reference: the next model request shows each call's result (content and
error flag) as the kernel sent it; what is stored must be that. TOOL-016: every call stored once,
whatever became of it. MSG-004: its tool_result message stored with its call_id, content and
error flag. JOURNAL-004: its ToolCallRecord holds its name, arguments, result, error flag, risk,
a duration and the approver's decision. One property per requirement, one generator.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from conformance.boundary.scenario import (
    AskUser,
    Block,
    CallScript,
    HookMatch,
    ModelResponse,
    ScriptedOutcome,
    ScriptedToolCall,
    ToolDef,
)
from conformance.errors import ConformanceFailure, expect_equal
from conformance.steps.turn import stored_messages
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement

OUTCOMES = ["ok", "fail", "block", "approved", "denied", "timed_out"]
#: The responses of one turn: each a list of call outcomes (1-3 calls).
responses = st.lists(st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=3), min_size=1, max_size=2)
DIMS = [f"outcome={o}" for o in OUTCOMES] + ["calls_per_response=1", "calls_per_response=2", "calls_per_response=3"]


def _run(plan: list[list[str]], name: str) -> tuple[Any, dict[str, str]]:
    """One turn: each response asks for its calls (outcomes as planned), then a final answer."""
    ctx = context("commonagent", name)
    ctx.add_tool(ToolDef(name="deploy", risk="high", result="deployed {args}"))
    outcomes: dict[str, str] = {}
    for r, calls in enumerate(plan, start=1):
        scripted = []
        for c, outcome in enumerate(calls, start=1):
            cid = f"r{r}c{c}"
            outcomes[cid] = outcome
            scripted.append(ScriptedToolCall(id=cid, name="deploy", args={"target": cid}))
            gate = ctx.hook("gate", "pre_tool_call")
            if outcome == "fail":
                ctx.scenario.calls[cid] = CallScript(error=f"deploy {cid} broke")
            elif outcome == "block":
                gate.script.append(ScriptedOutcome(when=HookMatch(call_id=cid), outcome=Block(reason=f"not {cid}")))
            elif outcome in ("approved", "denied", "timed_out"):
                gate.script.append(ScriptedOutcome(when=HookMatch(call_id=cid), outcome=AskUser(prompt=f"{cid}?")))
        ctx.add_response(ModelResponse(tool_calls=scripted))
    ctx.add_response(ModelResponse(text="done"))
    # The approver answers in the order it is asked, and calls of one response may be asked about
    # in any order: which call got which answer is read from its log (_decisions).
    ctx.scenario.approver = [o for o in outcomes.values() if o in ("approved", "denied", "timed_out")]
    ctx.run()
    ctx.require_kernel_ran()
    return ctx, outcomes


def _sent(ctx: Any) -> dict[str, dict[str, Any]]:
    """Each call's result as the model got it (the last request holds every result)."""
    out: dict[str, dict[str, Any]] = {}
    for request in ctx.model_requests():
        for m in request.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "tool_result":
                out[str(m.get("call_id"))] = m
    return out


def _decisions(ctx: Any) -> dict[str, str]:
    """The approver's decision for each call it was asked about (its own log)."""
    return {str((e.get("request") or {}).get("call_id")): e["decision"] for e in ctx.events("approval")}


@requirement("TOOL-016", profile="commonagent", dims=DIMS)
@PROPERTY_SETTINGS
@given(plan=responses)
def test_prop_every_tool_call_is_stored_once(plan: list[list[str]]) -> None:
    ctx, outcomes = _run(plan, "every tool call stored once")
    records = ctx.evidence.require("tool calls recorded in the journal", ctx.result.journal.tool_calls)
    for cid, outcome in outcomes.items():
        found = [r for r in records if r.call_id == cid]
        if len(found) != 1:
            raise ConformanceFailure(f"records of call {cid} ({outcome})", "exactly one", len(found))
    ctx.evidence.saw(f"{len(outcomes)} calls ({', '.join(sorted(set(outcomes.values())))}) each stored once")


@requirement("MSG-004", profile="commonagent", dims=DIMS)
@PROPERTY_SETTINGS
@given(plan=responses)
def test_prop_every_tool_result_is_stored_as_the_model_got_it(plan: list[list[str]]) -> None:
    ctx, outcomes = _run(plan, "every tool result stored as sent")
    sent = _sent(ctx)
    stored = {str(m.get("call_id")): m for m in stored_messages(ctx) if isinstance(m, dict) and m.get("role") == "tool_result"}
    for cid, outcome in outcomes.items():
        if cid not in sent:
            continue  # what the model got is TOOL-003's and TURN-018's
        if cid not in stored:
            raise ConformanceFailure(f"the stored result of {cid} ({outcome})", "a tool_result message", sorted(stored))
        got = stored[cid]
        if not isinstance(got.get("content"), str) or not isinstance(got.get("is_error"), bool):
            raise ConformanceFailure(f"the stored result of {cid} ({outcome})", "a text content and an is_error flag", got)
        expect_equal(f"content of the stored result of {cid} ({outcome})", sent[cid].get("content"), got.get("content"))
        if sent[cid].get("is_error") is not None:  # a kernel on an HTTP model API sends no flag
            expect_equal(f"is_error of the stored result of {cid} ({outcome})", sent[cid]["is_error"], got.get("is_error"))
    ctx.evidence.require("results the model got, compared with the stored ones", sent)


@requirement("JOURNAL-004", profile="commonagent", dims=DIMS)
@PROPERTY_SETTINGS
@given(plan=responses)
def test_prop_every_tool_call_record_is_complete(plan: list[list[str]]) -> None:
    ctx, outcomes = _run(plan, "every tool call record complete")
    sent, decisions = _sent(ctx), _decisions(ctx)
    records = {r.call_id: r for r in ctx.evidence.require("tool calls recorded in the journal", ctx.result.journal.tool_calls)}
    for cid, outcome in outcomes.items():
        rec = records.get(cid)
        if rec is None or cid not in sent:
            continue  # stored once is TOOL-016's; sent is TURN-018's
        where = f"the journal's record of call {cid} ({outcome})"
        expect_equal(f"name in {where}", "deploy", rec.name)
        expect_equal(f"args in {where}", {"target": cid}, rec.args)
        expect_equal(f"result in {where} (the content the model got)", sent[cid].get("content"), rec.result)
        if sent[cid].get("is_error") is not None:
            expect_equal(f"is_error in {where} (the flag the model got)", sent[cid]["is_error"], rec.is_error)
        expect_equal(f"risk in {where}", "high", rec.risk)
        if not isinstance(rec.duration_ms, int | float) or rec.duration_ms < 0:
            raise ConformanceFailure(f"duration in {where}", "a duration (>= 0 ms)", rec.duration_ms)
        if cid in decisions:
            expect_equal(f"approval in {where} (the approver answered {decisions[cid]!r})", decisions[cid], rec.approval)
    ctx.evidence.saw(f"{len(records)} tool call records complete")
