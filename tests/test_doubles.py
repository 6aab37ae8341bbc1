"""The harness doubles on their own: scripted model, instrumented tools, hooks, policy, approver,
clock and cancel points, on asyncio and trio."""

from __future__ import annotations

import copy
import json
import pickle
import random

import anyio
import pytest

from conformance.boundary.adapter import ModelCallError, ToolFailed
from conformance.errors import show
from conformance.harness.doubles import EXHAUSTED_TEXT, HarnessDoubles, HookRaised, split_text
from conformance.boundary.scenario import Scenario

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


def make(**fields) -> HarnessDoubles:
    return HarnessDoubles(Scenario.model_validate({"name": "t", "profile": "kernel", **fields}))


async def collect(d: HarnessDoubles, request: dict | None = None) -> list[dict]:
    return [c async for c in d.model_stream(request or {"messages": []}, {"turn_id": "t1"})]


def test_split_text() -> None:
    assert split_text("abcdefg", 3) == ["abc", "de", "fg"]
    assert split_text("ab", 5) == ["a", "b"]
    assert "".join(split_text("hello world", 4)) == "hello world"


async def test_model_script_repeat_ids_chunks_and_usage() -> None:
    d = make(
        model={
            "responses": [
                {"tool_calls": [{"id": "x", "name": "t", "args": {"a": 1}}], "repeat": 3},
                {"tool_calls": [{"name": "t"}, {"name": "u", "raw_args": "{bad"}]},
                {"text": "hello world", "chunks": 3, "usage": {"input_tokens": 5, "output_tokens": 2}},
            ]
        }
    )
    ids = []
    for _ in range(4):
        ids += [c["id"] for c in await collect(d) if c["type"] == "tool_use"]
    assert ids == ["x", "x_r1", "x_r2", "c3_0", "c3_1"]
    chunks = await collect(d)
    assert [c["text"] for c in chunks if c["type"] == "text"] == ["hell", "o wo", "rld"]
    assert chunks[-1] == {"type": "usage", "input_tokens": 5, "output_tokens": 2, "cached_input_tokens": 0}
    requests = d.log.of("model_request")
    assert [e["index"] for e in requests] == [0, 1, 2, 3, 4]
    assert d.log.of("model_response")[3]["chunks"][1]["input_json"] == "{bad"


async def test_request_is_deep_copied() -> None:
    d = make(model={"responses": [{"text": "a"}]})
    request = {"messages": [{"role": "user", "text": "hi"}]}
    await collect(d, request)
    request["messages"][0]["text"] = "changed"
    assert d.log.of("model_request")[0]["request"]["messages"][0]["text"] == "hi"


async def test_a_growing_history_is_copied_once_and_changes_in_place_are_seen() -> None:
    d = make(model={"responses": [{"text": "a", "repeat": 4}]})
    history = [{"role": "user", "text": "hi"}]
    request = {"messages": history}
    await collect(d, request)
    history.append({"role": "assistant", "text": "a"})
    await collect(d, request)
    history[0]["text"] = "edited"  # changed in place: the next request must show it
    history.append({"role": "user", "text": "again"})
    await collect(d, request)
    await collect(d, {"messages": [dict(m) for m in history]})  # other objects, same content
    logged = [e["request"]["messages"] for e in d.log.of("model_request")]
    assert [[m["text"] for m in ms] for ms in logged] == [
        ["hi"],
        ["hi", "a"],
        ["edited", "a", "again"],
        ["edited", "a", "again"],
    ]
    assert logged[1][0] is logged[0][0]  # unchanged: the earlier copy, not a new one
    assert logged[1] is not logged[0]


def logged_messages(d: HarnessDoubles) -> list:
    return [e["request"]["messages"] for e in d.log.of("model_request")]


