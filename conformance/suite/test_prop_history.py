"""Properties of the history a later turn sees (000 step 2: "The session's active messages are
loaded, oldest first. The new user message is appended and stored"; TURN-003, MSG-002).

Generated sessions of 2-3 turns; each turn makes 0-2 tool-calling model calls of 1-2 calls each
(each call runs, fails, is blocked by pre_tool_call or denied by the approver, so results carry
their error flags) before its final answer; user texts
may carry surrounding whitespace; the second message may arrive while the first turn runs (it
waits on the session lock). The check needs no model of how a kernel words an error result: a
later turn's first request must hold, message for message (role, text, calls with their ids,
names and arguments, result content and error flag), the conversation the previous turn's last
request held, then that turn's final answer, then the new user message exactly as sent.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from conformance.boundary.scenario import (
    AskUser,
    Block,
    CallScript,
    HookHold,
    HookMatch,
    ModelResponse,
    ScriptedOutcome,
    ScriptedToolCall,
    ToolDef,
    UserMessage,
)
from conformance.errors import ConformanceFailure
from conformance.steps.turn import conversation, event_turn_id, require_turns_one_at_a_time, stored_messages, top_level_turn_ids
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement

#: What becomes of one call: it runs, its tool fails, pre_tool_call blocks it, or the approver
#: denies it (each gives the model a result of its own, with its own error flag).
OUTCOMES = ["ok", "fail", "block", "deny"]
#: A turn: its tool-calling model calls, each a list of calls (what becomes of each).
turns_strategy = st.lists(st.lists(st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=2), max_size=2), min_size=2, max_size=3)
pads = st.sampled_from(["", " ", "  ", "\t ", " \n"])


def normal(message: Any) -> Any:
    """A message as compared across turns: missing and null fields alike, the error flag of a
    tool result false unless set, arguments as parsed JSON."""
    if not isinstance(message, dict):
        return message
    out: dict[str, Any] = {"role": message.get("role")}
    if message.get("text") not in (None, ""):
        out["text"] = message.get("text")
    calls = []
    for c in message.get("tool_calls") or []:
        args = c.get("args") if isinstance(c, dict) else None
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        calls.append((c.get("id"), c.get("name"), json.dumps(args, sort_keys=True)) if isinstance(c, dict) else c)
    if calls:
        out["tool_calls"] = calls
    if message.get("role") == "tool_result":
        out.update(call_id=message.get("call_id"), content=message.get("content"), is_error=bool(message.get("is_error")))
    return out


def _build(ctx: Any, turns: list[list[list[str]]], pad: str, waits: bool) -> list[str]:
    """The scenario: one session, the turns' scripts in order; returns the user texts."""
    ctx.add_tool(ToolDef(name="lookup", result="found {args}"))
    texts = []
    for t, iterations in enumerate(turns, start=1):
        for i, calls in enumerate(iterations, start=1):
            scripted = []
            for j, outcome in enumerate(calls, start=1):
                cid = f"t{t}i{i}c{j}"
                scripted.append(ScriptedToolCall(id=cid, name="lookup", args={"q": cid}))
                if outcome == "fail":
                    ctx.scenario.calls[cid] = CallScript(error=f"lookup {cid} broke")
                elif outcome == "block":
                    gate = ctx.hook("gate", "pre_tool_call")
                    gate.script.append(ScriptedOutcome(when=HookMatch(call_id=cid), outcome=Block(reason=f"no {cid}")))
                elif outcome == "deny":
                    gate = ctx.hook("gate", "pre_tool_call")
                    gate.script.append(ScriptedOutcome(when=HookMatch(call_id=cid), outcome=AskUser(prompt=f"{cid}?")))
                    ctx.scenario.approver.append("denied")
            ctx.add_response(ModelResponse(tool_calls=scripted))
        ctx.add_response(ModelResponse(text=f"answer {t}"))
        texts.append(f"{pad}question {t}{pad}")
    ctx.scenario.user_messages = [
        UserMessage(text=text, session="s1", concurrent=(waits and k == 1)) for k, text in enumerate(texts)
    ]
    if waits and turns[0]:
        # The second message comes while the first turn's first call runs, and that turn then
        # lingers in post_tool_call: the second message's turn is surely waiting on the lock.
        ctx.scenario.calls.setdefault("t1i1c1", CallScript()).hold_until_submitted = 1
        ctx.scenario.hold_hooks.append(HookHold(point="post_tool_call", occurrence=0))
    return texts


def _requests_by_turn(ctx: Any) -> list[list[dict[str, Any]]]:
    ids = top_level_turn_ids(ctx)
    return [[e for e in ctx.events("model_request") if event_turn_id(e) == tid] for tid in ids]


