"""Properties of 001's tags: any tag of the grammar is accepted and reaches every hook and tool
call unchanged (TAG-001); a turn's tags are the sorted, duplicate-free union of the profile's and
the session's tags (TAG-008); a tag breaking one rule of the grammar is refused, the rejection
naming the tags field (TAG-002 key characters, TAG-003 value characters, TAG-004 one colon,
TAG-005 no spaces). One property per rule, so a kernel breaking one is not blamed for the others.

Generated tags stay in ASCII and never have an empty key or value: 001 does not say whether
"letters" include non-ASCII ones, nor whether `area:` or `:x` are valid (docs/spec-gaps.md).
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import ConformanceFailure
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ModelResponse, ScriptedToolCall, ToolDef, UserMessage
from conformance.steps.ident import check_tag_list, normal_turn, tags_sorted, turn_events
from conformance.steps.tag import invalid_tag_problem, unchanged_problem

KEY_CHARS = string.ascii_lowercase + string.digits + "_-"
VALUE_CHARS = string.ascii_letters + string.digits + "_-."

keys = st.text(alphabet=KEY_CHARS, min_size=1, max_size=6)
values = st.text(alphabet=VALUE_CHARS, min_size=1, max_size=8)
valid_tags = st.builds(lambda k, v: f"{k}:{v}", keys, values)

# Characters forbidden in a key (beyond ':' and spaces, drawn separately): upper case, '.', others.
BAD_KEY_CHARS = string.ascii_uppercase + "./@+!,;#*=?'()[]{}"
BAD_VALUE_CHARS = "/@+!,;#*=?'\"()[]{}~%&|\\"


def _insert(text: str, pos: int, ch: str) -> str:
    pos = pos % (len(text) + 1)
    return text[:pos] + ch + text[pos:]


# One strategy per rule of the grammar, so a kernel breaking one rule fails that rule only.
bad_key_tags = st.builds(
    lambda k, p, c, v: f"{_insert(k, p, c)}:{v}", keys, st.integers(0, 10), st.sampled_from(BAD_KEY_CHARS), values
)
bad_value_tags = st.builds(
    lambda k, v, p, c: f"{k}:{_insert(v, p, c)}", keys, values, st.integers(0, 10), st.sampled_from(BAD_VALUE_CHARS)
)
colon_tags = st.one_of(
    st.builds(lambda k, v: k + v, keys, values),  # no colon
    st.builds(lambda k, v, w: f"{k}:{v}:{w}", keys, values, values),  # two colons
    st.builds(lambda k, v, w, x: f"{k}:{v}:{w}:{x}", keys, values, values, values),  # three
)
# Inside the tag (a kernel trimming its config input is not what this checks).
space_tags = st.builds(
    lambda t, p, c: t[: 1 + p % (len(t) - 1)] + c + t[1 + p % (len(t) - 1) :],
    valid_tags,
    st.integers(0, 20),
    st.sampled_from([" ", "  "]),
)

# Plain tags ([a-z0-9] both sides) for the merge: no kernel can doubt they are valid.
plain = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=4)
plain_tags = st.builds(lambda k, v: f"{k}:{v}", plain, plain)


def _run(profile_tags: list[str], session_tags: list[str], name: str):  # type: ignore[no-untyped-def]
    ctx = context("commonagent", name)
    ctx.scenario.profile_tags = profile_tags
    ctx.scenario.session_tags = session_tags
    ctx.add_tool(ToolDef(name="weather"))
    ctx.add_response(ModelResponse(tool_calls=[ScriptedToolCall(id="c1", name="weather", args={"city": "x"})]))
    ctx.add_response(ModelResponse(text="done"))
    ctx.run()
    return ctx


def _accepted(ctx, profile_tags: list[str], session_tags: list[str]) -> list:  # type: ignore[no-untyped-def]
    rejected = ctx.result.rejected
    if rejected is not None:
        raise ConformanceFailure(
            f"profile tags {profile_tags} and session tags {session_tags}", "accepted", f"rejected: {rejected.message}"
        )
    ctx.require_kernel_ran()
    return ctx.evidence.require("hook dispatches and tool calls carrying a TurnInfo", turn_events(ctx))


@requirement("TAG-001", profile="commonagent")
@PROPERTY_SETTINGS
@given(tags=st.lists(valid_tags, min_size=1, max_size=4), where=st.sampled_from(["profile", "session", "both"]))
def test_prop_valid_tags_are_accepted_unchanged(tags: list[str], where: str) -> None:
    profile_tags = tags if where in ("profile", "both") else []
    session_tags = tags if where in ("session", "both") else []
    ctx = _run(profile_tags, session_tags, "valid tags are accepted")
    events = _accepted(ctx, profile_tags, session_tags)
    hook_tags = [(normal_turn(e.get("turn")) or {}).get("tags") for _, e in events if e["kind"] == "hook"]
    stored = [t for s in ctx.result.journal.sessions for t in s.tags]
    problem = unchanged_problem(tags, hook_tags, stored)
    if problem:
        raise ConformanceFailure(f"valid tags {tags} ({where})", "accepted and used unchanged", problem)
    ctx.evidence.saw(f"valid tags {tags} used unchanged")


@requirement("TAG-008", profile="commonagent")
@PROPERTY_SETTINGS
@given(pool=st.lists(plain_tags, min_size=1, max_size=5, unique=True), data=st.data())
def test_prop_turn_tags_are_the_sorted_union(pool: list[str], data: st.DataObject) -> None:
    profile_tags = data.draw(st.lists(st.sampled_from(pool), max_size=4), label="profile_tags")
    session_tags = data.draw(st.lists(st.sampled_from(pool), max_size=4), label="session_tags")
    ctx = _run(profile_tags, session_tags, "turn tags are the sorted union")
    expected = set(profile_tags) | set(session_tags)
    for where, e in _accepted(ctx, profile_tags, session_tags):
        tags = (normal_turn(e.get("turn")) or {}).get("tags")
        what = f"tags in the TurnInfo of {where} (profile {profile_tags}, session {session_tags})"
        check_tag_list(what, expected, tags)
    ctx.evidence.saw("every TurnInfo carried the sorted union")


def _refused(bad: str, good: list[str], where: str, pos: int) -> None:
    tags = list(good)
    tags.insert(pos % (len(tags) + 1), bad)
    profile_tags, session_tags = (tags, []) if where == "profile" else ([], tags)
    ctx = _run(profile_tags, session_tags, "invalid tags are refused or dropped")
    problem = invalid_tag_problem(ctx, bad, tags)
    if problem:
        raise ConformanceFailure(
            f"the invalid tag {bad!r} among the {where} tags {tags}", "refused (naming the tags field) or dropped", problem
        )


_context = {
    "good": st.lists(plain_tags, max_size=2),
    "where": st.sampled_from(["profile", "session"]),
    "pos": st.integers(0, 2),
}


@requirement("TAG-002", profile="commonagent")
@PROPERTY_SETTINGS
@given(bad=bad_key_tags, **_context)
def test_prop_bad_key_is_refused(bad: str, good: list[str], where: str, pos: int) -> None:
    _refused(bad, good, where, pos)


@requirement("TAG-003", profile="commonagent")
@PROPERTY_SETTINGS
@given(bad=bad_value_tags, **_context)
def test_prop_bad_value_is_refused(bad: str, good: list[str], where: str, pos: int) -> None:
    _refused(bad, good, where, pos)


@requirement("TAG-004", profile="commonagent")
@PROPERTY_SETTINGS
@given(bad=colon_tags, **_context)
def test_prop_not_one_colon_is_refused(bad: str, good: list[str], where: str, pos: int) -> None:
    _refused(bad, good, where, pos)


@requirement("TAG-005", profile="commonagent")
@PROPERTY_SETTINGS
@given(bad=space_tags, **_context)
def test_prop_space_is_refused(bad: str, good: list[str], where: str, pos: int) -> None:
    _refused(bad, good, where, pos)


# ---------------------------------------------------------------- the grammar's edges (issue 21)
# Each place a tag can come from is one value of the dimension "source": the profile, the
# session, a message that starts a new session (TAG-009). A character just outside each class,
# at either end of the key or the value, breaks the grammar as surely as one in the middle; a
# trailing newline is the classic escape of a `^...$` regular expression; `area:` has no value
# (001: "`area` No: no value").

SOURCES = ["profile", "session", "message-new"]
#: Next to the key class [a-z0-9_-] in ASCII, or of the wrong case; '.' is a value character.
KEY_NEIGHBOURS = "`{/@[AZ.\n\t"
#: Next to the value class [A-Za-z0-9_.-] in ASCII ('/' follows '.', ',' precedes '-').
VALUE_NEIGHBOURS = "@[`{/,^\n\t"


def _at_end(text: str, ch: str, end: str) -> str:
    return ch + text if end == "start" else text + ch


edge_key_tags = st.builds(
    lambda k, c, e, v: f"{_at_end(k, c, e)}:{v}", keys, st.sampled_from(KEY_NEIGHBOURS), st.sampled_from(["start", "end"]), values
)
edge_value_tags = st.builds(
    lambda k, v, c, e: f"{k}:{_at_end(v, c, e)}", keys, values, st.sampled_from(VALUE_NEIGHBOURS), st.sampled_from(["start", "end"])
)
no_value_tags = st.builds(lambda k: f"{k}:", keys)


def _run_from(source: str, tags: list[str], name: str):  # type: ignore[no-untyped-def]
    """One turn whose tags come from ``source``; a message's tags start its (new) session."""
    if source != "message-new":
        return _run(tags if source == "profile" else [], tags if source == "session" else [], name)
    ctx = context("commonagent", name)
    ctx.scenario.user_messages = [UserMessage(text="hello", tags=list(tags))]
    ctx.add_tool(ToolDef(name="weather"))
    ctx.add_response(ModelResponse(tool_calls=[ScriptedToolCall(id="c1", name="weather", args={"city": "x"})]))
    ctx.add_response(ModelResponse(text="done"))
    ctx.run()
    return ctx


