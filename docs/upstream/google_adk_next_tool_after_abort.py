"""google-adk 2.13.0: a tool of the response that has not started yet still starts after the run
is cancelled, whether by cancelling the task iterating ``Runner.run_async`` or by ADK's own
``InvocationContext.abort()``.

Run with only google-adk installed (pip install google-adk==2.13.0), no network or API key:

    python google_adk_next_tool_after_abort.py

The model asks for two calls in one response. The first tool, as it starts, stops the run (the
way a stop button would: ``abort()`` on the invocation, or cancelling the consumer's task) and
returns without awaiting anything more. Expected: the second call, which had not started, never
starts. Observed, in both modes: "tool second: start" after the stop. The calls of a response
are tasks created up front (``flows/llm_flows/tools/_batch_executor.py:262-274``); nothing checks
the abort signal or the cancellation before a created task begins running its tool.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.genai import types

trace: list[str] = []
runner_task: asyncio.Task | None = None


class TwoCallsThenDone(BaseLlm):
    """A model that asks for two calls at once, then answers."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        answered = any(p.function_response for c in llm_request.contents for p in c.parts or [])
        if answered:
            parts = [types.Part(text="done")]
        else:
            parts = [types.Part(function_call=types.FunctionCall(id=f"c{i}", name=name, args={})) for i, name in enumerate(("first", "second"), 1)]
        yield LlmResponse(content=types.Content(role="model", parts=parts), partial=False, turn_complete=True)


class Traced(BaseTool):
    def __init__(self, name: str, mode: str) -> None:
        super().__init__(name=name, description=name)
        self.mode = mode

    def _get_declaration(self) -> Any:
        return types.FunctionDeclaration(name=self.name, description=self.name, parameters_json_schema={"type": "object", "properties": {}})

    async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
        trace.append(f"tool {self.name}: start")
        if self.name == "first":
            if self.mode == "abort":
                tool_context._invocation_context.abort()  # ADK's own stop of the invocation
            else:
                assert runner_task is not None
                runner_task.cancel()  # the host stops the run
            trace.append(f"stop requested ({self.mode})")
        return {"result": self.name}


async def run(mode: str) -> None:
    global runner_task
    trace.clear()
    agent = LlmAgent(name="agent", model=TwoCallsThenDone(model="scripted"), tools=[Traced("first", mode), Traced("second", mode)])
    service = InMemorySessionService()
    await service.create_session(app_name="repro", user_id="u", session_id="s")
    runner = Runner(app_name="repro", agent=agent, session_service=service)

    async def consume() -> None:
        async for _ in runner.run_async(user_id="u", session_id="s", new_message=types.Content(role="user", parts=[types.Part(text="go")])):
            pass

    runner_task = asyncio.create_task(consume())
    try:
        await runner_task
        trace.append("run ended")
    except asyncio.CancelledError:
        trace.append("run cancelled")
    print(f"--- mode: {mode}")
    print("\n".join(trace))
    stop = next(i for i, t in enumerate(trace) if t.startswith("stop requested"))
    late = [t for t in trace[stop:] if t.endswith(": start")]
    print("DEFECT: started after the stop:", late if late else "nothing (fixed)")


for mode in sys.argv[1:] or ["cancel", "abort"]:
    asyncio.run(run(mode))
