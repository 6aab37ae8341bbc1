import asyncio, sys, anyio
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.apps import App
from google.genai import types

log = []
class M(BaseLlm):
    async def generate_content_async(self, llm_request, stream=False):
        log.append("model called")
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="hi")]), partial=False, turn_complete=True)

mode = sys.argv[1]
scope = None
async def before_model(callback_context, llm_request):
    log.append("before_model start")
    scope.cancel()   # the host cancels from inside the callback (as the harness does)
    if mode == "await":
        await asyncio.sleep(0.2)
    log.append("before_model end")
async def after_agent(callback_context):
    log.append("after_agent_callback")

from google.adk.agents.invocation_context import InvocationContext
_orig = InvocationContext._enqueue_event
async def _traced(self, event):
    try:
        await _orig(self, event)
    except BaseException as e:
        log.append(f"root task: {type(e).__name__} in _enqueue_event (author={event.author})")
        raise
InvocationContext._enqueue_event = _traced
from google.adk.agents.base_agent import BaseAgent
async def main():
    agent = LlmAgent(name="a", model=M(model="m"), before_model_callback=before_model, after_agent_callback=after_agent)
    svc = InMemorySessionService()
    runner = Runner(app=App(name="x", root_agent=agent), session_service=svc)
    await svc.create_session(app_name="x", user_id="u", session_id="s")
    global scope
    scope = anyio.CancelScope()
    import traceback
    with scope:
        try:
            async for ev in runner.run_async(user_id="u", session_id="s", new_message=types.Content(role="user", parts=[types.Part(text="q")])):
                log.append(f"event {ev.author}")
        except BaseException as e:
            tb = traceback.extract_tb(e.__traceback__)
            print("RAISED", type(e).__name__, [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}" for f in tb])
            raise
    log.append(f"scope exited, cancelled_caught={scope.cancelled_caught}")
    await asyncio.sleep(0.5)
    print(mode, log)
anyio.run(main)
