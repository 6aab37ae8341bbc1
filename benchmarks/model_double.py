"""Per-request cost of the harness's model double (``HarnessDoubles.model_stream``) as a
scenario's history grows (issue 17 §2: it should not grow with the history).

Workload: one session driven the way a kernel drives the doubles: a user message, then turns of
one scripted tool call each (the request, the streamed response consumed, an assistant message
with the call and a tool_result appended), until the history holds ``N`` messages (N/2 model
requests). Three ways a kernel hands over its history:

* ``grown``: one list, grown by appends, handed over every time (the reference kernel);
* ``new-list``: a new list every request holding the same message objects;
* ``fresh``: equal message dicts re-created every request (a stdio kernel: every request is
  freshly parsed JSON; the parse itself is not timed);
* ``marker``: as ``grown``, and a prompt-cache marker moved in place, every request, from the
  message that had it to the last one (two messages changed in place per request).

Reported per (variant, N): ``us/req`` = mean CPU time (``time.process_time_ns``) of one request
(``model_stream`` and draining its stream) over the requests whose history held 3N/4 to N
messages, the best of ``--repeat`` sessions (garbage collection during them counts);
``us/req@N/2`` the same over 3N/8 to N/2 messages (the ratio of the two says whether the cost
grows with the history); ``check ns/msg`` = the part of it no representation can avoid, per
message: the last request's logged copies compared by content, in C (``list ==``), with the
next request's messages (wall time, the fastest of 5); ``MB held`` = memory the doubles (their log) keep after the session
(``tracemalloc``, an untimed session, the kernel's history dropped, after ``gc.collect()``);
``KB/req`` the same per request. With each line, the 1-minute load average.

    python benchmarks/model_double.py [--messages 100 500 1000 4000] [--variants grown new-list fresh marker]
                                      [--repeat 3] [--no-memory] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import time
import tracemalloc
from typing import Any

from conformance.boundary.scenario import Scenario
from conformance.harness.doubles import HarnessDoubles

VARIANTS = ("grown", "new-list", "fresh", "marker")
TOOLS = [{"name": "lookup", "description": "look a number up", "input_schema": {"type": "object"}}]


def doubles_for(requests: int) -> HarnessDoubles:
    scenario = Scenario.model_validate(
        {
            "name": "bench",
            "profile": "kernel",
            "tools": [{"name": "lookup"}],
            "model": {"responses": [{"text": "step", "tool_calls": [{"name": "lookup", "args": {"n": 1}}], "repeat": requests}]},
        }
    )
    return HarnessDoubles(scenario)


def handed_over(history: list[dict[str, Any]], variant: str) -> list[dict[str, Any]]:
    """The messages list the kernel hands over for its next request."""
    if variant == "marker":
        for message in history:
            message.pop("cache", None)  # a full scan, the kernel's own (not timed)
        history[-1]["cache"] = True
    if variant in ("grown", "marker"):
        return history
    if variant == "new-list":
        return list(history)
    return json.loads(json.dumps(history))


async def session(messages: int, variant: str, timed: bool) -> tuple[HarnessDoubles, list[tuple[int, int]], list[Any]]:
    """One session up to ``messages`` history messages; returns the doubles, if ``timed`` the
    (history length, CPU ns) of every request, and the kernel's history."""
    requests = max(1, messages // 2)
    d = doubles_for(requests)
    turn = {"session_id": "s1", "turn_id": "t1"}
    history: list[dict[str, Any]] = [{"role": "user", "text": "go"}]
    times: list[tuple[int, int]] = []
    clock = time.process_time_ns
    for _ in range(requests):
        sent = handed_over(history, variant)
        request = {"messages": sent, "tools": TOOLS, "params": {"max_tokens": 100}}
        start = clock() if timed else 0
        text, calls = [], []
        async for chunk in d.model_stream(request, turn):
            if chunk["type"] == "text":
                text.append(chunk["text"])
            elif chunk["type"] == "tool_use":
                calls.append({"id": chunk["id"], "name": chunk["name"], "args": json.loads(chunk["input_json"])})
        if timed:
            times.append((len(sent), clock() - start))
        history.append({"role": "assistant", "text": "".join(text), "tool_calls": calls})
        for call in calls:
            history.append({"role": "tool_result", "call_id": call["id"], "content": f"value {call['args']['n']}", "is_error": False})
    return d, times, history


def check_ns_per_message(d: HarnessDoubles, history: list[Any], variant: str) -> float:
    """The content check alone, per message: the last logged request's copies compared, in C,
    with the next request's messages (``list ==``), as the double does it; the fastest of 5."""
    copies = list(d.log.of("model_request")[-1]["request"]["messages"])
    best = None
    for _ in range(5):
        sent = handed_over(history, variant)
        start = time.perf_counter_ns()
        same = copies == sent[: len(copies)]
        elapsed = time.perf_counter_ns() - start
        assert same or variant == "marker"  # there the last copies differ: the marker moved
        best = elapsed if best is None else min(best, elapsed)
    return best / len(copies)


def mean_us(times: list[tuple[int, int]], lo: float, hi: float) -> float:
    window = [ns for n, ns in times if lo <= n <= hi] or [ns for _, ns in times[-1:]]
    return sum(window) / len(window) / 1000


def held_bytes(messages: int, variant: str) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        d, _, _ = asyncio.run(session(messages, variant, timed=False))
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del d
    return after - before


def measure(messages: int, variant: str, repeat: int, memory: bool) -> dict[str, Any]:
    best: dict[str, float] | None = None
    for _ in range(repeat):
        gc.collect()
        d, times, history = asyncio.run(session(messages, variant, timed=True))
        run = {"late": mean_us(times, 0.75 * messages, messages), "half": mean_us(times, 0.375 * messages, 0.5 * messages)}
        run["check"] = check_ns_per_message(d, history, variant)
        del d, history
        if best is None or run["late"] < best["late"]:
            best = run
    assert best is not None
    row: dict[str, Any] = {
        "variant": variant,
        "messages": messages,
        "us_per_request": round(best["late"], 1),
        "us_per_request_at_half": round(best["half"], 1),
        "check_ns_per_message": round(best["check"], 1),
    }
    if memory:
        held = held_bytes(messages, variant)
        row["mb_held"] = round(held / 1e6, 2)
        row["kb_per_request"] = round(held / 1e3 / max(1, messages // 2), 2)
    row["load"] = round(os.getloadavg()[0], 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[100, 500, 1000, 4000])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--repeat", type=int, default=3, help="sessions per measurement; the fastest counts")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc sessions")
    parser.add_argument("--json", action="store_true", help="one JSON line per row instead of a table")
    args = parser.parse_args()
    columns = ["variant", "messages", "us/req", "us/req@N/2", "check ns/msg", "MB held", "KB/req", "load"]
    keys = ["variant", "messages", "us_per_request", "us_per_request_at_half", "check_ns_per_message", "mb_held", "kb_per_request", "load"]
    if not args.json:
        print(" ".join(f"{c:>12}" for c in columns), flush=True)
    for variant in args.variants:
        for messages in args.messages:
            row = measure(messages, variant, args.repeat, not args.no_memory)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(" ".join(f"{row.get(k, '-')!s:>12}" for k in keys), flush=True)


if __name__ == "__main__":
    main()
