"""Steps for the TURN features (000 "Step by step"): the session lock, history and the stored user
message, the system prompt's stable tier, the session hooks, the model-call hooks, the final
answer and on_session_end.

The helpers at the top (which turn a log event belongs to, what a message looks like in a step
table, what the journal stored for a turn) are shared by the tool, stop and budget steps.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_bdd import given, parsers, then

from conformance.errors import (
    Blocked,
    ConformanceFailure,
    HarnessError,
    Incomplete,
    expect_equal,
    expect_order,
    show,
)
from conformance.boundary.scenario import ModelResponse
from conformance.steps.common import ScenarioContext, list_items

# ========================================================================== shared helpers

#: Log event kinds that carry the TurnInfo of the turn they belong to.
TURN_EVENTS = ("hook", "model_request", "tool_start", "tool_end", "policy", "approval")


def parse_json(text: str, what: str) -> Any:
    """JSON from a step text, or a HarnessError naming the step (a broken feature file)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{what}: invalid JSON in the feature file ({exc}): {text!r}") from None


def event_turn_id(event: dict[str, Any]) -> str | None:
    turn = event.get("turn")
    return turn.get("turn_id") if isinstance(turn, dict) else None


def top_level_turn_ids(akc: ScenarioContext) -> list[str]:
    """The turn ids of depth-0 turns, in the order their first event was logged."""
    seen: list[str] = []
    for e in akc.events(*TURN_EVENTS):
        turn = e.get("turn")
        if not isinstance(turn, dict) or turn.get("turn_id") is None:
            continue
        if (turn.get("depth") or 0) != 0:
            continue
        if turn["turn_id"] not in seen:
            seen.append(turn["turn_id"])
    return seen


def turn_id_of(akc: ScenarioContext, k: int) -> str:
    """The turn id of user message ``k`` (1-based): the outcome's turn id when the adapter reports
    it, else the k-th top-level turn seen in the log (messages run one after the other)."""
    outcome = next((o for o in akc.result.outcomes if o.message == k - 1), None)
    if outcome is not None and outcome.turn_id:
        return outcome.turn_id
    ids = top_level_turn_ids(akc)
    if not 1 <= k <= len(ids):
        raise ConformanceFailure(f"the turn of user message {k}", f"at least {k} turns in the log", f"{len(ids)}")
    return ids[k - 1]


def turn_events(akc: ScenarioContext, k: int, *kinds: str) -> list[dict[str, Any]]:
    """Log events (of these kinds; default: all that carry a turn) of user message k's turn."""
    tid = turn_id_of(akc, k)
    return [e for e in akc.events(*(kinds or TURN_EVENTS)) if event_turn_id(e) == tid]


def turn_hooks(akc: ScenarioContext, k: int) -> list[dict[str, Any]]:
    """The recorded hook dispatches (one per dispatch of a point) of user message k's turn."""
    tid = turn_id_of(akc, k)
    return [e for e in akc.hook_dispatches() if event_turn_id(e) == tid]


def message_text(message: dict[str, Any]) -> str:
    """The readable text of a message (text or content), '' if none."""
    text = message.get("text")
    if text is None:
        text = message.get("content")
    return text if isinstance(text, str) else ""


