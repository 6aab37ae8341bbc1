"""The protocol's messages: the documented example validates line by line against
schemas/protocol/, the validator names what is wrong and where, and the reference kernel process
refuses a protocol version it does not speak."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.wire.messages import METHODS, UNSUPPORTED_VERSION, schema_files
from conformance.wire.validate import ProtocolViolation, check_message

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "protocol.md"
TURN = {"profile_id": "p", "session_id": "s", "turn_id": "t"}


def _doc_lines() -> list[tuple[str, dict | None]]:
    """Every complete message of docs/protocol.md's code blocks (abbreviated ones, with …,
    skipped); ``(block, None)`` marks the start of a code block."""
    out: list[tuple[str, dict | None]] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            out.append(("block", None))
        elif line[:2] in ("→ ", "← ") and "…" not in line:
            out.append(("harness→kernel" if line[0] == "→" else "kernel→harness", json.loads(line[2:])))
    return out


def test_every_complete_message_of_the_documented_exchange_is_valid() -> None:
    lines = _doc_lines()
    assert len([m for _, m in lines if m]) >= 15
    pending: dict[tuple[str, object], str] = {}  # (who asked, id) → method
    methods = set()
    for direction, msg in lines:
        if msg is None:  # a new code block: ids start afresh
            pending.clear()
            continue
        answers = None
        if "method" in msg:
            methods.add(msg["method"])
            if "id" in msg:
                pending[(direction, msg["id"])] = msg["method"]
        else:
            other = "kernel→harness" if direction == "harness→kernel" else "harness→kernel"
            answers = pending.get((other, msg["id"]))
        check_message(msg, direction, answers)
    assert {"start", "run", "stop", "model.complete", "model.chunk", "tool.invoke", "cancel", "$/cancel", "hook.dispatch"} <= methods


def test_every_method_has_its_schema_files() -> None:
    names = set(schema_files())
    for method, (_d, _p, result) in METHODS.items():
        stem = "cancel-request" if method == "$/cancel" else method
        assert f"protocol/{stem}.params.schema.json" in names
        assert (f"protocol/{stem}.result.schema.json" in names) == (result is not None)
        assert (ROOT / "schemas" / f"protocol/{stem}.params.schema.json").is_file()


@pytest.mark.parametrize(
    "msg, direction, answers, words",
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "tool.invoke", "params": {"seq": 1, "call": {"id": 7, "name": "t"}, "turn": TURN}},
         "kernel→harness", None, "at $.call.id: 7 is not of type 'string'"),
        ({"jsonrpc": "2.0", "method": "run", "params": {}}, "kernel→harness", None, "unknown method 'run'"),
        ({"jsonrpc": "2.0", "id": 3, "method": "span", "params": {}}, "kernel→harness", None, "must be a notification"),
        ({"jsonrpc": "1.0", "id": 3, "result": {}}, "kernel→harness", None, "kernel→harness message"),
        ({"jsonrpc": "2.0", "id": 2, "result": {"seq": 1, "status": "done"}}, "kernel→harness", "run", "run result"),
        ({"jsonrpc": "2.0", "id": 2, "result": {"seq": 1, "status": "ok", "result": {"outcomes": [{"message": 0}]}}},
         "kernel→harness", "run", "at $.result.outcomes[0]: 'status' is a required property"),
    ],
)
def test_the_validator_names_the_problem_and_its_path(msg: dict, direction: str, answers: str | None, words: str) -> None:
    with pytest.raises(ProtocolViolation) as info:
        check_message(msg, direction, answers)
    assert words in str(info.value)


def test_the_reference_kernel_refuses_another_protocol_version() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    request = {"jsonrpc": "2.0", "id": 1, "method": "start", "params": {"protocol": 2, "harness": {"name": "t", "version": "0"}}}
    out = subprocess.run(
        [sys.executable, "-m", "reference_kernel.stdio"], input=json.dumps(request) + "\n",
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )
    assert out.returncode == 0, out.stderr  # EOF after the answer: a clean exit
    answer = json.loads(out.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["error"]["code"] == UNSUPPORTED_VERSION
    assert answer["error"]["data"] == {"supported": [1]}


def test_the_reference_kernel_reads_requests_from_a_file_on_stdin(tmp_path: Path) -> None:
    """``python -m reference_kernel.stdio < requests.jsonl``: a regular file is not a pipe (the
    event loop's poller refuses it), and is read as one."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    requests = tmp_path / "requests.jsonl"
    request = {"jsonrpc": "2.0", "id": 1, "method": "start", "params": {"protocol": 1, "harness": {"name": "t", "version": "0"}}}
    requests.write_text(json.dumps(request) + "\n")
    with requests.open("rb") as stdin:
        out = subprocess.run([sys.executable, "-m", "reference_kernel.stdio"], stdin=stdin, capture_output=True, env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stderr == b""
    answer = json.loads(out.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["protocol"] == 1
