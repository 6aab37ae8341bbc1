"""The Node example kernel (examples/node-kernel/kernel.js) certified over the stdio wire protocol:
the suite run as a user runs it, and one protocol-level exchange answered by hand. The default tier
certifies the kernel-profile part of tests/sample.py; the whole suite is marked ``whole_suite``
(``python -m pytest -m whole_suite``, its own step of ``.ci/run``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.boundary.scenario import Scenario
from conformance.catalog.requirements import load_catalog
from tests.sample import SAMPLE, req_args

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "examples" / "node-kernel" / "kernel.js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH (CI installs Node 20 for this test)")

#: What the Node kernel does not implement: capabilities it does not declare.
NOT_OFFERED = {"BOUND-016", "BOUND-017", "COST-005", "COST-006", "COST-007", "STOP-006"}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("AKC_INNER", None)
    return env


def _assert_certified(data: dict[str, Any], ids: set[str] | None) -> None:
    assert data["kernel"]["name"] == "node-kernel" and data["kernel"]["language"] == "javascript"
    assert data["profiles"] == ["kernel"]
    verdicts = {r["id"]: r["verdict"] for r in data["requirements"]}
    if ids is not None:
        assert set(verdicts) == ids
    expected = NOT_OFFERED if ids is None else NOT_OFFERED & ids
    assert {k for k, v in verdicts.items() if v == "not-offered"} == expected
    others = {k: v for k, v in verdicts.items() if k not in NOT_OFFERED}
    assert others and set(others.values()) == {"pass"}, {k: v for k, v in others.items() if v != "pass"}
    assert data["summary"]["error"] == 0 and data["summary"]["incomplete"] == 0


def test_suite_certifies_the_node_kernel_on_the_sample(tmp_path: Path, akc_here: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel-profile requirements of the sample of tests/sample.py (concurrency,
    cancellation, cost, two capabilities the kernel does not offer), through the akc entry point
    in this interpreter; the whole suite, in a process of its own, is the ``whole_suite`` test below."""
    catalog = load_catalog()
    ids = {rid for rid in SAMPLE if "kernel" in catalog.get(rid).profiles}
    assert NOT_OFFERED & ids and {"CONC-001", "TOOL-003", "STOP-002", "COST-001"} <= ids
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])
    monkeypatch.delenv("AKC_INNER", raising=False)
    report = tmp_path / "node.json"
    out = akc_here("run", "--adapter", f"stdio:node {KERNEL.relative_to(ROOT)}", "--profile", "kernel", *req_args(sorted(ids)),
                   "--json", str(report))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    _assert_certified(json.loads(report.read_text()), ids)


@pytest.mark.skipif(not (KERNEL.parent / "node_modules" / "openai").is_dir(), reason="the openai npm package is not installed (npm ci in examples/node-kernel; .ci/run does)")
def test_the_node_kernels_model_calls_through_the_openai_package(tmp_path: Path, akc_here: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """--openai: the model calls go over HTTP through the official openai npm package, to the
    served Chat Completions URL of the run request: streaming, cancellation and usage hold."""
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])
    monkeypatch.delenv("AKC_INNER", raising=False)
    report = tmp_path / "node.json"
    ids = ["TOOL-003", "STOP-002", "COST-001"]
    out = akc_here("run", "--adapter", f"stdio:node {KERNEL.relative_to(ROOT)} --openai", "--profile", "kernel",
                   *req_args(ids), "--json", str(report))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    data = json.loads(report.read_text())
    assert data["kernel"]["name"] == "node-kernel/openai" and data["kernel"]["dialects_used"] == ["openai-chat"]
    assert {r["id"]: r["verdict"] for r in data["requirements"]} == dict.fromkeys(ids, "pass")


@pytest.mark.whole_suite
def test_suite_certifies_the_node_kernel(tmp_path: Path) -> None:
    """Every requirement, as a user runs it (``python -m pytest -m whole_suite``)."""
    report = tmp_path / "node.json"
    out = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--adapter", f"stdio:node {KERNEL.relative_to(ROOT)}",
         "--profile", "kernel", "--json", str(report)],
        capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    _assert_certified(json.loads(report.read_text()), None)


# --------------------------------------------------------------------------- by hand


