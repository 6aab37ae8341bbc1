"""Steps for the IDENT features (001, TurnInfo), and the TurnInfo helpers the SESS, MSG, TAG,
CHILD and JOURNAL steps share.

What the harness sees of a TurnInfo is the ``turn`` dict the adapter hands every hook dispatch
and every tool call (logged with ``hook`` and ``tool_start`` events). The turn of user message k
is found from the harness's own observation first: 000 dispatches ``pre_llm_call`` once per turn
with the user's text, so the TurnInfo of that dispatch is that turn's identity as the kernel
gave it; the outcome's ``turn_id`` is the fallback (``message_turn``). Checks of what was
*stored* take the outcome's ids first (``stored_turn``) and accept a stored TurnInfo field that
equals either what the hooks got or what 001 fixes (``check_stored_turn``), so a kernel whose
hooks got a wrong TurnInfo is not also blamed for its journal.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from pytest_bdd import given, parsers, then

from conformance.errors import ConformanceFailure, HarnessError, expect_equal, expect_true, show
from conformance.boundary.scenario import SubagentDef, ToolDef
from conformance.steps.common import ScenarioContext

#: TurnInfo keys a kernel must hand over (``parent_turn_id`` may be left out when it is null).
TURN_KEYS = ("profile_id", "session_id", "turn_id", "tags", "depth")
ALL_TURN_KEYS = ("profile_id", "session_id", "turn_id", "parent_turn_id", "tags", "depth")


# ============================================================================ helpers


def split_tags(text: str) -> list[str]:
    """``"area:work, team:core"`` → the tags (split on commas only: a space may be part of a tag)."""
    return [t.strip() for t in text.split(",") if t.strip()] if text.strip() else []


def normal_turn(turn: Any) -> dict[str, Any] | None:
    """The TurnInfo as a dict with every key (a missing parent_turn_id is null); None if not a dict."""
    if not isinstance(turn, dict):
        return None
    out = dict(turn)
    out.setdefault("parent_turn_id", None)
    return out


def turn_events(akc: ScenarioContext) -> list[tuple[str, dict[str, Any]]]:
    """(where, event) for every hook dispatch and every tool start, in log order."""
    out = []
    for e in akc.events("hook", "tool_start"):
        if e["kind"] == "hook":
            where = f"hook {e['point']} (#{e['seq']})"
        else:
            where = f"tool call {e['call_id']} (#{e['seq']})"
        out.append((where, e))
    return out


def require_turn(where: str, turn: Any) -> dict[str, Any]:
    """The TurnInfo of one dispatch, or a failure saying which key is missing."""
    t = normal_turn(turn)
    if t is None:
        raise ConformanceFailure(f"the TurnInfo of {where}", "a TurnInfo object", turn)
    missing = [k for k in TURN_KEYS if k not in t]
    if missing:
        raise ConformanceFailure(
            f"the TurnInfo of {where}",
            f"the keys {', '.join(ALL_TURN_KEYS)}",
            f"no {', '.join(missing)} in {show(turn)}",
        )
    return t


def turn_view(turn: dict[str, Any], keys: tuple[str, ...] = ALL_TURN_KEYS) -> dict[str, Any]:
    """Only these keys (for messages that compare TurnInfos)."""
    return {k: turn.get(k) for k in keys}


def _pre_llm_anchor(akc: ScenarioContext, k: int) -> dict[str, Any] | None:
    """The TurnInfo of the pre_llm_call dispatch of user message k (1-based), if there is one."""
    messages = akc.scenario.user_messages
    text = messages[k - 1].text
    nth = sum(1 for m in messages[: k - 1] if m.text == text)  # same text sent before: skip those
    seen = 0
    for e in akc.hook_dispatches("pre_llm_call"):
        payload = e.get("payload")
        if isinstance(payload, dict) and payload.get("user_message") == text:
            if seen == nth:
                return normal_turn(e.get("turn"))
            seen += 1
    return None


def message_turn(akc: ScenarioContext, k: int, prefer: str = "hooks") -> dict[str, Any]:
    """The TurnInfo of user message k's turn (1-based).

    ``prefer="hooks"`` (checks of TurnInfo): the TurnInfo of the pre_llm_call dispatch that
    carries the message's text, else the one naming the outcome's turn_id. ``prefer="outcome"``
    (checks of what was stored): the session and turn ids the outcome reports, with the rest of
    the hooks' TurnInfo of that turn, else the pre_llm_call one. A failure if neither shows it."""
    if not 1 <= k <= len(akc.scenario.user_messages):
        raise HarnessError(f"the scenario has no user message {k}")
    anchor = _pre_llm_anchor(akc, k)
    if anchor is not None and not isinstance(anchor.get("turn_id"), str):
        anchor = None
    outcome = next((o for o in akc.result.outcomes if o.message == k - 1), None)
    reported = outcome is not None and bool(outcome.turn_id) and bool(outcome.session_id)
    if anchor is not None and (prefer == "hooks" or not reported):
        return anchor
    if outcome is not None and outcome.turn_id:
        for _, e in turn_events(akc):
            t = normal_turn(e.get("turn"))
            if t is not None and t.get("turn_id") == outcome.turn_id:
                return {**t, "session_id": outcome.session_id or t.get("session_id")}
        base = anchor or {}
        return {
            "profile_id": base.get("profile_id", akc.scenario.profile_id),
            "parent_turn_id": base.get("parent_turn_id"),
            "tags": base.get("tags"),
            "depth": base.get("depth"),
            "session_id": outcome.session_id or base.get("session_id"),
            "turn_id": outcome.turn_id,
        }
    raise ConformanceFailure(
        f"the turn of user message {k}",
        "a pre_llm_call dispatch with its text, or an outcome naming its turn_id",
        "neither",
    )