@requirement(
    "TURN-003",
    profile="commonagent",
    dims=["turns=2", "turns=3", "history=with-tool-calls", "history=with-error-results", "history=text-only",
          "result=ok", "result=failed", "result=blocked", "result=denied",
          "calls_per_response=1", "calls_per_response=2", "second_message=waits-on-lock", "second_message=after-turn"],
)
@PROPERTY_SETTINGS
@given(turns=turns_strategy, waits=st.booleans())
@example(turns=[[["ok"], ["fail", "deny"]], [["block"]]], waits=True)
def test_prop_a_later_turn_sees_the_earlier_turns_whole(turns: list[list[list[str]]], waits: bool) -> None:
    # Plain user texts: whitespace around them is MSG-002's (stored as sent); a kernel may
    # normalise its API copy (hermes strips every message's text, conversation_loop.py:1043-1051).
    ctx = context("commonagent", "a later turn sees the earlier turns whole")
    texts = _build(ctx, turns, "", waits)
    ctx.run()
    ctx.require_kernel_ran()
    if waits:  # the second message came while the first turn ran: the lock keeps them apart
        require_turns_one_at_a_time(ctx)
    by_turn = ctx.evidence.require("model requests of every turn", _requests_by_turn(ctx))
    if len(by_turn) != len(texts) or not all(by_turn):
        raise ConformanceFailure("model calls per turn", f"{len(texts)} turns, each calling the model", [len(r) for r in by_turn])
    for t in range(1, len(texts)):
        previous = [normal(m) for m in conversation(by_turn[t - 1][-1]["request"])]
        expected = previous + [{"role": "assistant", "text": f"answer {t}"}, {"role": "user", "text": texts[t]}]
        observed = [normal(m) for m in conversation(by_turn[t][0]["request"])]
        if observed != expected:
            first = next((i for i, (a, b) in enumerate(zip(expected, observed, strict=False)) if a != b), min(len(expected), len(observed)))
            raise ConformanceFailure(
                f"the first model request of user message {t + 1} (message {first + 1} of its conversation)",
                f"the conversation of the previous turn's last request, its answer, then the user message: {expected[first:first + 2]}",
                f"{observed[first:first + 2]} ({len(observed)} messages, {len(expected)} expected)",
            )
        users = [m.get("text") for m in observed if m.get("role") == "user"]
        if users != texts[: t + 1]:
            raise ConformanceFailure(f"the user messages in the first model request of user message {t + 1}", texts[: t + 1], users)
    ctx.evidence.saw(f"{len(texts)} turns, each later one seeing the earlier ones whole")


@requirement("MSG-002", profile="commonagent", dims=["user_text=surrounding-whitespace", "user_text=plain", "turn=first", "turn=later"])
@PROPERTY_SETTINGS
@given(pad=pads, later=st.booleans())
def test_prop_user_text_is_stored_as_sent(pad: str, later: bool) -> None:
    """The stored user message holds the text the user sent, surrounding whitespace included.
    Records with no turn id (filing a message under its turn is JOURNAL-002's subject) are read
    as the session's: its user messages, in storing order, are each text as sent."""
    ctx = context("commonagent", "user text stored as sent")
    texts = _build(ctx, [[], []] if later else [[]], pad, False)
    ctx.run()
    ctx.require_kernel_ran()
    k = len(texts)
    stored = [m.get("text") for m in stored_messages(ctx, k) if isinstance(m, dict) and m.get("role") == "user"]
    ctx.evidence.require(f"user messages stored for user message {k}", stored)
    # A journal whose messages carry no turn id (storing turns is JOURNAL-002's subject) gives the
    # session's messages for any turn: then every text sent is expected, in order, each as sent.
    expected = [texts[-1]] if any(r.turn_id for r in ctx.result.journal.messages) else texts
    if stored != expected:
        raise ConformanceFailure(f"the user messages stored for user message {k}", [repr(t) for t in expected], [repr(s) for s in stored])
    ctx.evidence.saw(f"the user text {texts[-1]!r} stored as sent")


#: More turns than any window a kernel might keep of its history (a 64-message window, a
#: 100-message one...): 000 loads "the session's active messages", all of them.
LONG_SESSION_TURNS = 60


@requirement("TURN-003", profile="commonagent", dims=["turns=many", "history=longer-than-a-window"])
def test_prop_a_long_history_is_sent_whole() -> None:
    """The last turn of a 60-turn session sends all 119 earlier messages, oldest first, then its own."""
    ctx = context("commonagent", "a long history is sent whole")
    texts = [f"question {t}" for t in range(1, LONG_SESSION_TURNS + 1)]
    for t in range(1, LONG_SESSION_TURNS + 1):
        ctx.add_response(ModelResponse(text=f"answer {t}"))
    ctx.scenario.user_messages = [UserMessage(text=text, session="s1") for text in texts]
    ctx.scenario.timeout_s = 20.0
    ctx.run()
    ctx.require_kernel_ran()
    requests = ctx.evidence.require("model requests", ctx.model_requests())
    expected = []
    for t, text in enumerate(texts, start=1):
        expected += [{"role": "user", "text": text}, {"role": "assistant", "text": f"answer {t}"}]
    expected = expected[:-1]
    observed = [normal(m) for m in conversation(requests[-1])]
    if observed != expected:
        missing = len(expected) - len(observed)
        raise ConformanceFailure(
            f"the last model request of a {LONG_SESSION_TURNS}-turn session",
            f"all {len(expected)} messages of the session, oldest first",
            f"{len(observed)} messages{f' ({missing} fewer)' if missing > 0 else ''}, starting {observed[:2]}",
        )
    ctx.evidence.saw(f"{len(observed)} messages of a {LONG_SESSION_TURNS}-turn session sent whole")
