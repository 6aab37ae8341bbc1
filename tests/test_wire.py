"""The stdio wire protocol, harness side: the reference kernel served over the wire, and kernel
processes that misbehave (tests/wire_fakes/fake_kernel.py) — crash, hang, garbage, wrong seq,
another protocol version, an invalid message under --validate-protocol."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import UsageError
from conformance.harness.loading import load_adapter
from conformance.harness.runner import PortalRunner
from conformance.boundary.scenario import (
    CancelAt,
    ConcurrencySpec,
    ModelDef,
    ModelResponse,
    Scenario,
    ScriptedToolCall,
    ToolDef,
    UserMessage,
)
from conformance.wire import client

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "wire_fakes" / "fake_kernel.py"
REFERENCE = "stdio:python -m reference_kernel.stdio"


def fake(mode: str) -> str:
    return f"stdio:{sys.executable} {FAKE} {mode}"


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def runner(request: pytest.FixtureRequest):
    r = PortalRunner(request.param).start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def reference():
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    return load_adapter(REFERENCE)


def tool_scenario(**kw) -> Scenario:
    return Scenario(
        name=kw.pop("name", "weather"),
        profile=kw.pop("profile", "commonagent"),
        tools=[ToolDef(name="weather", result="sunny")],
        model=ModelDef(
            responses=[
                ModelResponse(tool_calls=[ScriptedToolCall(id="c1", name="weather", args={"city": "Oslo"})]),
                ModelResponse(text="It is sunny.", chunks=3),
            ]
        ),
        user_messages=[UserMessage(text="Weather in Oslo?")],
        **kw,
    )


def test_the_reference_kernel_runs_over_the_wire(runner: PortalRunner, reference) -> None:
    run = runner.run(reference, tool_scenario())
    assert run.error is None and not run.timed_out, run.error or run.diagnostic
    assert run.result is not None and run.result.outcomes[0].reply == "It is sunny."
    kinds = [e["kind"] for e in run.log if e["kind"] not in ("journal_write", "submit")]
    assert kinds == ["model_request", "model_response", "tool_start", "tool_end", "model_request", "model_response"]
    assert run.result.journal.tool_calls[0].result == "sunny"
    # The boundary's journal writes and the submission cross the wire, in the kernel's order.
    assert [e["message"] for e in run.log if e["kind"] == "submit"] == [0]
    ops = [e["op"] for e in run.log if e["kind"] == "journal_write"]
    assert ops[0] == "create_session" and ops[-1] == "finish_turn"
    assert ops.count("append_message") == 4 and ops.count("record_tool_call") == 1


def test_concurrent_callbacks_meet_at_a_rendezvous(runner: PortalRunner, reference) -> None:
    """Two tool calls that must be running at once: served concurrently over the wire."""
    scenario = Scenario(
        name="rendezvous",
        profile="kernel",
        tools=[ToolDef(name="a", concurrency=ConcurrencySpec(safe=True)), ToolDef(name="b", concurrency=ConcurrencySpec(safe=True))],
        rendezvous=[["x", "y"]],
        model=ModelDef(
            responses=[
                ModelResponse(tool_calls=[ScriptedToolCall(id="x", name="a", args={}), ScriptedToolCall(id="y", name="b", args={})]),
                ModelResponse(text="done"),
            ]
        ),
    )
    run = runner.run(reference, scenario)
    assert run.result is not None, run.error
    assert not run.doubles.log.of("rendezvous_timeout")
    assert {e["call_id"] for e in run.doubles.log.of("tool_end")} == {"x", "y"}


def test_a_cancel_point_cancels_the_turn_over_the_wire(runner: PortalRunner, reference) -> None:
    scenario = tool_scenario(name="cancel", cancel=CancelAt(at="model_call", index=1))
    run = runner.run(reference, scenario)
    assert run.result is not None, run.error or run.diagnostic
    assert run.result.outcomes[0].status == "interrupted"
    assert run.doubles.log.of("cancel") and not run.doubles.log.of("cancel_missing")


def test_a_callback_the_kernel_gives_up_is_answered_cancelled_and_the_next_one_is_served(runner: PortalRunner) -> None:
    """``$/cancel`` of a callback being served (its first chunk sent, then blocked): answered
    -32800; the worker that served it serves the next callback (with a new cancel scope)."""
    scenario = Scenario(
        name="give up",
        profile="commonagent",
        model=ModelDef(responses=[ModelResponse(text="never", block_until_cancelled=True), ModelResponse(text="after")]),
        user_messages=[UserMessage(text="hi")],
    )
    run = runner.run(load_adapter(fake("giveup")), scenario)
    assert run.result is not None, run.error or run.diagnostic
    assert run.result.outcomes[0].reply == "-32800:after"


def test_a_crash_is_an_error_with_the_stderr_tail_and_the_next_scenario_gets_a_new_process(runner: PortalRunner) -> None:
    adapter = load_adapter(fake("crash"))
    run = runner.run(adapter, tool_scenario(name="crash me"))
    assert run.error is not None and not run.timed_out
    assert "exited with code 3" in run.error and "fatal: the fake kernel crashed" in run.error
    run = runner.run(adapter, tool_scenario(name="fine"))
    assert run.error is None, run.error
    assert run.result is not None and run.result.outcomes[0].status == "completed"


def test_a_hang_is_killed_at_the_timeout(runner: PortalRunner) -> None:
    adapter = load_adapter(fake("hang"))
    before = set(client._LIVE_PIDS)
    run = runner.run(adapter, tool_scenario(timeout_s=0.5))
    assert run.timed_out and run.error is None
    assert adapter._conn is None  # killed; the next scenario starts a fresh process
    assert client._LIVE_PIDS <= before


def test_garbage_on_stdout_is_an_error_naming_the_line(runner: PortalRunner) -> None:
    run = runner.run(load_adapter(fake("garbage")), tool_scenario())
    assert run.error is not None
    assert "not a JSON-RPC 2.0 message (line 2)" in run.error
    assert "hello from the kernel, this is not JSON" in run.error


def test_a_wrong_seq_is_an_error(runner: PortalRunner) -> None:
    run = runner.run(load_adapter(fake("wrongseq")), tool_scenario())
    assert run.error is not None and "wrong seq" in run.error and "'model.complete'" in run.error


def test_errored_and_skipped_envelopes(runner: PortalRunner) -> None:
    run = runner.run(load_adapter(fake("errored")), tool_scenario())
    assert run.error is not None and "KeyError: 'tools'" in run.error and "in build_kernel()" in run.error
    run = runner.run(load_adapter(fake("skipped")), tool_scenario())
    assert run.unsupported == "no hooks in this kernel"


def test_validation_names_the_invalid_message_and_its_path(runner: PortalRunner) -> None:
    adapter = load_adapter(fake("invalid"))
    adapter.validating = True
    run = runner.run(adapter, tool_scenario())
    assert run.error is not None
    assert "protocol violation" in run.error and "kernel→harness tool.invoke params: at $.call.id" in run.error


def test_without_validation_the_same_message_is_served(runner: PortalRunner) -> None:
    adapter = load_adapter(fake("invalid"))
    adapter.validating = False
    run = runner.run(adapter, tool_scenario())
    assert run.error is None, run.error


@pytest.mark.parametrize("mode, words", [("version", "speaks protocol version 2"), ("refuse", "refused protocol version 1")])
def test_another_protocol_version_is_refused_at_start(mode: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        load_adapter(fake(mode))


@pytest.mark.parametrize(
    "spec, words",
    [("stdio:", "no command"), ("stdio:'unclosed", "cannot parse"), ("stdio:/nonexistent/kernel", "cannot start")],
)
def test_bad_stdio_specs_are_usage_errors(spec: str, words: str) -> None:
    with pytest.raises(UsageError, match=words):
        load_adapter(spec)


def test_akc_run_refuses_another_protocol_version_with_exit_2(akc_here: Any) -> None:
    out = akc_here("run", "--adapter", fake("version"))  # the entry point, in this interpreter
    assert out.returncode == 2, out.stdout + out.stderr
    assert "speaks protocol version 2; this harness speaks version 1" in out.stderr
    assert "Traceback" not in out.stderr


def test_span_notifications_are_merged_into_the_result(runner: PortalRunner) -> None:
    run = runner.run(load_adapter(fake("spans")), tool_scenario())
    assert run.result is not None, run.error
    assert [s.span_id for s in run.result.spans] == ["r1", "n1"]


def test_a_span_notification_missing_a_field_is_the_kernels(runner: PortalRunner) -> None:
    """docs/adapter.md, "Wrong types": a notified span without its span_id is a record the kernel
    produced wrong, named for the checks that read it; not an adapter error."""
    run = runner.run(load_adapter(fake("badspan")), tool_scenario())
    assert run.error is None, run.error
    assert any(m.startswith("spans[") and "span_id" in m for m in run.malformed), run.malformed


def test_a_kernel_that_exits_at_start_is_a_usage_error_with_its_stderr() -> None:
    with pytest.raises(UsageError, match="(?s)exited with code 5 during the start handshake.*cannot open the model configuration"):
        load_adapter(fake("exit"))


def test_akc_run_with_a_crashing_kernel_finishes_and_writes_its_report(tmp_path: Path, akc_here: Any) -> None:
    out = akc_here("run", "--adapter", fake("crashall"), "--smoke", "--json", str(tmp_path / "r.json"))
    assert out.returncode == 3, out.stdout + out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    checks = [c for r in report["requirements"] for c in r["checks"]]
    assert checks and all(c["outcome"] == "error" for c in checks)
    assert all("fatal: the fake kernel crashed" in c["message"] for c in checks)
