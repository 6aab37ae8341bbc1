"""Per-turn overhead of the reference kernel against a bare asyncio TaskGroup loop doing the same work.

Workload (every loop, same process): N RunTurns in one session, each a scripted model response
with one tool call (streamed as text, tool_use and usage chunks), the tool run, its result appended
to the history, then a final answer. The kernel runs with no hooks, the memory journal and the
memory span recorder, so it does all the per-turn work the seeds require of it: spans, the
journal, cost per usage event (charged up the ledger), the doom-loop hash, cancellation scopes.

The headline is ``ratio``: the kernel's CPU time over the bare loop's on asyncio's own TaskGroup
(the floor: a list, a dict of tools, a task group per turn). ``anyio_us_per_turn`` is the same
bare loop on an anyio task group, for reference (anyio costs about twice asyncio on its own).

Time is CPU time of the process (``time.process_time``), the best of ``--repeat`` runs, each run
after a ``gc.collect()``; garbage collection during a run counts. Memory is what a run keeps:
``tracemalloc``'s traced memory after the run (the kernel or the bare loop's history still
referenced, after ``gc.collect()``) minus before it, in a separate untimed run, per 1,000 turns.
Each line also gives the 1-minute load average when its size was measured (the machine is shared).

Targets (issue 17): ratio <= 2.5 at 1,000 and at 10,000 turns; kernel per-turn time at 10,000
turns within 1.1x of that at 1,000 (``growth``); <= 3 MB held per 1,000 turns.

    python benchmarks/turn_overhead.py [--turns 1000 10000] [--repeat 3] [--no-memory]

Prints one JSON line per N: ``{"turns", "kernel_us_per_turn", "asyncio_us_per_turn", "ratio",
"anyio_us_per_turn", "anyio_ratio", "growth", "kernel_mb_per_1k_turns", "asyncio_mb_per_1k_turns",
"load"}`` (``growth``: kernel µs/turn at N over that at the first N).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
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

    #: Called on every model call (benchmarks/peers.py prints progress from it).
    on_call: Callable[[], Any] | None = None

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.calls = 0

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        if self.on_call is not None:
            self.on_call()
        chunks = _chunks(self.calls, self.turns)
        self.calls += 1
        for chunk in chunks:
            yield chunk


async def lookup(args: dict[str, Any], turn: Any) -> str:
    return f"value {args['n']}"


# A run: set up (untimed), then ``go()`` does the N turns and returns what the run keeps.
Setup = Callable[[int], Callable[[], Awaitable[Any]]]


def kernel_setup(turns: int) -> Callable[[], Awaitable[Any]]:
    provider = ScriptedProvider(turns)
    kernel = Kernel(
        ProfileConfig(profile_id="bench", bounds=LoopBounds(max_turns=turns + 10)),
        provider,
        tools=[(ToolSpec(name="lookup", kind="data_source"), lookup)],
    )

    async def go() -> Any:
        result = await kernel.run_session(None, "go")
        assert provider.calls == turns + 1 and result.subtype == "success", (provider.calls, result)
        return kernel, result

    return go


def bare_setup(turns: int, use_anyio: bool) -> Callable[[], Awaitable[Any]]:
    """The same work with nothing but a list, a dict of tools and a task group per turn."""
    provider = ScriptedProvider(turns)
    tools = {"lookup": lookup}

    async def go() -> Any:
        history: list[dict[str, Any]] = [{"role": "user", "text": "go"}]
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
        assert provider.calls == turns + 1
        return history

    return go


LOOPS: dict[str, Setup] = {
    "kernel": kernel_setup,
    "asyncio": lambda turns: bare_setup(turns, use_anyio=False),
    "anyio": lambda turns: bare_setup(turns, use_anyio=True),
}


def cpu_seconds(loop: str, turns: int) -> float:
    """One run's CPU time (setup excluded)."""
    go = LOOPS[loop](turns)
    gc.collect()

    async def timed() -> float:
        start = time.process_time()
        kept = await go()
        elapsed = time.process_time() - start
        del kept
        return elapsed

    return asyncio.run(timed())


def held_bytes(loop: str, turns: int) -> int:
    """What one run keeps, by tracemalloc (an untimed run)."""
    go = LOOPS[loop](turns)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = asyncio.run(go())
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return after - before


def load() -> float:
    return round(os.getloadavg()[0], 2)


def measure(turns: int, repeat: int, memory: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"turns": turns}
    best = {loop: min(cpu_seconds(loop, turns) for _ in range(repeat)) for loop in ("kernel", "asyncio", "anyio")}
    row["kernel_us_per_turn"] = round(best["kernel"] / turns * 1e6, 1)
    row["asyncio_us_per_turn"] = round(best["asyncio"] / turns * 1e6, 1)
    row["ratio"] = round(best["kernel"] / best["asyncio"], 2)
    row["anyio_us_per_turn"] = round(best["anyio"] / turns * 1e6, 1)
    row["anyio_ratio"] = round(best["kernel"] / best["anyio"], 2)
    if memory:
        for loop in ("kernel", "asyncio"):
            row[f"{loop}_mb_per_1k_turns"] = round(held_bytes(loop, turns) / turns * 1000 / 1e6, 2)
    row["load"] = load()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    args = parser.parse_args()
    first: float | None = None
    for turns in args.turns:
        row = measure(turns, args.repeat, not args.no_memory)
        if first is None:
            first = row["kernel_us_per_turn"]
        row["growth"] = round(row["kernel_us_per_turn"] / first, 2) if first else None
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
