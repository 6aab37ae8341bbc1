"""Properties of 001's sessions: a session is created once, by the message that starts it, and
later messages to it continue it whatever other sessions are addressed in between (SESS-002); a
session is stored with its own tags, the session's and those a starting message brings, never
the profile's (SESS-003).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.boundary.scenario import ModelResponse, UserMessage
from conformance.errors import ConformanceFailure, expect_equal
from conformance.steps.sess import stored_session
from conformance.steps.ident import stored_turn
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement

#: Which session each message goes to, in order (labels s1..s3).
orders = st.lists(st.sampled_from(["s1", "s2", "s3"]), min_size=2, max_size=6)


@requirement("SESS-002", profile="commonagent", dims=["sessions=1", "sessions=2+", "order=interleaved", "order=consecutive"])
@PROPERTY_SETTINGS
@given(order=orders)
def test_prop_each_session_is_created_once_and_continued(order: list[str]) -> None:
    ctx = context("commonagent", "each session created once")
    ctx.scenario.user_messages = [UserMessage(text=f"message {k} to {s}", session=s) for k, s in enumerate(order, start=1)]
    for k in range(1, len(order) + 1):
        ctx.add_response(ModelResponse(text=f"answer {k}"))
    ctx.run()
    ctx.require_kernel_ran()
    first: dict[str, str] = {}
    for k, label in enumerate(order, start=1):
        sid = stored_turn(ctx, k).get("session_id")
        if label in first:
            expect_equal(f"session of message {k} (to {label}, which message {order.index(label) + 1} started)", first[label], sid)
        elif sid in first.values():
            raise ConformanceFailure(f"session of message {k} (the first to {label})", "a new session", f"{sid}, another label's")
        else:
            first[label] = sid
    stored = [s.id for s in ctx.result.journal.sessions]
    expect_equal(f"sessions stored for the labels {order}", sorted(first.values()), sorted(stored))
    ctx.evidence.saw(f"{len(first)} sessions, each created once, continued by {len(order) - len(first)} messages")


tags = st.lists(st.sampled_from(["area:work", "team:core", "project:site", "client:acme"]), max_size=2, unique=True)


@requirement("SESS-003", profile="commonagent", dims=["own_tags=session", "own_tags=message", "own_tags=both", "profile_tags=some"])
@PROPERTY_SETTINGS
@given(profile_tags=tags, session_tags=tags, message_tags=tags)
def test_prop_a_session_is_stored_with_its_own_tags(profile_tags: list[str], session_tags: list[str], message_tags: list[str]) -> None:
    """Its own tags: the session's and the starting message's; the profile's are the turn's, not
    the session's, unless the session has them too."""
    ctx = context("commonagent", "a session is stored with its own tags")
    ctx.scenario.profile_tags, ctx.scenario.session_tags = profile_tags, session_tags
    ctx.scenario.user_messages = [UserMessage(text="hello", tags=list(message_tags))]
    ctx.add_response(ModelResponse(text="hi"))
    ctx.run()
    ctx.require_kernel_ran()
    record = stored_session(ctx, 1)
    expected = sorted(set(session_tags) | set(message_tags))
    expect_equal(f"tags of the stored session (session {session_tags}, message {message_tags}, profile {profile_tags})", expected, sorted(set(record.tags)))
    ctx.evidence.saw(f"the session stored with its own tags {expected}")