def _refused_from(bad: str, good: list[str], source: str, pos: int) -> None:
    tags = list(good)
    tags.insert(pos % (len(tags) + 1), bad)
    ctx = _run_from(source, tags, "invalid tags are refused or dropped")
    problem = invalid_tag_problem(ctx, bad, tags)
    if problem:
        raise ConformanceFailure(
            f"the invalid tag {bad!r} among the {source} tags {tags}", "refused (naming the tags field) or dropped", problem
        )


_edge_context = {"good": st.lists(plain_tags, max_size=2), "source": st.sampled_from(SOURCES), "pos": st.integers(0, 2)}


@requirement("TAG-002", profile="commonagent", dims=["source=profile", "source=session", "source=message-new", "position=start", "position=end", "character=ascii-neighbour", "character=newline"])
@PROPERTY_SETTINGS
@given(bad=edge_key_tags, **_edge_context)
def test_prop_key_edge_is_refused(bad: str, good: list[str], source: str, pos: int) -> None:
    _refused_from(bad, good, source, pos)


@requirement("TAG-003", profile="commonagent", dims=["source=profile", "source=session", "source=message-new", "position=start", "position=end", "character=ascii-neighbour", "character=newline"])
@PROPERTY_SETTINGS
@given(bad=edge_value_tags, **_edge_context)
def test_prop_value_edge_is_refused(bad: str, good: list[str], source: str, pos: int) -> None:
    _refused_from(bad, good, source, pos)


