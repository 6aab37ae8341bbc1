"""Steps for the MSG features (001, Messages): what the kernel stores (RunResult.journal) is
001's message JSON, validated with ``conformance.boundary.messages``, in conversation order.

A table describes stored messages with two columns, ``role`` and ``holds``:
``user | <text>``, ``assistant | <text>`` (a final answer), ``assistant | calls: c1, c2`` (a tool
request, its call ids in order), ``tool_result | c1`` (the result of call c1). Consecutive
``tool_result`` rows are the results of one assistant message: their order among themselves is
not checked here (TOOL-003 checks it).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pytest_bdd import parsers, then

from conformance.boundary.adapter import MessageRecord
from conformance.errors import ConformanceFailure, HarnessError, expect_equal, show
from conformance.boundary.messages import parse_message
from conformance.steps.common import ScenarioContext, split_ids, table_rows
from conformance.steps.ident import stored_turn

ROLES = ("user", "assistant", "tool_result")


def describe(message: Any) -> tuple[str, Any]:
    """A stored message as (role, holds), the form of the feature tables."""
    if not isinstance(message, dict):
        return ("?", show(message))
    role = message.get("role")
    if role == "assistant" and message.get("tool_calls"):
        ids = [c.get("id") if isinstance(c, dict) else c for c in message.get("tool_calls") or []]
        return ("assistant", "calls: " + ", ".join(str(i) for i in ids))
    if role == "tool_result":
        return ("tool_result", message.get("call_id"))
    return (str(role), message.get("text"))


def loose(message: Any) -> tuple[str, str]:
    """A stored message by role and call ids only (``assistant`` text vs ``calls: ...``)."""
    return loosely(describe(message))


def loosely(item: tuple[str, Any]) -> tuple[str, str]:
    role, holds = item
    if role == "assistant" and not str(holds).startswith("calls:"):
        return ("assistant", "(text)")
    if role in ("user", "system"):
        return (role, "(text)")
    return (role, str(holds))


def expected_rows(datatable: list[list[str]]) -> list[tuple[str, str]]:
    rows = table_rows(datatable)
    if not rows or "role" not in rows[0] or "holds" not in rows[0]:
        raise HarnessError("a stored-messages table needs the columns role | holds")
    out = []
    for r in rows:
        holds = r["holds"]
        if r["role"] == "assistant" and holds.startswith("calls:"):
            holds = "calls: " + ", ".join(split_ids(holds[len("calls:"):]))
        out.append((r["role"], holds))
    return out


def blocks(items: list[tuple[str, Any]]) -> list[Any]:
    """Consecutive tool_result items grouped into one (sorted) block; others stay as they are."""
    out: list[Any] = []
    for item in items:
        if item[0] == "tool_result" and out and isinstance(out[-1], list):
            out[-1].append(item)
            out[-1].sort(key=str)
        elif item[0] == "tool_result":
            out.append([item])
        else:
            out.append(item)
    return out


def session_messages(akc: ScenarioContext, k: int) -> list[MessageRecord]:
    """The stored messages of the session user message k ran in, in storage order (system
    messages, which 001 does not list, left out)."""
    session_id = stored_turn(akc, k).get("session_id")
    return [
        r
        for r in akc.result.journal.messages
        if r.session_id == session_id and not (isinstance(r.message, dict) and r.message.get("role") == "system")
    ]


def stored(akc: ScenarioContext, role: str) -> list[dict[str, Any]]:
    """Every stored message of this role, in storage order."""
    messages = [r.message for r in akc.result.journal.messages]
    return [m for m in messages if isinstance(m, dict) and m.get("role") == role]


def scripted_call(akc: ScenarioContext, call_id: str) -> dict[str, Any]:
    """The tool call the model script makes under this id (name and args)."""
    for r in akc.scenario.model.responses:
        for c in r.tool_calls:
            if c.id == call_id:
                return {"id": call_id, "name": c.name, "args": c.args or {}}
    raise HarnessError(f"the model script makes no call {call_id!r}")


# ============================================================================ Then


@then("every stored message has one of 001's shapes")
def msg_then_shapes(akc: ScenarioContext) -> None:
    """Each stored message is a JSON object with a role (user, assistant, tool_result; a system
    text is tolerated) in 001's shape for that role."""
    records = akc.evidence.require("messages stored in the journal", akc.result.journal.messages)
    for i, rec in enumerate(records, start=1):
        try:
            parse_message(rec.message)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ConformanceFailure(
                f"stored message {i}", "one of 001's message shapes", f"{show(rec.message)} ({where}: {err['msg']})"
            ) from None
        msg = rec.message
        if msg.get("role") == "assistant" and msg.get("text") is None and not msg.get("tool_calls"):
            raise ConformanceFailure(f"stored message {i}", "an assistant message with text or tool_calls", msg)
        if msg.get("role") == "tool_result" and not isinstance(msg.get("is_error"), bool):
            raise ConformanceFailure(f"is_error of stored message {i}", "true or false", msg.get("is_error"))


@then(parsers.re(r'the user message "(?P<text>[^"]*)" is stored with role user and its text$'))
def msg_then_user(akc: ScenarioContext, text: str) -> None:
    """A stored ``{"role": "user", "text": <the text the user sent>}``."""
    users = stored(akc, "user")
    if not any(m.get("text") == text for m in users):
        raise ConformanceFailure("stored user messages", f"one with text {text!r}", users)
    akc.evidence.saw(f"the user message {text!r} stored")


