"""Side by side: per-turn CPU time and memory of the reference kernel, two bare loops and the
third-party agent frameworks (peers) on one workload, each loop in its own process.

Workload (every loop): one session of N turns; each turn a scripted model response with one tool
call (``lookup(n)``, arguments as JSON text, usage 10 in / 5 out tokens), the tool run, its result
fed back; then a final answer. Each peer is driven by a minimal driver written here (a scripted
model in the framework's own model interface, one plain tool), not by the conformance adapters.

Loops: ``asyncio`` (bare loop, asyncio TaskGroup per turn), ``anyio`` (same on an anyio task
group), ``kernel`` (reference kernel: spans, journal, cost, doom hash, cancellation), and the
peers ``pydantic-ai``, ``openai-agents``, ``smolagents``. A peer runs with the Python of its
pinned environment, ``$AKC_ENVS_DIR/<peer>`` (default ``~/.cache/akc/envs``, built by
``scripts/make_envs.sh``); without one it is reported "not installed" and skipped.
openai-agents runs with tracing disabled (its default exporter sends traces to OpenAI).

Each (loop, N) runs in a child process: imports and a 5-turn warm-up run, then ``--repeat`` runs in
a row (the fastest counts), capped by ``--timeout`` seconds of wall time from the end of the
warm-up and by ``--max-rss-mb`` of resident memory (the parent polls the child's RSS and stops
it); a stopped run reports how many turns it had done and its last numbers.

Reported per (loop, N): ``us_per_turn`` = CPU time of the process (``time.process_time``) for the
run / N, and ``mb_per_1k_turns`` = RSS held after the run (the loop's kept objects still
referenced, after ``gc.collect()``) minus RSS before it, per 1,000 turns (RSS, not tracemalloc,
so peers run at full speed; RSS moves in pages and the allocator keeps freed memory, so small
runs read coarse). With each line, the 1-minute load average (the machine may be shared).

    python benchmarks/peers.py [--turns 100 1000 10000] [--loops kernel asyncio ...]
                               [--repeat 3] [--timeout 300] [--max-rss-mb 2048] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BARE = ("asyncio", "anyio", "kernel")
PEERS = ("pydantic-ai", "openai-agents", "smolagents")
LOOPS = BARE + PEERS
USAGE = {"input_tokens": 10, "output_tokens": 5}
IMPORT_CAP_S = 300  # wall seconds for a child's imports and warm-up run


# --------------------------------------------------------------------------- the child side


class Progress:
    """Counts model calls; every ``every`` calls prints a progress line for the parent."""

    def __init__(self, every: int = 100) -> None:
        self.calls = 0
        self.every = every
        self.start_cpu = time.process_time()

    def tick(self) -> int:
        index = self.calls
        self.calls += 1
        if index and index % self.every == 0:
            _emit({"progress": index, "cpu_s": time.process_time() - self.start_cpu, "rss_mb": _rss() / 1e6})
        return index


def _emit(row: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(row) + "\n")
    sys.stdout.flush()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def lookup(n: int) -> str:
    return f"value {n}"


def bare_driver(turns: int, progress: Progress, loop: str) -> Callable[[], Any]:
    sys.path.insert(0, str(HERE))
    import turn_overhead  # the same loops as turn_overhead.py

    turn_overhead.ScriptedProvider.on_call = progress.tick  # progress lines from the model calls
    go = turn_overhead.LOOPS[loop](turns)
    return lambda: asyncio.run(go())


def pydantic_ai_driver(turns: int, progress: Progress) -> Callable[[], Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    async def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        i = progress.tick()
        usage = RequestUsage(**USAGE)
        if i >= turns:
            return ModelResponse(parts=[TextPart(content="done")], usage=usage)
        call = ToolCallPart(tool_name="lookup", args=f'{{"n": {i}}}', tool_call_id=f"c{i}")
        return ModelResponse(parts=[TextPart(content=f"step {i}"), call], usage=usage)

    agent = Agent(FunctionModel(model))
    agent.tool_plain(lookup)

    async def go() -> Any:
        result = await agent.run("go", usage_limits=UsageLimits(request_limit=None, tool_calls_limit=None))
        return result.all_messages()

    return lambda: asyncio.run(go())


def openai_agents_driver(turns: int, progress: Progress) -> Callable[[], Any]:
    from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)

    def text(t: str, i: int) -> Any:
        return ResponseOutputMessage(
            id=f"msg_{i}", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(text=t, type="output_text", annotations=[])],
        )

    class ScriptedModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            i = progress.tick()
            usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
            if i >= turns:
                return ModelResponse(output=[text("done", i)], usage=usage, response_id=None)
            call = ResponseFunctionToolCall(
                id=f"c{i}", call_id=f"c{i}", type="function_call", name="lookup", arguments=f'{{"n": {i}}}'
            )
            return ModelResponse(output=[text(f"step {i}", i), call], usage=usage, response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    agent = Agent(name="bench", model=ScriptedModel(), tools=[function_tool(lookup)])

    async def go() -> Any:
        result = await Runner.run(agent, "go", max_turns=turns + 10)
        return result.to_input_list()

    return lambda: asyncio.run(go())


def smolagents_driver(turns: int, progress: Progress) -> Callable[[], Any]:
    from smolagents import Tool, ToolCallingAgent
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
    from smolagents.monitoring import LogLevel, TokenUsage

    class ScriptedModel(Model):
        def generate(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None,
                     tools_to_call_from: Any = None, **kwargs: Any) -> Any:
            i = progress.tick()
            name, args, content = ("lookup", f'{{"n": {i}}}', f"step {i}") if i < turns else (
                "final_answer", '{"answer": "done"}', "")
            call = ChatMessageToolCall(id=f"c{i}", type="function",
                                       function=ChatMessageToolCallFunction(name=name, arguments=args))
            return ChatMessage(role=MessageRole.ASSISTANT, content=content, tool_calls=[call],
                               token_usage=TokenUsage(**USAGE))

    class Lookup(Tool):
        name = "lookup"
        description = "Look a number up."
        inputs = {"n": {"type": "integer", "description": "the number"}}
        output_type = "string"

        def forward(self, n: int) -> str:
            return f"value {n}"

    agent = ToolCallingAgent(tools=[Lookup()], model=ScriptedModel(model_id="scripted"),
                             verbosity_level=LogLevel.OFF, max_steps=turns + 10)

    def go() -> Any:
        agent.run("go")
        return agent.memory

    return go


def driver(loop: str, turns: int, progress: Progress) -> Callable[[], Any]:
    if loop in BARE:
        return bare_driver(turns, progress, loop)
    drivers = {"pydantic-ai": pydantic_ai_driver, "openai-agents": openai_agents_driver,
               "smolagents": smolagents_driver}
    return drivers[loop](turns, progress)


def child(loop: str, turns: int, repeat: int) -> None:
    driver(loop, 5, Progress(every=10**9))()  # warm up: imports and first-call caches are not turns
    _emit({"ready": True})
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        progress = Progress()
        run = driver(loop, turns, progress)
        gc.collect()
        rss_before = _rss()
        progress.start_cpu = start = time.process_time()
        kept = run()
        cpu = time.process_time() - start
        gc.collect()
        held = _rss() - rss_before
        del kept
        if progress.calls != turns + 1:
            raise SystemExit(f"{loop}: {progress.calls} model calls, expected {turns + 1}")
        row = {"cpu_s": cpu, "held_bytes": held}
        if best is None or cpu < best["cpu_s"]:
            best = row
    assert best is not None
    _emit({"done": turns, **best})
    # Interpreter teardown is not part of the measurement, and a framework's exit handlers may
    # wait on the network (openai-agents' trace exporter does, tracing disabled or not).
    os._exit(0)


# --------------------------------------------------------------------------- the parent side


def envs_dir() -> Path:
    return Path(os.environ.get("AKC_ENVS_DIR") or Path.home() / ".cache" / "akc" / "envs")


def python_for(loop: str) -> str | None:
    if loop in BARE:
        return sys.executable
    python = envs_dir() / loop / "bin" / "python"
    return str(python) if python.exists() else None


def _child_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def measure(loop: str, turns: int, repeat: int, timeout: float, max_rss: int) -> dict[str, Any]:
    row: dict[str, Any] = {"loop": loop, "turns": turns}
    python = python_for(loop)
    if python is None:
        return {**row, "status": "not installed", "env": str(envs_dir() / loop)}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    cmd = [python, str(Path(__file__).resolve()), "--child", loop, "--turns", str(turns), "--repeat", str(repeat)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # The time cap counts from the end of the warm-up run (imports of a big framework on a busy
    # machine can take a minute); the imports get a cap of their own.
    deadline, stopped, peak = time.monotonic() + IMPORT_CAP_S, None, 0
    ready = False
    while proc.poll() is None:
        if not ready and any("ready" in line for line in lines):
            ready, deadline = True, time.monotonic() + timeout
        peak = max(peak, _child_rss(proc.pid))
        if peak > max_rss:
            stopped = f"stopped: RSS over {max_rss // 2**20} MiB"
        elif time.monotonic() > deadline:
            stopped = f"stopped: over {timeout:g} s" if ready else f"stopped: not ready after {IMPORT_CAP_S} s"
        if stopped:
            proc.kill()
            break
        time.sleep(0.05)
    proc.wait()
    reader.join(5)
    stderr = proc.stderr.read() if proc.stderr else ""
    row["load"] = round(os.getloadavg()[0], 2)
    row["peak_rss_mb"] = round(peak / 1e6, 1)
    done = next((line for line in reversed(lines) if "done" in line), None)
    if done is not None:
        row.update(status="ok", us_per_turn=round(done["cpu_s"] / turns * 1e6, 1),
                   mb_per_1k_turns=round(done["held_bytes"] / turns * 1000 / 1e6, 2))
        return row
    last = next((line for line in reversed(lines) if "progress" in line), None)
    if stopped is None:
        tail = stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return {**row, "status": f"failed: {tail[0][:200]}"}
    row["status"] = stopped
    if last is not None:  # how far it got in the run in flight
        row.update(turns_done=last["progress"], us_per_turn=round(last["cpu_s"] / last["progress"] * 1e6, 1),
                   rss_mb=round(last["rss_mb"], 1))
    return row


def describe(row: dict[str, Any]) -> str:
    head = f"{row['loop']:<14} {row['turns']:>6}"
    if row["status"] == "ok":
        return (f"{head} {row['us_per_turn']:>10,.1f} µs/turn {row['mb_per_1k_turns']:>7.2f} MB/1k turns"
                f"   (peak RSS {row['peak_rss_mb']:,.0f} MB, load {row['load']})")
    if row["status"] == "not installed":
        return f"{head}  not installed ({row['env']})"
    if "turns_done" in row:
        return (f"{head}  {row['status']}: {row['us_per_turn']:,.1f} µs/turn over the first "
                f"{row['turns_done']:,} turns, RSS {row['rss_mb']:,.0f} MB (load {row['load']})")
    return f"{head}  {row['status']}" + (f" (load {row['load']})" if "load" in row else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--loops", nargs="+", choices=LOOPS, default=list(LOOPS))
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--timeout", type=float, default=300.0, help="wall seconds per (loop, N) process")
    parser.add_argument("--max-rss-mb", type=int, default=2048, help="RSS cap per process")
    parser.add_argument("--json", action="store_true", help="one JSON line per (loop, N) instead of text")
    parser.add_argument("--child", choices=LOOPS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.turns[0], args.repeat)
        return
    if not args.json:
        print(f"{'loop':<14} {'turns':>6} {'CPU':>10}         {'held':>7}  (envs: {envs_dir()})")
    for loop in args.loops:
        stopped = False
        for turns in args.turns:
            if stopped:  # a smaller N was stopped: a larger one would be too
                row = {"loop": loop, "turns": turns, "status": "skipped (a smaller N was stopped)"}
            else:
                row = measure(loop, turns, args.repeat, args.timeout, args.max_rss_mb * 2**20)
                stopped = row["status"].startswith("stopped")
            print(json.dumps(row) if args.json else describe(row), flush=True)


if __name__ == "__main__":
    main()
