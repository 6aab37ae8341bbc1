"""audit5c, TURN-001: hermes GatewayRunner's busy handler, with busy_input_mode=queue and the
explicit busy_text_mode=interrupt, keeps queued texts apart (one FIFO entry each, drained one per
turn). Run: /work/envs/hermes/bin/python THIS. Observed: slot 'second', fifo ['third'],
first drained 'second', next staged 'third'."""
import asyncio, os
os.environ.setdefault("HERMES_HOME", "/tmp/audit5c/home")  # a scratch dir
os.environ["HERMES_GATEWAY_BUSY_ACK_ENABLED"] = "false"
from gateway.run import GatewayRunner
from gateway.config import Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, MessageType, SendResult
from gateway.session import SessionSource

class P(BasePlatformAdapter):
    async def connect(self, *, is_reconnect=False): return True
    async def disconnect(self): pass
    async def send(self, chat_id, content, reply_to=None, metadata=None): return SendResult(success=True)
    async def get_chat_info(self, chat_id): return {"name": chat_id, "type": "dm"}

def ev(text, i):
    src = SessionSource(platform=Platform.LOCAL, chat_id="s1", chat_type="dm", user_id="u")
    return MessageEvent(text=text, message_type=MessageType.TEXT, source=src, message_id=str(i))

async def main():
    r = object.__new__(GatewayRunner)
    adapter = P(PlatformConfig(enabled=True), Platform.LOCAL)
    adapter._busy_text_mode = "interrupt"   # display.busy_text_mode: interrupt (explicit legacy knob)
    r._busy_input_mode = "queue"            # display.busy_input_mode: queue
    r._busy_text_mode = "interrupt"
    r._draining = False
    r._running_agents = {}
    r._busy_ack_ts = {}
    r._queued_events = {}
    r._is_user_authorized = lambda src: True
    r._adapter_for_source = lambda src: adapter
    r._agent_has_active_subagents = lambda a: False
    async def no(*a, **k): return False
    r._session_has_compression_in_flight = no
    key = "k"
    for i, t in ((2, "second"), (3, "third")):
        handled = await r._handle_active_session_busy_message(ev(t, i), key)
        print("handled", t, handled)
    print("slot:", repr(adapter._pending_messages[key].text))
    print("fifo:", [e.text for e in r._queued_events.get(key, [])])
    p = adapter._pending_messages.pop(key)
    p2 = r._promote_queued_event(key, adapter, p)
    print("first drained:", repr(p2.text), "next staged:", repr(adapter._pending_messages.get(key).text))

asyncio.run(main())
