"""A minimal agent loop over OpenAI Chat Completions, as a new user writes one (issue 23's route).

It knows nothing of the conformance suite: a base URL, a key, a model name and its tools. Each
``run`` sends the history to ``/chat/completions``, runs the tools the model asks for, and stops
at the first answer without tool calls (or after ``max_iterations`` model calls).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

Tool = Callable[[dict[str, Any], str], Awaitable[str]]  # (args, call id) -> result text


@dataclass
class ToolDef:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Tool


@dataclass
class Reply:
    text: str | None
    status: str  # completed | budget_exhausted | error
    error: str | None = None
    usage: list[dict[str, int]] = field(default_factory=list)


class ChatLoop:
    def __init__(self, base_url: str, api_key: str, model: str, tools: list[ToolDef], system: str | None = None,
                 max_iterations: int = 50) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.system = system
        self.max_iterations = max_iterations

    def _tool_specs(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in self.tools.values()]

    async def run(self, history: list[dict[str, Any]], text: str) -> Reply:
        """One user message: the loop of model calls and tool calls. ``history`` grows in place."""
        if self.system and not history:
            history.append({"role": "system", "content": self.system})
        history.append({"role": "user", "content": text})
        reply = Reply(text=None, status="budget_exhausted")
        async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
            for _ in range(self.max_iterations):
                body: dict[str, Any] = {"model": self.model, "messages": history}
                if self.tools:
                    body["tools"] = self._tool_specs()
                response = await client.post(self.url, json=body, headers=self.headers)
                if response.status_code != 200:
                    return Reply(text=None, status="error", error=f"{response.status_code}: {response.text[:200]}", usage=reply.usage)
                answer = response.json()
                if answer.get("usage"):
                    reply.usage.append(answer["usage"])
                message = answer["choices"][0]["message"]
                history.append({k: v for k, v in message.items() if v is not None})
                calls = message.get("tool_calls") or []
                if not calls:
                    reply.text, reply.status = message.get("content"), "completed"
                    return reply
                for call in calls:
                    history.append({"role": "tool", "tool_call_id": call["id"], "content": await self._call(call)})
        return reply

    async def _call(self, call: dict[str, Any]) -> str:
        function = call.get("function") or {}
        tool = self.tools.get(function.get("name", ""))
        if tool is None:
            return f"error: no tool named {function.get('name')!r}"
        try:
            args = json.loads(function.get("arguments") or "{}")
        except ValueError as exc:
            return f"error: arguments are not JSON ({exc})"
        try:
            return await tool.run(args, call["id"])
        except Exception as exc:  # noqa: BLE001 - the model sees the failure
            return f"error: {exc}"
