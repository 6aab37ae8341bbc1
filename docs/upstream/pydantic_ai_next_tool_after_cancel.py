"""pydantic-ai 2.68.0: after the run is cancelled while a sequential tool runs, the next
sequential tool of the same response still starts.

Run with only pydantic-ai installed (pip install pydantic-ai-slim==2.68.0):

    python pydantic_ai_next_tool_after_cancel.py

A model asks for two tools marked ``sequential=True`` in one response. While the first runs, the
run is cancelled with its ``CancellationToken`` (a user pressing stop), and the first tool then
returns without awaiting anything more (it had no more I/O to do). Expected: the run ends with
``RunCancelled`` and the second tool never starts. Observed: the second tool starts after the
cancel. ``CancellationToken.cancel()`` cancels the run's task (``_cancel.py``), which only takes
effect at the task's next suspension point; nothing checks the token between one sequential tool
and the next, so the next one starts when no suspension point falls in between.
"""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent, CancellationToken
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

trace: list[str] = []
token = CancellationToken()


def model(messages: list, info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:  # the first request: ask for both tools at once
        return ModelResponse(parts=[ToolCallPart("first", {}, tool_call_id="c1"), ToolCallPart("second", {}, tool_call_id="c2")])
    return ModelResponse(parts=[TextPart("done")])


agent = Agent(FunctionModel(model))


@agent.tool_plain(sequential=True)
async def first() -> str:
    trace.append("tool first: start")
    token.cancel()  # stop pressed while the first tool runs
    trace.append("cancel requested")
    trace.append("tool first: end (no await after the cancel)")
    return "one"


@agent.tool_plain(sequential=True)
async def second() -> str:
    trace.append("tool second: start")
    return "two"


async def main() -> None:
    try:
        await agent.run("go", cancellation_token=token)
        trace.append("run ended normally")
    except RunCancelled:
        trace.append("run raised RunCancelled")
    print("\n".join(trace))
    started_after_cancel = [t for t in trace[trace.index("cancel requested"):] if t.endswith(": start")]
    print("DEFECT: started after the cancel:", started_after_cancel if started_after_cancel else "nothing (fixed)")


asyncio.run(main())
