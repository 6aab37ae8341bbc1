"""CPU of one certification of the reference kernel by the route its model calls take, side by side.

Three routes, the same kernel and the same suite (``akc run``, every requirement):

* ``in-process``: the adapter hands the kernel ``doubles.model_stream``;
* ``stdio``: the kernel in its own process (``python -m reference_kernel.stdio``), every callback
  a JSON-RPC line (``conformance/wire/``);
* ``http``: the kernel in process, its model the served model (``conformance/httpmodel/``) called
  through the kernel's own OpenAI-compatible provider (plain httpx, streamed Chat Completions).

Each run is its own ``python -m conformance run`` process; its CPU is user + system time of that
process and its children (the stdio kernel included), from ``resource.getrusage``. The routes are
run interleaved, ``--repeat`` rounds, and each route's best is kept (the machine is shared: compare
figures of one invocation only). Targets (issue 23 §5): http <= 1.5x stdio, stdio <= 2x in-process.
The http route's run exits 3, by design: Chat Completions cannot deliver usage before a stream
ends, so COST-002 (usage received before a cancel) is ``incomplete`` there (``akc readings
dialect-limits``); every other requirement runs as on the other routes.

    python benchmarks/routes.py [--repeat 3]

Prints one JSON line per round and a last one with the best of each route and the two ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

ROUTES = {
    "in-process": "reference_kernel.adapter:factory",
    "stdio": f"stdio:{sys.executable} -m reference_kernel.stdio",
    "http": "routes:http_adapter",
}


def http_adapter() -> Any:
    """The reference kernel with its own httpx provider at the served Chat Completions URL: one
    httpx client per scenario (a kernel keeps its client; a new one per call costs ~70 ms of CPU
    loading the system's certificates into a fresh SSL context)."""
    import json as _json
    import ssl

    import httpx

    from conformance.httpmodel.host import TURN_HEADER
    from reference_kernel.adapter import ReferenceAdapter
    from reference_kernel.providers import OpenAICompatProvider

    tls = ssl.create_default_context()  # loaded once: never used on the loopback, but httpx builds one per client

    class Provider(OpenAICompatProvider):
        async def stream(self, request: dict[str, Any], turn: dict[str, Any]) -> Any:  # type: ignore[override]
            self.turn = _json.dumps(turn)
            async for chunk in super().stream(request):
                yield chunk

        def _headers(self) -> dict[str, str]:
            return {**super()._headers(), TURN_HEADER: getattr(self, "turn", "null")}

    clients: list[httpx.AsyncClient] = []

    def provider(d: Any) -> Provider:
        clients.append(httpx.AsyncClient(trust_env=False, verify=tls, timeout=60))
        return Provider(d.http_model.base_url("openai-chat"), d.http_model.api_key, d.scenario.model.name, client=clients[-1])

    class HttpAdapter(ReferenceAdapter):
        async def run(self, scenario: Any, doubles: Any) -> Any:
            try:
                return await super().run(scenario, doubles)
            finally:
                while clients:
                    await clients.pop().aclose()

    return HttpAdapter(name="reference-kernel/http", dialects=["openai-chat"], model=provider)


def run(route: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "conformance", "run", "--adapter", ROUTES[route]],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = next((line for line in out.stdout.splitlines() if " pass, " in line), out.stderr.strip()[-200:])
    return {"route": route, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "exit": out.returncode, "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    best: dict[str, float] = {}
    for i in range(args.repeat):
        for route in ROUTES:
            r = run(route)
            best[route] = min(best.get(route, float("inf")), r["cpu_s"])
            print(json.dumps({"round": i + 1, **r, "load": round(os.getloadavg()[0], 2)}), flush=True)
    print(json.dumps({
        "best_cpu_s": best,
        "stdio_over_in_process": round(best["stdio"] / best["in-process"], 2),
        "http_over_stdio": round(best["http"] / best["stdio"], 2),
    }))


if __name__ == "__main__":
    main()