async def test_a_message_changed_in_place_shows_old_content_before_and_new_after() -> None:
    """A prompt-cache marker moved from one message to the next, an old tool result truncated,
    a nested block edited: each request's entry keeps what that request held."""
    d = make(model={"responses": [{"text": "a", "repeat": 5}]})
    history = [
        {"role": "user", "text": "go", "cache": True},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "t", "args": {"q": 1}}]},
        {"role": "tool_result", "call_id": "c1", "content": "a long result"},
    ]
    sent = []
    for change in (
        lambda: None,
        lambda: (history[0].pop("cache"), history[2].update(cache=True)),  # the marker moves on
        lambda: history[2].update(content="[truncated]"),
        lambda: history[1]["tool_calls"][0]["args"].update(q=2),  # nested, in place
        lambda: history[2].update(content="a long result"),  # and back to an earlier content
    ):
        change()
        history.append({"role": "user", "text": f"m{len(sent)}"})
        sent.append(copy.deepcopy(history))
        await collect(d, {"messages": history})
    logged = logged_messages(d)
    assert [list(ms) for ms in logged] == sent
    assert [ms[2]["content"] for ms in logged] == ["a long result"] * 2 + ["[truncated]"] * 2 + ["a long result"]
    assert "cache" in logged[0][0] and "cache" not in logged[1][0] and logged[1][2]["cache"] is True
    assert logged[2][1]["tool_calls"][0]["args"] == {"q": 1} and logged[3][1]["tool_calls"][0]["args"] == {"q": 2}
    assert logged[4][3] is logged[0][3]  # unchanged: one copy for all


@pytest.mark.parametrize("variant", ["grown", "new list", "fresh dicts"])
async def test_a_grown_list_a_new_list_and_fresh_dicts_give_the_same_log(variant: str) -> None:
    d = make(model={"responses": [{"text": "a", "repeat": 6}]})
    history: list[dict] = [{"role": "user", "text": "go"}]
    sent = []
    for i in range(6):
        messages = {"grown": history, "new list": list(history), "fresh dicts": json.loads(json.dumps(history))}[variant]
        sent.append(copy.deepcopy(messages))
        await collect(d, {"messages": messages, "tools": []})
        history.append({"role": "assistant", "tool_calls": [{"id": f"c{i}", "name": "t", "args": {}}]})
        history.append({"role": "tool_result", "call_id": f"c{i}", "content": f"r{i}"})
    logged = logged_messages(d)
    assert [list(ms) for ms in logged] == sent
    assert all(ms[0] is logged[0][0] for ms in logged)  # each message copied once
    assert all(logged[-1][i] is ms[i] for ms in logged for i in range(len(ms)))


async def test_a_history_rebuilt_shorter_or_in_another_order_is_logged_as_sent() -> None:
    """Compaction (the history replaced by a summary), a history cut short and grown again, the
    same messages in another order: every entry, old and new, stays what it was."""
    d = make(model={"responses": [{"text": "a", "repeat": 6}]})
    m = [{"role": "user", "text": f"m{i}"} for i in range(6)]
    summary = {"role": "user", "text": "summary"}
    requests = [m[:4], m[:5], [summary, m[4]], [summary, m[4], m[5], m[0]], m[::-1], m[:2]]
    sent = []
    for messages in requests:
        sent.append(copy.deepcopy(messages))
        await collect(d, {"messages": messages})
        m[1]["seen"] = m[1].get("seen", 0) + 1  # changed in place after every request
    assert [list(ms) for ms in logged_messages(d)] == sent


async def test_random_edits_are_all_logged_exactly() -> None:
    """Appends, in-place edits (top level and nested), deletions, reorderings, fresh copies, in
    a seeded random order: every logged request equals what the kernel held at that moment."""
    rng = random.Random(17)
    d = make(model={"responses": [{"text": "a", "repeat": 300}]})
    history: list[dict] = []
    sent = []
    for i in range(300):
        op = rng.randrange(8)
        if op <= 2 or not history:
            history.append({"role": "user", "text": f"m{i}", "blocks": [{"text": str(i)}]})
        elif op == 3:
            rng.choice(history)["text"] = f"edited {i}"
        elif op == 4:
            rng.choice(history)["blocks"].append({"cache": i})
        elif op == 5:
            del history[rng.randrange(len(history))]
        elif op == 6:
            rng.shuffle(history)
        else:
            history = json.loads(json.dumps(history))
        sent.append(copy.deepcopy(history))
        await collect(d, {"messages": history})
    assert [list(ms) for ms in logged_messages(d)] == sent
    assert [ms[j] for ms in logged_messages(d) for j in range(len(ms))] == [x for s in sent for x in s]


async def test_changes_across_comparison_blocks_are_all_seen() -> None:
    """A long history (compared by blocks of 256): changes at the blocks' edges, several at once."""
    d = make(model={"responses": [{"text": "a", "repeat": 5}]})
    history = [{"role": "user", "text": f"m{i}"} for i in range(600)]
    sent = []
    for edits in ([], [0, 255, 256, 511, 512, 599], [257], [], [1, 300, 598]):
        for j in edits:
            history[j]["text"] += "*"
        sent.append(copy.deepcopy(history))
        await collect(d, {"messages": history})
        history.append({"role": "user", "text": f"m{len(history)}"})
    assert [list(ms) for ms in logged_messages(d)] == sent


