"""The benchmark scripts run and print their lines (their numbers are read by people, not
asserted: speed is never a timed assert)."""

import json
import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_turn_overhead_prints_one_line_per_size() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "turn_overhead.py"), "--turns", "20", "40", "--repeat", "1"],
        check=True, capture_output=True, text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["turns"] for r in rows] == [20, 40]
    for r in rows:
        assert r["kernel_us_per_turn"] > 0 and r["asyncio_us_per_turn"] > 0 and r["anyio_us_per_turn"] > 0
        assert r["ratio"] > 0 and r["growth"] > 0
        assert r["kernel_mb_per_1k_turns"] > 0 and "load" in r


def test_model_double_prints_one_line_per_variant_and_size() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "model_double.py"), "--messages", "20", "40", "--repeat", "1", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["variant"], r["messages"]) for r in rows] == [
        (v, n) for v in ("grown", "new-list", "fresh", "marker") for n in (20, 40)
    ]
    for r in rows:
        assert r["us_per_request"] > 0 and r["check_ns_per_message"] > 0 and r["mb_held"] > 0 and "load" in r


def test_peers_runs_each_loop_in_its_own_process_and_skips_missing_envs(tmp_path: Path) -> None:
    env = dict(os.environ, AKC_ENVS_DIR=str(tmp_path))  # no peer envs there
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "peers.py"), "--turns", "10", "30", "--repeat", "1", "--json",
         "--timeout", "120", "--loops", "asyncio", "anyio", "kernel", "pydantic-ai"],
        check=True, capture_output=True, text=True, env=env,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["loop"], r["turns"]) for r in rows] == [
        (loop, n) for loop in ("asyncio", "anyio", "kernel", "pydantic-ai") for n in (10, 30)
    ]
    for r in rows[:6]:
        assert r["status"] == "ok", r
        assert r["us_per_turn"] > 0 and "mb_per_1k_turns" in r and "load" in r
    assert [r["status"] for r in rows[6:]] == ["not installed", "not installed"]


def test_peers_stops_a_run_over_its_time_cap(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "peers.py"), "--turns", "1000000", "10", "--repeat", "1",
         "--json", "--timeout", "0.3", "--loops", "asyncio"],
        check=True, capture_output=True, text=True,
    ).stdout
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["status"].startswith("stopped: over 0.3 s") and first["turns_done"] > 0
    assert second["status"].startswith("skipped")
