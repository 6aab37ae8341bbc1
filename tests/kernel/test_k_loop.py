"""Unit tests of 003's face (``Kernel.run_session``) through small in-test fakes."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from reference_kernel.cancel import CancellationToken
from reference_kernel.concurrency import ConcurrencySpec
from reference_kernel.config import (
    DelegateSpec,
    DoomLoopConfig,
    HookRegistry,
    LoopBounds,
    ProfileConfig,
    Replace,
    ToolSpec,
    Veto,
    current_call,
)
from reference_kernel.cost import Pricing
from reference_kernel.errors import ConfigError
from reference_kernel.kernel import Kernel

from conformance.boundary.scenario import KERNEL_HOOK_POINTS
from kernel_fakes import ListProvider, Log, call, text
from kernel_fakes import recording_hooks as _recording_hooks

SAFE = ConcurrencySpec(safe=True)
POINTS = KERNEL_HOOK_POINTS


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


def recording_hooks(log: Log, outcomes: dict[str, Any] | None = None) -> HookRegistry:
    return _recording_hooks(POINTS, log, outcomes)


def tool(log: Log, name: str = "t"):
    async def run(args: dict[str, Any], turn: Any) -> str:
        log.events.append((f"tool:{name}", current_call.get()["id"]))
        return f"{name} ok"

    return run


def kernel(provider: Any, tools: list[tuple[ToolSpec, Any]] = (), hooks: HookRegistry | None = None, **profile: Any) -> Kernel:
    extra = {k: profile.pop(k) for k in ("clock", "policy", "pricing") if k in profile}
    return Kernel(ProfileConfig(system_prompt="sys", **profile), provider, tools, hooks, **extra)


async def messages(k: Kernel) -> list[dict[str, Any]]:
    return [m["message"] for m in (await k.journal.dump())["messages"]]


# --------------------------------------------------------------------------- step order


@pytest.mark.anyio
async def test_step_order_of_one_turn() -> None:
    log = Log()
    provider = ListProvider([call("c1", "ds"), call("c2", "res")], [text("done")])
    tools = [
        (ToolSpec(name="ds", kind="data_source"), tool(log, "ds")),
        (ToolSpec(name="res", kind="resource"), tool(log, "res")),
    ]
    r = await kernel(provider, tools, recording_hooks(log)).run_session(None, "go")
    assert (r.status, r.subtype, r.reply) == ("completed", "success", "done")
    assert log.points() == [
        "session-start",
        "context-assemble",
        "pre-model-call",
        "post-model-response",
        "pre-tool-call",
        "pre-tool-call",
        "tool:ds",  # step 9, before the plan
        "plan-ready",
        "tool:res",  # step 12, after the veto chain
        "post-tool-call",
        "post-tool-call",
        "post-apply",
        "context-assemble",
        "pre-model-call",
        "post-model-response",
        "session-end",
    ]
    plan = dict(log.events)["plan-ready"]
    assert [i["call_id"] for i in plan["items"]] == ["c2"]


@pytest.mark.anyio
async def test_plan_ready_dispatched_with_empty_plan_and_spans() -> None:
    log = Log()
    provider = ListProvider([call("c1", "ds")], [text("done")])
    k = kernel(provider, [(ToolSpec(name="ds"), tool(log, "ds"))], recording_hooks(log))
    await k.run_session(None, "go")
    assert dict(log.events)["plan-ready"] == {"items": []}
    kinds = [s["kind"] for s in k.spans.spans]
    for kind in ("session", "turn", "model_call", "tool", "veto_chain"):
        assert kind in kinds
    by_id = {s["span_id"]: s for s in k.spans.spans}
    for s in k.spans.spans:
        if s["kind"] in ("model_call", "tool", "veto_chain"):
            assert by_id[s["parent_id"]]["kind"] == "turn"
        if s["kind"] == "turn":
            assert by_id[s["parent_id"]]["kind"] == "session"
    assert sum(1 for s in k.spans.spans if s["kind"] == "turn") == 2


@pytest.mark.anyio
async def test_replace_outcomes_drive_request_and_message() -> None:
    log = Log()
    provider = ListProvider([text("original")])
    outcomes = {
        "context-assemble": lambda p: Replace({**p, "history": [{"role": "user", "text": "rewritten"}]}),
        "post-model-response": lambda m: Replace({"role": "assistant", "text": "replaced"}),
    }
    k = kernel(provider, [], recording_hooks(log, outcomes))
    r = await k.run_session(None, "go")
    assert provider.requests[0]["messages"][1:] == [{"role": "user", "text": "rewritten"}]
    assert r.reply == "replaced"
    assert (await messages(k))[-1] == {"role": "assistant", "text": "replaced"}


# --------------------------------------------------------------------------- ordering and concurrency


@pytest.mark.anyio
async def test_results_in_model_order_when_finishing_reversed() -> None:
    b_done = anyio.Event()
    finished: list[str] = []

    async def run(args: dict[str, Any], turn: Any) -> str:
        cid = current_call.get()["id"]
        if cid == "a":
            with anyio.fail_after(2):
                await b_done.wait()
        finished.append(cid)
        if cid == "b":
            b_done.set()
        return f"result {cid}"

    provider = ListProvider([call("a", "ds"), call("b", "ds")], [text("done")])
    await kernel(provider, [(ToolSpec(name="ds", concurrency=SAFE), run)]).run_session(None, "go")
    assert finished == ["b", "a"]
    results = [m for m in provider.requests[1]["messages"] if m["role"] == "tool_result"]
    assert [(m["call_id"], m["content"]) for m in results] == [("a", "result a"), ("b", "result b")]


def rendezvous(ids: set[str]):
    """Each call announces itself and waits for all others, under fail_after."""
    events = {i: anyio.Event() for i in ids}

    async def run(args: dict[str, Any], turn: Any) -> str:
        cid = current_call.get()["id"]
        events[cid].set()
        with anyio.fail_after(2):
            for e in events.values():
                await e.wait()
        return "met"

    return run


def overlap_probe():
    state = {"now": 0, "max": 0}

    async def run(args: dict[str, Any], turn: Any) -> str:
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        state["now"] -= 1
        return "done"

    return run, state


@pytest.mark.anyio
async def test_distinct_keys_run_concurrently() -> None:
    provider = ListProvider([call("a", "ds", {"path": "x"}), call("b", "ds", {"path": "y"})], [text("ok")])
    r = await kernel(provider, [(ToolSpec(name="ds", concurrency=SAFE), rendezvous({"a", "b"}))]).run_session(None, "go")
    results = [m for m in provider.requests[1]["messages"] if m["role"] == "tool_result"]
    assert [m["content"] for m in results] == ["met", "met"], r

    keyed = ToolSpec(name="w", kind="resource", concurrency=ConcurrencySpec(safe=True, key_fields=["path"]))
    provider = ListProvider([call("a", "w", {"path": "x"}), call("b", "w", {"path": "y"})], [text("ok")])
    await kernel(provider, [(keyed, rendezvous({"a", "b"}))]).run_session(None, "go")
    results = [m for m in provider.requests[1]["messages"] if m["role"] == "tool_result"]
    assert [m["content"] for m in results] == ["met", "met"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "spec",
    [
        ToolSpec(name="w", kind="resource"),  # undeclared: provider-wide lock, whatever the kind
        ToolSpec(name="w", kind="data_source"),
        ToolSpec(name="w", kind="data_source", concurrency=ConcurrencySpec(safe=False)),
        ToolSpec(name="w", kind="resource", concurrency=ConcurrencySpec(safe=True, key_fields=["path"])),
    ],
)
async def test_equal_keys_run_sequentially(spec: ToolSpec) -> None:
    run, state = overlap_probe()
    provider = ListProvider([call("a", "w", {"path": "x"}), call("b", "w", {"path": "x"})], [text("ok")])
    await kernel(provider, [(spec, run)]).run_session(None, "go")
    assert state["max"] == 1


@pytest.mark.anyio
async def test_interactive_one_at_a_time_and_no_spec_allowed() -> None:
    run, state = overlap_probe()
    provider = ListProvider([call("a", "i"), call("b", "i")], [text("ok")])
    await kernel(provider, [(ToolSpec(name="i", kind="interactive"), run)]).run_session(None, "go")
    assert state["max"] == 1
    with pytest.raises(ConfigError) as info:
        ToolSpec(name="i", kind="interactive", concurrency=ConcurrencySpec(safe=True))
    assert info.value.field == "concurrency"


# --------------------------------------------------------------------------- bounds and doom loop


@pytest.mark.anyio
async def test_max_turns_then_one_final_turn_without_tools() -> None:
    log = Log()
    provider = ListProvider([call("c", "ds", {"n": 1})], [call("c", "ds", {"n": 2})], [text("final")])
    k = kernel(provider, [(ToolSpec(name="ds"), tool(log, "ds"))], bounds=LoopBounds(max_turns=2))
    r = await k.run_session(None, "go")
    assert (r.status, r.subtype, r.reply) == ("limit_reached", "error_max_turns", "final")
    assert len(provider.requests) == 3
    assert provider.requests[1]["tools"] and provider.requests[2]["tools"] == []
    last = provider.requests[2]["messages"][-1]
    assert last["role"] == "user" and "limit was reached" in last["text"]
    assert last not in await messages(k)  # the synthetic instruction is for the model only


@pytest.mark.anyio
async def test_final_turn_executes_no_tool_calls() -> None:
    log = Log()
    provider = ListProvider([call("c", "ds", {"n": 1})], [call("d", "ds", {"n": 2})])
    k = kernel(provider, [(ToolSpec(name="ds"), tool(log, "ds"))], bounds=LoopBounds(max_turns=1))
    r = await k.run_session(None, "go")
    assert r.subtype == "error_max_turns"
    assert [e for e in log.events if e[0] == "tool:ds"] == [("tool:ds", "c")]


@pytest.mark.anyio
async def test_doom_loop_fires_on_consecutive_identical_calls() -> None:
    log = Log()
    provider = ListProvider([call("c", "ds", {"q": 1})], [call("c", "ds", {"q": 1})], [call("c", "ds", {"q": 1})], [text("stuck")])
    k = kernel(provider, [(ToolSpec(name="ds"), tool(log, "ds"))], doom_loop=DoomLoopConfig(threshold=3))
    r = await k.run_session(None, "go")
    assert (r.status, r.subtype) == ("limit_reached", "error_doom_loop")
    assert len(provider.requests) == 4 and provider.requests[3]["tools"] == []


@pytest.mark.anyio
async def test_doom_loop_not_fired_when_args_differ() -> None:
    provider = ListProvider(*[[call("c", "ds", {"q": i})] for i in range(4)], [text("fine")])
    k = kernel(provider, [(ToolSpec(name="ds"), tool(Log(), "ds"))])
    assert (await k.run_session(None, "go")).subtype == "success"


@pytest.mark.anyio
async def test_cost_and_wall_clock_bounds() -> None:
    usage = {"type": "usage", "input_tokens": 1_000_000, "output_tokens": 0, "cached_input_tokens": 0}
    provider = ListProvider([call("c", "ds", {"n": 1}), usage], [text("final")])
    k = kernel(
        provider,
        [(ToolSpec(name="ds"), tool(Log(), "ds"))],
        bounds=LoopBounds(max_cost_usd=0.5),
        pricing=Pricing(input_usd_per_mtok=1.0),
    )
    r = await k.run_session(None, "go")
    assert r.subtype == "error_max_budget_usd" and k.usage[0].cost_usd == 1.0

    now = [100.0]

    async def slow(args: dict[str, Any], turn: Any) -> str:
        now[0] += 10
        return "slow"

    provider = ListProvider([call("c", "ds", {"n": 1})], [text("final")])
    k = kernel(provider, [(ToolSpec(name="ds"), slow)], bounds=LoopBounds(max_wall_clock_s=5), clock=lambda: now[0])
    assert (await k.run_session(None, "go")).subtype == "error_max_wall_clock"


@pytest.mark.anyio
async def test_soft_limit_pauses_and_session_continues() -> None:
    provider = ListProvider([call("c", "ds", {"n": 1})], [text("paused answer")], [text("continued")])
    k = kernel(provider, [(ToolSpec(name="ds"), tool(Log(), "ds"))], bounds=LoopBounds(max_turns=1, soft=True))
    r = await k.run_session(None, "go")
    assert (r.status, r.subtype) == ("paused", "paused_max_turns")
    r2 = await k.run_session(r.session_id, "go on")
    assert r2.reply == "continued"
    assert {"role": "assistant", "text": "paused answer"} in provider.requests[2]["messages"]


def test_bad_bounds_are_config_errors() -> None:
    for make, field in [
        (lambda: LoopBounds(max_turns=0), "max_turns"),
        (lambda: LoopBounds(max_cost_usd=-1.0), "max_cost_usd"),
        (lambda: LoopBounds(max_wall_clock_s=0), "max_wall_clock_s"),
        (lambda: DoomLoopConfig(threshold=0), "doom_loop.threshold"),
        (lambda: ProfileConfig(tags=["Area:x"]), "tags"),
    ]:
        with pytest.raises(ConfigError) as info:
            make()
        assert info.value.field == field
    assert DoomLoopConfig().threshold == 3


# --------------------------------------------------------------------------- faults, veto, terminal tool


@pytest.mark.anyio
async def test_faults_become_error_results_and_loop_goes_on() -> None:
    async def boom(args: dict[str, Any], turn: Any) -> str:
        raise RuntimeError("disk on fire")

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    provider = ListProvider(
        [call("u", "nope"), call("j", "ds", raw="{bad"), call("s", "ds", {"n": "x"}), call("f", "boom")],
        [text("recovered")],
    )
    tools = [
        (ToolSpec(name="ds", input_schema=schema), tool(Log(), "ds")),
        (ToolSpec(name="boom"), boom),
    ]
    r = await kernel(provider, tools).run_session(None, "go")
    assert r.reply == "recovered"
    results = {m["call_id"]: m for m in provider.requests[1]["messages"] if m["role"] == "tool_result"}
    assert all(m["is_error"] for m in results.values())
    assert "nope" in results["u"]["content"]
    assert "JSON" in results["j"]["content"]
    assert "integer" in results["s"]["content"]
    assert "disk on fire" in results["f"]["content"]


@pytest.mark.anyio
async def test_vetoed_item_not_applied_and_policy_denial() -> None:
    log = Log()
    provider = ListProvider([call("r1", "res"), call("r2", "res"), call("d1", "ds")], [text("ok")])

    async def policy(c: dict[str, Any], turn: Any) -> tuple[bool, str | None]:
        return False, "no reads today"

    hooks = recording_hooks(log, {"plan-ready": lambda plan: Veto(["r1"], "too risky")})
    k = kernel(
        provider,
        [(ToolSpec(name="res", kind="resource"), tool(log, "res")), (ToolSpec(name="ds"), tool(log, "ds"))],
        hooks,
        policy=policy,
    )
    await k.run_session(None, "go")
    assert [e[1] for e in log.events if e[0].startswith("tool:")] == ["r2"]
    results = {m["call_id"]: m for m in provider.requests[1]["messages"] if m["role"] == "tool_result"}
    assert results["r1"]["is_error"] and "too risky" in results["r1"]["content"]
    assert "vetoed" in results["r1"]["content"].lower()
    assert results["d1"]["is_error"] and "no reads today" in results["d1"]["content"]
    post_apply = dict(log.events)["post-apply"]
    assert post_apply["items"][0]["vetoed"] is True


@pytest.mark.anyio
async def test_terminal_tool_ends_the_loop() -> None:
    log = Log()
    provider = ListProvider([call("a", "finish"), call("b", "ds")], [text("never")])
    tools = [(ToolSpec(name="finish", kind="resource", terminates_turn=True), tool(log, "finish")), (ToolSpec(name="ds"), tool(log, "ds"))]
    k = kernel(provider, tools, recording_hooks(log))
    r = await k.run_session(None, "go")
    assert (r.status, r.subtype) == ("completed", "success")
    assert len(provider.requests) == 1
    assert log.points().count("post-tool-call") == 1 and "post-apply" not in log.points()
    assert [m["role"] for m in await messages(k)] == ["user", "assistant", "tool_result", "tool_result"]


@pytest.mark.anyio
async def test_model_failure_and_hook_failure_end_with_error() -> None:
    async def failing():
        yield text("partial")
        raise RuntimeError("503 upstream")

    log = Log()
    k = kernel(ListProvider(failing), [], recording_hooks(log))
    r = await k.run_session(None, "go")
    assert (r.status, r.subtype) == ("error", "error_during_execution")
    assert [m["role"] for m in await messages(k)] == ["user"]
    assert log.points().count("session-end") == 1

    def explode(payload: Any) -> Any:
        raise ValueError("nope")

    log = Log()
    k = kernel(ListProvider([text("hi")]), [], recording_hooks(log, {"pre-model-call": explode}))
    r = await k.run_session(None, "go")
    assert r.status == "error" and "rec-pre-model-call" in r.error
    assert log.points().count("session-end") == 1


# --------------------------------------------------------------------------- cancellation, sub-agents


@pytest.mark.anyio
async def test_cancel_mid_model_call() -> None:
    token = CancellationToken()

    async def blocking():
        yield text("half an ans")
        token.cancel()
        await anyio.sleep_forever()

    log = Log()
    k = kernel(ListProvider(blocking), [], recording_hooks(log))
    with anyio.fail_after(2):
        r = await k.run_session(None, "go", token=token)
    assert (r.status, r.subtype) == ("cancelled", "cancelled")
    assert [m["role"] for m in await messages(k)] == ["user"]
    assert log.points().count("session-end") == 1


@pytest.mark.anyio
async def test_subagent_child_turn_and_cost_rollup() -> None:
    usage = {"type": "usage", "input_tokens": 1_000_000, "output_tokens": 0, "cached_input_tokens": 0}
    provider = ListProvider(
        [call("d", "delegate", {"goal": "research umbrellas"})],  # parent
        [text("child answer"), usage],  # child
        [text("final")],  # parent, limit-reached turn
    )
    spec = ToolSpec(name="delegate", delegate=DelegateSpec())
    k = kernel(provider, [(spec, None)], bounds=LoopBounds(max_cost_usd=0.5), pricing=Pricing(input_usd_per_mtok=1.0), tags=["team:core"])
    r = await k.run_session(None, "go")
    assert r.subtype == "error_max_budget_usd"  # the child's spend trips the parent's bound
    dump = await k.journal.dump()
    parent, child = dump["sessions"]
    assert child["parent_session_id"] == parent["id"] and child["title"] == "research umbrellas"
    assert child["source"] == "subagent"
    turns = [t["turn"] for t in dump["turns"]]
    assert turns[1]["parent_turn_id"] == turns[0]["turn_id"] and turns[1]["depth"] == 1
    assert turns[1]["tags"] == ["team:core"]
    results = [m for m in provider.requests[2]["messages"] if m["role"] == "tool_result"]
    assert results[0]["content"] == "child answer"


@pytest.mark.anyio
async def test_subagent_refused_beyond_max_depth() -> None:
    provider = ListProvider([call("d", "delegate", {"goal": "g"})], [text("ok")])
    k = kernel(provider, [(ToolSpec(name="delegate", delegate=DelegateSpec()), None)], max_depth=0)
    await k.run_session(None, "go")
    result = [m for m in provider.requests[1]["messages"] if m["role"] == "tool_result"][0]
    assert result["is_error"] and "max_depth" in result["content"]


@pytest.mark.anyio
async def test_undeclared_calls_of_two_providers_run_concurrently() -> None:
    provider = ListProvider([call("a", "p1"), call("b", "p2")], [text("ok")])
    meet = rendezvous({"a", "b"})
    tools = [(ToolSpec(name="p1", kind="resource", provider="one"), meet), (ToolSpec(name="p2", kind="resource", provider="two"), meet)]
    await kernel(provider, tools).run_session(None, "go")
    assert [m["content"] for m in provider.requests[1]["messages"] if m["role"] == "tool_result"] == ["met", "met"]


def test_cancellation_token_children() -> None:
    parent = CancellationToken()
    child = parent.child()
    grandchild = child.child()
    parent.cancel()
    assert child.cancelled and grandchild.cancelled
    assert CancellationToken(parent).cancelled  # a child of a cancelled token starts cancelled


@pytest.mark.anyio
async def test_cancelling_parent_stops_running_child() -> None:
    token = CancellationToken()
    child_started = anyio.Event()

    async def child_blocks():
        child_started.set()
        token.cancel()  # the parent's token, while the child's model call is in flight
        await anyio.sleep_forever()
        yield text("never")  # pragma: no cover

    provider = ListProvider([call("d", "delegate", {"goal": "g"})], child_blocks)
    k = kernel(provider, [(ToolSpec(name="delegate", delegate=DelegateSpec()), None)])
    with anyio.fail_after(2):
        r = await k.run_session(None, "go", token=token)
    assert child_started.is_set() and r.subtype == "cancelled"
    statuses = [t["status"] for t in (await k.journal.dump())["turns"]]
    assert statuses == ["cancelled", "cancelled"]


def test_registration_errors() -> None:
    spec = ToolSpec(name="t")
    with pytest.raises(ConfigError) as info:
        kernel(ListProvider([text("x")]), [(spec, tool(Log())), (spec, tool(Log()))])
    assert info.value.field == "tools"
    with pytest.raises(ConfigError) as info:
        kernel(ListProvider([text("x")]), [(ToolSpec(name="t", input_schema={"type": "object", "properties": 3}), tool(Log()))])
    assert info.value.field == "input_schema"


@pytest.mark.anyio
async def test_runs_on_the_sqlite_journal(tmp_path: Any) -> None:
    from reference_kernel.sqlite_journal import SqliteJournal

    journal = SqliteJournal(str(tmp_path / "j.db"))
    provider = ListProvider([call("c1", "ds")], [text("done")], [text("again")])
    k = Kernel(ProfileConfig(), provider, [(ToolSpec(name="ds"), tool(Log(), "ds"))], journal=journal)
    r = await k.run_session(None, "go")
    r2 = await k.run_session(r.session_id, "more")
    assert (r.reply, r2.reply) == ("done", "again")
    assert [m.get("text") for m in provider.requests[2]["messages"] if m["role"] == "user"] == ["go", "more"]
