"""Steps for the CHILD features (001, Child turns) and the child-session rows of SESS.

A delegation tool (``a subagent tool "delegate"``) runs a child turn. The child's hook
dispatches and tool calls are the ones the harness sees *while the delegation call runs*:
strictly between the parent's ``pre_tool_call`` and ``post_tool_call`` dispatches for that call
id, minus the windows of calls the child itself delegates (a grandchild's). Their TurnInfo is
the child's identity as the kernel gave it; every one of them must show the rule checked.
"""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then

from conformance.boundary.adapter import SessionRecord
from conformance.errors import Blocked, ConformanceFailure, HarnessError, expect_equal, show
from conformance.steps.common import ScenarioContext
from conformance.steps.ident import message_turn, normal_turn, stored_turn, turn_events


def _window(akc: ScenarioContext, call_id: str) -> tuple[int, int]:
    """(seq of the pre_tool_call dispatch, seq of the post_tool_call dispatch) of this call.

    pre_tool_call names its call (000 gives its arguments); post_tool_call's payload is free
    (reading post-tool-call-payload): when it names no call, the parent's post_tool_call is the
    first one after the pre_tool_call that carries the parent turn's TurnInfo. A kernel that never
    dispatches either point leaves no window: blocked by TOOL-005 / TOOL-012, not failed here."""
    akc.require_points_dispatched(["pre_tool_call", "post_tool_call"])
    pre = post = None
    parent_turn_id = None
    for e in akc.hook_dispatches():
        payload = e.get("payload")
        cid = payload.get("call_id") if isinstance(payload, dict) else None
        if e["point"] == "pre_tool_call" and pre is None and cid == call_id:
            pre = e["seq"]
            parent_turn_id = (normal_turn(e.get("turn")) or {}).get("turn_id")
        elif e["point"] == "post_tool_call" and pre is not None and post is None:
            if cid == call_id:
                post = e["seq"]
            elif cid is None and parent_turn_id is not None and (normal_turn(e.get("turn")) or {}).get("turn_id") == parent_turn_id:
                post = e["seq"]
    if pre is None or post is None:
        raise ConformanceFailure(
            f"the delegation call {call_id}",
            "its pre_tool_call and post_tool_call dispatches around the child turn",
            f"pre_tool_call at {pre}, post_tool_call at {post}",
        )
    return pre, post


def _delegation_calls(akc: ScenarioContext) -> list[str]:
    """Call ids the model script makes to delegation tools."""
    delegates = {t.name for t in akc.scenario.tools if t.subagent is not None}
    return [c.id for r in akc.scenario.model.responses for c in r.tool_calls if c.name in delegates and c.id]