def project(message: dict[str, Any]) -> str:
    """A message as written in step tables: ``user: <text>``, ``assistant: <text>``,
    ``assistant: calls <id>, <id>`` (``+ <text>`` if it also has text), ``tool_result: <call id>``,
    ``system: ...``."""
    role = message.get("role")
    if role == "assistant":
        calls = [str(c.get("id")) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        text = message_text(message)
        if calls:
            return "assistant: calls " + ", ".join(calls) + (f" + {text}" if text else "")
        return f"assistant: {text}"
    if role == "tool_result":
        return f"tool_result: {message.get('call_id')}"
    if role == "system":
        return "system: ..."
    return f"{role}: {message_text(message)}"


def conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of a model request without system messages."""
    return [m for m in all_messages(request) if m.get("role") != "system"]


def all_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message of a model request, system messages included."""
    return [m for m in request.get("messages") or [] if isinstance(m, dict)]


def stored_messages(akc: ScenarioContext, k: int | None = None) -> list[dict[str, Any]]:
    """The stored messages (in storing order); of user message k's turn if k is given. Records
    without a turn id are matched by the turn's session."""
    records = akc.result.journal.messages
    if k is None:
        return [r.message for r in records]
    tid = turn_id_of(akc, k)
    if any(r.turn_id for r in records):
        return [r.message for r in records if r.turn_id == tid]
    session = next((o.session_id for o in akc.result.outcomes if o.message == k - 1), None)
    return [r.message for r in records if session is None or r.session_id == session]


def require_turn_records(akc: ScenarioContext, what: str) -> None:
    """Precondition of a check on a stored turn: the journal stores turns at all. A journal with
    no turn record (hermes stores sessions and messages only) lacks start_turn, JOURNAL-002's
    subject: the check is blocked by it, not failed again (one fault, one verdict)."""
    if not akc.result.journal.turns:
        raise Blocked("JOURNAL-002", f"the journal stores no turns, so {what} cannot be read")


def stored_status(akc: ScenarioContext, k: int) -> str | None:
    """The status the journal holds for user message k's turn."""
    require_turn_records(akc, f"the status of the turn of user message {k}")
    tid = turn_id_of(akc, k)
    for record in akc.result.journal.turns:
        if record.turn.turn_id == tid:
            return record.status
    raise ConformanceFailure(f"the stored turn of user message {k}", f"a journal turn record {tid}", "none")


def contains_text(value: Any, needle: str) -> bool:
    """Does ``needle`` occur anywhere in this JSON value (keys and strings)?"""
    return needle in json.dumps(value, ensure_ascii=False, default=str)


def require_text_handed_over(akc: ScenarioContext, text: str, *, mandatory: bool = True) -> None:
    """Evidence for a "never stored / not sent" check about ``text``: the harness handed the
    kernel this text — a scripted hook returned it, or the model streamed it. Not ``mandatory``:
    never handed makes the check incomplete, not failed (a kernel need not read a stream)."""
    handed = [e for e in akc.events("hook") if contains_text(e.get("outcome"), text)]
    handed += [e for e in akc.events("model_response") if contains_text(e.get("chunks"), text)]
    akc.evidence.require(f"the kernel was handed {text!r} (by a hook or the model)", handed, mandatory=mandatory)


# ========================================================================== Given


@given(parsers.re(r'the system prompt is "(?P<text>[^"]*)"$'))
def given_system_prompt(akc: ScenarioContext, text: str) -> None:
    """The profile's stable tier (Scenario.system_prompt)."""
    akc.merge({"system_prompt": text})


# ========================================================================== Then: the session lock


@given(parsers.re(r'the call "(?P<call_id>[^"]+)" is held until user message (?P<k>\d+) is submitted$'))
def given_hold_until_submitted(akc: ScenarioContext, call_id: str, k: str) -> None:
    """The tool call does not finish before the harness submitted user message k (1-based): the
    turn running it is certainly still running when that message arrives."""
    akc.merge({"calls": {call_id: {"hold_until_submitted": int(k) - 1}}})


def turn_span(akc: ScenarioContext, turn_id: str) -> tuple[int, int]:
    """(first, last) log seq of a turn: from its first hook, model call or tool event to its
    on_session_end (or, if a kernel never dispatches it — TURN-020's matter — its last event)."""
    events = [e for e in akc.events(*TURN_EVENTS) if event_turn_id(e) == turn_id]
    ends = [e["seq"] for e in akc.hook_dispatches("on_session_end") if event_turn_id(e) == turn_id]
    return events[0]["seq"], (ends[-1] if ends else events[-1]["seq"])


@then("the turns of the user messages did not overlap")
def then_turns_serialised(akc: ScenarioContext) -> None:
    """The harness submitted a later message while an earlier turn of the session was running
    (its ``submit`` event lies inside that turn); no turn's hooks, model calls or tools come
    before the on_session_end of a turn that started earlier: one turn per session at a time
    (in whichever order the kernel takes the waiting messages)."""
    akc.require_kernel_ran()
    ids = top_level_turn_ids(akc)
    overlap = first_overlap(akc, ids)
    if overlap:
        raise ConformanceFailure(
            "a later turn of the session", "its first hook or model call after the earlier turn's on_session_end", overlap
        )
    if len(ids) < len(akc.scenario.user_messages):
        # the turns it ran did not overlap; fewer turns than messages (waiting messages joined
        # into one turn) is "a turn starts from one user message": TURN-001's subject
        raise Blocked(by="TURN-001", reason=f"{len(akc.scenario.user_messages)} user messages ran as {len(ids)} turns (which did not overlap)")
    spans = {tid: turn_span(akc, tid) for tid in ids}
    submits = akc.evidence.require(
        "user-message submissions the harness recorded (run_user_messages with the doubles)",
        [e for e in akc.events("submit") if e["message"] > 0],
        mandatory=False,
    )
    akc.evidence.require(
        "a user message submitted while an earlier turn of its session was running",
        [e for e in submits if any(a < e["seq"] < b for a, b in spans.values())],
        mandatory=False,
    )
    akc.evidence.saw(f"{len(ids)} turns of one session ran one after the other")


@then("each user message started a turn of its own")
def then_turn_per_message(akc: ScenarioContext) -> None:
    """000: a turn starts from one user message. Messages waiting behind a busy turn are not
    joined into one turn: the log has a top-level turn per user message."""
    akc.require_kernel_ran()
    ids = top_level_turn_ids(akc)
    expect_equal("top-level turns in the log (one per user message)", len(akc.scenario.user_messages), len(ids))
    akc.evidence.saw(f"{len(ids)} turns for {len(akc.scenario.user_messages)} user messages")


def first_overlap(akc: ScenarioContext, ids: list[str]) -> str | None:
    """The first event of a later turn before the on_session_end of one that started earlier,
    in words (None: the turns ran one at a time, TURN-002's subject)."""
    spans = {tid: turn_span(akc, tid) for tid in ids if any(event_turn_id(e) == tid for e in akc.events(*TURN_EVENTS))}
    events = akc.events(*TURN_EVENTS)
    ordered = sorted(spans, key=lambda t: spans[t][0])
    for i, first in enumerate(ordered):
        end = spans[first][1]
        for second in ordered[i + 1 :]:
            early = [e for e in events if event_turn_id(e) == second and e["seq"] < end]
            if early:
                e = early[0]
                what = e.get("point") or e["kind"]
                return f"{what} of turn {second} before the on_session_end of turn {first} (log seq {e['seq']} < {end})"
    return None


def require_turns_one_at_a_time(akc: ScenarioContext) -> None:
    """Precondition of a check whose later message came while an earlier turn ran: the session
    ran its turns one at a time (the session lock, TURN-002's subject). Turns that overlapped
    block the check: what it would judge of each turn did not happen apart."""
    overlap = first_overlap(akc, top_level_turn_ids(akc))
    if overlap:
        raise Blocked("TURN-002", f"the session's turns overlapped: {overlap}")


# ========================================================================== Then: history, user message


@then(parsers.re(r"the conversation sent in model call (?P<k>\d+) is:$"))
def then_conversation(akc: ScenarioContext, k: str, datatable: Any = None, docstring: Any = None) -> None:
    """The non-system messages of model request k, in order (``user: text``, ``assistant: text``,
    ``assistant: calls id``, ``tool_result: id``)."""
    observed = [project(m) for m in conversation(akc.model_request(int(k)))]
    akc.evidence.require(f"messages in model request {k}", observed)
    expect_order(f"conversation in model request {k}", list_items(datatable, docstring), observed)


@then(parsers.re(r'the request of model call (?P<k>\d+) ends with the user message "(?P<text>[^"]*)"$'))
def then_request_ends_with_user(akc: ScenarioContext, k: str, text: str) -> None:
    """The last non-system message of model request k is this user message."""
    conv = conversation(akc.model_request(int(k)))
    expect_equal(f"last message of model request {k}", f"user: {text}", project(conv[-1]) if conv else None)
    akc.evidence.saw(f"model request {k} ends with the user message {text!r}")


@then(parsers.re(r'the stored messages of user message (?P<k>\d+) start with the user message "(?P<text>[^"]*)"$'))
def then_stored_starts_with_user(akc: ScenarioContext, k: str, text: str) -> None:
    """The first message stored for user message k's turn is that user message."""
    stored = [project(m) for m in stored_messages(akc, int(k))]
    akc.evidence.require(f"messages stored for user message {k}", stored)
    expect_equal(
        f"first stored message of user message {k}'s turn (stored: {show(stored)})",
        f"user: {text}",
        stored[0] if stored else None,
    )


@then(parsers.re(r'the assistant messages stored for user message (?P<k>\d+) are:$'))
def then_stored_assistant(akc: ScenarioContext, k: str, datatable: Any = None, docstring: Any = None) -> None:
    """The assistant messages stored for user message k's turn, in storing order."""
    observed = [project(m) for m in stored_messages(akc, int(k)) if m.get("role") == "assistant"]
    akc.evidence.require(f"assistant messages stored for user message {k}", observed)
    expect_order(f"assistant messages stored for user message {k}", list_items(datatable, docstring), observed)


@then(parsers.re(r'no stored message contains "(?P<text>[^"]+)"$'))
def then_not_stored(akc: ScenarioContext, text: str) -> None:
    """No message of the journal holds this text (anywhere in its JSON). Evidence: a hook
    handed the kernel this text, and the journal stored the conversation."""
    require_text_handed_over(akc, text)
    akc.evidence.require("messages the journal stored", stored_messages(akc))
    hits = [project(m) for m in stored_messages(akc) if contains_text(m, text)]
    if hits:
        raise ConformanceFailure(f"stored messages containing {text!r}", "none", hits)


@then(parsers.re(r'the request of model call (?P<k>\d+) (?P<neg>does not contain|contains) "(?P<text>[^"]+)"$'))
def then_request_contains(akc: ScenarioContext, k: str, neg: str, text: str) -> None:
    """Whether this text occurs anywhere in model request k's messages."""
    messages = all_messages(akc.model_request(int(k)))
    found = [project(m) for m in messages if contains_text(m, text)]
    if neg == "contains" and not found:
        raise ConformanceFailure(f"model request {k}", f"a message containing {text!r}", [project(m) for m in messages])
    if neg != "contains" and found:
        raise ConformanceFailure(f"model request {k}", f"no message containing {text!r}", found)
    if neg != "contains":
        # the text a model streamed before a cancel is logged when its stream closes: a run that
        # ends first (or a kernel that never read it) leaves nothing to judge — incomplete
        require_text_handed_over(akc, text, mandatory=False)
    akc.evidence.saw(f"model request {k} {neg} {text!r}")


# ========================================================================== Then: system prompt


def _system_texts(request: dict[str, Any]) -> list[tuple[int | None, str]]:
    """(position among the messages or None for request-level text, text) of every system text."""
    out: list[tuple[int | None, str]] = []
    for i, m in enumerate(all_messages(request)):
        if m.get("role") == "system":
            out.append((i, message_text(m)))
    for holder in (request, request.get("params") or {}):
        value = holder.get("system") if isinstance(holder, dict) else None
        if isinstance(value, str):
            out.append((None, value))
        elif isinstance(value, list):
            out.extend((None, message_text(v) if isinstance(v, dict) else str(v)) for v in value)
    return out


@then(parsers.re(r'the request of every model call carries the system prompt "(?P<text>[^"]+)" ahead of the conversation$'))
def then_system_prompt(akc: ScenarioContext, text: str) -> None:
    """Each request has a system text (a system message or request-level system text) holding
    the stable tier, before the first user message."""
    requests = akc.require_kernel_ran()
    for k, request in enumerate(requests, 1):
        hits = [pos for pos, t in _system_texts(request) if text in t]
        if not hits:
            raise ConformanceFailure(
                f"system text of model request {k}", f"a system text containing {text!r}", _system_texts(request)
            )
        first_user = next((i for i, m in enumerate(all_messages(request)) if m.get("role") == "user"), None)
        if not any(pos is None or first_user is None or pos < first_user for pos in hits):
            raise ConformanceFailure(
                f"place of the system prompt in model request {k}",
                "ahead of the conversation",
                f"system message at position {hits[0]}, first user message at {first_user}",
            )


# ========================================================================== Then: pre_llm_call context


@then(parsers.re(r'in the request of model call (?P<k>\d+), "(?P<ctx>[^"]+)" comes in front of the user message "(?P<user>[^"]*)"$'))
def then_context_in_front(akc: ScenarioContext, k: str, ctx: str, user: str) -> None:
    """pre_llm_call's context is in the request before the user message's text (reading
    pre-llm-call-context, all accepted): a message of its own before the user message, a prefix
    of the user message's text, or system text (a system message before it or request-level)."""
    require_text_handed_over(akc, ctx)
    request = akc.model_request(int(k))
    messages = all_messages(request)
    shown = [project(m) for m in messages]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user" and message_text(m).endswith(user)]
    if not users:
        raise ConformanceFailure(f"model request {k}", f"the user message {user!r}", shown)
    u = users[-1]
    own = message_text(messages[u])
    accepted = akc.accepts("pre-llm-call-context")
    places = []
    if ctx in own and own.index(ctx) < own.rindex(user):
        places.append("prefix")
    if any(messages[i].get("role") != "system" and contains_text(messages[i], ctx) for i in range(u)):
        places.append("separate-message")
    if any(ctx in t for pos, t in _system_texts(request) if pos is None or pos < u):
        places.append("system")
    found = [p for p in places if p in accepted]
    if not found:
        where = [project(m) for m in messages if contains_text(m, ctx)]
        raise ConformanceFailure(
            f"place of the pre_llm_call context in model request {k}",
            f"{ctx!r} in front of {user!r} ({' or '.join(sorted(accepted))})",
            f"found in {show(where)}; request: {show(shown)}",
        )
    akc.evidence.saw(f"the context {ctx!r} in front of the user message {user!r} ({found[0]})")


# ========================================================================== Then: hooks per turn


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched (?P<n>\d+) times? for user message (?P<k>\d+)$'))
def then_point_count_in_turn(akc: ScenarioContext, point: str, n: str, k: str) -> None:
    """This point was dispatched exactly n times in user message k's turn."""
    akc._check_point(point)
    hooks = akc.evidence.require(f"hook dispatches in the turn of message {k}", turn_hooks(akc, int(k)))
    count = sum(1 for e in hooks if e["point"] == point)
    expect_equal(f"dispatches of {point} in the turn of message {k}", int(n), count)


@then(parsers.re(r"for user message (?P<k>\d+), the hook points were first dispatched in the order:$"))
def then_first_dispatch_order(akc: ScenarioContext, k: str, datatable: Any = None, docstring: Any = None) -> None:
    """The first dispatches of these points in user message k's turn come in this order (each
    point dispatched at least once)."""
    wanted = list_items(datatable, docstring)
    firsts: dict[str, int] = {}
    for e in turn_hooks(akc, int(k)):
        firsts.setdefault(e["point"], e["seq"])
    missing = [p for p in wanted if p not in firsts]
    if missing:
        raise ConformanceFailure(f"hook points of the turn of message {k}", f"{show(wanted)} dispatched", f"no {show(missing)}")
    observed = sorted(wanted, key=lambda p: firsts[p])
    expect_order(f"first dispatches in the turn of message {k}", wanted, observed)
    akc.evidence.saw(f"first dispatches in the turn of message {k}: {', '.join(observed)}")


@then(parsers.re(r'for user message (?P<k>\d+), "(?P<point>[^"]+)" was dispatched before the first model call$'))
def then_before_first_model_call(akc: ScenarioContext, k: str, point: str) -> None:
    """Every dispatch of this point in user message k's turn precedes the turn's first model request."""
    calls = turn_events(akc, int(k), "model_request")
    if not calls:
        raise ConformanceFailure(f"model calls of the turn of message {k}", "at least one", "none")
    hooks = [e for e in turn_hooks(akc, int(k)) if e["point"] == point]
    late = [e["seq"] for e in hooks if e["seq"] > calls[0]["seq"]]
    if not hooks or late:
        raise ConformanceFailure(
            f"{point} in the turn of message {k}",
            "dispatched before the first model call",
            "not dispatched" if not hooks else f"dispatched after it (log seq {late} > {calls[0]['seq']})",
        )
    akc.evidence.saw(f"{point} dispatched {len(hooks)} times before the first model call of message {k}")


@then(parsers.re(r'the "(?P<point>[^"]+)" payload has "(?P<key>[^"]+)" equal to (?P<value>.+)$'))
def then_payload_field(akc: ScenarioContext, point: str, key: str, value: str) -> None:
    """Every dispatch of this point (as the first hook of its chain saw it) has this field value."""
    akc._check_point(point)
    expected = parse_json(value, "payload value")
    akc.require_points_dispatched([point])
    dispatches = akc.evidence.require(f"dispatches of {point}", akc.hook_dispatches(point))
    for e in dispatches:
        payload = e["payload"] if isinstance(e["payload"], dict) else {}
        expect_equal(f"{key!r} of the {point} payload", expected, payload.get(key, "<missing>"))


# ========================================================================== Then: model-call hooks


@then("every model call comes between a pre_api_request and a post_api_request")
def then_api_hooks_around_calls(akc: ScenarioContext) -> None:
    """pre_api_request → model call → post_api_request, for every (successful) model call."""
    hooks = [e for e in akc.hook_dispatches() if e["point"] in ("pre_api_request", "post_api_request")]
    merged = sorted(hooks + akc.events("model_request"), key=lambda e: e["seq"])
    tokens = ["model call" if e["kind"] == "model_request" else e["point"] for e in merged]
    n = len(akc.require_kernel_ran())
    expect_order("pre_api_request / model call / post_api_request", ["pre_api_request", "model call", "post_api_request"] * n, tokens)


@then(
    parsers.re(
        r"the failed model call is followed by api_request_error, then transform_api_error_classification, "
        r"and no post_api_request$"
    )
)
def then_failure_hooks(akc: ScenarioContext) -> None:
    """After the failing model call (and before any later one): api_request_error then
    transform_api_error_classification, and no post_api_request."""
    if not any(r.error is not None for r in akc.scenario.model.responses):
        raise HarnessError("the scenario scripts no model failure")
    akc.require_kernel_ran()
    # A kernel that never reaches the failing call fails: the scenario's model calls are all due.
    errors = akc.evidence.require("the scripted failing model call was made", akc.events("model_error"))
    failed = errors[0]["index"]
    requests = akc.events("model_request")
    start = next(e["seq"] for e in requests if e["index"] == failed)
    later = [e["seq"] for e in requests if e["index"] > failed]
    stop = later[0] if later else float("inf")
    points = [e["point"] for e in akc.hook_dispatches() if start < e["seq"] < stop]
    points = [p for p in points if p in ("api_request_error", "transform_api_error_classification", "post_api_request")]
    expect_order(
        "hooks after the failed model call", ["api_request_error", "transform_api_error_classification"], points
    )
    akc.evidence.saw("api_request_error, then transform_api_error_classification after the failed call")


# ========================================================================== Then: the end of a turn


@then(parsers.re(r"on_session_end was the last hook dispatched for user message (?P<k>\d+) and carries its stored status$"))
def then_session_end_last_stored(akc: ScenarioContext, k: str) -> None:
    """The older wording (used by other areas' features): the last hook, and the final status
    stored before it fired. The payload is free (reading session-end-payload)."""
    then_session_end_last(akc, k)
    then_status_stored_before_session_end(akc, k)


@then(parsers.re(r"on_session_end was the last hook dispatched for user message (?P<k>\d+)$"))
def then_session_end_last(akc: ScenarioContext, k: str) -> None:
    """on_session_end fires once in the turn, after every other hook of it, and nothing of the
    turn happens after it. Its payload is free (reading session-end-payload)."""
    hooks = akc.evidence.require(f"hook dispatches in the turn of message {k}", turn_hooks(akc, int(k)))
    ends = [e for e in hooks if e["point"] == "on_session_end"]
    expect_equal(f"dispatches of on_session_end in the turn of message {k}", 1, len(ends))
    expect_equal(f"last hook of the turn of message {k}", "on_session_end", hooks[-1]["point"])
    turn_model_calls = turn_events(akc, int(k), "model_request", "tool_start")
    late = [e for e in turn_model_calls if e["seq"] > ends[0]["seq"]]
    if late:
        raise ConformanceFailure(f"the turn of message {k}", "nothing after on_session_end", f"{late[0]['kind']} after it")
    akc.evidence.saw(f"on_session_end ended the turn of message {k}")


def journal_writes(akc: ScenarioContext) -> list[dict[str, Any]]:
    """The journal writes the adapter reported on the event log; none at all: the checks resting on
    them are incomplete ("journal writes not observable"), never passed."""
    writes = akc.events("journal_write")
    if not writes:
        raise Incomplete("journal writes not observable: the adapter reports none (Doubles.journal_write)")
    return writes


@then(parsers.re(r"the final status of user message (?P<k>\d+) was stored before on_session_end was dispatched$"))
def then_status_stored_before_session_end(akc: ScenarioContext, k: str) -> None:
    """000: "The final status is stored, then on_session_end fires" — on the harness's one
    ordered log, a finish_turn write of the turn carrying the status the journal finally holds
    comes before the turn's on_session_end dispatch."""
    writes = journal_writes(akc)
    tid = turn_id_of(akc, int(k))
    ends = akc.evidence.require(
        f"on_session_end dispatched in the turn of message {k}",
        [e for e in akc.hook_dispatches("on_session_end") if event_turn_id(e) == tid],
    )
    finishes = akc.evidence.require(
        f"finish_turn writes of the turn of message {k}",
        [w for w in writes if w["op"] == "finish_turn" and event_turn_id(w) == tid],
    )
    final = stored_status(akc, int(k))
    before = [w for w in finishes if w["seq"] < ends[0]["seq"]]
    statuses = [(w.get("record") or {}).get("status") for w in before]
    if final not in statuses:
        raise ConformanceFailure(
            f"the final status of the turn of message {k} ({final!r})",
            "stored (finish_turn) before on_session_end was dispatched",
            f"stored before it: {show(statuses)}; after it: "
            f"{show([(w.get('record') or {}).get('status') for w in finishes if w['seq'] > ends[0]['seq']])}",
        )
    akc.evidence.saw(f"status {final!r} stored, then on_session_end (message {k})")


@then(parsers.re(r'the stored status of user message (?P<k>\d+) is "(?P<status>[^"]+)"$'))
def then_stored_status(akc: ScenarioContext, k: str, status: str) -> None:
    """The journal holds this final status for user message k's turn."""
    expect_equal(f"stored status of the turn of message {k}", status, stored_status(akc, int(k)))
    akc.evidence.saw(f"the journal holds status {status!r} for the turn of message {k}")


@then(parsers.re(r'the user message "(?P<text>[^"]*)" is stored$'))
def then_user_stored(akc: ScenarioContext, text: str) -> None:
    """The journal holds this user message."""
    stored = [project(m) for m in stored_messages(akc)]
    if f"user: {text}" not in stored:
        raise ConformanceFailure("stored messages", f"the user message {text!r}", stored)
    akc.evidence.saw(f"the journal holds the user message {text!r}")


@given(parsers.re(r"the model fails with a (?P<kind>timeout|broken stream)(?: after (?P<after>\d+) chunks?)?$"))
def given_model_fails_without_status(akc: ScenarioContext, kind: str, after: str | None) -> None:
    """The next model call fails with no HTTP status: no answer in time, or a stream that breaks
    off (after n streamed chunks)."""
    error = {"kind": kind.replace(" ", "_"), "status": 500, "after_chunks": int(after or 0)}
    akc.add_response(ModelResponse(text="partial", error=error))


@given(parsers.re(r"on_session_end of user message (?P<k>\d+) is still running when user message (?P<j>\d+) could start$"))
def given_session_end_held(akc: ScenarioContext, k: str, j: str) -> None:
    """Hold the on_session_end dispatch of user message k's turn (its k-th, one per turn) while
    another turn may start: a kernel that released the session lock before it shows the waiting
    message's turn inside it (Scenario.hold_hooks)."""
    akc.merge({"hold_hooks": [*[h.model_dump() for h in akc.scenario.hold_hooks], {"point": "on_session_end", "occurrence": int(k) - 1}]})


@then(parsers.re(r"no hook, model call or tool call of user message (?P<j>\d+) came while the on_session_end of user message (?P<k>\d+) ran$"))
def then_lock_held_through_session_end(akc: ScenarioContext, j: str, k: str) -> None:
    """000 step 1 and 6: the session lock is taken for the whole turn, and on_session_end is part
    of the turn; the message waiting on the lock starts nothing until it has returned."""
    akc.require_kernel_ran()
    first, second = turn_id_of(akc, int(k)), turn_id_of(akc, int(j))
    ends = akc.evidence.require(
        f"the on_session_end dispatch of user message {k}",
        [e for e in akc.hook_dispatches("on_session_end") if event_turn_id(e) == first],
    )
    returned = akc.evidence.require(
        f"the held on_session_end of user message {k} returned",
        [e for e in akc.events("hook_returned") if e["point"] == "on_session_end" and event_turn_id(e) == first],
    )
    start, end = ends[0]["seq"], returned[0]["seq"]
    akc.evidence.require(
        f"user message {j} submitted before the on_session_end of user message {k}",
        [e for e in akc.events("submit") if e["message"] == int(j) - 1 and e["seq"] < start],
        mandatory=False,
    )
    early = [e for e in akc.events(*TURN_EVENTS) if event_turn_id(e) == second and start < e["seq"] < end]
    if early:
        what = early[0].get("point") or early[0]["kind"]
        raise ConformanceFailure(
            f"the turn of user message {j}", f"nothing before the on_session_end of user message {k} returned (the session lock held)",
            f"{what} while it ran",
        )
    akc.evidence.saw(f"user message {j} waited until the on_session_end of user message {k} returned")
