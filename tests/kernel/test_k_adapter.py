"""The reference adapter end to end, with a tiny hand-made Doubles (not the harness's)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.boundary.adapter import ToolFailed
from conformance.boundary.scenario import Scenario
from reference_kernel.adapter import factory


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


class TinyDoubles:
    """Model answers from a list; tools echo; hooks record and continue; clock is fixed."""

    def __init__(self, responses: list[list[dict[str, Any]]], hook_outcomes: dict[str, dict] | None = None) -> None:
        self.responses = responses
        self.requests: list[dict[str, Any]] = []
        self.hooks: list[tuple[str, str]] = []
        self.tools: list[dict[str, Any]] = []
        self.turns: list[dict[str, Any]] = []
        self.hook_outcomes = hook_outcomes or {}
        self.cancellers: dict[int, Any] = {}

    async def _stream(self, index: int):
        for chunk in self.responses[index]:
            yield chunk

    def model_stream(self, request: dict[str, Any], turn: dict[str, Any]):
        self.requests.append(json.loads(json.dumps(request)))
        self.turns.append(turn)
        return self._stream(len(self.requests) - 1)

    async def invoke_tool(self, call: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
        self.tools.append(call)
        if call["args"].get("fail"):
            raise ToolFailed("scripted failure")
        return {"content": f"{call['name']}:{call['id']}", "is_error": False}

    async def dispatch_hook(self, hook_id: str, point: str, payload: Any, turn: dict[str, Any]) -> dict[str, Any]:
        self.hooks.append((hook_id, point))
        return self.hook_outcomes.get(point, {"kind": "continue"})

    async def policy_precheck(self, call: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
        return {"allow": True, "reason": None}

    async def ask_approver(self, request: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "approved"}

    def now(self) -> float:
        return 1_000_000.0

    def register_canceller(self, message: int, cancel: Any) -> None:
        self.cancellers[message] = cancel


def two_turns() -> list[list[dict[str, Any]]]:
    usage = {"type": "usage", "input_tokens": 100, "output_tokens": 10, "cached_input_tokens": 0}
    return [
        [{"type": "tool_use", "id": "c1", "name": "lookup", "input_json": '{"q": "x"}'}, usage],
        [{"type": "text", "text": "the answer"}, usage],
    ]


def scenario(profile: str, points: list[str], **extra: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "name": f"{profile} two turns",
            "profile": profile,
            "tools": [{"name": "lookup", "kind": "data_source"}],
            "hooks": [{"id": f"h{i}", "point": p} for i, p in enumerate(points)],
            "model": {"pricing": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}},
            "profile_tags": ["team:core"],
            "session_tags": ["project:site"],
            **extra,
        }
    )


def test_info() -> None:
    info = factory().info
    assert info.name == "reference-kernel" and set(info.profiles) == {"kernel", "commonagent"}
    assert info.doom_loop_subtype == "error_doom_loop" and "subagents" in info.capabilities


@pytest.mark.anyio
async def test_kernel_profile_two_turns() -> None:
    doubles = TinyDoubles(two_turns())
    points = ["session-start", "context-assemble", "plan-ready", "post-tool-call", "session-end"]
    result = await factory().run(scenario("kernel", points), doubles)
    assert result.raised is None and result.rejected is None
    (outcome,) = result.outcomes
    assert (outcome.subtype, outcome.reply) == ("success", "the answer")
    assert [p for _, p in doubles.hooks] == [
        "session-start", "context-assemble", "plan-ready", "post-tool-call", "context-assemble", "session-end",
    ]
    assert doubles.tools == [{"id": "c1", "name": "lookup", "args": {"q": "x"}}]
    assert doubles.turns[0]["tags"] == ["project:site", "team:core"]
    assert [m.message["role"] for m in result.journal.messages] == ["user", "assistant", "tool_result", "assistant"]
    assert [u.cost_usd for u in result.usage] == [pytest.approx(120e-6)] * 2
    assert {s.kind for s in result.spans} >= {"session", "turn", "model_call", "tool", "veto_chain"}
    assert result.journal.sessions[0].title == "hello"


@pytest.mark.anyio
async def test_commonagent_profile_two_turns() -> None:
    doubles = TinyDoubles(two_turns(), {"transform_llm_output": {"kind": "replace", "payload": {"text": "polished"}}})
    points = ["on_session_start", "pre_tool_call", "transform_llm_output", "on_session_end"]
    result = await factory().run(scenario("commonagent", points), doubles)
    assert result.raised is None
    (outcome,) = result.outcomes
    assert (outcome.status, outcome.reply) == ("completed", "polished")
    assert [p for _, p in doubles.hooks] == ["on_session_start", "pre_tool_call", "transform_llm_output", "on_session_end"]
    assert result.journal.turns[0].status == "completed"
    assert result.journal.tool_calls[0].result == "lookup:c1"


@pytest.mark.anyio
async def test_rejected_configuration_and_hook_raise() -> None:
    bad = scenario("kernel", [], bounds={"max_turns": 0})
    result = await factory().run(bad, TinyDoubles([]))
    assert result.rejected is not None and result.rejected.field == "max_turns"

    bad = scenario("kernel", [], tools=[{"name": "ask", "kind": "interactive", "concurrency": {"safe": True}}])
    result = await factory().run(bad, TinyDoubles([]))
    assert result.rejected is not None and result.rejected.field == "concurrency"

    doubles = TinyDoubles(two_turns(), {"pre-model-call": {"kind": "raise", "message": "boom"}})
    result = await factory().run(scenario("kernel", ["pre-model-call", "session-end"]), doubles)
    assert result.raised is None
    assert result.outcomes[0].status == "error" and "h0" in (result.outcomes[0].error or "")
    assert [p for _, p in doubles.hooks].count("session-end") == 1


@pytest.mark.anyio
async def test_tool_failure_and_two_messages_same_session() -> None:
    responses = [
        [{"type": "tool_use", "id": "c1", "name": "lookup", "input_json": '{"fail": true}'}],
        [{"type": "text", "text": "first"}],
        [{"type": "text", "text": "second"}],
    ]
    doubles = TinyDoubles(responses)
    sc = scenario("kernel", [], user_messages=[{"text": "one"}, {"text": "two"}])
    result = await factory().run(sc, doubles)
    assert [o.reply for o in result.outcomes] == ["first", "second"]
    assert result.outcomes[0].session_id == result.outcomes[1].session_id
    failed = [m for m in doubles.requests[1]["messages"] if m["role"] == "tool_result"][0]
    assert failed["is_error"] and "scripted failure" in failed["content"]
    assert [m["text"] for m in doubles.requests[2]["messages"] if m["role"] == "user"] == ["one", "two"]
    assert set(doubles.cancellers) == {0, 1}
