"""google-adk 2.13.0: after_agent_callback does not run when the run is cancelled while the agent's
latest event waits to be stored, although ADK promises it on cancellation
(``google/adk/agents/base_agent.py:453-467``).

Run with only google-adk installed (pip install google-adk==2.13.0), no network or API key:

    python google_adk_after_agent_lost_on_cancel.py

An ``LlmAgent`` whose model answers at once. The host cancels the task iterating
``Runner.run_async`` (once, as asyncio does), from inside a model callback (``before_model`` or
``after_model``), or while the model call itself is awaiting (``model_call``, the control).
Expected: ``after_agent_callback`` runs in every mode (``_run_with_lifecycle`` catches
``asyncio.CancelledError`` to run it). Observed: it runs only in ``model_call``.

Why: an ``LlmAgent`` at the root runs in a task of its own (``_drive_root_node``,
``workflow/_node_runner_utils.py:257, 288``); the cancelled consumer cancels that task only in its
cleanup (``runners.py:870-897``), and meanwhile the agent has gone on to yield its next event.
The node runner then waits in ``_enqueue_event`` for the consumer to store it
(``workflow/_node_runner.py:377-383``, ``agents/invocation_context.py:503-506``): the
cancellation lands there, outside the agent's generator, and ``Aclosing`` closes that generator
with ``GeneratorExit`` at its ``yield``, which the ``except asyncio.CancelledError`` of
``_run_with_lifecycle`` never sees. A cancel landing inside the generator (the model call awaiting)
gets the callback.
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
from google.genai import types

trace: list[str] = []
runner_task: asyncio.Task | None = None


def stop(where: str) -> None:
    trace.append(f"{where}: the host cancels the task iterating run_async")
    assert runner_task is not None
    runner_task.cancel()


async def run(mode: str) -> None:
    global runner_task
    trace.clear()

    class Answers(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
            trace.append("model call")
            if mode == "model_call":
                stop("model call")
                await asyncio.sleep(1)  # the cancellation lands here, inside the agent's generator
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]), partial=False, turn_complete=True)

    async def after_agent(callback_context: Any) -> None:
        trace.append("after_agent_callback")

    async def before_model(callback_context: Any, llm_request: Any) -> None:
        trace.append("before_model_callback")
        if mode == "before_model":
            stop("before_model_callback")

    async def after_model(callback_context: Any, llm_response: Any) -> None:
        trace.append("after_model_callback")
        if mode == "after_model":
            stop("after_model_callback")

    agent = LlmAgent(name="agent", model=Answers(model="scripted"), after_agent_callback=after_agent,
                     before_model_callback=before_model, after_model_callback=after_model)
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
    await asyncio.sleep(0.2)  # anything still to come from a task left running
    print(f"--- cancel in: {mode}")
    print("\n".join(trace))
    ran = "after_agent_callback" in trace
    print("after_agent_callback ran" if ran else "DEFECT: the run was cancelled and after_agent_callback never ran")


for mode in sys.argv[1:] or ["before_model", "after_model", "model_call"]:
    asyncio.run(run(mode))