def child_events(akc: ScenarioContext, call_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Hook dispatches and tool calls of the child turn run by delegation call ``call_id``."""
    if call_id not in _delegation_calls(akc):
        raise HarnessError(f"{call_id!r} is not a scripted call of a subagent tool")
    lo, hi = _window(akc, call_id)
    nested = []
    for other in _delegation_calls(akc):
        if other == call_id:
            continue
        try:
            a, b = _window(akc, other)
        except ConformanceFailure:
            continue
        if lo < a and b < hi:
            nested.append((a, b))
    out = [(w, e) for w, e in turn_events(akc) if lo < e["seq"] < hi and not any(a < e["seq"] < b for a, b in nested)]
    if not out:
        raise ConformanceFailure(
            f"the child turn of {call_id}", "hook dispatches and tool calls while the delegation runs", "none"
        )
    return out


def parent_turn(akc: ScenarioContext, parent: str) -> dict[str, Any]:
    """``the parent`` (the turn of user message 1) or ``the child turn of "<id>"`` (its first
    TurnInfo)."""
    if parent == "":
        return message_turn(akc, 1)
    _, e = child_events(akc, parent)[0]
    return normal_turn(e.get("turn")) or {}


def _each_child_turn(akc: ScenarioContext, call_id: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for where, e in child_events(akc, call_id):
        turn = normal_turn(e.get("turn"))
        if turn is None:
            raise ConformanceFailure(f"the TurnInfo of {where} (child turn of {call_id})", "a TurnInfo", e.get("turn"))
        out.append((f"{where} (child turn of {call_id})", turn))
    ids = {turn.get("turn_id") for _, turn in out}
    if len(ids) > 1:
        # One child turn seen under several turn ids: which TurnInfo its hooks and tools get is
        # IDENT-001's and IDENT-002's subject; this turn's identity cannot be judged.
        raise Blocked(by=["IDENT-001", "IDENT-002"], reason=f"the child turn of {call_id} shows {len(ids)} turn ids")
    return out


def _saw(akc: ScenarioContext, call_id: str, turns: list[Any], what: str) -> None:
    akc.evidence.saw(f"{len(turns)} TurnInfos of the child turn of {call_id}, each with {what}")


_OF = r'(?:the parent turn|the child turn of "(?P<parent>[^"]+)")'


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" runs with the parent\'s profile id$'))
def child_then_profile(akc: ScenarioContext, call_id: str) -> None:
    """Same profile: every TurnInfo of the child turn names the parent turn's profile_id."""
    expected = message_turn(akc, 1).get("profile_id")
    turns = _each_child_turn(akc, call_id)
    for where, turn in turns:
        expect_equal(f"profile_id in the TurnInfo of {where}", expected, turn.get("profile_id"))
    _saw(akc, call_id, turns, f"profile_id {expected!r}")


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" carries exactly the tags of ' + _OF + "$"))
def child_then_tags(akc: ScenarioContext, call_id: str, parent: str | None) -> None:
    """Same tags: the child copies its parent's resolved tags (the same list)."""
    expected = parent_turn(akc, parent or "").get("tags")
    akc.evidence.require("tags on the parent turn", expected or [], mandatory=False)
    turns = _each_child_turn(akc, call_id)
    for where, turn in turns:
        expect_equal(f"tags in the TurnInfo of {where}", expected, turn.get("tags"))
    _saw(akc, call_id, turns, f"the tags {expected}")


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" runs in a new session, not in the session of ' + _OF + "$"))
def child_then_new_session(akc: ScenarioContext, call_id: str, parent: str | None) -> None:
    """A new session: the child's session_id is not its parent's (nor any top-level turn's)."""
    parent_session = parent_turn(akc, parent or "").get("session_id")
    top = {message_turn(akc, k).get("session_id") for k in range(1, len(akc.scenario.user_messages) + 1)}
    turns = _each_child_turn(akc, call_id)
    for where, turn in turns:
        sid = turn.get("session_id")
        if sid is None or sid == parent_session or sid in top:
            raise ConformanceFailure(
                f"session_id in the TurnInfo of {where}", f"a new session (not {parent_session})", sid
            )
    _saw(akc, call_id, turns, "a session of its own")


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" has ' + _OF + r" as its parent$"))
def child_then_parent_turn(akc: ScenarioContext, call_id: str, parent: str | None) -> None:
    """parent_turn_id is the turn_id of the turn that delegated."""
    expected = parent_turn(akc, parent or "").get("turn_id")
    turns = _each_child_turn(akc, call_id)
    for where, turn in turns:
        expect_equal(f"parent_turn_id in the TurnInfo of {where}", expected, turn.get("parent_turn_id"))
    _saw(akc, call_id, turns, "the delegating turn as parent_turn_id")


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" is one level deeper than ' + _OF + "$"))
def child_then_depth(akc: ScenarioContext, call_id: str, parent: str | None) -> None:
    """depth is the parent's depth + 1."""
    parent_depth = parent_turn(akc, parent or "").get("depth")
    if not isinstance(parent_depth, int):
        raise ConformanceFailure("depth of the parent turn", "a number", parent_depth)
    turns = _each_child_turn(akc, call_id)
    for where, turn in turns:
        expect_equal(f"depth in the TurnInfo of {where}", parent_depth + 1, turn.get("depth"))
    _saw(akc, call_id, turns, f"depth {parent_depth + 1}")


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" has depth (?P<depth>\d+)$'))
def child_then_depth_value(akc: ScenarioContext, call_id: str, depth: str) -> None:
    """The child's depth as a number (1 under a top-level turn, 2 under a child)."""
    turns = _each_child_turn(akc, call_id)
    for where, turn in turns:
        expect_equal(f"depth in the TurnInfo of {where}", int(depth), turn.get("depth"))
    _saw(akc, call_id, turns, f"depth {depth}")


# ============================================================================ child sessions


def child_session(akc: ScenarioContext, call_id: str) -> SessionRecord:
    """The stored session of the child turn of ``call_id``: the one its TurnInfo names, else the
    only stored session that is not a top-level one."""
    sessions = akc.result.journal.sessions
    top = {stored_turn(akc, k).get("session_id") for k in range(1, len(akc.scenario.user_messages) + 1)}
    ids = {turn.get("session_id") for _, turn in _each_child_turn(akc, call_id)} - top
    named = [s for s in sessions if s.id in ids]
    if len(named) == 1:
        return named[0]
    others = [s for s in sessions if s.id not in top]
    if len(others) == 1 and len(_delegation_calls(akc)) == 1:
        return others[0]
    raise ConformanceFailure(
        f"the stored session of the child turn of {call_id}",
        "one session record besides the parent's",
        [s.model_dump() for s in sessions],
    )


@then(
    parsers.re(
        r'the child session of "(?P<call_id>[^"]+)" is stored with source "subagent" '
        r"and the parent's session as its parent$"
    )
)
def child_then_session_record(akc: ScenarioContext, call_id: str) -> None:
    """NewSession of a child agent: source ``subagent``, parent_session_id = the delegating
    turn's session."""
    record = child_session(akc, call_id)
    expect_equal(f"source of the child session {record.id}", "subagent", record.source)
    expect_equal(
        f"parent_session_id of the child session {record.id}",
        stored_turn(akc, 1).get("session_id"),
        record.parent_session_id,
    )
    akc.evidence.saw(f"the child session {record.id} is stored with source subagent under its parent")


@then(parsers.re(r'the child session of "(?P<call_id>[^"]+)" is titled with its goal$'))
def child_then_session_title(akc: ScenarioContext, call_id: str) -> None:
    """A child session is titled with its goal (the delegation call's ``goal`` argument)."""
    goal = next(
        (c.args or {}).get("goal") for r in akc.scenario.model.responses for c in r.tool_calls if c.id == call_id
    )
    if not isinstance(goal, str):
        raise HarnessError(f"the call {call_id!r} has no goal argument")
    record = child_session(akc, call_id)
    expect_equal(f"title of the child session {record.id}", goal, record.title)
    akc.evidence.saw(f"the child session {record.id} is titled {goal!r}")


# ============================================================================ the child as a turn (issue 21)


@given(parsers.re(r'the definition of the subagent tool "(?P<name>[^"]+)" names the profile "(?P<profile_id>[^"]+)"$'))
def child_given_definition_profile(akc: ScenarioContext, name: str, profile_id: str) -> None:
    """The sub-agent definition names a profile other than the parent's (001: the child runs with
    the *same profile* as its parent, whatever the definition says)."""
    tool = next((t for t in akc.scenario.tools if t.name == name and t.subagent is not None), None)
    if tool is None:
        raise HarnessError(f"no subagent tool {name!r} in the scenario")
    assert tool.subagent is not None
    tool.subagent.profile_id = profile_id


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" has a turn id of its own$'))
def child_then_own_turn_id(akc: ScenarioContext, call_id: str) -> None:
    """A child turn is a turn: its turn_id is new, not its parent's nor any other turn's."""
    parent = message_turn(akc, 1).get("turn_id")
    tops = {message_turn(akc, k).get("turn_id") for k in range(1, len(akc.scenario.user_messages) + 1)}
    turns = _each_child_turn(akc, call_id)
    for where, turn in turns:
        tid = turn.get("turn_id")
        if tid is None or tid in tops:
            raise ConformanceFailure(f"turn_id in the TurnInfo of {where}", f"a new turn id (not the parent's {parent})", tid)
    _saw(akc, call_id, turns, "a turn id of its own")


def _child_requests(akc: ScenarioContext, call_id: str) -> list[dict[str, Any]]:
    """The model requests made while the delegation call ran (its child's), in order."""
    lo, hi = _window(akc, call_id)
    return [e for e in akc.events("model_request") if lo < e["seq"] < hi]


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" starts from an empty history$'))
def child_then_empty_history(akc: ScenarioContext, call_id: str) -> None:
    """A new session has no messages: the child's first model request holds its goal as the user
    message and nothing of the parent's conversation (no assistant message, no tool result, not
    the parent's user message)."""
    requests = akc.evidence.require(f"model requests of the child turn of {call_id}", _child_requests(akc, call_id))
    goal = next((c.args or {}).get("goal") for r in akc.scenario.model.responses for c in r.tool_calls if c.id == call_id)
    parent_texts = {m.text for m in akc.scenario.user_messages}
    messages = list(requests[0]["request"].get("messages") or [])
    what = f"the first model request of the child turn of {call_id}"
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if role in ("assistant", "tool_result"):
            raise ConformanceFailure(what, "no message of an earlier conversation (a new session)", m)
        if role == "user" and any(t and t in str(m.get("text", "")) for t in parent_texts):
            raise ConformanceFailure(what, "not the parent's user message (a new session)", m)
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not any(goal and goal in str(m.get("text", "")) for m in users):
        raise ConformanceFailure(what, f"the goal {goal!r} as its user message", users)
    akc.evidence.saw(f"the child turn of {call_id} started from its goal alone")


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" dispatched on_session_start first and on_session_end as its last hook$'))
def child_then_session_hooks(akc: ScenarioContext, call_id: str) -> None:
    """000 step 4: on_session_start fires for a new session (a child's is new), before its first
    pre_api_request; step 6: on_session_end fires at the end of every turn, the child's too, as
    its last hook."""
    points = [e["point"] for _, e in child_events(akc, call_id) if e["kind"] == "hook"]
    what = f"the hooks of the child turn of {call_id}"
    if points.count("on_session_start") != 1 or "pre_api_request" not in points or points.index("on_session_start") > points.index("pre_api_request"):
        raise ConformanceFailure(what, "on_session_start once, before the first pre_api_request", points)
    if points.count("on_session_end") != 1 or points[-1] != "on_session_end":
        raise ConformanceFailure(what, "on_session_end once, as the last hook", points)
    akc.evidence.saw(f"{what}: on_session_start first, on_session_end last")


@then(parsers.re(r'the child turn of "(?P<call_id>[^"]+)" is started in the journal with its TurnInfo$'))
def child_then_journal_turn(akc: ScenarioContext, call_id: str) -> None:
    """start_turn(TurnInfo) for the child turn too: one stored turn under its turn_id, holding
    the TurnInfo its hooks got (parent_turn_id, depth and tags included)."""
    _, turn = _each_child_turn(akc, call_id)[0]
    stored = [t for t in akc.result.journal.turns if t.turn.turn_id == turn.get("turn_id")]
    if len(stored) != 1:
        raise ConformanceFailure(
            f"stored turns for the child turn of {call_id} ({turn.get('turn_id')})", "exactly one",
            [t.turn.turn_id for t in akc.result.journal.turns],
        )
    record = stored[0].turn.model_dump()
    for key in ("profile_id", "session_id", "turn_id", "parent_turn_id", "tags", "depth"):
        expect_equal(f"{key} in the TurnInfo stored for the child turn of {call_id}", turn.get(key), record.get(key))
    akc.evidence.saw(f"the child turn of {call_id} started in the journal with the TurnInfo its hooks got")


@then(parsers.re(r'every (?P<kind>hook dispatch|tool call) of the child turn of "(?P<call_id>[^"]+)" carries the child turn\'s own turn id, not the parent\'s$'))
def ident_then_child_own_turn(akc: ScenarioContext, kind: str, call_id: str) -> None:
    """Inside a delegated child turn (the dispatches and calls while the delegation call runs),
    every hook dispatch (IDENT-001) or tool call (IDENT-002) carries one turn id, the child's:
    not the parent turn's. (Here, not in ident.py: it needs this module's child window.)"""
    parent_id = message_turn(akc, 1).get("turn_id")
    event_kind = "hook" if kind == "hook dispatch" else "tool_start"
    seen = akc.evidence.require(f"{kind}s of the child turn of {call_id}", [(w, e) for w, e in child_events(akc, call_id) if e["kind"] == event_kind])
    ids = [(where, (normal_turn(e.get("turn")) or {}).get("turn_id")) for where, e in seen]
    for where, tid in ids:
        if tid == parent_id:
            raise ConformanceFailure(f"turn_id in the TurnInfo of {where} (child turn of {call_id})", "the child turn's own id", f"the parent turn's id {tid}")
    if len({tid for _, tid in ids}) != 1:
        raise ConformanceFailure(f"turn ids of the {kind}s of the child turn of {call_id}", "one and the same", show([t for _, t in ids]))
    akc.evidence.saw(f"{len(ids)} {kind}s of the child turn of {call_id}, each with the child's turn id")
