"""Steps for the SESS features (001, Sessions): one profile per session, created once and then
continued, stored with its own tags and a title. The session of user message k is the session
its turn ran in (``conformance.steps.ident.stored_turn``); what was stored is the journal of
the RunResult."""

from __future__ import annotations

from typing import Any

from pytest_bdd import parsers, then

from conformance.boundary.adapter import SessionRecord
from conformance.errors import Blocked, ConformanceFailure, HarnessError, expect_equal, show
from conformance.steps.common import ScenarioContext
from conformance.steps.ident import normal_turn, split_tags, stored_turn, turn_events

TITLE_CHARS = 60


def stored_session(akc: ScenarioContext, k: int) -> SessionRecord:
    """The journal's record of the session user message k ran in."""
    session_id = stored_turn(akc, k).get("session_id")
    records = [s for s in akc.result.journal.sessions if s.id == session_id]
    if not records:
        raise ConformanceFailure(
            f"the journal's record of the session of message {k}",
            f"a session record with id {session_id}",
            [s.id for s in akc.result.journal.sessions],
        )
    return records[0]


@then(parsers.re(r"the journal holds exactly (?P<n>\d+) sessions?$"))
def sess_then_session_count(akc: ScenarioContext, n: str) -> None:
    """Sessions created, counted in the journal (each created once)."""
    akc.require_kernel_ran()
    sessions = akc.result.journal.sessions
    expect_equal("sessions stored in the journal", int(n), len(sessions))
    akc.evidence.saw(f"{n} sessions stored")
    ids = [s.id for s in sessions]
    if len(set(ids)) != len(ids):
        raise ConformanceFailure("session records in the journal", "one record per session", ids)


@then(parsers.re(r"user message (?P<k>\d+) continues the session of user message (?P<j>\d+)$"))
def sess_then_same_session(akc: ScenarioContext, k: str, j: str) -> None:
    """Both messages' turns ran in one session."""
    a, b = stored_turn(akc, int(j)), stored_turn(akc, int(k))
    akc.evidence.require(f"the session of message {j}", a.get("session_id"))
    expect_equal(f"session_id of the turn of message {k}", a.get("session_id"), b.get("session_id"))


@then(parsers.re(r"the conversation sent in model call (?P<k>\d+) includes, in order:$"))
def sess_then_request_includes(akc: ScenarioContext, k: str, datatable: list[list[str]]) -> None:
    """These messages (table: role | text) are among model request k's messages, in this order
    (others, such as the system text, may come between). Assistant rows match any assistant
    message: what text is stored is MSG-005's."""
    rows = datatable[1:] if datatable and [c.strip() for c in datatable[0]] == ["role", "text"] else datatable
    expected = [(r[0].strip(), r[1].strip() if r[0].strip() != "assistant" else "(any)") for r in rows]
    observed = [
        (m.get("role"), m.get("text") if m.get("role") != "assistant" else "(any)")
        for m in akc.request_messages(akc.model_request(int(k)))
        if isinstance(m, dict)
    ]
    it = iter(observed)
    if not all(any(x == y for y in it) for x in expected):
        raise ConformanceFailure(
            f"the conversation in model request {k}", f"in this order: {show(expected)}", observed
        )
    akc.evidence.saw(f"model request {k} holds the conversation in order")


@then(
    parsers.re(r'the session of user message (?P<k>\d+) and every turn in it belong to the profile "(?P<profile_id>[^"]+)"$')
)
def sess_then_one_profile(akc: ScenarioContext, k: str, profile_id: str) -> None:
    """The session is created with the profile's id, and every turn run in it (stored turns and
    the TurnInfo of every hook and tool call) names that profile."""
    record = stored_session(akc, int(k))
    expect_equal(f"profile_id of the stored session {record.id}", profile_id, record.profile_id)
    for where, e in turn_events(akc):
        turn = normal_turn(e.get("turn")) or {}
        if turn.get("session_id") == record.id:
            expect_equal(f"profile_id in the TurnInfo of {where}", profile_id, turn.get("profile_id"))
    if not akc.result.journal.turns and "JOURNAL-002" not in akc.requirement_ids:
        # no turn records at all (JOURNAL-002's subject): no stored turn to name the profile
        raise Blocked("JOURNAL-002", f"the journal stores no turns, so no turn of session {record.id} is stored with its profile")
    turns = akc.evidence.require(
        f"stored turns of session {record.id}", [t.turn for t in akc.result.journal.turns if t.turn.session_id == record.id]
    )
    for t in turns:
        expect_equal(f"profile_id of stored turn {t.turn_id} of session {record.id}", profile_id, t.profile_id)


@then(parsers.re(r'the session of user message (?P<k>\d+) is stored with (?:the tags "(?P<tags>[^"]*)"|no tags)$'))
def sess_then_session_tags(akc: ScenarioContext, k: str, tags: str | None) -> None:
    """The stored session holds its own tags (the order is not fixed; the profile's tags are
    not the session's)."""
    record = stored_session(akc, int(k))
    expected = sorted(set(split_tags(tags or "")))
    if sorted(set(record.tags)) != expected:
        raise ConformanceFailure(f"tags of the stored session of message {k}", expected, record.tags)
    akc.evidence.saw(f"the session of message {k} stored with its tags")


@then(parsers.re(r"the session of user message (?P<k>\d+) is titled with the first 60 characters of its first message$"))
def sess_then_title(akc: ScenarioContext, k: str) -> None:
    """CommonOS's title: the first 60 characters of the message that started the session."""
    record = stored_session(akc, int(k))
    session = akc.scenario.user_messages[int(k) - 1].session
    first = next(m for m in akc.scenario.user_messages if m.session == session)
    if len(first.text) <= TITLE_CHARS:
        raise HarnessError("make the first message longer than 60 characters")
    expect_equal(f"title of the session of message {k}", first.text[:TITLE_CHARS], record.title)
    akc.evidence.saw(f"the session of message {k} titled {record.title!r}")


@then(parsers.re(r'the session of user message (?P<k>\d+) is stored with the tag "(?P<tag>[^"]+)" among its tags$'))
def sess_then_session_has_tag(akc: ScenarioContext, k: str, tag: str) -> None:
    """The stored session's tags include this one."""
    record = stored_session(akc, int(k))
    if tag not in record.tags:
        raise ConformanceFailure(f"tags of the stored session of message {k}", f"{tag!r} among them", record.tags)
    akc.evidence.saw(f"the session of message {k} stored with {tag!r}")


def session_of(akc: ScenarioContext, session_id: Any) -> SessionRecord | None:
    return next((s for s in akc.result.journal.sessions if s.id == session_id), None)


# ============================================================================ child sessions