@requirement("TAG-004", profile="commonagent", dims=["colons=1-empty-value", "source=profile", "source=session", "source=message-new"])
@PROPERTY_SETTINGS
@given(bad=no_value_tags, **_edge_context)
def test_prop_empty_value_is_refused(bad: str, good: list[str], source: str, pos: int) -> None:
    _refused_from(bad, good, source, pos)


@requirement("TAG-001", "TAG-009", profile="commonagent", dims=["source=profile", "source=session", "source=message-new"])
@PROPERTY_SETTINGS
@given(tags=st.lists(valid_tags, min_size=1, max_size=3), source=st.sampled_from(SOURCES))
def test_prop_valid_tags_from_every_source_reach_the_turn(tags: list[str], source: str) -> None:
    """Valid tags, whatever their source, are accepted and reach every TurnInfo of the turn
    unchanged; the journal's TurnInfo of the turn carries the same tags (JOURNAL-002's data)."""
    ctx = _run_from(source, tags, "valid tags from every source")
    events = _accepted(ctx, tags if source == "profile" else [], tags if source != "profile" else [])
    for where, e in events:
        check_tag_list(f"tags in the TurnInfo of {where} ({source} tags {tags})", set(tags), (normal_turn(e.get("turn")) or {}).get("tags"))
    ctx.evidence.saw(f"{source} tags {tags} reached every TurnInfo")


