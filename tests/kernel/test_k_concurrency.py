"""003's concurrency keys and the keyed locks that schedule by them (rendezvous, no sleeps)."""

from __future__ import annotations

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from reference_kernel.concurrency import (
    ConcurrencySpec,
    KeyedLocks,
    concurrency_key,
    default_spec,
    validate_tool_spec,
)
from reference_kernel.errors import ConfigError


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


def test_default_specs() -> None:
    assert default_spec("data_source") == ConcurrencySpec(safe=True)
    assert default_spec("resource") == ConcurrencySpec(safe=False)


def test_safe_with_no_key_fields_is_a_distinct_key_per_call() -> None:
    k1 = concurrency_key("p", "search", "data_source", None, {"q": "x"}, "c1")
    k2 = concurrency_key("p", "search", "data_source", None, {"q": "x"}, "c2")
    assert k1 != k2
    spec = ConcurrencySpec(safe=True)
    assert concurrency_key("p", "w", "resource", spec, {}, "c1") != concurrency_key(
        "p", "w", "resource", spec, {}, "c2"
    )


def test_unsafe_and_undeclared_resource_share_a_provider_lock() -> None:
    undeclared = concurrency_key("p", "write", "resource", None, {"path": "a"}, "c1")
    unsafe = concurrency_key("p", "delete", "resource", ConcurrencySpec(safe=False), {}, "c2")
    unsafe_ds = concurrency_key("p", "read", "data_source", ConcurrencySpec(safe=False), {}, "c3")
    assert undeclared == unsafe == unsafe_ds == ("provider", "p")
    assert concurrency_key("q", "write", "resource", None, {}, "c4") != undeclared


def test_key_fields_select_the_key() -> None:
    spec = ConcurrencySpec(safe=True, key_fields=["path"])

    def key(tool: str, args: dict, call: str, provider: str = "fs") -> tuple:
        return concurrency_key(provider, tool, "resource", spec, args, call)

    assert key("write", {"path": "a", "text": "1"}, "c1") == key("write", {"path": "a", "text": "2"}, "c2")
    assert key("write", {"path": "a"}, "c1") != key("write", {"path": "b"}, "c2")
    assert key("write", {"path": "a"}, "c1") != key("append", {"path": "a"}, "c2")
    assert key("write", {"path": "a"}, "c1") != key("write", {"path": "a"}, "c2", provider="other")
    assert key("write", {"path": {"x": 1, "y": 2}}, "c1") == key("write", {"path": {"y": 2, "x": 1}}, "c2")
    assert key("write", {}, "c1") == key("write", {"path": None}, "c2")


def test_interactive_calls_take_no_spec() -> None:
    validate_tool_spec("interactive", None)
    validate_tool_spec("data_source", ConcurrencySpec(safe=True))
    with pytest.raises(ConfigError) as info:
        validate_tool_spec("interactive", ConcurrencySpec(safe=True))
    assert info.value.field == "concurrency"
    assert "interactive" in str(info.value)
    with pytest.raises(ConfigError, match="unknown tool kind 'bogus'"):
        validate_tool_spec("bogus", None)


@pytest.mark.anyio
async def test_distinct_keys_run_concurrently() -> None:
    locks = KeyedLocks()
    started = {k: anyio.Event() for k in ("a", "b")}

    async def call(mine: str, other: str) -> None:
        async with locks.hold(("call", mine)):
            started[mine].set()
            await started[other].wait()  # deadlocks unless both hold their locks at once

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "a", "b")
            tg.start_soon(call, "b", "a")
    assert len(locks) == 0


@pytest.mark.anyio
async def test_equal_keys_run_one_after_the_other() -> None:
    locks = KeyedLocks()
    key = ("provider", "p")
    release = anyio.Event()
    order: list[str] = []

    async def first() -> None:
        async with locks.hold(key):
            order.append("first in")
            await release.wait()
            order.append("first out")

    async def second() -> None:
        async with locks.hold(key):
            order.append("second in")

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await wait_all_tasks_blocked()
            tg.start_soon(second)
            await wait_all_tasks_blocked()
            assert order == ["first in"]  # second is waiting on the lock
            release.set()
    assert order == ["first in", "first out", "second in"]
    assert len(locks) == 0


@pytest.mark.anyio
async def test_a_cancelled_holder_releases_its_key() -> None:
    locks = KeyedLocks()
    with anyio.fail_after(2):
        with anyio.CancelScope() as scope:
            async with locks.hold("k"):
                scope.cancel()
                await anyio.sleep_forever()
        async with locks.hold("k"):
            pass
    assert len(locks) == 0
