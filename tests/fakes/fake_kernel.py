"""A tiny in-test kernel and its adapter, good enough to pass the smoke feature in both profiles.

It is NOT the reference kernel: it exists so the harness can be tested on its own. It runs the
kernel profile's hook points in 003's order and the commonagent profile's in 000's, runs all
tool calls of a response concurrently, puts results back in call order, honours max_turns (with
one tool-less limit-reached turn) and max_iterations, and cancels through a CancelScope.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from conformance.boundary.adapter import AdapterInfo, Outcome, RunResult, ToolFailed
from conformance.boundary.scenario import Scenario


async def accumulate(stream: Any) -> dict[str, Any]:
    """Stream chunks → 001's assistant message."""
    text, calls = "", []
    async for chunk in stream:
        if chunk["type"] == "text":
            text += chunk["text"]
        elif chunk["type"] == "tool_use":
            try:
                args = json.loads(chunk["input_json"] or "{}")
            except json.JSONDecodeError:
                args = {}
            calls.append({"id": chunk["id"], "name": chunk["name"], "args": args})
    message: dict[str, Any] = {"role": "assistant"}
    if text:
        message["text"] = text
    if calls:
        message["tool_calls"] = calls
    return message


class FakeKernel:
    def __init__(self, scenario: Scenario, doubles: Any) -> None:
        self.s = scenario
        self.d = doubles
        self.turn = {"profile_id": scenario.profile_id, "session_id": "s1", "turn_id": "t1", "tags": [], "depth": 0}
        self.specs = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in scenario.tools]

    async def hook(self, point: str, payload: Any) -> Any:
        for h in self.s.hooks:
            if h.point == point:
                out = await self.d.dispatch_hook(h.id, point, payload, self.turn)
                if out.get("kind") == "replace":
                    payload = out["payload"]
        return payload

    async def call_tool(self, call: dict[str, Any]) -> dict[str, Any]:
        verdict = await self.d.policy_precheck(call, self.turn)
        if not verdict["allow"]:
            return {"content": f"denied: {verdict['reason']}", "is_error": True}
        try:
            return await self.d.invoke_tool(call, self.turn)
        except ToolFailed as exc:
            return {"content": str(exc), "is_error": True}

    async def run_all(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results: list[Any] = [None] * len(calls)

        async def one(k: int, call: dict[str, Any]) -> None:
            results[k] = await self.call_tool(call)

        async with anyio.create_task_group() as tg:
            for k, call in enumerate(calls):
                tg.start_soon(one, k, call)
        return results

    async def kernel_session(self, text: str) -> Outcome:
        history: list[dict[str, Any]] = [{"role": "user", "text": text}]
        await self.hook("session-start", {"session_id": "s1"})
        turns, limit, reply = 0, None, None
        while True:
            turns += 1
            payload = await self.hook("context-assemble", {"history": history, "budget": {"turns_used": turns - 1}})
            tools = [] if limit else self.specs
            await self.hook("pre-model-call", {"payload": payload, "tool_specs": tools, "params": {}})
            messages = list(history)
            if limit:
                messages.append({"role": "system", "text": "Limit reached: give your final answer now."})
            message = await accumulate(self.d.model_stream({"messages": messages, "tools": tools, "params": {}}, self.turn))
            message = await self.hook("post-model-response", message)
            history.append(message)
            calls = message.get("tool_calls") or []
            if limit:
                break
            if not calls:
                reply = message.get("text")
                break
            for call in calls:
                await self.hook("pre-tool-call", call)
            results = await self.run_all(calls)
            await self.hook("plan-ready", {"items": []})
            for call, result in zip(calls, results, strict=True):
                await self.hook("post-tool-call", {"call": call, "result": result})
            await self.hook("post-apply", {"items": []})
            for call, result in zip(calls, results, strict=True):
                history.append({"role": "tool_result", "call_id": call["id"], **result})
            if self.s.bounds.max_turns is not None and turns >= self.s.bounds.max_turns:
                limit = "error_max_turns"
        subtype = limit or "success"
        await self.hook("session-end", {"session_id": "s1", "subtype": subtype})
        return Outcome(message=0, status="done", subtype=subtype, reply=reply)

    async def commonagent_turn(self, text: str) -> Outcome:
        history: list[dict[str, Any]] = [{"role": "user", "text": text}]
        await self.hook("on_session_start", {"session_id": "s1"})
        await self.hook("pre_llm_call", {"session_id": "s1", "user_message": text})
        budget = self.s.bounds.max_iterations or 500
        status, reply = "budget_exhausted", None
        for _ in range(budget):
            request = {"messages": list(history), "tools": self.specs, "params": {}}
            await self.hook("pre_api_request", {"request": request})
            message = await accumulate(self.d.model_stream(request, self.turn))
            await self.hook("post_api_request", {"message": message, "usage": {}})
            history.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                out = await self.hook("transform_llm_output", {"text": message.get("text", "")})
                await self.hook("post_llm_call", out)
                status, reply = "completed", out.get("text")
                break
            for call in calls:
                await self.hook("pre_tool_call", {"name": call["name"], "args": call["args"], "risk": "low", "call_id": call["id"]})
            results = await self.run_all(calls)
            for call, result in zip(calls, results, strict=True):
                await self.hook("post_tool_call", {"name": call["name"], "args": call["args"], "call_id": call["id"], "result": result["content"], "is_error": result["is_error"]})
                await self.hook("transform_tool_result", {"name": call["name"], "call_id": call["id"], "result": result["content"]})
                history.append({"role": "tool_result", "call_id": call["id"], **result})
        await self.hook("on_session_end", {"session_id": "s1", "status": status})
        return Outcome(message=0, status=status, reply=reply)


class FakeAdapter:
    info = AdapterInfo(name="fake-kernel", version="0.0.1", profiles=["kernel", "commonagent"], capabilities=[])

    async def run(self, scenario: Scenario, doubles: Any) -> RunResult:
        outcomes = []
        for i, message in enumerate(scenario.user_messages):
            kernel = FakeKernel(scenario, doubles)
            with anyio.CancelScope() as scope:
                doubles.register_canceller(i, scope.cancel)
                if scenario.profile == "kernel":
                    outcome = await kernel.kernel_session(message.text)
                else:
                    outcome = await kernel.commonagent_turn(message.text)
            if scope.cancelled_caught:
                outcome = Outcome(message=i, status="interrupted", subtype="cancelled")
            outcome.message = i
            outcomes.append(outcome)
        return RunResult(outcomes=outcomes)


def factory() -> FakeAdapter:
    return FakeAdapter()
