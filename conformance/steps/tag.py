"""Steps for the TAG features (001, Tags and "Where tags come from").

A turn's tags are the profile's tags plus the session's own tags, sorted, without duplicates;
they are copied onto every turn, so every hook dispatch and tool call of a turn carries them in
its TurnInfo. "Sorted" is accepted as string order or as (key, value) order: both read 001's
word and they differ only when one key is a prefix of another.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, HarnessError, expect_equal, show
from conformance.steps.common import ScenarioContext
from conformance.steps.ident import (
    check_tag_list,
    events_of_turn,
    message_turn,
    normal_turn,
    split_tags,
    turn_events,
)


def _all_turn_tags(akc: ScenarioContext) -> list[tuple[str, Any]]:
    events = akc.evidence.require("hook dispatches and tool calls carrying a TurnInfo", turn_events(akc))
    return [(where, (normal_turn(e.get("turn")) or {}).get("tags")) for where, e in events]


def invalid_tag_problem(akc: ScenarioContext, bad: str, configured: list[str]) -> str | None:
    """Reading invalid-tag (all accepted): refused, the rejection naming a tag field; or dropped —
    the kernel ran, the invalid tag is in no TurnInfo and no stored session, and the valid tags of
    the same configuration reached every TurnInfo. None when upheld; the evidence is recorded."""
    accepted = akc.accepts("invalid-tag")
    rejected = akc.result.rejected
    if rejected is not None:
        if "refuse" not in accepted:
            return f"refused ({rejected.field}), but the adapter declares the reading {sorted(accepted)}"
        if "tag" not in rejected.field.lower():
            return f"refused naming {rejected.field!r}, not the tags field"
        akc.evidence.saw(f"the invalid tag {bad!r} refused naming {rejected.field!r}")
        return None
    if "drop" not in accepted:
        return "accepted: the adapter declares the refuse reading"
    akc.require_kernel_ran()
    events = akc.evidence.require("hook dispatches and tool calls carrying a TurnInfo", turn_events(akc))
    for where, e in events:
        tags = (normal_turn(e.get("turn")) or {}).get("tags")
        tags = tags if isinstance(tags, list) else []
        if bad in tags:
            return f"neither refused nor dropped: {bad!r} in the TurnInfo of {where}"
        extra = [t for t in tags if t not in configured]
        if extra:  # e.g. the invalid tag "repaired" (Area:x taken as area:x): neither refused nor dropped
            return f"neither refused nor dropped: {show(extra)}, never configured, in the TurnInfo of {where}"
        missing = [t for t in configured if t != bad and t not in tags]
        if missing:
            return f"dropped with valid tags: {show(missing)} missing from the TurnInfo of {where}"
    for s in akc.result.journal.sessions:
        if bad in s.tags:
            return f"neither refused nor dropped: {bad!r} among the tags of stored session {s.id}"
        extra = [t for t in s.tags if t not in configured]
        if extra:
            return f"neither refused nor dropped: {show(extra)}, never configured, among the tags of stored session {s.id}"
    akc.evidence.saw(f"the invalid tag {bad!r} dropped, the valid tags kept")
    return None


@then("the kernel accepted the tags")
def tag_then_accepted(akc: ScenarioContext) -> None:
    """The kernel did not refuse the configuration, and the turn ran."""
    rejected = akc.result.rejected
    if rejected is not None:
        raise ConformanceFailure("the tags", "accepted", f"rejected ({rejected.field}: {rejected.message})")
    akc.require_kernel_ran()
    akc.evidence.require("outcomes of the run", akc.result.outcomes)


@then(parsers.re(r'the invalid tag "(?P<bad>[^"]+)" is refused or dropped$'))
def tag_then_refused_or_dropped(akc: ScenarioContext, bad: str) -> None:
    """Reading invalid-tag: refused naming the tags field, or dropped so that it never reaches a
    TurnInfo or a stored session while the valid tags of the same configuration do."""
    configured = list(akc.scenario.profile_tags) + list(akc.scenario.session_tags)
    problem = invalid_tag_problem(akc, bad, configured)
    if problem:
        raise ConformanceFailure(f"the invalid tag {bad!r}", "refused (naming the tags field) or dropped", problem)


def unchanged_problem(tags: list[str], hook_tags: list[Any], stored: list[str]) -> str | None:
    """Why these accepted tags were not used unchanged: one shows up altered in a hook's
    TurnInfo, or appears nowhere (neither in every hook's TurnInfo nor among the stored session
    tags; which tags a turn gets is TAG-008's)."""
    for got in hook_tags:
        seen = got if isinstance(got, list) else []
        for tag in tags:
            altered = [t for t in seen if isinstance(t, str) and t != tag and t.lower() == tag.lower()]
            if altered:
                return f"{tag!r} altered to {altered[0]!r}"
    for tag in tags:
        everywhere = bool(hook_tags) and all(isinstance(g, list) and tag in g for g in hook_tags)
        if not everywhere and tag not in stored:
            return f"{tag!r} neither in the hooks' TurnInfo nor among the stored session tags"
    return None


@then(parsers.re(r'the tags "(?P<tags>[^"]*)" reach every hook dispatch unchanged$'))
def tag_then_unchanged(akc: ScenarioContext, tags: str) -> None:
    """Each of these tags is used exactly as written: never altered in a hook's TurnInfo, and
    found in every hook's TurnInfo or among the stored session tags."""
    wanted = split_tags(tags)
    hook_tags = [got for where, got in _all_turn_tags(akc) if where.startswith("hook")]
    stored = [t for s in akc.result.journal.sessions for t in s.tags]
    problem = unchanged_problem(wanted, hook_tags, stored)
    if problem:
        raise ConformanceFailure("valid tags", f"{show(wanted)} used unchanged", problem)
    akc.evidence.saw(f"{show(wanted)} used unchanged")


@then(parsers.re(r'every hook and tool call of the run carries exactly the tags "(?P<tags>[^"]*)"$'))
def tag_then_exact(akc: ScenarioContext, tags: str) -> None:
    """TurnInfo.tags of every hook dispatch and tool call: exactly these tags, sorted, each once."""
    expected = set(split_tags(tags))
    for where, got in _all_turn_tags(akc):
        check_tag_list(f"tags in the TurnInfo of {where}", expected, got)
    akc.evidence.saw(f"every TurnInfo carried exactly {tags!r}")


@then(parsers.re(r'the turn of user message (?P<k>\d+) carries exactly the tags "(?P<tags>[^"]*)"$'))
def tag_then_message_exact(akc: ScenarioContext, k: str, tags: str) -> None:
    """Every hook dispatch and tool call of user message k's turn: exactly these tags, sorted,
    each once."""
    turn = message_turn(akc, int(k))
    events = akc.evidence.require(f"hook dispatches of the turn of message {k}", events_of_turn(akc, turn.get("turn_id")))
    expected = set(split_tags(tags))
    for where, e in events:
        check_tag_list(f"tags in the TurnInfo of {where}", expected, (normal_turn(e.get("turn")) or {}).get("tags"))


@then(parsers.re(r'the hooks of the session of user message (?P<k>\d+) carry exactly the tags "(?P<tags>[^"]*)"$'))
def tag_then_session_turns_exact(akc: ScenarioContext, k: str, tags: str) -> None:
    """Every hook dispatch whose TurnInfo names the session of user message k: exactly these
    tags, sorted, each once (whichever message of that session it ran for; tool calls are
    TAG-006's)."""
    session_id = message_turn(akc, int(k)).get("session_id")
    events = [
        (w, e)
        for w, e in turn_events(akc)
        if e["kind"] == "hook" and (normal_turn(e.get("turn")) or {}).get("session_id") == session_id
    ]
    akc.evidence.require(f"hook dispatches in the session of message {k}", events)
    expected = set(split_tags(tags))
    for where, e in events:
        check_tag_list(f"tags in the TurnInfo of {where}", expected, (normal_turn(e.get("turn")) or {}).get("tags"))


@then("every hook and tool call of a session's turns carries one and the same tags")
def tag_then_same_in_turn(akc: ScenarioContext) -> None:
    """The resolved tags are copied onto every turn: every hook dispatch and tool call of the
    turns of one session carries the same tag list (what the list holds is TAG-008's)."""
    first: dict[Any, tuple[str, Any]] = {}
    events = akc.evidence.require("hook dispatches and tool calls carrying a TurnInfo", turn_events(akc))
    akc.evidence.require(
        "TurnInfos carrying at least one tag", [e for _, e in events if (normal_turn(e.get("turn")) or {}).get("tags")]
    )
    for where, e in events:
        turn = normal_turn(e.get("turn")) or {}
        got = turn.get("tags")
        if not isinstance(got, list):
            raise ConformanceFailure(f"tags in the TurnInfo of {where}", "a list of tags", got)
        seen = first.setdefault(turn.get("session_id"), (where, got))
        if seen[1] != got:
            raise ConformanceFailure(
                f"tags in the TurnInfo of {where}", f"the same list as {seen[0]}: {show(seen[1])}", got
            )


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _masked(value: Any, tags: list[str]) -> Any:
    """A JSON value with every tag string and every UUID (session and turn ids differ between
    runs) replaced by a placeholder."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    for tag in sorted(tags, key=len, reverse=True):
        text = text.replace(tag, "<tag>")
    return json.loads(_UUID.sub("<id>", text))


def _observable(akc: ScenarioContext, tags: list[str]) -> dict[str, Any]:
    """What the loop did that tags must not change: every model request (tag strings and ids
    masked), the tool calls, the replies. Evidence: the tags reached the TurnInfos."""
    akc.require_kernel_ran()
    reached = [
        e for _, e in turn_events(akc) if set(tags) & set((normal_turn(e.get("turn")) or {}).get("tags") or [])
    ]
    akc.evidence.require(f"TurnInfos carrying the tags {show(sorted(tags))}", reached)
    requests = [_masked({"messages": list(r.get("messages") or []), "tools": r.get("tools") or []}, tags) for r in akc.model_requests()]
    # By call id, not in start order: 000 runs the calls of one response in parallel, so two of
    # them may start in either order (issue 21 §2); ids are the model's, unique in a scenario.
    calls = sorted(((e["call_id"], e["name"], e["args"]) for e in akc.tool_starts()), key=repr)
    replies = [(o.status, o.reply) for o in akc.result.outcomes]
    return {"requests": requests, "tool calls": calls, "outcomes": replies}


@then(
    parsers.re(
        r'running it again with the profile tags "(?P<ptags>[^"]*)" and the session tags "(?P<stags>[^"]*)" '
        r"makes the same model calls and tool calls$"
    )
)
def tag_then_no_meaning(akc: ScenarioContext, ptags: str, stags: str) -> None:
    """Tags carry no meaning in the loop (reading tags-no-meaning, gating): the same scenario with
    another tag set of the same size sends the model the same requests (tag strings and ids
    masked), runs the same tool calls and ends the same way; the tags reached the TurnInfos of
    both runs."""
    if akc.result.rejected is not None:
        raise HarnessError("the first run was rejected; use valid tags")
    sizes = (len(set(akc.scenario.profile_tags)), len(set(akc.scenario.session_tags)))
    first_tags = list(akc.scenario.profile_tags) + list(akc.scenario.session_tags)
    before = _observable(akc, first_tags)
    akc.scenario.profile_tags = split_tags(ptags)
    akc.scenario.session_tags = split_tags(stags)
    second_tags = list(akc.scenario.profile_tags) + list(akc.scenario.session_tags)
    if (len(set(akc.scenario.profile_tags)), len(set(akc.scenario.session_tags))) != sizes or len(
        set(second_tags)
    ) != len(set(first_tags)):
        raise HarnessError("compare tag sets of the same sizes (a listing of tags differs in length otherwise)")
    akc.run()
    if akc.result.rejected is not None:
        raise ConformanceFailure("the run with other tags", "accepted", f"rejected ({akc.result.rejected.field})")
    after = _observable(akc, second_tags)
    for key in before:
        expect_equal(f"{key} with other tags", before[key], after[key])
    akc.evidence.saw("the same requests and tool calls with another tag set")
