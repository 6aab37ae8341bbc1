"""Per-turn overhead of the reference kernel against a bare asyncio loop doing the same work.

Workload (both sides, same process): N RunTurns in one session, each a scripted model response
with one tool call (streamed as text, tool_use and usage chunks), the tool run, its result appended
to the history, then a final answer. The kernel runs with no hooks and the memory journal. Prints
one JSON line per N: ``{"turns", "kernel_us_per_turn", "bare_us_per_turn", "ratio",
"bare_taskgroup_us_per_turn"}``.

The bare loop runs each response's tool calls in an anyio task group, the concurrency primitive
the kernel itself is built on (the kernel must run on asyncio and trio), so the ratio measures the
kernel's own work, not anyio's; ``bare_taskgroup_us_per_turn`` is the same loop on asyncio's own
TaskGroup, for reference. The kernel's per-turn work beyond the bare loop is what the seeds
require of it: spans, the journal, cost per usage event, the doom-loop hash, cancellation scopes.

Targets (issue 3): ratio <= 3 at 1,000 turns; kernel per-turn time at 10,000 turns within 1.3x of
that at 1,000 (nothing on the hot path grows with history length).

    python benchmarks/turn_overhead.py [--turns 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio

from reference_kernel.config import LoopBounds, ProfileConfig, ToolSpec
from reference_kernel.kernel import Kernel


def _chunks(index: int, turns: int) -> list[dict[str, Any]]:
    usage = {"type": "usage", "input_tokens": 10, "output_tokens": 5, "cached_input_tokens": 0}
    if index >= turns:
        return [{"type": "text", "text": "done"}, usage]
    return [
        {"type": "text", "text": f"step {index}"},
        {"type": "tool_use", "id": f"c{index}", "name": "lookup", "input_json": f'{{"n": {index}}}'},
        usage,
    ]


class ScriptedProvider:
    """A model answering N tool calls, then text; it ignores the request, as the bare loop does."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.calls = 0

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        chunks = _chunks(self.calls, self.turns)
        self.calls += 1
        for chunk in chunks:
            yield chunk


async def lookup(args: dict[str, Any], turn: Any) -> str:
    return f"value {args['n']}"


async def kernel_run(turns: int) -> float:
    provider = ScriptedProvider(turns)
    kernel = Kernel(
        ProfileConfig(profile_id="bench", bounds=LoopBounds(max_turns=turns + 10)),
        provider,
        tools=[(ToolSpec(name="lookup", kind="data_source"), lookup)],
    )
    start = time.perf_counter()
    result = await kernel.run_session(None, "go")
    elapsed = time.perf_counter() - start
    assert provider.calls == turns + 1, (provider.calls, result)
    return elapsed


async def bare_run(turns: int, use_anyio: bool = True) -> float:
    """The same work with nothing but a list, a dict of tools and a task group per turn."""
    provider = ScriptedProvider(turns)
    tools = {"lookup": lookup}
    history: list[dict[str, Any]] = [{"role": "user", "text": "go"}]
    start = time.perf_counter()
    while True:
        text, calls = [], []
        async for chunk in provider.stream({"messages": history}):
            if chunk["type"] == "text":
                text.append(chunk["text"])
            elif chunk["type"] == "tool_use":
                calls.append({"id": chunk["id"], "name": chunk["name"], "args": json.loads(chunk["input_json"])})
        message: dict[str, Any] = {"role": "assistant", "text": "".join(text)}
        if calls:
            message["tool_calls"] = calls
        history.append(message)
        if not calls:
            break
        results: list[Any] = [None] * len(calls)

        async def run(i: int, call: dict[str, Any]) -> None:
            results[i] = await tools[call["name"]](call["args"], None)

        if use_anyio:  # tool calls of a response run concurrently
            async with anyio.create_task_group() as tg:
                for i, call in enumerate(calls):
                    tg.start_soon(run, i, call)
        else:
            async with asyncio.TaskGroup() as atg:
                for i, call in enumerate(calls):
                    atg.create_task(run(i, call))
        for call, result in zip(calls, results):
            history.append({"role": "tool_result", "call_id": call["id"], "content": result, "is_error": False})
    elapsed = time.perf_counter() - start
    assert provider.calls == turns + 1
    return elapsed


def measure(turns: int, repeat: int) -> dict[str, Any]:
    kernel = min(asyncio.run(kernel_run(turns)) for _ in range(repeat))
    bare = min(asyncio.run(bare_run(turns)) for _ in range(repeat))
    bare_tg = min(asyncio.run(bare_run(turns, use_anyio=False)) for _ in range(repeat))
    return {
        "turns": turns,
        "kernel_us_per_turn": round(kernel / turns * 1e6, 1),
        "bare_us_per_turn": round(bare / turns * 1e6, 1),
        "ratio": round(kernel / bare, 2),
        "bare_taskgroup_us_per_turn": round(bare_tg / turns * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    args = parser.parse_args()
    for turns in args.turns:
        print(json.dumps(measure(turns, args.repeat)), flush=True)


if __name__ == "__main__":
    main()
