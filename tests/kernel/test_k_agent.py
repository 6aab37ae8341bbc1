"""Unit tests of 000's face (``CommonAgent.run_turn``) through small in-test fakes."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from reference_kernel.agent import CommonAgent
from reference_kernel.cancel import CancellationToken
from reference_kernel.config import (
    AddContext,
    AskUser,
    Block,
    DelegateSpec,
    HookRegistry,
    Modify,
    ProfileConfig,
    Replace,
    ToolSpec,
    current_call,
)

from conformance.boundary.scenario import COMMONAGENT_HOOK_POINTS
from kernel_fakes import ListProvider, Log, call, text
from kernel_fakes import recording_hooks as _recording_hooks

POINTS = COMMONAGENT_HOOK_POINTS


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param



def recording_hooks(log: Log, outcomes: dict[str, Any] | None = None) -> HookRegistry:
    return _recording_hooks(POINTS, log, outcomes)


def echo(log: Log):
    async def run(args: dict[str, Any], turn: Any) -> str:
        log.events.append(("tool", args))
        return f"ran {json.dumps(args, sort_keys=True)}"

    return run


def agent(provider: Any, tools: Any = (), hooks: HookRegistry | None = None, approver: Any = None, **profile: Any) -> CommonAgent:
    return CommonAgent(ProfileConfig(system_prompt="SOUL", **profile), provider, tools, hooks, approver=approver)


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool_result"]


@pytest.mark.anyio
async def test_hook_order_of_a_turn_with_a_tool() -> None:
    log = Log()
    provider = ListProvider([call("c1", "t", {"x": 1})], [text("answer")])
    a = agent(provider, [(ToolSpec(name="t"), echo(log))], recording_hooks(log))
    r = await a.run_turn(None, "hello")
    assert (r.status, r.reply) == ("completed", "answer")
    assert log.points() == [
        "on_session_start",
        "pre_llm_call",
        "pre_api_request",
        "post_api_request",
        "pre_tool_call",
        "tool",
        "post_tool_call",
        "transform_tool_result",
        "pre_api_request",
        "post_api_request",
        "transform_llm_output",
        "post_llm_call",
        "on_session_end",
    ]
    log.events.clear()
    await a.run_turn(r.session_id, "again")
    assert "on_session_start" not in log.points()  # only when the session is new


@pytest.mark.anyio
async def test_block_askuser_modify_texts_and_records() -> None:
    log = Log()
    provider = ListProvider(
        [call("b", "t"), call("d", "t"), call("o", "t"), call("m", "t", {"a": 1, "b": 2})], [text("done")]
    )

    def pre(payload: dict[str, Any]) -> Any:
        return {
            "b": Block("too dangerous"),
            "d": AskUser("may I?"),
            "o": AskUser("may I?"),
            "m": Modify({"b": 3}),
        }[payload["call_id"]]

    answers = iter(["denied", "timed_out"])
    asked: list[dict[str, Any]] = []

    async def approver(request: dict[str, Any], turn: Any) -> str:
        asked.append(request)
        return next(answers)

    a = agent(provider, [(ToolSpec(name="t", risk="high"), echo(log))], recording_hooks(log, {"pre_tool_call": pre}), approver)
    await a.run_turn(None, "go")
    results = {m["call_id"]: m for m in tool_results(provider.requests[1])}
    assert results["b"] == {"role": "tool_result", "call_id": "b", "content": "Blocked: too dangerous", "is_error": True}
    assert results["d"]["content"] == "Not approved (denied)" and results["d"]["is_error"]
    assert results["o"]["content"] == "Not approved (timed_out)"
    assert results["m"]["content"] == 'ran {"a": 1, "b": 3}' and not results["m"]["is_error"]
    assert [e[1] for e in log.events if e[0] == "tool"] == [{"a": 1, "b": 3}]
    assert asked[0]["prompt"] == "may I?" and asked[0]["risk"] == "high"
    post = [p for e, p in log.events if e == "post_tool_call"]
    assert {p["call_id"] for p in post} == {"b", "d", "o", "m"}  # blocked calls too
    records = {r["call_id"]: r for r in (await a.journal.dump())["tool_calls"]}
    assert records["d"]["approval"] == "denied" and records["o"]["approval"] == "timed_out"
    assert records["b"]["approval"] is None and records["m"]["args"] == {"a": 1, "b": 3}


@pytest.mark.anyio
async def test_approved_call_runs_and_transform_tool_result() -> None:
    log = Log()
    provider = ListProvider([call("c", "t")], [text("done")])

    async def approver(request: dict[str, Any], turn: Any) -> str:
        return "approved"

    outcomes = {"pre_tool_call": AskUser("ok?"), "transform_tool_result": Replace("rewritten")}
    a = agent(provider, [(ToolSpec(name="t"), echo(log))], recording_hooks(log, outcomes), approver)
    await a.run_turn(None, "go")
    assert tool_results(provider.requests[1])[0]["content"] == "rewritten"
    assert (await a.journal.dump())["tool_calls"][0]["approval"] == "approved"


@pytest.mark.anyio
async def test_context_for_model_only_and_prompt_tiers() -> None:
    log = Log()
    now = [1_000_000.0]
    provider = ListProvider([text("a1")], [text("a2")])
    hooks = recording_hooks(log, {"pre_llm_call": AddContext("CTX")})
    a = CommonAgent(ProfileConfig(system_prompt="SOUL"), provider, (), hooks, clock=lambda: now[0])
    r = await a.run_turn(None, "question")
    msgs = provider.requests[0]["messages"]
    assert msgs[0]["role"] == "system" and msgs[0]["text"].startswith("SOUL")
    assert msgs[1:] == [{"role": "user", "text": "CTX"}, {"role": "user", "text": "question"}]
    stored = [m["message"] for m in (await a.journal.dump())["messages"]]
    assert all(m.get("text") != "CTX" for m in stored)
    now[0] += 3600
    await a.run_turn(r.session_id, "next")
    first, second = provider.requests[0]["messages"][0]["text"], provider.requests[1]["messages"][0]["text"]
    assert first.split("\n\n")[1] == second.split("\n\n")[1]  # context tier frozen
    assert first.split("\n\n")[2] != second.split("\n\n")[2]  # volatile tier moves


@pytest.mark.anyio
async def test_max_iterations_budget_exhausted_without_extra_call() -> None:
    provider = ListProvider([call("c", "t")])
    a = agent(provider, [(ToolSpec(name="t"), echo(Log()))], max_iterations=3)
    r = await a.run_turn(None, "go")
    assert r.status == "budget_exhausted" and len(provider.requests) == 3


@pytest.mark.anyio
async def test_parallel_unless_interactive() -> None:
    events = {"a": anyio.Event(), "b": anyio.Event()}

    async def meet(args: dict[str, Any], turn: Any) -> str:
        events[current_call.get()["id"]].set()
        with anyio.fail_after(2):
            for e in events.values():
                await e.wait()
        return "met"

    provider = ListProvider([call("a", "t"), call("b", "t")], [text("ok")])
    await agent(provider, [(ToolSpec(name="t"), meet)]).run_turn(None, "go")
    assert [m["content"] for m in tool_results(provider.requests[1])] == ["met", "met"]

    state = {"now": 0, "max": 0}

    async def probe(args: dict[str, Any], turn: Any) -> str:
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        state["now"] -= 1
        return "p"

    provider = ListProvider([call("a", "t"), call("b", "ask")], [text("ok")])
    tools = [(ToolSpec(name="t"), probe), (ToolSpec(name="ask", kind="interactive"), probe)]
    await agent(provider, tools).run_turn(None, "go")
    assert state["max"] == 1


@pytest.mark.anyio
async def test_results_in_order_asked() -> None:
    b_done = anyio.Event()

    async def run(args: dict[str, Any], turn: Any) -> str:
        cid = current_call.get()["id"]
        if cid == "a":
            with anyio.fail_after(2):
                await b_done.wait()
        else:
            b_done.set()
        return cid

    provider = ListProvider([call("a", "t"), call("b", "t")], [text("ok")])
    a = agent(provider, [(ToolSpec(name="t"), run)])
    await a.run_turn(None, "go")
    assert [m["call_id"] for m in tool_results(provider.requests[1])] == ["a", "b"]


@pytest.mark.anyio
async def test_cancel_interrupts_and_order_of_finish() -> None:
    token = CancellationToken()

    async def blocking():
        yield text("part")
        token.cancel()
        await anyio.sleep_forever()

    log = Log()
    a = agent(ListProvider(blocking), (), recording_hooks(log))
    with anyio.fail_after(2):
        r = await a.run_turn(None, "go", token=token)
    assert r.status == "interrupted"
    assert ("agent_loop_stopped", {"reason": "cancelled"}) in log.events
    assert log.points()[-2:] == ["agent_loop_stopped", "on_session_end"]
    assert log.events[-1][1]["status"] == "interrupted"
    dump = await a.journal.dump()
    assert [m["message"]["role"] for m in dump["messages"]] == ["user"]  # nothing partial
    assert dump["turns"][0]["status"] == "interrupted"


@pytest.mark.anyio
async def test_status_stored_before_on_session_end() -> None:
    seen: list[Any] = []
    hooks = HookRegistry()
    holder: dict[str, CommonAgent] = {}

    async def on_end(point: str, payload: Any, turn: Any) -> None:
        seen.append((await holder["a"].journal.dump())["turns"][0]["status"])

    hooks.register("on_session_end", "end", on_end)
    holder["a"] = agent(ListProvider([text("hi")]), (), hooks)
    await holder["a"].run_turn(None, "go")
    assert seen == ["completed"]


@pytest.mark.anyio
async def test_model_error_hooks_and_status() -> None:
    class Err(Exception):
        status = 429
        message = "slow down"

    async def failing():
        raise Err("429: slow down")
        yield  # pragma: no cover

    log = Log()
    a = agent(ListProvider(failing), (), recording_hooks(log))
    r = await a.run_turn(None, "go")
    assert r.status == "error" and "rate_limit" in r.error
    assert log.points()[-3:] == ["api_request_error", "transform_api_error_classification", "on_session_end"]
    assert dict(log.events)["api_request_error"] == {"status": 429, "message": "slow down"}


@pytest.mark.anyio
async def test_transform_llm_output_replaces_reply() -> None:
    log = Log()
    a = agent(ListProvider([text("raw")]), (), recording_hooks(log, {"transform_llm_output": Replace({"text": "polished"})}))
    r = await a.run_turn(None, "go")
    assert r.reply == "polished"
    assert dict(log.events)["post_llm_call"] == {"text": "polished"}


@pytest.mark.anyio
async def test_session_lock_serialises_turns_of_one_session() -> None:
    release = anyio.Event()
    first_started = anyio.Event()
    order: list[str] = []

    async def first():
        order.append("first model call")
        first_started.set()
        with anyio.fail_after(2):
            await release.wait()
        yield text("one")

    async def second():
        order.append("second model call")
        yield text("two")

    a = agent(ListProvider(first, second))
    sid = await a.new_session("s")
    other = await a.new_session("other")
    results: dict[str, Any] = {}

    async def run(name: str, session: str) -> None:
        results[name] = await a.run_turn(session, name)

    with anyio.fail_after(3):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "m1", sid)
            await first_started.wait()
            tg.start_soon(run, "m2", sid)
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            assert order == ["first model call"]  # the second message waits for the lock
            release.set()
    assert order == ["first model call", "second model call"]
    history = await a.journal.load_history(sid)
    assert [m.get("text") for m in history] == ["m1", "one", "m2", "two"]
    assert other != sid


@pytest.mark.anyio
async def test_stop_cancels_running_turn() -> None:
    started = anyio.Event()

    async def blocking():
        started.set()
        await anyio.sleep_forever()
        yield text("never")  # pragma: no cover

    a = agent(ListProvider(blocking))
    sid = await a.new_session("s")
    result: dict[str, Any] = {}

    async def run() -> None:
        result["r"] = await a.run_turn(sid, "go")

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            assert a.stop(sid)
    assert result["r"].status == "interrupted"


@pytest.mark.anyio
async def test_hook_failure_ends_with_error_and_session_end_once() -> None:
    log = Log()

    def explode(payload: Any) -> Any:
        raise RuntimeError("bad hook")

    a = agent(ListProvider([call("c", "t")], [text("ok")]), [(ToolSpec(name="t"), echo(log))], recording_hooks(log, {"post_tool_call": explode}))
    r = await a.run_turn(None, "go")
    assert r.status == "error" and "rec-post_tool_call" in r.error
    assert log.points().count("on_session_end") == 1


@pytest.mark.anyio
async def test_child_turn_identity() -> None:
    provider = ListProvider([call("d", "delegate", {"goal": "sub goal"})], [text("child says")], [text("parent done")])
    a = agent(provider, [(ToolSpec(name="delegate", delegate=DelegateSpec()), None)], tags=["client:acme"])
    r = await a.run_turn(None, "go")
    assert r.reply == "parent done"
    dump = await a.journal.dump()
    parent_turn, child_turn = (t["turn"] for t in dump["turns"])
    assert child_turn["parent_turn_id"] == parent_turn["turn_id"] and child_turn["depth"] == 1
    assert child_turn["tags"] == ["client:acme"]
    assert dump["sessions"][1]["title"] == "sub goal"
    assert tool_results(provider.requests[2])[0]["content"] == "child says"


@pytest.mark.anyio
async def test_cancelling_parent_stops_child_turn() -> None:
    token = CancellationToken()

    async def child_blocks():
        token.cancel()
        await anyio.sleep_forever()
        yield text("never")  # pragma: no cover

    log = Log()
    provider = ListProvider([call("d", "delegate", {"goal": "g"})], child_blocks)
    a = agent(provider, [(ToolSpec(name="delegate", delegate=DelegateSpec()), None)], recording_hooks(log))
    with anyio.fail_after(2):
        r = await a.run_turn(None, "go", token=token)
    assert r.status == "interrupted"
    assert [t["status"] for t in (await a.journal.dump())["turns"]] == ["interrupted", "interrupted"]
    assert log.points().count("on_session_end") == 2 and log.points().count("agent_loop_stopped") == 2


@pytest.mark.anyio
async def test_schema_checked_after_modify() -> None:
    log = Log()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    provider = ListProvider([call("fixed", "t", {"n": "x"}), call("bad", "t", {"n": "y"})], [text("ok")])

    def pre(payload: dict[str, Any]) -> Any:
        return Modify({"n": 7}) if payload["call_id"] == "fixed" else None

    a = agent(provider, [(ToolSpec(name="t", input_schema=schema), echo(log))], recording_hooks(log, {"pre_tool_call": pre}))
    await a.run_turn(None, "go")
    results = {m["call_id"]: m for m in tool_results(provider.requests[1])}
    assert results["fixed"] == {"role": "tool_result", "call_id": "fixed", "content": 'ran {"n": 7}', "is_error": False}
    assert results["bad"]["is_error"] and "integer" in results["bad"]["content"]


@pytest.mark.anyio
async def test_on_session_end_failure_is_recorded_once() -> None:
    log = Log()

    def explode(payload: Any) -> Any:
        raise RuntimeError("end hook broke")

    a = agent(ListProvider([text("hi")]), (), recording_hooks(log, {"on_session_end": explode}))
    r = await a.run_turn(None, "go")
    assert r.status == "error" and "end hook broke" in r.error
    assert log.points().count("on_session_end") == 1
    assert (await a.journal.dump())["turns"][0]["status"] == "error"
