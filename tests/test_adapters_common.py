"""The shared part of the third-party adapters (conformance/adapters/_common.py): a framework
that raises is reported as raising (a fail), the adapter's own broken mapping is an error, hook
chains pass replacements on, and a cancelled run is an outcome, not a raise."""

from __future__ import annotations

import asyncio

from typing import Any

import anyio
import pytest

from conformance.boundary.adapter import Outcome
from conformance.adapters._common import AdapterBug, Hooks, adapter_bug, mapping, mapping_code, run_messages
from conformance.harness.doubles import HarnessDoubles
from conformance.boundary.scenario import HookDef, Replace, Scenario, ScriptedOutcome, UserMessage


def scenario(**kw: Any) -> Scenario:
    return Scenario(name="t", profile="kernel", **kw)


def test_a_framework_that_raises_is_reported_in_raised() -> None:
    async def run_one(run: Any, session: Any, index: int, text: str) -> Outcome:
        raise RuntimeError("the framework gave up")

    s = scenario()
    result = anyio.run(run_messages, s, HarnessDoubles(s), run_one)
    assert result.raised is not None and result.raised.type == "RuntimeError"
    assert result.outcomes == []


def test_a_broken_mapping_is_raised_out_of_the_adapter_even_when_wrapped() -> None:
    @mapping_code
    def convert(x: Any) -> Any:
        return x["missing"]

    async def run_one(run: Any, session: Any, index: int, text: str) -> Outcome:
        try:
            convert({})
        except AdapterBug as exc:  # a framework wrapping what a callback raised
            raise ValueError("framework wrapper") from exc
        raise AssertionError("unreachable")

    s = scenario()
    with pytest.raises(AdapterBug, match="convert: KeyError"):
        anyio.run(run_messages, s, HarnessDoubles(s), run_one)


def test_mapping_lets_an_adapter_bug_through_unchanged() -> None:
    with pytest.raises(AdapterBug, match="outer"), mapping("outer"):
        raise KeyError("x")


def test_hook_chain_hands_on_replacements_in_registration_order() -> None:
    s = scenario(
        hooks=[
            HookDef(id="a", point="context-assemble", script=[ScriptedOutcome(outcome=Replace(payload={"history": [1]}))]),
            HookDef(id="b", point="context-assemble"),
        ]
    )
    doubles = HarnessDoubles(s)
    out, replaced = anyio.run(Hooks(s, doubles).chain, "context-assemble", {"history": []}, {})
    assert replaced and out == {"history": [1]}
    hooks = doubles.log.of("hook")
    assert [h["hook_id"] for h in hooks] == ["a", "b"]
    assert hooks[1]["payload"] == {"history": [1]}


def test_a_cancelled_run_is_a_cancelled_outcome() -> None:
    s = scenario(user_messages=[UserMessage(text="hi")])
    doubles = HarnessDoubles(s)

    async def run_one(run: Any, session: Any, index: int, text: str) -> Outcome:
        await doubles._cancellers[index]()  # the harness cancels at its cancel point (from inside: cancelled at once)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    result = anyio.run(run_messages, s, doubles, run_one)
    assert [o.status for o in result.outcomes] == ["cancelled"]
    assert result.raised is None


def test_a_cancel_from_outside_the_run_returns_once_the_framework_has_unwound() -> None:
    """The host's stop awaits the cancelled task (docs/adapter.md step 3): a call the cancel came
    in, running outside the framework's task (a worker thread's call, a task of its own), goes on
    only after the framework has taken the cancel."""
    s = scenario(user_messages=[UserMessage(text="hi")])
    doubles = HarnessDoubles(s)
    order: list[str] = []
    went_on = asyncio.Event()

    async def run_one(run: Any, session: Any, index: int, text: str) -> Outcome:
        async def the_running_call() -> None:
            await doubles._cancellers[index]()
            order.append("the call goes on")
            went_on.set()

        asyncio.get_running_loop().create_task(the_running_call())  # not in the run's cancel scope
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                for _ in range(3):  # a framework's cleanup, several loop iterations long
                    await anyio.lowlevel.checkpoint()
                order.append("the framework unwound")
        raise AssertionError("unreachable")

    async def main() -> Any:
        result = await run_messages(s, doubles, run_one)
        with anyio.fail_after(5):
            await went_on.wait()
        return result

    result = anyio.run(main)
    assert [o.status for o in result.outcomes] == ["cancelled"]
    assert order == ["the framework unwound", "the call goes on"]