async def test_logged_messages_read_as_a_list() -> None:
    d = make(model={"responses": [{"text": "a", "repeat": 2}]})
    history = [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "a"}]
    await collect(d, {"messages": history})
    history[0]["text"] = "edited"
    await collect(d, {"messages": history})
    first, second = logged_messages(d)
    expected = [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "a"}]
    assert first == expected and expected == first and first != second and not (first != expected)
    assert first != tuple(expected) and first == logged_messages(d)[0]
    assert len(first) == 2 and bool(first) and first[0] == expected[0] and first[-1] == expected[-1]
    assert first[1:] == expected[1:] and isinstance(first[:1], list) and first[::-1] == expected[::-1]
    assert list(first) == expected and list(reversed(first)) == expected[::-1] and expected[1] in first
    assert first.index(expected[1]) == 1 and first.count(expected[0]) == 1
    assert json.loads(json.dumps(list(first))) == expected
    assert json.loads(json.dumps({"messages": first.copy()})) == {"messages": expected}
    assert show(first) == show(expected) and show({"messages": first}) == show({"messages": expected})
    assert repr(first) == repr(expected)
    assert pickle.loads(pickle.dumps(first)) == expected and copy.deepcopy(first) == expected
    assert type(copy.copy(first)) is list
    with pytest.raises(IndexError):
        first[2]
    with pytest.raises(TypeError):
        first[0] = {}  # read-only
    with pytest.raises(TypeError):
        hash(first)
    assert second[0]["text"] == "edited" and first[0]["text"] == "hi"


async def test_model_errors_at_start_and_after_chunks() -> None:
    d = make(
        model={
            "responses": [
                {"text": "x", "error": {"status": 503, "message": "down"}},
                {"text": "abcd", "chunks": 4, "error": {"status": 500, "after_chunks": 2}},
            ]
        }
    )
    with pytest.raises(ModelCallError) as first:
        await collect(d)
    assert first.value.status == 503
    got = []
    with pytest.raises(ModelCallError):
        async for c in d.model_stream({}, {}):
            got.append(c)
    assert [c["text"] for c in got] == ["a", "b"]
    assert [e["status"] for e in d.log.of("model_error")] == [503, 500]


async def test_script_exhausted() -> None:
    d = make()
    chunks = await collect(d)
    assert chunks[0] == {"type": "text", "text": EXHAUSTED_TEXT}
    assert chunks[-1]["input_tokens"] == 0 and chunks[-1]["output_tokens"] == 0
    assert d.log.of("script_exhausted") == [{"seq": 1, "kind": "script_exhausted", "index": 0}]


async def test_a_model_asked_on_and_on_past_its_script_fails_the_call() -> None:
    """After EXHAUSTED_GRACE plain answers past the script, each call fails: a kernel that never
    stops asking ends on a model error instead of spinning until the scenario's timeout."""
    from conformance.harness.doubles import EXHAUSTED_GRACE

    d = make()
    for _ in range(EXHAUSTED_GRACE):
        assert (await collect(d))[0] == {"type": "text", "text": EXHAUSTED_TEXT}
    with pytest.raises(ModelCallError):
        await collect(d)
    assert [e["status"] for e in d.log.of("model_error")] == [500]


async def test_tool_results_templates_scripts_and_failures() -> None:
    d = make(
        tools=[{"name": "t", "result": "{name}:{args}:{call_id}"}],
        calls={"c2": {"result": "scripted"}, "c3": {"error": "boom"}},
    )
    r1 = await d.invoke_tool({"id": "c1", "name": "t", "args": {"b": 2, "a": 1}}, {})
    assert r1 == {"content": 't:{"a":1,"b":2}:c1', "is_error": False}
    assert (await d.invoke_tool({"id": "c2", "name": "t", "args": {}}, {}))["content"] == "scripted"
    with pytest.raises(ToolFailed, match="boom"):
        await d.invoke_tool({"id": "c3", "name": "t", "args": {}}, {})
    unknown = await d.invoke_tool({"id": "c4", "name": "nope", "args": {}}, {})
    assert unknown["is_error"] is True
    ends = d.log.of("tool_end")
    assert [e["call_id"] for e in ends] == ["c1", "c2", "c3", "c4"]
    assert ends[2]["error"] == "boom" and ends[2]["cancelled"] is False
    assert [e["kind"] for e in d.log.events][:2] == ["tool_start", "tool_end"]


