"""``akc run --jobs N`` against a slow stdio kernel (issue 17 §3): the reference kernel's stdio
server (``python -m reference_kernel.stdio``) behind a proxy that delays every message it sends
(kernel → harness) by ``--delay-ms`` (default 5 ms), so latency, not CPU, is what a run waits on.

Runs ``akc run`` once per ``--jobs`` value (default 1 and 8) and prints one JSON line each:
``{"jobs", "wall_s", "summary", "exit_code", "checks", "messages", "load", "not_passing"}`` —
``messages``: how many the kernel sent over the run (per scenario: messages / checks), ``load``:
the 1-minute load average when the run ended (the machine may be shared), ``not_passing``: each
requirement that did not pass, with why (on a saturated machine a scenario can run out of time:
``--timeout-scale``). The verdict counts must be equal.

    python benchmarks/slow_kernel.py [--jobs 1 8] [--delay-ms 5] [--req ID ...]

Target (issue 17): with a 5 ms kernel, ``--jobs 8`` takes at most 30 s.

The proxy itself is this file run with ``--proxy DELAY_MS`` (the adapter command line).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def proxy(delay_s: float) -> None:
    """Relay stdin to the kernel as is, and each line of the kernel's stdout ``delay_s`` late;
    on exit, add the number of lines relayed to the file ``$SLOW_KERNEL_COUNT`` (if set)."""
    kernel = subprocess.Popen([sys.executable, "-m", "reference_kernel.stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    sent = 0

    def downstream() -> None:  # harness → kernel
        assert kernel.stdin is not None
        for line in sys.stdin.buffer:
            kernel.stdin.write(line)
            kernel.stdin.flush()
        kernel.stdin.close()

    threading.Thread(target=downstream, daemon=True).start()
    assert kernel.stdout is not None
    out = sys.stdout.buffer
    try:
        for line in kernel.stdout:
            time.sleep(delay_s)
            out.write(line)
            out.flush()
            sent += 1
    finally:
        count = os.environ.get("SLOW_KERNEL_COUNT")
        if count:
            with open(count, "a", encoding="utf-8") as fh:
                fh.write(f"{sent}\n")
        kernel.wait()


def run(jobs: int, delay_ms: float, reqs: list[str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="akc-slow-") as tmp:
        report, count = Path(tmp) / "r.json", Path(tmp) / "count"
        adapter = f"stdio:{sys.executable} {Path(__file__).resolve()} --proxy {delay_ms}"
        args = [sys.executable, "-m", "conformance", "run", "--adapter", adapter, "--jobs", str(jobs), "--json", str(report)]
        for r in reqs:
            args += ["--req", r]
        env = dict(os.environ, SLOW_KERNEL_COUNT=str(count), PYTHONPATH=str(ROOT))
        start = time.monotonic()
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - start
        data = json.loads(report.read_text()) if report.exists() else {}
        messages = sum(int(n) for n in count.read_text().split()) if count.exists() else None
        checks = len({(c["feature"], c["scenario"]) for r in data.get("requirements", []) for c in r["checks"]})
        # A loaded machine can make a scenario too slow to finish (incomplete): say which and why.
        not_passing = {r["id"]: f"{r['verdict']}: {explanation(r)[:160]}" for r in data.get("requirements", []) if r["verdict"] != "pass"}
        return {"jobs": jobs, "wall_s": round(wall, 1), "summary": data.get("summary"), "exit_code": done.returncode,
                "checks": checks, "messages": messages, "load": round(os.getloadavg()[0], 2), "not_passing": not_passing}


def explanation(req: dict[str, object]) -> str:
    bad = [c for c in req.get("checks", []) if c.get("outcome") != "pass"]  # type: ignore[union-attr]
    return f"{bad[0]['scenario']}: {bad[0].get('message')}" if bad else str(req.get("message"))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--proxy":
        proxy(float(sys.argv[2]) / 1000)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--req", action="append", default=[])
    ns = parser.parse_args()
    results = []
    for jobs in ns.jobs:
        results.append(run(jobs, ns.delay_ms, ns.req))
        print(json.dumps(results[-1]), flush=True)
    if len({json.dumps(r["summary"], sort_keys=True) for r in results}) > 1:
        sys.exit("the verdict counts differ between the runs")


if __name__ == "__main__":
    main()