# Non-ASCII letters and digits: 001 says "letters of either case" and "digits" without naming an
# alphabet (reading tag-unicode-letters). Either reading keeps the tag whole: accepted and used
# unchanged, or refused / dropped as invalid. What no reading allows is a tag "repaired" into
# another (accents stripped, case folded) or a non-ASCII upper-case letter in the key.
UNICODE_LOWER = "éßñøλж"
UNICODE_OTHER = "ÉÑΛЖ٣²"
unicode_value_tags = st.builds(
    lambda k, v, c, e: f"{k}:{_at_end(v, c, e)}", keys, values, st.sampled_from(UNICODE_LOWER + UNICODE_OTHER), st.sampled_from(["start", "end"])
)
unicode_upper_key_tags = st.builds(
    lambda k, c, e, v: f"{_at_end(k, c, e)}:{v}", keys, st.sampled_from("ÉÑΛЖ"), st.sampled_from(["start", "end"]), values
)


@requirement("TAG-003", profile="commonagent", dims=["character=non-ascii-letter", "source=profile", "source=session", "source=message-new"])
@PROPERTY_SETTINGS
@given(tag=unicode_value_tags, source=st.sampled_from(SOURCES))
def test_prop_non_ascii_value_is_kept_whole_or_refused(tag: str, source: str) -> None:
    ctx = _run_from(source, ["plain:tag", tag], "non-ASCII letters in a value")
    if ctx.result.rejected is not None:
        problem = invalid_tag_problem(ctx, tag, ["plain:tag", tag])
    else:
        ctx.require_kernel_ran()
        events = ctx.evidence.require("hook dispatches and tool calls carrying a TurnInfo", turn_events(ctx))
        seen = [(normal_turn(e.get("turn")) or {}).get("tags") for _, e in events]
        if all(isinstance(s, list) and tag in s for s in seen):
            problem = None  # accepted, unchanged (reading tag-unicode-letters: unicode)
            ctx.evidence.saw(f"{tag!r} accepted unchanged")
        else:
            problem = invalid_tag_problem(ctx, tag, ["plain:tag", tag])
    if problem:
        raise ConformanceFailure(f"the tag {tag!r} ({source})", "accepted unchanged, or refused or dropped whole", problem)


@requirement("TAG-002", profile="commonagent", dims=["character=non-ascii-upper-case", "source=profile", "source=session", "source=message-new"])
@PROPERTY_SETTINGS
@given(bad=unicode_upper_key_tags, **_edge_context)
def test_prop_non_ascii_upper_case_key_is_refused(bad: str, good: list[str], source: str, pos: int) -> None:
    _refused_from(bad, good, source, pos)


# Tags sharing a key (issue 21): `area:work` and `area:home` are two tags; duplicates are whole tags.
shared_key_tags = st.builds(lambda k, v: f"{k}:{v}", st.sampled_from(["area", "team"]), st.sampled_from(["work", "home", "core", "Site-v2.1"]))


@requirement("TAG-008", profile="commonagent", dims=["keys=shared", "duplicates=whole-tag"])
@PROPERTY_SETTINGS
@given(profile_tags=st.lists(shared_key_tags, min_size=1, max_size=3), session_tags=st.lists(shared_key_tags, min_size=1, max_size=3))
def test_prop_tags_sharing_a_key_are_all_kept(profile_tags: list[str], session_tags: list[str]) -> None:
    ctx = _run(profile_tags, session_tags, "tags sharing a key are all kept")
    expected = set(profile_tags) | set(session_tags)
    for where, e in _accepted(ctx, profile_tags, session_tags):
        tags = (normal_turn(e.get("turn")) or {}).get("tags")
        check_tag_list(f"tags in the TurnInfo of {where} (profile {profile_tags}, session {session_tags})", expected, tags)
    ctx.evidence.saw(f"the tags {sorted(expected)} kept, keys shared")


# ---------------------------------------------------------------- tags on a message to an existing session
# 001 gives extra tags to "a message that starts a new session"; what a later message's tags do
# is open (reading message-tags-existing-session): ignored, or added to the session's own. Either
# way the turn's tags stay the profile's and the session's (TAG-008): never the message's alone,
# and an invalid tag never reaches a TurnInfo or a stored session.
BASE_TAGS = ["base:one"]


def _run_existing(message_tags: list[str], name: str):  # type: ignore[no-untyped-def]
    ctx = context("commonagent", name)
    ctx.scenario.profile_tags = list(BASE_TAGS)
    ctx.scenario.user_messages = [UserMessage(text="first", session="s1"), UserMessage(text="second", session="s1", tags=list(message_tags))]
    ctx.add_response(ModelResponse(text="one"))
    ctx.add_response(ModelResponse(text="two"))
    ctx.run()
    return ctx


