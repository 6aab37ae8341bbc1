"""The benchmark script runs and prints its JSON lines (its numbers are read by people, not
asserted: speed is never a timed assert)."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "turn_overhead.py"


def test_turn_overhead_prints_one_line_per_size() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--turns", "20", "40", "--repeat", "1"],
        check=True, capture_output=True, text=True,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["turns"] for r in rows] == [20, 40]
    assert all(r["kernel_us_per_turn"] > 0 and r["bare_us_per_turn"] > 0 for r in rows)
