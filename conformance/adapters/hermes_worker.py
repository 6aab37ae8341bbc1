"""The in-worker half of the hermes-agent adapter: one scenario, one process, hermes imported.

Only ``conformance.adapters.hermes`` (the front) starts this, inside the hermes virtualenv; the
mapping and what hermes lacks are documented there. Hermes is synchronous: every
``run_conversation`` runs in a worker thread, and hermes's threads (the agent's, its tool pool's,
the loopback HTTP server's) reach the harness's doubles through one anyio ``BlockingPortal``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.from_thread import BlockingPortal

from conformance.boundary.adapter import (
    AdapterInfo,
    Doubles,
    JournalDump,
    KernelRaised,
    MessageRecord,
    Outcome,
    RunResult,
    SessionRecord,
    ToolCallRecord,
    ToolFailed,
    UsageEvent,
    run_user_messages,
)
from conformance.adapters.hermes_gateway import (QUEUE_CONFIG, HarnessPlatform, approval_scope, drain, runner_for,
                                                  session_key, user_message)
from conformance.adapters.hermes_info import ADAPTER_INFO, HERMES_POINTS
from conformance.httpmodel.openai_chat import message as from_chat_message
from conformance.httpmodel.openai_chat import request as from_chat_request
from conformance.boundary.scenario import Scenario, UserMessage

JSON = dict[str, Any]


def _debug(text: str) -> None:
    if os.environ.get("AKC_HERMES_DEBUG"):
        print(f"hermes worker: {text}", file=sys.stderr, flush=True)


class HookRaised(Exception):
    """A scripted hook's ``raise`` outcome, raised from the hermes callback."""


# --------------------------------------------------------------------------- loopback model