class Wire:
    """The harness side of docs/protocol.md, just enough to answer one scripted run."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [NODE or "node", str(KERNEL)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        self.next_id = 100

    def send(self, **msg: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read() if self.proc.stderr else "kernel exited"
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any], answer: Any = None) -> dict[str, Any]:
        """Send a request; answer the kernel's callbacks with ``answer(msg)`` until the response."""
        self.next_id += 1
        rid = self.next_id
        self.send(id=rid, method=method, params=params)
        while True:
            msg = self.read()
            if "method" not in msg and msg.get("id") == rid:
                return msg
            assert answer is not None, f"unexpected callback {msg}"
            reply = answer(msg)
            if reply is not None:
                self.send(id=msg["id"], **reply)

    def close(self) -> None:
        try:
            assert self.request("stop", {}) == {"jsonrpc": "2.0", "id": self.next_id, "result": {}}
            assert self.proc.wait(timeout=10) == 0
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=10)


#: Scenarios travel whole (every field, defaults included), as the harness sends them.
SCENARIO: dict[str, Any] = {
    "name": "one tool call", "profile": "kernel",
    "tools": [{"name": "weather", "kind": "data_source", "concurrency": {"safe": True}}],
    "hooks": [{"id": "h", "point": "context-assemble"}],
    "model": {"pricing": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}},
    "user_messages": [{"text": "Weather in Oslo?"}],
}


def full(scenario: dict[str, Any]) -> dict[str, Any]:
    return Scenario.model_validate(scenario).model_dump(mode="json")


ANSWERS = [
    [{"type": "tool_use", "id": "c1", "name": "weather", "input_json": '{"city": "Oslo"}'},
     {"type": "usage", "input_tokens": 10, "output_tokens": 5, "cached_input_tokens": 0}],
    [{"type": "text", "text": "It is sunny."},
     {"type": "usage", "input_tokens": 20, "output_tokens": 4, "cached_input_tokens": 0}],
]


def test_protocol_exchange_by_hand() -> None:
    wire = Wire()
    seen: list[str] = []
    requests: list[dict[str, Any]] = []

    def answer(msg: dict[str, Any]) -> dict[str, Any] | None:
        assert msg["params"]["seq"] == 1
        seen.append(msg["method"] + (":" + msg["params"]["point"] if msg["method"] == "hook.dispatch" else ""))
        if msg["method"] == "model.complete":
            requests.append(msg["params"]["request"])
            return {"result": {"chunks": ANSWERS[len(requests) - 1]}}
        if msg["method"] == "tool.invoke":
            assert msg["params"]["call"] == {"id": "c1", "name": "weather", "args": {"city": "Oslo"}}
            return {"result": {"content": "sunny", "is_error": False}}
        if msg["method"] == "policy.precheck":
            return {"result": {"allow": True, "reason": None}}
        if msg["method"] == "hook.dispatch":
            return {"result": {"kind": "continue"}}
        return None  # notifications (span)

    try:
        start = wire.request("start", {"protocol": 1, "harness": {"name": "test", "version": "0"}})
        assert start["result"]["protocol"] == 1 and start["result"]["info"]["profiles"] == ["kernel"]
        run = wire.request("run", {"seq": 1, "scenario": full(SCENARIO)}, answer)["result"]
        assert run["seq"] == 1 and run["status"] == "ok", run
        result = run["result"]
        assert seen == ["hook.dispatch:context-assemble", "model.complete", "policy.precheck", "tool.invoke",
                        "hook.dispatch:context-assemble", "model.complete"]
        assert requests[1]["messages"][-1] == {"role": "tool_result", "call_id": "c1", "content": "sunny", "is_error": False}
        assert [o["subtype"] for o in result["outcomes"]] == ["success"]
        assert result["outcomes"][0]["reply"] == "It is sunny."
        assert [round(u["cost_usd"], 9) for u in result["usage"]] == [0.00002, 0.000028]
        assert {s["kind"] for s in result["spans"]} >= {"turn", "model_call", "tool", "veto_chain"}
        uuid7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        turn = result["journal"]["turns"][0]["turn"]
        assert uuid7.match(turn["session_id"]) and uuid7.match(turn["turn_id"])
        assert turn["session_id"] < turn["turn_id"]  # v7 ids sort by creation
        # A ConcurrencySpec on an interactive tool is refused, naming the field; nothing runs.
        bad = {**SCENARIO, "tools": [{"name": "ask", "kind": "interactive", "concurrency": {"safe": True}}]}
        refused = wire.request("run", {"seq": 2, "scenario": full(bad)})["result"]
        assert refused["status"] == "ok" and refused["result"]["rejected"]["field"] == "concurrency"
        other = wire.request("run", {"seq": 3, "scenario": full({**SCENARIO, "profile": "commonagent"})})["result"]
        assert other["status"] == "skipped"
    finally:
        wire.close()