def stored_turn(akc: ScenarioContext, k: int) -> dict[str, Any]:
    """User message k's turn as the journal checks see it (the outcome's ids first)."""
    return message_turn(akc, k, prefer="outcome")


def session_own_tags(akc: ScenarioContext, k: int) -> set[str]:
    """The tags the session of user message k was created with: the scenario's session tags
    and the extra tags of the first message with that session label."""
    label = akc.scenario.user_messages[k - 1].session
    first = next(m for m in akc.scenario.user_messages if m.session == label)
    return set(akc.scenario.session_tags) | set(first.tags)


def expected_top_turn(akc: ScenarioContext, k: int) -> dict[str, Any]:
    """What 001 fixes of top-level turn k's TurnInfo, independently of the hooks (tags as a set)."""
    ids = stored_turn(akc, k)
    return {
        "profile_id": akc.scenario.profile_id,
        "session_id": ids.get("session_id"),
        "turn_id": ids.get("turn_id"),
        "parent_turn_id": None,
        "depth": 0,
        "tags": set(akc.scenario.profile_tags) | session_own_tags(akc, k),
    }


def check_stored_turn(
    what: str, stored: dict[str, Any], hooks: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    """A stored TurnInfo is the turn's: each field equals what the hooks got, or what 001 fixes
    (so a kernel is not blamed here for a TurnInfo its hooks got wrong)."""
    for key in ALL_TURN_KEYS:
        value = stored.get(key)
        if hooks is not None and key in hooks and hooks.get(key) == value:
            continue
        want = expected.get(key)
        if key == "tags":
            if isinstance(value, list) and set(value) == want:
                continue
            want = sorted(want)
        elif value == want:
            continue
        if hooks is not None:
            want = f"{show(want)} (the hooks got {show(hooks.get(key))})"
        raise ConformanceFailure(f"{key} in {what}", want, value)


def events_of_turn(akc: ScenarioContext, turn_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Hook dispatches and tool starts whose TurnInfo names this turn_id."""
    out = []
    for where, e in turn_events(akc):
        t = normal_turn(e.get("turn"))
        if t is not None and t.get("turn_id") == turn_id:
            out.append((where, e))
    return out


def uuid7_problem(value: Any) -> str | None:
    """Why ``value`` is not a UUID version 7 with the RFC variant (None if it is)."""
    if not isinstance(value, str):
        return f"not a string: {show(value)}"
    try:
        u = uuid.UUID(value)
    except ValueError:
        return f"not a UUID: {value!r}"
    if u.variant != uuid.RFC_4122:
        return f"{value}: variant {u.variant}, not the RFC variant"
    if u.version != 7:
        return f"{value}: version {u.version}"
    return None


def uuid_int(value: str) -> int:
    """The id's 128 bits: UUIDs compare as numbers (as bytes), whatever the text's case."""
    return uuid.UUID(value).int


def tags_sorted(tags: list[str]) -> bool:
    """Sorted as strings, or by (key, value): both are readings of 001's "sorted"."""
    return tags == sorted(tags) or tags == sorted(tags, key=lambda t: tuple(t.split(":", 1)))


def check_tag_list(what: str, expected: set[str], observed: Any) -> None:
    """``observed`` holds exactly ``expected``, sorted, each once."""
    if not isinstance(observed, list) or not all(isinstance(t, str) for t in observed):
        raise ConformanceFailure(what, sorted(expected), observed)
    if set(observed) != expected or len(observed) != len(set(observed)) or not tags_sorted(observed):
        raise ConformanceFailure(what, f"{show(sorted(expected))} (sorted, each once)", observed)


# ============================================================================ Given


@given(parsers.re(r'the scenario\'s profile id is "(?P<profile_id>[^"]+)"$'))
def ident_given_profile_id(akc: ScenarioContext, profile_id: str) -> None:
    """The id of the profile running the scenario (delegation tools follow it: 001's child has
    its parent's profile)."""
    akc.scenario.profile_id = profile_id
    for tool in akc.scenario.tools:
        if tool.subagent is not None:
            tool.subagent.profile_id = profile_id


@given(parsers.re(r'a subagent tool "(?P<name>[^"]+)"$'))
def ident_given_subagent_tool(akc: ScenarioContext, name: str) -> None:
    """A delegation tool: calling it runs a child turn of the scenario's own profile, whose first
    message and title is the call's ``goal`` argument."""
    akc.add_tool(
        ToolDef(
            name=name,
            description="Delegate a goal to a helper agent.",
            input_schema={"type": "object", "properties": {"goal": {"type": "string"}}, "required": ["goal"]},
            subagent=SubagentDef(profile_id=akc.scenario.profile_id),
        )
    )


@given(parsers.re(r'the profile is configured with (?:the tags "(?P<tags>[^"]*)"|no tags)$'))
def ident_given_profile_tags(akc: ScenarioContext, tags: str | None) -> None:
    """The profile's tags (config.toml's), comma-separated, kept exactly as written."""
    akc.scenario.profile_tags = split_tags(tags or "")


@given(parsers.re(r'the session is created with (?:the tags "(?P<tags>[^"]*)"|no tags)$'))
def ident_given_session_tags(akc: ScenarioContext, tags: str | None) -> None:
    """The session's own tags, comma-separated, kept exactly as written."""
    akc.scenario.session_tags = split_tags(tags or "")


@given(
    parsers.re(r'the user message "(?P<text>[^"]*)" in session "(?P<session>[^"]+)" brings the tags "(?P<tags>[^"]*)"$')
)
def ident_given_message_with_tags(akc: ScenarioContext, text: str, session: str, tags: str) -> None:
    """Queue a user message that brings extra tags (they matter when it starts a new session)."""
    akc.add_user_message(text, session=session, tags=split_tags(tags))


# ============================================================================ Then


def _check_turn_matches(akc: ScenarioContext, where: str, turn: dict[str, Any], expected: dict[str, Any]) -> None:
    for key in ("profile_id", "session_id", "turn_id"):
        if turn.get(key) != expected.get(key):
            raise ConformanceFailure(f"{key} in the TurnInfo of {where}", expected.get(key), turn.get(key))


def _outcome_ids(akc: ScenarioContext, k: int) -> dict[str, Any]:
    """The running turn's identity the hooks and tools must see: the profile is the scenario's;
    session and turn ids are the outcome's when it reports them, else the turn's pre_llm_call."""
    outcome = next((o for o in akc.result.outcomes if o.message == k - 1), None)
    anchor = _pre_llm_anchor(akc, k) or {}
    return {
        "profile_id": akc.scenario.profile_id,
        "session_id": (outcome.session_id if outcome and outcome.session_id else anchor.get("session_id")),
        "turn_id": (outcome.turn_id if outcome and outcome.turn_id else anchor.get("turn_id")),
    }


def _single_turn_check(akc: ScenarioContext, kinds: str) -> None:
    if len(akc.scenario.user_messages) != 1:
        raise HarnessError("this step needs a scenario with exactly one user message")
    expected = _outcome_ids(akc, 1)
    events = [(w, e) for w, e in turn_events(akc) if e["kind"] in kinds]
    akc.evidence.require(f"{kinds} events of the run carrying a TurnInfo", events)
    first: dict[str, Any] | None = None
    for where, e in events:
        turn = require_turn(where, e.get("turn"))
        _check_turn_matches(akc, where, turn, expected)
        if first is None:
            first = turn
        elif turn_view(turn) != turn_view(first):
            raise ConformanceFailure(
                f"the TurnInfo of {where}", f"the turn's TurnInfo {show(turn_view(first))}", turn_view(turn)
            )


@then("every hook dispatch of the run carries the TurnInfo of the turn")
def ident_then_hooks_carry_turn(akc: ScenarioContext) -> None:
    """Every hook dispatch got a complete TurnInfo (profile_id, session_id, turn_id,
    parent_turn_id, tags, depth): the profile's id, the turn's ids, one and the same on all."""
    _single_turn_check(akc, "hook")


@then("every tool call of the run carries the TurnInfo of the turn")
def ident_then_tools_carry_turn(akc: ScenarioContext) -> None:
    """Every tool call got a complete TurnInfo: the profile's id, the turn's ids, one and the
    same on all."""
    _single_turn_check(akc, "tool_start")


@then("every hook dispatch and tool call of the run is of a top-level turn: depth 0, no parent")
def ident_then_top_level(akc: ScenarioContext) -> None:
    """A top-level turn's TurnInfo has depth 0 and parent_turn_id null."""
    events = akc.evidence.require("hook dispatches and tool calls of the run", turn_events(akc))
    for where, e in events:
        turn = normal_turn(e.get("turn"))
        if turn is None:
            raise ConformanceFailure(f"the TurnInfo of {where}", "a TurnInfo object", e.get("turn"))
        expect_equal(f"depth in the TurnInfo of {where}", 0, turn.get("depth"))
        expect_equal(f"parent_turn_id in the TurnInfo of {where}", None, turn.get("parent_turn_id"))


@then("every session id and turn id the run shows is a UUID v7")
def ident_then_uuid7(akc: ScenarioContext) -> None:
    """Session and turn ids in every TurnInfo, every outcome and every journal record are UUIDs
    of version 7 (any v7: random bits and counters are the kernel's choice)."""
    seen = shown_ids(akc)
    for what, value in seen:
        problem = uuid7_problem(value)
        if problem:
            raise ConformanceFailure(what, "a UUID version 7 (RFC variant)", problem)


def shown_ids(akc: ScenarioContext) -> list[tuple[str, Any]]:
    """(where, id) for the session and turn ids of every TurnInfo (children's included), every
    outcome and every journal record; evidence that there is at least one."""
    seen: list[tuple[str, Any]] = []
    for where, e in turn_events(akc):
        turn = normal_turn(e.get("turn")) or {}
        seen += [(f"session_id of {where}", turn.get("session_id")), (f"turn_id of {where}", turn.get("turn_id"))]
    for o in akc.result.outcomes:
        if o.session_id is not None:
            seen.append((f"session_id of the outcome of message {o.message + 1}", o.session_id))
        if o.turn_id is not None:
            seen.append((f"turn_id of the outcome of message {o.message + 1}", o.turn_id))
    journal = akc.result.journal
    seen += [(f"id of journal session {i + 1}", s.id) for i, s in enumerate(journal.sessions)]
    seen += [(f"turn_id of journal turn {i + 1}", t.turn.turn_id) for i, t in enumerate(journal.turns)]
    seen += [(f"session_id of journal turn {i + 1}", t.turn.session_id) for i, t in enumerate(journal.turns)]
    seen += [(f"parent_turn_id of {w}", t) for w, t in _parent_ids(akc)]
    return akc.evidence.require("session and turn ids the run showed", seen)


def _parent_ids(akc: ScenarioContext) -> list[tuple[str, Any]]:
    """The parent_turn_id of every child TurnInfo (a turn id too)."""
    out = []
    for where, e in turn_events(akc):
        parent = (normal_turn(e.get("turn")) or {}).get("parent_turn_id")
        if parent is not None:
            out.append((where, parent))
    return out


def uuid7_ms(value: str) -> int:
    """The 48-bit millisecond timestamp of a UUID v7."""
    return uuid_int(value) >> 80


def increasing_problem(
    what: str, labelled: list[tuple[str, Any]], within_ms: bool = False
) -> tuple[int, ConformanceFailure | None]:
    """(how many consecutive pairs were compared, the first failure). Ids made in the same
    millisecond are not compared (reading uuid7-same-millisecond: RFC 9562 lets the bits below
    the millisecond be random; ``within_ms``: the kernel declared the monotonic reading, so they
    are); a later id in a later millisecond must compare greater."""
    compared = 0
    for (la, a), (lb, b) in zip(labelled, labelled[1:], strict=False):
        for label, value in ((la, a), (lb, b)):
            if uuid7_problem(value):
                return compared, ConformanceFailure(f"{what}: {label}", "a UUID v7", value)
        if uuid7_ms(a) == uuid7_ms(b) and not within_ms:
            continue
        compared += 1
        if not uuid_int(a) < uuid_int(b):
            return compared, ConformanceFailure(f"{what}: {lb} was created after {la}", f"an id sorting after {a}", b)
    return compared, None


def _increasing(akc: ScenarioContext, what: str, labelled: list[tuple[str, Any]]) -> None:
    within_ms = akc.accepts("uuid7-same-millisecond") == {"monotonic"}
    compared, failure = increasing_problem(what, labelled, within_ms)
    if failure is not None:
        raise failure
    akc.evidence.require(f"{what} made in different milliseconds, compared", compared, mandatory=False)


@then("the turn ids sort in the order the turns were created")
def ident_then_turn_order(akc: ScenarioContext) -> None:
    """User messages run one after the other, so turn k+1 was created after turn k: its id
    compares greater (as a UUID, i.e. its 128 bits)."""
    n = len(akc.scenario.user_messages)
    turns = [(f"the turn of message {k}", message_turn(akc, k).get("turn_id")) for k in range(1, n + 1)]
    _increasing(akc, "turn ids", turns)
    akc.evidence.saw(f"{n} turn ids")


@then("the session ids sort in the order the sessions were created")
def ident_then_session_order(akc: ScenarioContext) -> None:
    """Each session is created by the first message with its label: a later-created session's
    id compares greater."""
    firsts: dict[str, int] = {}
    for k, m in enumerate(akc.scenario.user_messages, start=1):
        firsts.setdefault(m.session, k)
    if len(firsts) < 2:
        raise HarnessError("this step needs messages in at least two sessions")
    sessions = [
        (f"session {label!r} (message {k})", message_turn(akc, k).get("session_id")) for label, k in firsts.items()
    ]
    _increasing(akc, "session ids", sessions)
    akc.evidence.saw(f"{len(sessions)} session ids")


@then(parsers.re(r"the (?P<n>\d+) turns of the run have distinct turn ids and (?P<sessions>one|\d+) session ids?$"))
def ident_then_distinct_turns(akc: ScenarioContext, n: str, sessions: str = "one") -> None:
    """n turn ids (a new one per turn, the same through a turn) and that many session ids, counted
    over the first of these the kernel reports at all: the TurnInfos the hooks saw, the turns its
    journal stored (or the writes it reported), the outcomes, the spans. The message says where
    it looked."""
    pairs: dict[str, list[tuple[str, str]]] = {
        "hook TurnInfos": [],
        "the journal's turns": [(t.turn.turn_id, t.turn.session_id) for t in akc.result.journal.turns],
        "journal writes": [],
        "outcomes": [(o.turn_id, o.session_id or "") for o in akc.result.outcomes if o.turn_id],
        "spans": [
            (str(sp.attributes["turn_id"]), str(sp.attributes.get("session_id", "")))
            for sp in akc.result.spans
            if sp.attributes.get("turn_id") is not None
        ],
    }
    for where, e in turn_events(akc):
        if e["kind"] != "hook":
            continue  # a tool's TurnInfo is IDENT-002's
        turn = normal_turn(e.get("turn")) or {}
        if not isinstance(turn.get("turn_id"), str) or not isinstance(turn.get("session_id"), str):
            raise ConformanceFailure(f"the TurnInfo of {where}", "a session_id and a turn_id", e.get("turn"))
        pairs["hook TurnInfos"].append((turn["turn_id"], turn["session_id"]))
    for e in akc.events("journal_write"):
        turn = normal_turn(e.get("turn")) or {}
        if isinstance(turn.get("turn_id"), str):
            pairs["journal writes"].append((turn["turn_id"], str(turn.get("session_id"))))
    looked = ", ".join(f"{source} ({len(found)})" for source, found in pairs.items())
    source, found = next(((k, v) for k, v in pairs.items() if v), ("", []))
    akc.evidence.require(f"turn ids the kernel reported (looked in: {looked})", found)
    turn_ids = list(dict.fromkeys(t for t, _ in found))
    session_ids = list(dict.fromkeys(sid for _, sid in found if sid))
    expect_equal(f"distinct turn ids over the {n} turns (from {source})", int(n), len(turn_ids))
    expected_sessions = 1 if sessions == "one" else int(sessions)
    expect_equal(f"distinct session ids of the run's sessions (from {source})", expected_sessions, len(session_ids))
    reported = [o.turn_id for o in akc.result.outcomes if o.turn_id]
    if len(reported) == len(akc.result.outcomes) and len(set(reported)) != len(reported):
        raise ConformanceFailure("turn ids reported per message", "a new turn id for every message", reported)


@then(parsers.re(r'every TurnInfo of the run names the profile "(?P<profile_id>[^"]+)"$'))
def ident_then_profile(akc: ScenarioContext, profile_id: str) -> None:
    """TurnInfo.profile_id is the id of the profile that runs the turn."""
    events = akc.evidence.require("hook dispatches and tool calls of the run", turn_events(akc))
    for where, e in events:
        turn = normal_turn(e.get("turn")) or {}
        expect_equal(f"profile_id in the TurnInfo of {where}", profile_id, turn.get("profile_id"))


@then("every TurnInfo of the run names a session the kernel stored")
def ident_then_known_sessions(akc: ScenarioContext) -> None:
    """No hook or tool call is made under a session id the kernel never created: every TurnInfo's
    session_id is a session of the journal (a made-up or stale id fails IDENT-007)."""
    events = akc.evidence.require("hook dispatches and tool calls of the run", turn_events(akc))
    stored = {s.id for s in akc.result.journal.sessions}
    akc.evidence.require("sessions the kernel stored", stored, mandatory=False)
    for where, e in events:
        sid = (normal_turn(e.get("turn")) or {}).get("session_id")
        if sid not in stored:
            raise ConformanceFailure(f"the session of the TurnInfo of {where}", f"one of the stored sessions {sorted(stored)}", sid)
    akc.evidence.saw(f"{len(events)} TurnInfos, each naming a stored session")


@then("every journal record carries the ids of its turn")
def ident_then_journal_ids(akc: ScenarioContext) -> None:
    """Stored turns hold their turn's TurnInfo; each stored message and tool call carries the
    session and turn ids of the turn it belongs to (by content: user message k, the answers and
    calls scripted for it). A turn's ids are the ones its outcome reports (else its hooks')."""
    journal = akc.result.journal
    akc.evidence.require("records in the journal", journal.turns + journal.messages + journal.tool_calls)
    n = len(akc.scenario.user_messages)
    turns = {k: stored_turn(akc, k) for k in range(1, n + 1)}
    by_id = {t.get("turn_id"): k for k, t in turns.items()}
    for i, rec in enumerate(journal.turns, start=1):
        stored = rec.turn.model_dump()
        k = by_id.get(stored["turn_id"])
        if k is None:
            raise ConformanceFailure(
                f"turn_id of journal turn {i}",
                f"the id of one of the run's turns {show(sorted(by_id, key=str))}",
                stored["turn_id"],
            )
        check_stored_turn(
            f"journal turn {i} (the turn of message {k})", stored, message_turn(akc, k), expected_top_turn(akc, k)
        )
    pairs = {(t.get("session_id"), t.get("turn_id")) for t in turns.values()}
    owner = content_owners(akc)
    for i, rec in enumerate(journal.messages, start=1):
        key = message_key(rec.message)
        if key in owner:
            turn = turns[owner[key]]
            expect_equal(
                f"ids of journal message {i} {show(rec.message)}",
                {"session_id": turn.get("session_id"), "turn_id": turn.get("turn_id")},
                {"session_id": rec.session_id, "turn_id": rec.turn_id},
            )
        elif (rec.session_id, rec.turn_id) not in pairs:
            raise ConformanceFailure(
                f"ids of journal message {i}",
                f"the ids of one of the run's turns {show(sorted(pairs, key=str))}",
                (rec.session_id, rec.turn_id),
            )
    for rec in journal.tool_calls:
        key = ("tool_result", rec.call_id)
        if key in owner:
            turn = turns[owner[key]]
            expect_equal(
                f"ids of the journal's record of tool call {rec.call_id}",
                {"session_id": turn.get("session_id"), "turn_id": turn.get("turn_id")},
                {"session_id": rec.session_id, "turn_id": rec.turn_id},
            )


# ============================================================================ message keys


def message_key(message: Any) -> tuple[Any, ...]:
    """What identifies a stored message by content: (role, text) for user messages and final
    answers, (role, call ids) for tool requests, (role, call_id) for results."""
    if not isinstance(message, dict):
        return ("?", show(message))
    role = message.get("role")
    if role == "tool_result":
        return ("tool_result", message.get("call_id"))
    if role == "assistant" and message.get("tool_calls"):
        calls = message.get("tool_calls") or []
        return ("calls", tuple(c.get("id") if isinstance(c, dict) else None for c in calls))
    return (role, message.get("text"))


def content_owners(akc: ScenarioContext) -> dict[tuple[Any, ...], int]:
    """Which user message (1-based) each scripted message belongs to, for scenarios whose user
    messages each get one scripted answer after their tool calls: responses are dealt to the
    messages in order, a text-only response closing a message's turn."""
    owner: dict[tuple[Any, ...], int] = {}
    messages = akc.scenario.user_messages
    if any(m.concurrent for m in messages) or any(t.subagent is not None for t in akc.scenario.tools):
        return {}  # interleaved or nested turns: no content map
    k = 1
    for m in messages:
        owner.setdefault(("user", m.text), messages.index(m) + 1)
    for r in akc.scenario.model.responses:
        if k > len(messages):
            break
        for rep in range(max(1, r.repeat)):
            if r.tool_calls:
                ids = []
                for call in r.tool_calls:
                    if call.id is None:
                        return owner  # ids assigned at run time: stop mapping here
                    cid = call.id if rep == 0 else f"{call.id}_r{rep}"
                    ids.append(cid)
                    owner[("tool_result", cid)] = k
                owner[("calls", tuple(ids))] = k
            else:
                owner[("assistant", r.text)] = k
                k += 1
    return owner



def _per_turn_ids(akc: ScenarioContext, kind: str) -> list[list[tuple[str, Any]]]:
    """For sequential turns: the (where, turn_id) of each ``kind`` event, grouped by turn; a turn
    ends with its on_session_end dispatch (000: the last thing a turn does), so without any the
    check is blocked by TURN-020."""
    akc.require_points_dispatched(["on_session_end"])
    groups: list[list[tuple[str, Any]]] = [[]]
    for where, e in turn_events(akc):
        if e["kind"] == kind:
            groups[-1].append((where, (normal_turn(e.get("turn")) or {}).get("turn_id")))
        if e["kind"] == "hook" and e.get("point") == "on_session_end":
            groups.append([])
    return [g for g in groups if g]


@then(parsers.re(r"every (?P<what>hook dispatch|tool call) of each turn carries that turn's own turn id$"))
def ident_then_each_turn_own_id(akc: ScenarioContext, what: str) -> None:
    """Over sequential turns of one session: the dispatches (or tool calls) of one turn all carry
    one turn id, and each turn's differs from the others' — a TurnInfo kept from an earlier turn
    fails here."""
    groups = _per_turn_ids(akc, "hook" if what == "hook dispatch" else "tool_start")
    expect_true(len(groups) >= 2, f"turns with a {what}", "at least 2", len(groups))
    seen: dict[Any, int] = {}
    for k, group in enumerate(groups, start=1):
        ids = {turn_id for _, turn_id in group}
        if len(ids) != 1:
            raise ConformanceFailure(f"the turn ids of the {what}s of turn {k}", "one turn id", sorted(map(str, ids)))
        (turn_id,) = ids
        if turn_id in seen:
            raise ConformanceFailure(
                f"the turn id of the {what}s of turn {k}",
                f"a new turn id (not turn {seen[turn_id]}'s)",
                f"{turn_id} again (first at {group[0][0]})",
            )
        seen[turn_id] = k
    akc.evidence.saw(f"{len(groups)} turns, each with its own turn id")


#: Tolerances of the creation-time check (IDENT-005). The harness clock moves only when the
#: harness says so: 1 s covers rounding and a generator that moves its timestamp past a full
#: counter (RFC 9562 §6.2, method 1). The real clock: harness and kernel read one host clock;
#: 5 s covers ids made while a kernel process starts and a container's drift, and still catches
#: ids stamped in seconds or microseconds, in local time (hours off), or with a fixed time.
HARNESS_CLOCK_TOLERANCE_S = 1.0
REAL_CLOCK_TOLERANCE_S = 5.0


def _utc(ms: float) -> str:
    try:
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


@then("every session id and turn id the run shows was made during the run")
def ident_then_uuid7_time(akc: ScenarioContext) -> None:
    """001: "IDs are UUID v7, so they sort by creation time": each id's 48-bit timestamp
    (Unix milliseconds) is its creation time, so it lies in the run's window on the harness clock
    (a kernel using the injected clock) or on the real clock (one that does not), children's ids
    included. Version bits alone let an id stamped in seconds, or never stamped, through."""
    run = akc.last
    if run is None or run.doubles is None:
        raise HarnessError("no run to read the clock windows of")
    start = akc.scenario.clock.start
    windows = [
        ("the harness clock", (start - HARNESS_CLOCK_TOLERANCE_S) * 1000, (run.doubles.now() + HARNESS_CLOCK_TOLERANCE_S) * 1000),
        ("the real clock", (run.wall_window[0] - REAL_CLOCK_TOLERANCE_S) * 1000, (run.wall_window[1] + REAL_CLOCK_TOLERANCE_S) * 1000),
    ]
    seen = shown_ids(akc)
    for what, value in seen:
        problem = uuid7_problem(value)
        if problem:
            raise ConformanceFailure(what, "a UUID version 7 (RFC variant)", problem)
        ms = uuid7_ms(value)
        if not any(lo <= ms <= hi for _, lo, hi in windows):
            expected = " or ".join(f"{name} [{_utc(lo)}, {_utc(hi)}]" for name, lo, hi in windows)
            raise ConformanceFailure(f"the creation time in the UUID v7 {value} ({what})", f"a time within the run: {expected}", _utc(ms))
    akc.evidence.saw(f"{len(seen)} ids decoded, each made during the run")