class _Handler(BaseHTTPRequestHandler):
    """Hermes's model calls, relayed byte for byte to the harness's served model (the public
    route, docs/http-kernels.md) with the TurnInfo of the calling session's running turn in
    ``x-akc-turn``: the only thing hermes's client cannot send itself. Hermes going away (an
    interrupt) closes the harness's connection too, which is how the harness sees the call
    cancelled."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stalls
    server: _ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._relay("GET", b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._relay("POST", self.rfile.read(length) if length else b"")

    def _relay(self, method: str, body: bytes) -> None:
        route = self.path.split("?", 1)[0]
        label = route.split("/")[2] if route.startswith("/s/") else ""
        rest = route.split("/v1", 1)[1] if "/v1" in route else route
        served = self.server.adapter.doubles.http_model
        target = urlsplit(served.base_url("openai-chat"))
        turn = json.dumps(self.server.adapter.turn_for_label(label))
        head = (f"{method} {target.path}{rest} HTTP/1.1\r\nHost: {target.netloc}\r\nConnection: close\r\n"
                f"Authorization: Bearer {served.api_key}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nx-akc-turn: {turn}\r\n\r\n")
        self.close_connection = True
        with socket.create_connection((target.hostname, target.port)) as up:
            up.sendall(head.encode() + body)
            up.settimeout(0.2)
            while True:
                try:
                    data = up.recv(65536)
                except TimeoutError:
                    if self._hermes_gone():
                        return  # closing `up` drops the call at the harness
                    continue
                if not data:
                    return
                try:
                    self.connection.sendall(data)
                except OSError:
                    return

    def _hermes_gone(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


class _ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, adapter: _Run) -> None:
        self.adapter = adapter
        super().__init__(("127.0.0.1", 0), _Handler)


# --------------------------------------------------------------------------- one run


def _profile_home(profile_id: str) -> Path | None:
    """The home of hermes's named profile ``profile_id``, made with hermes's own ``create_profile``
    (``profiles/<name>`` under the root, hermes_cli/profiles.py:990-1060); None for the default
    profile or a name hermes refuses (hermes_cli/profiles.py:37: lowercase, digits, ``-``, ``_``):
    that scenario runs as the default profile."""
    if profile_id == "default":
        return None
    from hermes_cli.profiles import create_profile, get_profile_dir

    try:
        return create_profile(profile_id, no_alias=True, no_skills=True)
    except FileExistsError:
        return get_profile_dir(profile_id)
    except ValueError as exc:
        print(f"hermes worker: profile {profile_id!r} runs as hermes's default profile: {exc}", file=sys.stderr, flush=True)
        return None


def _args_of(raw: Any) -> Any:
    if isinstance(raw, dict):
        return raw
    try:
        return json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return raw


class _Run:
    """One scenario against hermes: the doubles reached from hermes's threads."""

    def __init__(self, scenario: Scenario, doubles: Doubles, portal: BlockingPortal) -> None:
        self.scenario = scenario
        self.doubles = doubles
        self.portal = portal
        self.home = Path(os.environ["HERMES_HOME"])
        self.agents: dict[str, Any] = {}  # session label → AIAgent
        self.labels: dict[str, str] = {}  # hermes session id → label
        self.history: dict[str, list[JSON]] = {}
        self.create_lock = threading.Lock()
        self.risk = {t.name: t.risk for t in scenario.tools}
        self.tls = threading.local()
        #: (hook id, call id) → the pre_tool_call outcome its tool_request middleware already got
        self.pre_tool_outcomes: dict[tuple[str, str], Any] = {}
        self.server = _ModelServer(self)
        #: The scenario's profile as a hermes named profile (its own home under the root's
        #: ``profiles/``), entered per turn the way the gateway scopes a profile's turn; the default
        #: profile's home is HERMES_HOME itself.
        self.profile_home = _profile_home(scenario.profile_id) or self.home
        (self.profile_home / "config.yaml").write_text(QUEUE_CONFIG)
        from hermes_cli.profiles import get_active_profile_name

        with self.profile_scope():
            self.profile = get_active_profile_name() or "default"

    @contextlib.contextmanager
    def profile_scope(self) -> Iterator[None]:
        """Run hermes under the scenario's profile: ``set_hermes_home_override``, the seam the
        gateway's ``_profile_runtime_scope`` enters for one turn (gateway/run.py:1523-1555). A
        context variable: enter it in the thread that runs the agent."""
        from hermes_constants import reset_hermes_home_override, set_hermes_home_override

        token = set_hermes_home_override(str(self.profile_home))
        try:
            yield
        finally:
            reset_hermes_home_override(token)

    # ---- TurnInfo (hermes: session id, turn id and its active profile; no tags)

    def turn(self, session_id: str | None, turn_id: str | None = None) -> JSON:
        label = self.labels.get(session_id or "")
        agent = self.agents.get(label) if label is not None else None
        if turn_id is None and agent is not None:
            turn_id = getattr(agent, "_current_turn_id", None)
        return {"profile_id": self.profile, "session_id": session_id or "", "turn_id": turn_id or "",
                "parent_turn_id": None, "tags": [], "depth": 0}

    def turn_for_label(self, label: str) -> JSON:
        agent = self.agents.get(label)
        return self.turn(getattr(agent, "session_id", None) if agent is not None else None)

    # ---- tools

    def register_tools(self) -> None:
        from tools.registry import registry

        for tool in self.scenario.tools:
            registry.register(
                name=tool.name,
                toolset="akc",
                schema={"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
                handler=self._tool_handler(tool.name),
            )

    def _tool_handler(self, name: str) -> Callable[..., str]:
        def handler(args: JSON, **kwargs: Any) -> str:
            from tools.approval import _approval_tool_call_id

            call = {"id": _approval_tool_call_id.get() or "", "name": name, "args": args}
            turn = self.turn(kwargs.get("session_id"))
            try:
                out = self.portal.call(self.doubles.invoke_tool, call, turn)
            except ToolFailed as exc:
                raise RuntimeError(str(exc)) from None
            return str(out.get("content", ""))

        return handler

    # ---- hooks

    def register_hooks(self) -> None:
        from hermes_cli.plugins import PluginContext, PluginManifest, get_plugin_manager

        ctx = PluginContext(PluginManifest(name="akc-conformance", source="akc"), get_plugin_manager())
        for hook in self.scenario.hooks:
            if hook.point == "pre_tool_call":
                ctx.register_middleware("tool_request", self._tool_request_middleware(hook.id))
            if hook.point in HERMES_POINTS:
                ctx.register_hook(hook.point, self._hook_callback(hook.id, hook.point))

    def _tool_request_middleware(self, hook_id: str) -> Callable[..., Any]:
        """Modify → hermes's ``tool_request`` middleware, its seam for rewriting a call's arguments
        (``PluginContext.register_middleware``, hermes_cli/plugins.py:1177-1194), run before the
        ``pre_tool_call`` hook with the call id (agent/tool_executor.py:268-291, 1101-1107). The
        harness hook is dispatched here, once per call: a Modify returns its arguments merged
        over the ones hermes handed over; the outcome is kept for the ``pre_tool_call`` hook of
        the same call, which acts on Block and AskUser (``_dispatch``). hermes hands every
        middleware the same arguments and keeps the last result (hermes_cli/middleware.py:137-160):
        what two Modify hooks make of one call is hermes's, not merged here."""

        def middleware(**kw: Any) -> Any:
            payload = self._payload_pre_tool_call(kw)
            turn = self.turn(kw.get("session_id"), kw.get("turn_id"))
            out = self.portal.call(self.doubles.dispatch_hook, hook_id, "pre_tool_call", payload, turn)
            self.pre_tool_outcomes[(hook_id, kw.get("tool_call_id") or "")] = out
            if isinstance(out, dict) and out.get("kind") == "modify" and isinstance(out.get("args"), dict):
                args = kw.get("args")
                if isinstance(args, dict):  # hermes hands every middleware the same working copy: edit it in place
                    args.update(out["args"])
                    return {"args": args}
                return {"args": {**(args or {}), **out["args"]}}
            return None

        middleware.__name__ = f"akc_{hook_id}_tool_request"
        return middleware

    def _dispatch(self, hook_id: str, point: str, payload: Any, turn: JSON) -> JSON:
        kept = self.pre_tool_outcomes.pop((hook_id, payload.get("call_id") or ""), None) if point == "pre_tool_call" else None
        out = kept if kept is not None else self.portal.call(self.doubles.dispatch_hook, hook_id, point, payload, turn)
        if isinstance(out, dict) and out.get("kind") == "raise":
            raise HookRaised(str(out.get("message", "hook failed")))
        return out if isinstance(out, dict) else {"kind": "continue"}

    def _hook_callback(self, hook_id: str, point: str) -> Callable[..., Any]:
        convert = getattr(self, f"_payload_{point}")

        def callback(**kw: Any) -> Any:
            payload = convert(kw)
            turn = self.turn(kw.get("session_id"), kw.get("turn_id"))
            if point == "pre_tool_call":
                self.tls.call = {"call_id": kw.get("tool_call_id", ""), "name": kw.get("tool_name"),
                                 "args": kw.get("args"), "turn": turn}
            out = self._dispatch(hook_id, point, payload, turn)
            kind = out.get("kind", "continue")
            if point == "pre_llm_call" and kind == "context":
                return {"context": str(out.get("text", ""))}
            if point in ("transform_llm_output", "transform_tool_result") and kind == "replace":
                new = out.get("payload")
                if isinstance(new, dict):
                    new = new.get("text", new.get("result"))
                return new if isinstance(new, str) else None
            if point == "pre_tool_call" and kind == "block":
                return {"action": "block", "message": str(out.get("reason", ""))}
            if point == "pre_tool_call" and kind == "ask_user":
                return {"action": "approve", "message": str(out.get("prompt", ""))}
            return None  # continue, and outcomes hermes has no equivalent for (modify, ...)

        callback.__name__ = f"akc_{hook_id}"
        return callback

    @staticmethod
    def _payload_on_session_start(kw: JSON) -> JSON:
        return {"session_id": kw.get("session_id")}

    @staticmethod
    def _payload_pre_llm_call(kw: JSON) -> JSON:
        return {"session_id": kw.get("session_id"), "user_message": kw.get("user_message")}

    @staticmethod
    def _payload_pre_api_request(kw: JSON) -> JSON:
        body = (kw.get("request") or {}).get("body") or {}
        if not body.get("messages"):
            body = {**body, "messages": kw.get("request_messages") or []}
        return {"request": from_chat_request(body)}

    @staticmethod
    def _payload_post_api_request(kw: JSON) -> JSON:
        msg = kw.get("assistant_message")
        message: JSON = {"role": "assistant"}
        text = getattr(msg, "content", None)
        if text:
            message["text"] = text
        calls = []
        for tc in getattr(msg, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            calls.append({"id": getattr(tc, "id", None), "name": getattr(fn, "name", None),
                          "args": _args_of(getattr(fn, "arguments", None))})
        if calls:
            message["tool_calls"] = calls
        usage = kw.get("usage") or {}
        return {"message": message, "usage": {
            "input_tokens": usage.get("input_tokens", usage.get("prompt_tokens", 0)),
            "output_tokens": usage.get("output_tokens", usage.get("completion_tokens", 0)),
            "cached_input_tokens": usage.get("cache_read_tokens", 0)}}

    @staticmethod
    def _payload_api_request_error(kw: JSON) -> JSON:
        return {"status": kw.get("status_code"), "message": (kw.get("error") or {}).get("message")}

    @staticmethod
    def _payload_transform_llm_output(kw: JSON) -> JSON:
        return {"text": kw.get("response_text")}

    @staticmethod
    def _payload_post_llm_call(kw: JSON) -> JSON:
        return {"text": kw.get("assistant_response")}

    def _payload_pre_tool_call(self, kw: JSON) -> JSON:
        name = kw.get("tool_name")
        return {"name": name, "args": kw.get("args"), "risk": self.risk.get(name or ""), "call_id": kw.get("tool_call_id")}

    @staticmethod
    def _payload_post_tool_call(kw: JSON) -> JSON:
        return {"name": kw.get("tool_name"), "args": kw.get("args"), "call_id": kw.get("tool_call_id"),
                "result": kw.get("result"), "is_error": kw.get("status") not in (None, "ok")}

    @staticmethod
    def _payload_transform_tool_result(kw: JSON) -> JSON:
        return {"name": kw.get("tool_name"), "call_id": kw.get("tool_call_id"), "result": kw.get("result")}

    @staticmethod
    def _payload_on_session_end(kw: JSON) -> JSON:
        status = "interrupted" if kw.get("interrupted") else ("completed" if kw.get("completed") else None)
        return {"session_id": kw.get("session_id"), "status": status}

    # ---- approver: the chat's user answering hermes's gateway approval request

    def approve(self, approval_data: JSON) -> bool:
        """The harness's approver on the call whose ``pre_tool_call`` asked (this thread's);
        approved → True, denied and timed_out → False (``deny``: the harness's timeout is the
        user's silence, answered at once rather than after hermes's own approval timeout)."""
        call = getattr(self.tls, "call", None) or {}
        request = {"call_id": call.get("call_id", ""), "name": call.get("name", ""), "args": call.get("args") or {},
                   "risk": self.risk.get(call.get("name", "")), "prompt": str(approval_data.get("description", ""))}
        out = self.portal.call(self.doubles.ask_approver, request, call.get("turn") or self.turn(None))
        return out.get("decision") == "approved"

    # ---- the turns

    def agent_for(self, label: str) -> Any:
        with self.create_lock:
            agent = self.agents.get(label)
            if agent is None:
                from hermes_state import SessionDB
                from run_agent import AIAgent

                kwargs: JSON = {}
                if self.scenario.bounds.max_iterations is not None:
                    kwargs["max_iterations"] = self.scenario.bounds.max_iterations
                t0 = time.monotonic()
                agent = AIAgent(
                    base_url=f"http://127.0.0.1:{self.server.server_address[1]}/s/{label}/v1",
                    api_key="sk-test", provider="custom", model=self.scenario.model.name,
                    api_mode="chat_completions", quiet_mode=True, skip_context_files=True, skip_memory=True,
                    tool_delay=0, enabled_toolsets=["akc"], session_db=SessionDB(), **kwargs,
                )
                self.agents[label] = agent
                _debug(f"AIAgent() took {time.monotonic() - t0:.2f} s")
                self.labels[agent.session_id] = label
            return agent

    def run_message(self, index: int, label: str, key: str, text: str) -> Outcome:
        with self.profile_scope(), approval_scope(key, label, self.approve):
            agent = self.agent_for(label)
            _debug("run_conversation starts")
            history = list(self.history.get(label, []))
            result = agent.run_conversation(text, system_message=self.scenario.system_prompt,
                                            conversation_history=history or None)
        self.history[label] = list(result.get("messages") or [])
        reason = str(result.get("turn_exit_reason") or "")
        if result.get("interrupted"):
            status = "interrupted"
        elif result.get("completed"):
            status = "completed"
        elif reason.startswith(("max_iterations_reached", "budget_exhausted")):
            status = "budget_exhausted"
        else:
            status = "error"
        return Outcome(message=index, session_id=agent.session_id, turn_id=getattr(agent, "_current_turn_id", None),
                       status=status, subtype=reason or None, reply=result.get("final_response"),
                       error=result.get("error") if status == "error" else None)

    # ---- what hermes stored

    def journal(self) -> tuple[JournalDump, list[UsageEvent]]:
        from model_tools import _tool_result_observer_fields

        db = self.home / "state.db"
        dump = JournalDump()
        usage: list[UsageEvent] = []
        if not db.exists():
            return dump, usage
        con = sqlite3.connect(str(db))
        con.row_factory = sqlite3.Row
        try:
            for row in con.execute("SELECT * FROM sessions ORDER BY started_at, rowid"):
                dump.sessions.append(SessionRecord(id=row["id"], profile_id=row["profile_name"] or self.profile,
                                                   source=row["source"], title=row["title"],
                                                   parent_session_id=row["parent_session_id"]))
            calls: dict[tuple[str, str], ToolCallRecord] = {}
            for row in con.execute("SELECT * FROM messages WHERE active = 1 ORDER BY id"):
                role, sid = row["role"], row["session_id"]
                if role == "tool":
                    result = row["content"] or ""
                    is_error = _tool_result_observer_fields(result)[0] == "error"
                    message: JSON = {"role": "tool_result", "call_id": row["tool_call_id"], "content": result, "is_error": is_error}
                    rec = calls.get((sid, row["tool_call_id"] or ""))
                    if rec is not None:
                        rec.result, rec.is_error = result, is_error
                else:
                    raw_calls = json.loads(row["tool_calls"]) if row["tool_calls"] else []
                    message = from_chat_message({"role": role, "content": row["content"], "tool_calls": raw_calls}, 0)
                    for call in message.get("tool_calls", []):
                        rec = ToolCallRecord(session_id=sid, call_id=call["id"] or "", name=call["name"] or "", args=call["args"])
                        calls[(sid, rec.call_id)] = rec
                        dump.tool_calls.append(rec)
                dump.messages.append(MessageRecord(session_id=sid, message=message))
            for row in con.execute("SELECT * FROM session_model_usage ORDER BY first_seen"):
                usage.append(UsageEvent(session_id=row["session_id"], model=row["model"], input_tokens=row["input_tokens"],
                                        output_tokens=row["output_tokens"], cached_input_tokens=row["cache_read_tokens"],
                                        cost_usd=float(row["estimated_cost_usd"] or 0.0)))
        finally:
            con.close()
        return dump, usage


class HermesAdapter:
    """``KernelAdapter`` for hermes-agent, run inside a fresh worker process."""

    info = AdapterInfo.model_validate(ADAPTER_INFO)

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        t0 = time.monotonic()
        async with BlockingPortal() as portal:
            run = _Run(scenario, doubles, portal)
            _debug(f"_Run() at {time.monotonic() - t0:.2f} s")
            threading.Thread(target=run.server.serve_forever, args=(0.05,), daemon=True).start()
            try:
                await anyio.to_thread.run_sync(run.register_tools)
                await anyio.to_thread.run_sync(run.register_hooks)
                _debug(f"registered at {time.monotonic() - t0:.2f} s")
                outcomes: list[Outcome | None] = [None] * len(scenario.user_messages)
                raised: list[KernelRaised] = []
                #: per submitted message (its index), set once hermes has run its turn
                done: dict[str, anyio.Event] = {}

                async def turn(event: Any) -> str | None:
                    """The gateway's message handler, as the runner's: one hermes turn per message,
                    then the session's next queued message as the next turn (:func:`drain`)."""
                    key = session_key(gateway, event)
                    reply = None
                    while event is not None:
                        i = int(event.message_id)
                        try:
                            outcome = await anyio.to_thread.run_sync(run.run_message, i, event.source.chat_id, key, event.text)
                            outcomes[i] = outcome
                            reply = outcome.reply
                        except Exception as exc:  # noqa: BLE001 - hermes raised out of run_conversation
                            raised.append(KernelRaised(type=type(exc).__name__, message=str(exc)))
                        finally:
                            done[event.message_id].set()
                        event = drain(runner, gateway, key)
                    return reply

                gateway = HarnessPlatform(turn)
                with run.profile_scope():
                    runner = runner_for(gateway)

                async def one(i: int, msg: UserMessage, _prepared: Any) -> None:
                    doubles.register_canceller(i, lambda: _interrupt(run, msg.session))
                    done[str(i)] = anyio.Event()
                    await gateway.handle_message(user_message(msg.session, msg.text, i))
                    await done[str(i)].wait()

                await run_user_messages(scenario, one, doubles=doubles)
                journal, usage = await anyio.to_thread.run_sync(run.journal)
                return RunResult(outcomes=[o for o in outcomes if o is not None], journal=journal, usage=usage,
                                 raised=raised[0] if raised else None)
            finally:
                run.server.shutdown()
                run.server.server_close()
                await portal.stop(cancel_remaining=True)


def _interrupt(run: _Run, label: str) -> None:
    agent = run.agents.get(label)
    if agent is not None:
        agent.interrupt()
