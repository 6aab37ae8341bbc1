"""The conformance adapter of examples/chat-loop/loop.py: the loop as it is, pointed at the
scenario's served model — the only line that is about the suite is the base URL.

    PYTHONPATH=examples/chat-loop akc run --adapter akc_adapter:adapter --profile commonagent
"""

from __future__ import annotations

from typing import Any

import anyio

from conformance.boundary.adapter import AdapterInfo, Outcome, RunResult, run_user_messages
from conformance.boundary.scenario import Scenario, UserMessage
from loop import ChatLoop, ToolDef


class ChatLoopAdapter:
    info = AdapterInfo(name="chat-loop", version="0.1", profiles=["commonagent"], dialects=["openai-chat"])

    async def run(self, scenario: Scenario, doubles: Any) -> RunResult:
        def tool(name: str) -> Any:
            async def run(args: dict[str, Any], call_id: str) -> str:
                out = await doubles.invoke_tool({"id": call_id, "name": name, "args": args}, {})
                return str(out.get("content", ""))
            return run

        loop = ChatLoop(
            base_url=doubles.http_model.base_url("openai-chat"),  # the one change: the harness's model
            api_key=doubles.http_model.api_key,
            model=scenario.model.name,
            tools=[ToolDef(t.name, t.description, t.input_schema, tool(t.name)) for t in scenario.tools],
            system=scenario.system_prompt,
            max_iterations=scenario.bounds.max_iterations or 50,
        )
        histories: dict[str, list[dict[str, Any]]] = {}
        outcomes: list[Outcome | None] = [None] * len(scenario.user_messages)

        async def one(index: int, message: UserMessage, _: Any) -> None:
            with anyio.CancelScope() as scope:
                doubles.register_canceller(index, scope.cancel)
                reply = await loop.run(histories.setdefault(message.session, []), message.text)
            if scope.cancelled_caught:
                outcomes[index] = Outcome(message=index, session_id=message.session, status="interrupted")
                return
            outcomes[index] = Outcome(message=index, session_id=message.session, status=reply.status, reply=reply.text,
                                      error=reply.error)

        await run_user_messages(scenario, one, doubles=doubles)
        return RunResult(outcomes=[o for o in outcomes if o is not None])


def adapter() -> ChatLoopAdapter:
    return ChatLoopAdapter()
