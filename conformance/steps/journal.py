"""Steps for the JOURNAL features (001, The journal): what the loop records through
create_session, start_turn, append_message, record_tool_call and finish_turn, as the adapter
reports it in RunResult.journal. Each turn is identified by what the harness saw (the TurnInfo
of its pre_llm_call dispatch, else the outcome's turn_id), never by the journal itself.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_bdd import parsers, then

from conformance.boundary.adapter import TurnRecord
from conformance.errors import Blocked, ConformanceFailure, HarnessError, expect_equal, show
from conformance.steps.common import ScenarioContext, table_rows
from conformance.steps.ident import check_stored_turn, expected_top_turn, message_turn, stored_turn
from conformance.steps.msg import expected_rows, loose, loosely
from conformance.steps.turn import event_turn_id, journal_writes, require_turn_records, stored_status, turn_events, turn_hooks, turn_id_of


def _stored_turns(akc: ScenarioContext, turn_id: Any) -> list[TurnRecord]:
    return [t for t in akc.result.journal.turns if t.turn.turn_id == turn_id]


def _message_count(akc: ScenarioContext) -> int:
    return len(akc.scenario.user_messages)


@then("each session is created in the journal with its profile id, source, title, tags and parent")
def journal_then_sessions(akc: ScenarioContext) -> None:
    """create_session(NewSession): one record per session the messages ran in, with the
    profile's id, a source (text), a title (text or none), the session tags it was created
    with among its tags (SESS-003 checks that nothing else is; TAG-009 the starting message's
    extra tags) and no parent session."""
    firsts: dict[str, int] = {}
    for k, m in enumerate(akc.scenario.user_messages, start=1):
        firsts.setdefault(m.session, k)
    akc.evidence.require("sessions stored in the journal", akc.result.journal.sessions)
    for label, k in firsts.items():
        session_id = stored_turn(akc, k).get("session_id")
        records = [s for s in akc.result.journal.sessions if s.id == session_id]
        if len(records) != 1:
            raise ConformanceFailure(
                f"journal records of session {label!r} ({session_id})", "exactly one", len(records)
            )
        rec = records[0]
        where = f"the journal's session {label!r}"
        expect_equal(f"profile_id of {where}", akc.scenario.profile_id, rec.profile_id)
        if not isinstance(rec.source, str) or not rec.source:
            raise ConformanceFailure(f"source of {where}", "where it came from (text)", rec.source)
        if rec.title is not None and not isinstance(rec.title, str):
            raise ConformanceFailure(f"title of {where}", "a text or none", rec.title)
        own = set(akc.scenario.session_tags)
        if not own <= set(rec.tags):
            raise ConformanceFailure(f"tags of {where}", f"the session's tags {show(sorted(own))}", rec.tags)
        expect_equal(f"parent_session_id of {where}", None, rec.parent_session_id)
    akc.evidence.saw(f"{len(firsts)} sessions created in the journal")


@then("each turn is started in the journal with its TurnInfo")
def journal_then_turns_started(akc: ScenarioContext) -> None:
    """start_turn(TurnInfo): one stored turn per user message, holding the TurnInfo its hooks
    got (profile_id, session_id, turn_id, parent_turn_id, tags, depth)."""
    for k in range(1, _message_count(akc) + 1):
        turn = stored_turn(akc, k)
        stored = _stored_turns(akc, turn.get("turn_id"))
        if len(stored) != 1:
            raise ConformanceFailure(
                f"stored turns for the turn of message {k} ({turn.get('turn_id')})",
                "exactly one",
                [t.turn.turn_id for t in akc.result.journal.turns],
            )
        check_stored_turn(
            f"the TurnInfo stored for the turn of message {k}",
            stored[0].turn.model_dump(),
            message_turn(akc, k),
            expected_top_turn(akc, k),
        )
    expect_equal("turns stored in the journal", _message_count(akc), len(akc.result.journal.turns))
    akc.evidence.require("turns started in the journal", akc.result.journal.turns)


@then("every message of each turn is appended to the journal under that turn:")
def journal_then_messages(akc: ScenarioContext, datatable: list[list[str]]) -> None:
    """append_message(TurnInfo, Message): the messages stored under each turn's session and turn
    ids include the listed ones (table: turn | role | holds, turn = the user message's number).
    Compared by role and call ids: the texts are MSG-002's and MSG-005's."""
    rows = table_rows(datatable)
    if not rows or "turn" not in rows[0]:
        raise HarnessError("the table needs the columns turn | role | holds")
    described = expected_rows([[h for h in datatable[0] if h.strip() != "turn"]] + [
        [c for h, c in zip(datatable[0], row, strict=False) if h.strip() != "turn"] for row in datatable[1:]
    ])
    wanted: dict[int, list[tuple[str, str]]] = {}
    for row, want in zip(rows, described, strict=True):
        wanted.setdefault(int(row["turn"]), []).append(loosely(want))
    records = akc.evidence.require("messages stored in the journal", akc.result.journal.messages)
    for k, items in wanted.items():
        turn = stored_turn(akc, k)
        ids = (turn.get("session_id"), turn.get("turn_id"))
        under = [loose(r.message) for r in records if (r.session_id, r.turn_id) == ids]
        if not under and not akc.result.journal.turns and "JOURNAL-002" not in akc.requirement_ids:
            # no turn records at all (JOURNAL-002's subject): there is no turn to store messages under
            raise Blocked("JOURNAL-002", f"the journal stores no turns, so no message of turn {k} is stored under one")
        left = list(under)
        for item in items:
            if item not in left:
                raise ConformanceFailure(
                    f"messages stored under the turn of message {k} ({turn.get('turn_id')})",
                    f"{show(items)} among them",
                    under,
                )
            left.remove(item)


def _result_sent(akc: ScenarioContext, call_id: str) -> dict[str, Any] | None:
    """The tool_result for this call the model was sent (first request that has one)."""
    for request in akc.model_requests():
        for m in request.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "tool_result" and m.get("call_id") == call_id:
                return m
    return None


@then("the journal records these tool calls:")
def journal_then_tool_calls(akc: ScenarioContext, datatable: list[list[str]]) -> None:
    """record_tool_call(TurnInfo, ToolCallRecord) for each listed call (table: call_id | name |
    args | risk | approval; an empty approval is not checked): its name, arguments, the result
    and error flag the model got, its risk, a duration and the approval decision."""
    records = akc.evidence.require("tool calls recorded in the journal", akc.result.journal.tool_calls)
    for row in table_rows(datatable):
        call_id = row["call_id"]
        found = [r for r in records if r.call_id == call_id]
        if len(found) != 1:
            raise ConformanceFailure(
                f"journal records of tool call {call_id}", "exactly one", [r.call_id for r in records]
            )
        rec = found[0]
        where = f"the journal's record of tool call {call_id}"
        expect_equal(f"name in {where}", row["name"], rec.name)
        expect_equal(f"args in {where}", json.loads(row["args"]), rec.args)
        sent = _result_sent(akc, call_id)
        if sent is None:
            raise HarnessError(f"no model request carried the result of {call_id}; script one more model call")
        expect_equal(f"result in {where} (the content the model got)", sent.get("content"), rec.result)
        if sent.get("is_error") is not None:  # a kernel on an HTTP model API sends no flag
            expect_equal(f"is_error in {where} (the flag the model got)", sent["is_error"], rec.is_error)
        if not isinstance(rec.duration_ms, int | float) or rec.duration_ms < 0:
            raise ConformanceFailure(f"duration in {where}", "a duration (>= 0 ms)", rec.duration_ms)
        # risk and approval last: a kernel without them fails TOOL-005 / TOOL-017 too, so a
        # record missing one of this requirement's own fields says that first
        expect_equal(f"risk in {where}", row["risk"], rec.risk)
        if row.get("approval"):
            akc.require_approver_asked(call_id)
            expect_equal(f"approval in {where}", row["approval"], rec.approval)


@then("each turn is finished in the journal with the status its run ended with")
def journal_then_finished(akc: ScenarioContext) -> None:
    """finish_turn(TurnInfo, status): each stored turn holds the status the turn ended with (the
    outcome's status)."""
    for k in range(1, _message_count(akc) + 1):
        turn = stored_turn(akc, k)
        outcome = akc.outcome(k - 1)
        stored = _stored_turns(akc, turn.get("turn_id"))
        if not stored:
            require_turn_records(akc, f"the status of the turn of message {k}")
            raise ConformanceFailure(f"the stored turn of message {k}", "a stored turn", "none")
        status = stored[-1].status
        if not status:
            raise ConformanceFailure(f"status of the stored turn of message {k}", outcome.status, status)
        expect_equal(f"status of the stored turn of message {k}", outcome.status, status)
        akc.evidence.saw(f"the turn of message {k} finished in the journal with {status!r}")


@then(parsers.re(r'the turn of user message (?P<k>\d+) is finished in the journal with status "(?P<status>[^"]+)"$'))
def journal_then_finished_with(akc: ScenarioContext, k: str, status: str) -> None:
    """The stored turn of user message k holds this final status."""
    turn = stored_turn(akc, int(k))
    stored = _stored_turns(akc, turn.get("turn_id"))
    if not stored:
        require_turn_records(akc, f"the status of the turn of message {k}")
        raise ConformanceFailure(f"the stored turn of message {k}", "a stored turn", "none")
    expect_equal(f"status of the stored turn of message {k}", status, stored[-1].status)
    akc.evidence.saw(f"the turn of message {k} finished in the journal with {status!r}")


# ============================================================================ the order of stored writes (issue 21)
# 000's steps fix when each write happens: the user message is stored (step 2) before the model is
# called (step 5); post_api_request fires, then the assistant message is stored; post_tool_call
# and transform_tool_result fire (tool steps 5, 6), then the tool call is stored (7); the final
# answer is stored (5), then the final status (6). Each order is read on the harness's one event
# log: the journal writes the adapter reports (Doubles.journal_write) among the hook dispatches
# and model requests the doubles saw.


def _turn_writes(akc: ScenarioContext, k: int, op: str) -> list[dict[str, Any]]:
    tid = turn_id_of(akc, k)
    return [w for w in journal_writes(akc) if w["op"] == op and event_turn_id(w) == tid]


def _role(write: dict[str, Any]) -> Any:
    record = write.get("record")
    return record.get("role") if isinstance(record, dict) else None


def _user_before_model(akc: ScenarioContext, k: int) -> str:
    requests = akc.evidence.require(f"model calls of user message {k}", turn_events(akc, k, "model_request"))
    users = [w for w in _turn_writes(akc, k, "append_message") if _role(w) == "user"]
    if not users or users[0]["seq"] > requests[0]["seq"]:
        raise ConformanceFailure(
            f"the user message of user message {k}", "stored (append_message) before the turn's first model call",
            "stored after it" if users else "never stored under the turn",
        )
    return "the user message stored before the first model call"


def _assistant_after_post_api(akc: ScenarioContext, k: int) -> str:
    posts = akc.evidence.require(f"post_api_request dispatches of user message {k}",
                                 [e for e in turn_hooks(akc, k) if e["point"] == "post_api_request"])
    stored = [w for w in _turn_writes(akc, k, "append_message") if _role(w) == "assistant"]
    if len(stored) < len(posts):
        raise ConformanceFailure(f"assistant messages stored for user message {k}", f"one per answered model call ({len(posts)})", len(stored))
    for i, (post, write) in enumerate(zip(posts, stored, strict=False), start=1):
        if write["seq"] < post["seq"]:
            raise ConformanceFailure(f"assistant message {i} of user message {k}", "stored after its post_api_request", "stored before it")
    return f"{len(posts)} assistant messages stored, each after its post_api_request"


def _tool_call_after_hooks(akc: ScenarioContext, k: int) -> str:
    """Per model call: when the n-th tool call of its response is stored, n post_tool_call and n
    transform_tool_result dispatches of that model call have happened (calls identified by count,
    the hooks' payloads being free)."""
    requests = turn_events(akc, k, "model_request")
    hooks = turn_hooks(akc, k)
    records = akc.evidence.require(f"tool calls stored for user message {k}", _turn_writes(akc, k, "record_tool_call"))
    bounds = [r["seq"] for r in requests] + [float("inf")]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        stored = [w for w in records if lo < w["seq"] < hi]
        for n, write in enumerate(stored, start=1):
            for point in ("post_tool_call", "transform_tool_result"):
                before = [e for e in hooks if e["point"] == point and lo < e["seq"] < write["seq"]]
                if len(before) < n:
                    call = (write.get("record") or {}).get("call_id")
                    raise ConformanceFailure(
                        f"the tool call {call} of user message {k}", f"stored after its {point} ({n} dispatches before it)",
                        f"{len(before)} {point} dispatches before it was stored",
                    )
    return f"{len(records)} tool calls stored, each after its post_tool_call and transform_tool_result"


def _final_answer_before_status(akc: ScenarioContext, k: int) -> str:
    final = stored_status(akc, k)
    finishes = akc.evidence.require(f"finish_turn writes of user message {k}",
                                    [w for w in _turn_writes(akc, k, "finish_turn") if (w.get("record") or {}).get("status") == final])
    answers = [w for w in _turn_writes(akc, k, "append_message")
               if _role(w) == "assistant" and not (w.get("record") or {}).get("tool_calls")]
    answer = akc.evidence.require(f"the final answer of user message {k} stored", answers)[-1]
    if answer["seq"] > finishes[0]["seq"]:
        raise ConformanceFailure(f"the final answer of user message {k}", f"stored before the final status {final!r}", "stored after it")
    return f"the final answer stored before the status {final!r}"


_WRITE_ORDERS = {
    "store the user message before the first model call": _user_before_model,
    "store each assistant message after its post_api_request": _assistant_after_post_api,
    "store each tool call after its post_tool_call and transform_tool_result": _tool_call_after_hooks,
    "store the final answer before the final status": _final_answer_before_status,
}


@then(parsers.re(r"the journal writes of user message (?P<k>\d+) (?P<rule>.+)$"))
def journal_then_write_order(akc: ScenarioContext, k: str, rule: str) -> None:
    """One order of 000's steps between a journal write and what comes before or after it."""
    check = _WRITE_ORDERS.get(rule)
    if check is None:
        raise HarnessError(f"unknown write order {rule!r}; known: {sorted(_WRITE_ORDERS)}")
    akc.require_kernel_ran()
    akc.evidence.saw(check(akc, int(k)))
