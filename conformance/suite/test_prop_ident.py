"""Properties of 001's ids: however many messages go to however many sessions, each turn gets a
new turn_id and the turns of one session share its session_id (IDENT-007), every id is a UUID v7
(IDENT-005), and a later turn's or session's id sorts after the earlier ones' (IDENT-006). One
property per requirement, so a kernel failing one rule is not reported failing the others."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import ConformanceFailure, expect_equal
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ModelResponse
from conformance.steps.ident import increasing_problem, message_turn, uuid7_problem

sessions = st.lists(st.sampled_from(["s1", "s2", "s3"]), min_size=2, max_size=5)


def _turns(labels: list[str], name: str, ctx: Any = None) -> list[dict[str, Any]]:
    ctx = ctx or context("commonagent", name)
    ctx.merge({"clock": {"advance_per_model_call": 0.002}})  # each turn in a later millisecond
    for i, label in enumerate(labels):
        ctx.add_user_message(f"message {i + 1}", session=label)
        ctx.add_response(ModelResponse(text=f"answer {i + 1}"))
    ctx.run()
    ctx.require_kernel_ran()
    turns = [message_turn(ctx, k) for k in range(1, len(labels) + 1)]
    ctx.evidence.require("turns of the run", turns)
    return turns


@requirement("IDENT-007", profile="commonagent")
@PROPERTY_SETTINGS
@given(labels=sessions)
def test_prop_new_turn_id_per_turn_one_session_id_per_session(labels: list[str]) -> None:
    turns = _turns(labels, "a new turn id per turn, one session id per session")
    ids = [t.get("turn_id") for t in turns]
    expect_equal(f"distinct turn ids of {len(ids)} turns", len(ids), len(set(ids)))
    by_label: dict[str, set[Any]] = {}
    for label, turn in zip(labels, turns, strict=True):
        by_label.setdefault(label, set()).add(turn.get("session_id"))
    for label, ids_of_label in by_label.items():
        expect_equal(f"session ids of the turns of session {label!r}", 1, len(ids_of_label))
    firsts = [next(iter(v)) for v in by_label.values()]
    expect_equal("distinct session ids of distinct sessions", len(firsts), len(set(firsts)))


@requirement("IDENT-005", profile="commonagent")
@PROPERTY_SETTINGS
@given(labels=sessions)
def test_prop_ids_are_uuid7(labels: list[str]) -> None:
    for k, turn in enumerate(_turns(labels, "ids are UUID v7"), start=1):
        for key in ("session_id", "turn_id"):
            problem = uuid7_problem(turn.get(key))
            if problem:
                raise ConformanceFailure(f"{key} of the turn of message {k}", "a UUID v7", problem)


@requirement("IDENT-006", profile="commonagent")
@PROPERTY_SETTINGS
@given(labels=sessions)
def test_prop_ids_sort_by_creation(labels: list[str]) -> None:
    """Ids made in different milliseconds sort by creation; ids of one millisecond are not
    compared unless the kernel declares the monotonic reading (uuid7-same-millisecond)."""
    ctx = context("commonagent", "ids sort by creation")
    turns = _turns(labels, "ids sort by creation", ctx)
    within_ms = ctx.accepts("uuid7-same-millisecond") == {"monotonic"}
    labelled = [(f"the turn of message {k}", t.get("turn_id")) for k, t in enumerate(turns, start=1)]
    compared, failure = increasing_problem("turn ids", labelled, within_ms)
    if failure is not None:
        raise failure
    firsts = [(f"session {label!r}", turns[labels.index(label)].get("session_id")) for label in dict.fromkeys(labels)]
    n, failure = increasing_problem("session ids", firsts, within_ms)
    if failure is not None:
        raise failure
    ctx.evidence.require("ids made in different milliseconds, compared", compared + n, mandatory=False)
