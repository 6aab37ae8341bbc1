"""Properties of 003's doom-loop detector. Over random sequences of calls (one per turn) drawn
from two or three (tool, arguments) values, with the arguments' key order and whitespace shuffled
on every call, the detector fires exactly at the first turn where the last `threshold`
resource/data-source calls have equal canonical hashes (DOOM-006, DOOM-007); a run of identical
calls fires at the configured threshold and not before (DOOM-004); interactive calls never count
(DOOM-008). Each property varies one thing, so a kernel that breaks one rule fails its own row.

Whether an interactive call *between* identical calls breaks the run is not said (docs/spec-gaps.md):
a sequence whose verdict depends on that reading is skipped.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from conformance.errors import ConformanceFailure, expect_order
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ConcurrencySpec, ModelResponse, ScriptedToolCall, ToolDef

ARGS_A = {"q": 1, "r": "x", "s": [1, 2], "t": {"u": None, "v": True}}
ARGS_B = {"q": 2, "r": "x", "s": [1, 2], "t": {"u": None, "v": True}}

#: label → (tool, kind, args). A and B: one tool, other arguments; C: another tool (a resource)
#: with A's arguments; I: an interactive tool with A's arguments.
VALUES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "A": ("lookup", "data_source", ARGS_A),
    "B": ("lookup", "data_source", ARGS_B),
    "C": ("write", "resource", ARGS_A),
    "I": ("ask", "interactive", ARGS_A),
}

SEPARATORS = [(",", ":"), (", ", ": "), (" , ", " : "), (",\n  ", ":\t")]


def fires_at(labels: list[str], threshold: int) -> int | None:
    """1-based turn at which `threshold` identical resource/data-source calls end a run
    (interactive calls are not in the window)."""
    hashes: list[str] = []
    for turn, label in enumerate(labels, 1):
        if VALUES[label][1] == "interactive":
            continue
        hashes.append(label)
        recent = hashes[-threshold:]
        if len(recent) == threshold and len(set(recent)) == 1:
            return turn
    return None


@st.composite
def raw_json(draw: Any, value: Any) -> str:
    """``value`` as JSON with its object keys in a random order and random insignificant
    whitespace."""
    sep = draw(st.sampled_from(SEPARATORS))

    def render(v: Any) -> str:
        if isinstance(v, dict):
            keys = draw(st.permutations(sorted(v)))
            return "{" + sep[0].join(json.dumps(k) + sep[1] + render(v[k]) for k in keys) + "}"
        if isinstance(v, list):
            return "[" + sep[0].join(render(x) for x in v) + "]"
        return json.dumps(v)

    return render(value)


@st.composite
def doom_cases(draw: Any, labels_from: tuple[str, ...], thresholds: tuple[int, ...]) -> tuple[int, list[str], list[str]]:
    """(threshold, labels, raw arguments per call): 1 to 7 calls drawn from two or three values."""
    pool = draw(st.lists(st.sampled_from(labels_from), min_size=2, max_size=3, unique=True))
    labels = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=7))
    raws = [draw(raw_json(VALUES[label][2])) for label in labels]
    return draw(st.sampled_from(thresholds)), labels, raws


def canonical(labels: list[str]) -> list[str]:
    """The arguments of each call as canonical JSON (one text per value)."""
    return [json.dumps(VALUES[label][2], sort_keys=True, separators=(",", ":")) for label in labels]


def check_sequence(name: str, threshold: int, labels: list[str], raws: list[str]) -> None:
    """Script the calls (one per turn) up to where the detector should fire, then a plain answer,
    and check the kernel fired exactly there (or never)."""
    # 003 compares "the most recent threshold resource/data-source calls": interactive calls
    # between identical ones are not in that window and do not break the run (issue 21).
    k = fires_at(labels, threshold)
    ran_until = k if k is not None else len(labels)
    ctx = context("kernel", name)
    ctx.add_tool(ToolDef(name="lookup", kind="data_source", concurrency=ConcurrencySpec(safe=True)))
    ctx.add_tool(ToolDef(name="write", kind="resource"))
    ctx.add_tool(ToolDef(name="ask", kind="interactive"))
    ctx.merge({"doom_loop": {"threshold": threshold}})
    for i in range(ran_until):
        call = ScriptedToolCall(id=f"c{i + 1}", name=VALUES[labels[i]][0], raw_args=raws[i])
        ctx.add_response(ModelResponse(tool_calls=[call]))
    # Where the final turn is expected (or the sequence ends), a plain answer: a kernel that does
    # not fire there ends with "success", one that fired ends otherwise.
    ctx.add_response(ModelResponse(text="final answer"))
    ctx.run()
    where = f"(threshold {threshold}, calls {' '.join(labels[:ran_until])})"
    expect_order(f"tool calls run {where}", [f"c{i + 1}" for i in range(ran_until)], [e["call_id"] for e in ctx.tool_starts()])
    subtype = ctx.outcome().subtype
    if k is not None and subtype in ("success", None):
        raise ConformanceFailure(f"the doom-loop detector {where}", f"fired at turn {k} (a subtype other than success)", repr(subtype))
    if k is None and subtype != "success":
        raise ConformanceFailure(f"the doom-loop detector {where}", "never fired (subtype success)", repr(subtype))
    # Evidence: the calls the verdict rests on ran (N identical ones when the detector had to fire).
    if k is not None:
        ctx.evidence.saw(f"the detector's situation happened: {threshold} identical calls ran in a row, then it fired")
    elif ran_until:
        ctx.evidence.saw(f"{ran_until} calls ran without {threshold} identical non-interactive ones in a row, and it never fired")


@requirement("DOOM-006", "DOOM-007", profile="kernel")
@PROPERTY_SETTINGS
@given(case=doom_cases(("A", "B", "C"), (3,)))
# Another tool with the same arguments, then three identical calls in shuffled key order.
@example(case=(3, ["A", "C", "A", "A", "A"], ['{"q":1,"r":"x","s":[1,2],"t":{"u":null,"v":true}}', '{"q":1,"r":"x","s":[1,2],"t":{"u":null,"v":true}}', '{"t": {"v": true, "u": null}, "s": [1, 2], "r": "x", "q": 1}', '{"r":"x","q":1,"t":{"u":null,"v":true},"s":[1,2]}', '{ "s" : [ 1 , 2 ] , "q" : 1 , "r" : "x" , "t" : { "u" : null , "v" : true } }']))
def test_prop_doom_loop_fires_on_consecutive_canonical_hashes(case: tuple[int, list[str], list[str]]) -> None:
    """Random sequences over two or three (tool, arguments) values, the arguments' key order and
    whitespace shuffled on every call: the detector fires exactly at the first `threshold`
    consecutive equal canonical hashes; another tool or other arguments break the run."""
    threshold, labels, raws = case
    check_sequence("doom loop fires on consecutive canonical hashes", threshold, labels, raws)


@requirement("DOOM-001", "DOOM-004", profile="kernel")
@PROPERTY_SETTINGS
@given(threshold=st.integers(3, 5), n=st.integers(1, 6))
def test_prop_doom_loop_threshold(threshold: int, n: int) -> None:
    """n identical calls (same text): the detector fires at the threshold-th, never before."""
    labels = ["A"] * n
    check_sequence("doom loop fires at the configured threshold", threshold, labels, canonical(labels))


@requirement("DOOM-008", profile="kernel", dims=["kinds=interactive_only", "kinds=data_source_between_interactive", "calls_per_response=1"])
@PROPERTY_SETTINGS
@given(case=doom_cases(("A", "I"), (3, 4)))
@example(case=(3, ["I", "I", "I", "A"], ['{"q":1,"r":"x","s":[1,2],"t":{"u":null,"v":true}}'] * 4))
@example(case=(3, ["A", "I", "A", "I", "A"], ['{"q":1,"r":"x","s":[1,2],"t":{"u":null,"v":true}}'] * 5))
def test_prop_doom_loop_ignores_interactive_calls(case: tuple[int, list[str], list[str]]) -> None:
    """Interactive calls never count, however often they repeat (arguments as canonical text)."""
    threshold, labels, _raws = case
    check_sequence("doom loop ignores interactive calls", threshold, labels, canonical(labels))