async def test_rendezvous_met_when_concurrent() -> None:
    d = make(tools=[{"name": "t"}], rendezvous=[["a", "b", "c"]])
    async with anyio.create_task_group() as tg:
        for cid in "abc":
            tg.start_soon(d.invoke_tool, {"id": cid, "name": "t", "args": {}}, {})
    assert d.log.of("rendezvous_timeout") == []


async def test_rendezvous_times_out_when_sequential() -> None:
    d = make(tools=[{"name": "t"}], rendezvous=[["a", "b"]], timeout_s=0.5)
    with anyio.fail_after(3):
        await d.invoke_tool({"id": "a", "name": "t", "args": {}}, {})
        await d.invoke_tool({"id": "b", "name": "t", "args": {}}, {})
    [timeout] = d.log.of("rendezvous_timeout")
    assert timeout["call_id"] == "a" and timeout["missing"] == ["b"]


async def test_finish_order() -> None:
    d = make(tools=[{"name": "t"}], finish_order=["b", "a"])
    async with anyio.create_task_group() as tg:
        for cid in "ab":
            tg.start_soon(d.invoke_tool, {"id": cid, "name": "t", "args": {}}, {})
    assert [e["call_id"] for e in d.log.of("tool_end")] == ["b", "a"]
    assert d.log.of("finish_order_timeout") == []


async def test_a_finish_order_is_not_forced_on_calls_run_one_at_a_time() -> None:
    """A kernel that runs the calls one after the other never starts a call's predecessor while
    it runs: the call finishes after a short wait for it to start (logged as unmet, no timeout),
    well before the scenario's own timeout, so the result order can still be checked."""
    d = make(tools=[{"name": "t"}], finish_order=["c", "b", "a"], timeout_s=5)
    with anyio.fail_after(2):
        for cid in "abc":
            await d.invoke_tool({"id": cid, "name": "t", "args": {}}, {})
    assert [e["call_id"] for e in d.log.of("tool_end")] == ["a", "b", "c"]
    assert [(e["call_id"], e["waited_for"]) for e in d.log.of("finish_order_unmet")] == [("a", "b"), ("b", "c")]
    assert d.log.of("finish_order_timeout") == []


async def test_hook_matching_and_raise() -> None:
    d = make(
        hooks=[
            {
                "id": "h",
                "point": "pre-tool-call",
                "script": [
                    {"when": {"tool": "t", "occurrence": 1}, "outcome": {"kind": "block", "reason": "no"}},
                    {"when": {"call_id": "c9"}, "outcome": {"kind": "raise", "message": "bad hook"}},
                ],
            },
            {"id": "p", "point": "post-tool-call", "script": [{"when": {"tool": "t"}, "outcome": {"kind": "continue"}}]},
        ]
    )
    payload = {"id": "c1", "name": "t", "args": {}}
    assert await d.dispatch_hook("h", "pre-tool-call", payload, {}) == {"kind": "continue"}
    assert (await d.dispatch_hook("h", "pre-tool-call", payload, {}))["kind"] == "block"
    with pytest.raises(HookRaised, match="bad hook"):
        await d.dispatch_hook("h", "pre-tool-call", {"id": "c9", "name": "u"}, {})
    # post-tool-call's payload nests the call: matched through payload["call"]
    await d.dispatch_hook("p", "post-tool-call", {"call": {"id": "c1", "name": "t"}, "result": {}}, {})
    await d.dispatch_hook("zz", "pre-tool-call", {}, {})
    hooks = d.log.of("hook")
    assert [e["occurrence"] for e in hooks] == [0, 1, 2, 0, 0]
    assert hooks[2]["outcome"]["kind"] == "raise"
    assert len(d.log.of("unknown_hook")) == 1


async def test_policy_approver_clock() -> None:
    d = make(
        policy_deny={"c2": "id denied", "rm": "tool denied"},
        approver=["approved", "timed_out"],
        clock={"start": 100.0, "advance_per_model_call": 2.5},
        model={"responses": [{"text": "a"}]},
    )
    assert (await d.policy_precheck({"id": "c1", "name": "ls"}, {}))["allow"] is True
    assert await d.policy_precheck({"id": "c2", "name": "ls"}, {}) == {"allow": False, "reason": "id denied"}
    assert (await d.policy_precheck({"id": "c3", "name": "rm"}, {}))["reason"] == "tool denied"
    answers = [(await d.ask_approver({"call_id": str(i)}, {}))["decision"] for i in range(3)]
    assert answers == ["approved", "timed_out", "denied"]
    assert d.now() == 100.0
    await collect(d)
    assert d.now() == 102.5