@then(parsers.re(r'the assistant message asking for "(?P<ids>[^"]+)" is stored with each call\'s id, name and args$'))
def msg_then_tool_calls(akc: ScenarioContext, ids: str) -> None:
    """A stored assistant message whose tool_calls are these calls, in the model's order, each
    ``{"id", "name", "args"}`` with args a JSON object equal to the model's arguments."""
    wanted = split_ids(ids)
    expected = [scripted_call(akc, c) for c in wanted]
    candidates = [m for m in stored(akc, "assistant") if m.get("tool_calls")]
    match = next(
        (m for m in candidates if [c.get("id") if isinstance(c, dict) else None for c in m["tool_calls"]] == wanted),
        None,
    )
    if match is None:
        raise ConformanceFailure(f"a stored assistant message asking for {', '.join(wanted)}", expected, candidates)
    for exp, got in zip(expected, match["tool_calls"], strict=True):
        if not isinstance(got.get("args"), dict):
            raise ConformanceFailure(f"args of stored tool call {exp['id']}", "a JSON object", got.get("args"))
        expect_equal(f"stored tool call {exp['id']}", exp, {k: got.get(k) for k in ("id", "name", "args")})
    akc.evidence.saw(f"the assistant message asking for {', '.join(wanted)} stored")


@then(parsers.re(r'the result of "(?P<call_id>[^"]+)" is stored with content "(?P<content>[^"]*)" and no error$'))
def msg_then_result_ok(akc: ScenarioContext, call_id: str, content: str) -> None:
    """``{"role": "tool_result", "call_id", "content": <the tool's text>, "is_error": false}``."""
    found = [m for m in stored(akc, "tool_result") if m.get("call_id") == call_id]
    if not found:
        raise ConformanceFailure(f"the stored result of {call_id}", "a tool_result message", stored(akc, "tool_result"))
    expect_equal(
        f"the stored result of {call_id}",
        {"call_id": call_id, "content": content, "is_error": False},
        {k: found[0].get(k) for k in ("call_id", "content", "is_error")},
    )
    akc.evidence.saw(f"the result of {call_id} stored")


@then(parsers.re(r'the result of "(?P<call_id>[^"]+)" is stored as an error$'))
def msg_then_result_error(akc: ScenarioContext, call_id: str) -> None:
    """A failed call's result is stored with its call_id, a text content and is_error true."""
    found = [m for m in stored(akc, "tool_result") if m.get("call_id") == call_id]
    if not found:
        raise ConformanceFailure(f"the stored result of {call_id}", "a tool_result message", stored(akc, "tool_result"))
    if not isinstance(found[0].get("content"), str):
        raise ConformanceFailure(f"content of the stored result of {call_id}", "a text", found[0].get("content"))
    expect_equal(f"is_error of the stored result of {call_id}", True, found[0].get("is_error"))
    akc.evidence.saw(f"the result of {call_id} stored as an error")


@then(parsers.re(r'the final answer "(?P<text>[^"]*)" is stored as an assistant message with its text$'))
def msg_then_final(akc: ScenarioContext, text: str) -> None:
    """A stored ``{"role": "assistant", "text": <the whole answer>}`` without tool calls."""
    answers = [m for m in stored(akc, "assistant") if not m.get("tool_calls")]
    if not any(m.get("text") == text for m in answers):
        raise ConformanceFailure("stored final answers", f"one with text {text!r}", answers)
    akc.evidence.saw(f"the final answer {text!r} stored")


@then(parsers.re(r"the stored conversation of the session of user message (?P<k>\d+) is:$"))
def msg_then_conversation(akc: ScenarioContext, k: str, datatable: list[list[str]]) -> None:
    """The session's stored messages, in storage order, are exactly these (table role | holds;
    the results of one assistant message in any order among themselves). Compared by role and
    call ids: the texts are MSG-002's and MSG-005's."""
    expected = [loosely(r) for r in expected_rows(datatable)]
    observed = akc.evidence.require(
        f"messages stored in the session of message {k}", [loose(r.message) for r in session_messages(akc, int(k))]
    )
    if blocks(expected) != blocks(observed):
        raise ConformanceFailure(f"the stored conversation of the session of message {k}", expected, observed)


@then(parsers.re(r'the result of "(?P<call_id>[^"]+)" is stored with is_error "(?P<flag>true|false)"$'))
def msg_then_result_flag(akc: ScenarioContext, call_id: str, flag: str) -> None:
    """The stored result of a call has a text content and this error flag (whatever answered
    the call: a tool, a failure, a block, a sub-agent)."""
    found = [m for m in stored(akc, "tool_result") if m.get("call_id") == call_id]
    if not found:
        raise ConformanceFailure(f"the stored result of {call_id}", "a tool_result message", stored(akc, "tool_result"))
    if not isinstance(found[0].get("content"), str):
        raise ConformanceFailure(f"content of the stored result of {call_id}", "a text", found[0].get("content"))
    expect_equal(f"is_error of the stored result of {call_id}", flag == "true", found[0].get("is_error"))
    akc.evidence.saw(f"the result of {call_id} stored with is_error {flag}")