def _second_turn_tags(ctx) -> list[tuple[str, Any]]:  # type: ignore[no-untyped-def]
    from conformance.steps.turn import event_turn_id, turn_id_of

    tid = turn_id_of(ctx, 2)
    events = ctx.evidence.require("hook dispatches of the second turn", [e for _, e in turn_events(ctx) if event_turn_id(e) == tid])
    return [(f"{e.get('point') or e['kind']} (#{e['seq']})", (normal_turn(e.get("turn")) or {}).get("tags")) for e in events]


@requirement("TAG-008", profile="commonagent", dims=["source=message-existing"])
@PROPERTY_SETTINGS
@given(message_tags=st.lists(plain_tags, min_size=1, max_size=3, unique=True))
def test_prop_tags_on_a_later_message_are_ignored_or_added(message_tags: list[str]) -> None:
    ctx = _run_existing(message_tags, "tags on a later message")
    if ctx.result.rejected is not None:
        raise ConformanceFailure(f"valid tags {message_tags} on a later message", "accepted", ctx.result.rejected.message)
    ctx.require_kernel_ran()
    allowed = {"ignored": sorted(BASE_TAGS), "added": sorted(set(BASE_TAGS) | set(message_tags))}
    for where, tags in _second_turn_tags(ctx):
        if not any(tags == v or (isinstance(tags, list) and set(tags) == set(v) and tags_sorted(tags)) for v in allowed.values()):
            raise ConformanceFailure(
                f"tags in the TurnInfo of {where} (profile {BASE_TAGS}, the message brings {message_tags} to its existing session)",
                f"the profile's and session's tags, the message's ignored {allowed['ignored']} or added {allowed['added']}", tags,
            )
    ctx.evidence.saw(f"a later message's tags {message_tags} ignored or added to the session's")


@requirement("TAG-003", profile="commonagent", dims=["source=message-existing"])
@PROPERTY_SETTINGS
@given(bad=edge_value_tags)
def test_prop_invalid_tag_on_a_later_message_never_reaches_a_turn(bad: str) -> None:
    ctx = _run_existing([bad], "an invalid tag on a later message")
    rejected = ctx.result.rejected
    if rejected is not None:
        if "tag" not in rejected.field.lower():
            raise ConformanceFailure(f"the invalid tag {bad!r} on a later message", "refused naming the tags field", rejected.field)
        ctx.evidence.saw(f"{bad!r} refused")
        return
    ctx.require_kernel_ran()
    for where, tags in _second_turn_tags(ctx):
        if isinstance(tags, list) and bad in tags:
            raise ConformanceFailure(f"the invalid tag {bad!r} on a later message", "refused, or in no TurnInfo", f"in the TurnInfo of {where}")
    for s in ctx.result.journal.sessions:
        if bad in s.tags:
            raise ConformanceFailure(f"the invalid tag {bad!r} on a later message", "refused, or in no stored session", f"among the tags of {s.id}")
    ctx.evidence.saw(f"{bad!r} kept out of every TurnInfo and stored session")


@requirement("JOURNAL-002", profile="commonagent", dims=["source=profile", "source=session", "source=message-new", "source=all"])
@PROPERTY_SETTINGS
@given(tags=st.lists(plain_tags, min_size=1, max_size=3, unique=True), source=st.sampled_from(SOURCES + ["all"]))
def test_prop_the_journal_starts_each_turn_with_its_tags(tags: list[str], source: str) -> None:
    """start_turn(TurnInfo) stores the turn's resolved tags, whichever source they came from."""
    if source == "all":
        ctx = context("commonagent", "journal TurnInfo tags")
        ctx.scenario.profile_tags, ctx.scenario.session_tags = tags[:1], tags[1:2]
        ctx.scenario.user_messages = [UserMessage(text="hello", tags=tags[2:])]
        ctx.add_response(ModelResponse(text="hi"))
        ctx.run()
    else:
        ctx = _run_from(source, tags, "journal TurnInfo tags")
    ctx.require_kernel_ran()
    stored = ctx.evidence.require("turns started in the journal", ctx.result.journal.turns)
    expected = sorted(set(tags))
    for record in stored:
        check_tag_list(f"tags in the TurnInfo the journal stored for turn {record.turn.turn_id} ({source} tags)", set(expected), record.turn.tags)
    ctx.evidence.saw(f"the journal's TurnInfo carries the tags {expected}")
