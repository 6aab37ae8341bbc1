import asyncio, sys
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

where = sys.argv[1]
async def before_model(callback_context, llm_request):
    log.append("before_model start")
    if where == "before_model":
        await asyncio.sleep(0.5)
    log.append("before_model end")
async def after_agent(callback_context):
    log.append("after_agent_callback")

async def main():
    agent = LlmAgent(name="a", model=M(model="m"), before_model_callback=before_model, after_agent_callback=after_agent)
    svc = InMemorySessionService()
    runner = Runner(app=App(name="x", root_agent=agent), session_service=svc)
    await svc.create_session(app_name="x", user_id="u", session_id="s")
    async def drive():
        async for ev in runner.run_async(user_id="u", session_id="s", new_message=types.Content(role="user", parts=[types.Part(text="q")])):
            log.append(f"event {ev.author}")
    t = asyncio.create_task(drive())
    await asyncio.sleep(0.1)
    log.append("host cancels")
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        log.append("task cancelled")
    await asyncio.sleep(0.8)
    print(where, log)
asyncio.run(main())