@pytest.mark.parametrize("async_canceller", [False, True])
async def test_cancel_at_model_call_blocks_until_cancelled(async_canceller: bool) -> None:
    d = make(model={"responses": [{"text": "abcd", "chunks": 2}]}, cancel={"at": "model_call", "index": 0})
    got = []
    with anyio.fail_after(3):
        with anyio.CancelScope() as scope:
            if async_canceller:

                async def cancel() -> None:
                    scope.cancel()

                d.register_canceller(0, cancel)
            else:
                d.register_canceller(0, scope.cancel)
            async for chunk in d.model_stream({}, {}):
                got.append(chunk)
    assert scope.cancelled_caught
    assert [c["text"] for c in got] == ["ab", "cd"]
    assert d.log.of("cancel")[0]["where"] == {"at": "model_call", "index": 0}


async def test_cancel_at_hook_and_tool() -> None:
    d = make(
        tools=[{"name": "t"}],
        hooks=[{"id": "h1", "point": "pre-model-call"}],
        cancel={"at": "hook", "point": "pre-model-call", "occurrence": 1},
    )
    calls = []
    d.register_canceller(0, lambda: calls.append("cancelled"))
    await d.dispatch_hook("h1", "pre-model-call", {}, {})
    assert calls == []
    assert await d.dispatch_hook("h1", "pre-model-call", {}, {}) == {"kind": "continue"}
    assert calls == ["cancelled"]
    d2 = make(tools=[{"name": "t"}], cancel={"at": "tool", "call_id": "c1"})
    await d2.invoke_tool({"id": "c1", "name": "t", "args": {}}, {})
    assert d2.log.of("cancel_missing")[0]["where"] == {"at": "tool", "call_id": "c1"}


async def test_journal_writes_and_submissions_go_on_the_log() -> None:
    d = make(user_messages=[{"text": "a"}, {"text": "b", "concurrent": True}], timeout_s=1.0)
    await d.submit_user_message(0)
    d.journal_write("finish_turn", {"status": "completed"}, {"turn_id": "t1"})
    async with anyio.create_task_group() as tg:
        tg.start_soon(d.submit_user_message, 1)  # held until the first message's turn is seen running
        await anyio.sleep(0)
        assert [e["message"] for e in d.log.of("submit")] == [0]
        await d.dispatch_hook("h", "session-start", {}, {"turn_id": "t1"})
    what = {"submit": "message", "journal_write": "op", "hook": "point"}
    kinds = [(e["kind"], e[what[e["kind"]]]) for e in d.log.events if e["kind"] in what]
    assert kinds == [("submit", 0), ("journal_write", "finish_turn"), ("hook", "session-start"), ("submit", 1)]


async def test_a_held_call_waits_for_its_submission() -> None:
    d = make(
        tools=[{"name": "t"}], calls={"a": {"hold_until_submitted": 1}},
        user_messages=[{"text": "a"}, {"text": "b"}],
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(d.invoke_tool, {"id": "a", "name": "t", "args": {}}, {})
        await anyio.sleep(0.01)
        assert not d.log.of("tool_end")
        await d.submit_user_message(1)
    assert [e["kind"] for e in d.log.events] == ["tool_start", "submit", "tool_end"]


async def test_hold_first_waits_for_another_start_and_never_fails() -> None:
    d = make(tools=[{"name": "t"}], hold_first=[["a", "b"]], timeout_s=0.2)
    await d.invoke_tool({"id": "a", "name": "t", "args": {}}, {})  # alone: waits, then goes on
    assert [e["kind"] for e in d.log.events] == ["tool_start", "hold_timeout", "tool_end"]
    d = make(tools=[{"name": "t"}], hold_first=[["a", "b"]])
    async with anyio.create_task_group() as tg:
        tg.start_soon(d.invoke_tool, {"id": "a", "name": "t", "args": {}}, {})
        await anyio.sleep(0.01)
        tg.start_soon(d.invoke_tool, {"id": "b", "name": "t", "args": {}}, {})
    starts_before_first_end = [e["call_id"] for e in d.log.events if e["kind"] == "tool_start"]
    assert starts_before_first_end == ["a", "b"]
    assert d.log.events[2]["kind"] == "tool_end" and d.log.events[2]["call_id"] in ("a", "b")
