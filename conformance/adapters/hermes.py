"""hermes-agent 0.19.0 (``AIAgent.run_conversation``) certified over the stdio wire protocol.

Spec: ``stdio:/work/venv-hermes/bin/python -m conformance.adapters.hermes`` (hermes pins its own
openai and friends, so it lives in its own virtualenv: ``scripts/make_env_hermes.sh``). Profile
``commonagent`` only; no optional capability is declared.

Hermes's tool registry and plugin manager are process-wide singletons, so every scenario runs in
a fresh process. The *front* (this module, no hermes import) speaks ``docs/protocol.md`` to the
harness and hands each ``run`` to a fresh ``fork()`` of a *zygote* that has imported and warmed
hermes once (a fork costs milliseconds, the imports seconds) and never touched its singletons; it
relays lines both ways. The zygote outlives a front the harness kills after a hang, so the
restarted front is ready at once; it exits when its harness process is gone or after ten idle
minutes. Each child empties the zygote's temporary ``HERMES_HOME`` (children run one at a time),
gets an environment without API keys or proxy variables and ``HERMES_SAFE_MODE=1`` (no plugin
discovery: only our hooks), and serves its one scenario through ``reference_kernel.stdio.Server``
with :class:`~conformance.adapters.hermes_worker.HermesAdapter` in place of the reference adapter.

What maps to what (hermes-agent 0.19.0 source, site-packages paths):

* model → ``AIAgent(base_url=<loopback>, provider="custom", api_mode="chat_completions")``; the
  loopback relay (127.0.0.1) passes every request byte for byte to the harness's served model
  (the run request's Chat Completions URL, docs/http-kernels.md), adding the running turn's
  TurnInfo (``x-akc-turn``) that hermes's client cannot send; hermes closing its connection (an
  interrupt) closes the harness's, which cancels the call.
* tools → ``tools.registry.registry.register`` in toolset ``akc`` (``enabled_toolsets=["akc"]``);
  the handler calls ``tool.invoke`` with the call id hermes binds in
  ``tools.approval._approval_tool_call_id`` around the dispatch; a scripted tool failure is raised
  from the handler (hermes turns it into ``{"error": "Tool execution failed: ..."}``); a handler
  can only return text, so an ``is_error`` result of the harness reaches hermes as plain text.
* hooks → ``PluginContext.register_hook`` of the process-wide ``PluginManager``, in list order, for
  the eleven 000 points hermes has: ``on_session_start``, ``pre_llm_call`` (``context`` →
  ``{"context": text}``), ``pre_api_request``, ``post_api_request``, ``api_request_error``,
  ``transform_llm_output`` (``replace`` → the new text), ``post_llm_call``, ``pre_tool_call``
  (``block`` → ``{"action": "block", "message": reason}``, ``ask_user`` → ``{"action": "approve",
  "message": prompt}``; ``modify`` → a ``tool_request`` middleware, hermes's seam for rewriting a
  call's arguments before the hook, ``register_middleware``, returning ``{"args": the arguments
  hermes handed it, merged with the Modify's}``: the harness hook is dispatched there once per
  call and its outcome kept for the hook), ``post_tool_call``, ``transform_tool_result`` (``replace`` → the new text),
  ``on_session_end``. A hook scripted to raise raises from the callback (hermes logs it and goes on:
  ``PluginManager.invoke_hook`` swallows callback exceptions).
* approver → hermes's human gate (``tools.approval.request_tool_approval``) on its gateway path
  (the process is a gateway: ``HERMES_EXEC_ASK=1``, gateway/run.py:1877): each turn runs in the
  gateway's session context with a notify callback registered for its session key
  (``register_gateway_notify``, as gateway/run.py:20860-20923), which asks the harness's approver
  and answers with hermes's ``resolve_gateway_approval``: approved → ``"once"``, denied and
  timed_out → ``"deny"`` (the harness's timeout answered at once, not after hermes's own
  ``approvals.timeout``).
* cancellation → ``AIAgent.interrupt()`` from the harness's thread.
* profile → the scenario's ``profile_id`` as a hermes named profile: made with hermes's
  ``create_profile`` (a home under ``profiles/<name>``), each turn run under it with
  ``set_hermes_home_override`` as the gateway scopes a profile's turn (``gateway/run.py:1523-1555``);
  hermes then stores the session with that ``profile_name`` and the TurnInfo's ``profile_id`` is
  hermes's ``get_active_profile_name()``. The default profile's home is ``HERMES_HOME`` itself.
* user messages → hermes's gateway (``conformance.adapters.hermes_gateway``): each is an inbound
  text message of a platform whose chats are the session labels, through
  ``BasePlatformAdapter.handle_message`` (the per-session guard) and a ``GatewayRunner``'s busy
  handler; the profile's ``config.yaml`` sets ``display.busy_input_mode: queue`` with the explicit
  ``display.busy_text_mode: interrupt`` (gateway/run.py:5334-5355), so a message to a busy
  session is queued by the runner in arrival order without stopping the running turn
  (gateway/run.py:5676-5716) and drained as a turn of its own once that turn has ended
  (gateway/run.py:21697-21704). The harness user is on ``GATEWAY_ALLOWED_USERS``.
* sessions → one ``AIAgent`` (with a ``hermes_state.SessionDB`` in ``HERMES_HOME``) per session
  label; a later message of the session is run with ``conversation_history`` = the previous
  result's ``messages`` (how hermes's CLI carries a session). ``system_message`` is the scenario's
  system prompt; ``max_iterations`` the scenario's, else hermes's default (90).
* outcome status ← the ``run_conversation`` result: ``interrupted`` → interrupted, ``completed`` →
  completed, a ``turn_exit_reason`` naming the iteration budget → budget_exhausted, else error.
* journal ← ``state.db``: ``sessions`` rows (id, source, title, parent_session_id) and the
  ``messages`` rows in id order; tool-call records are read off the stored assistant/tool messages
  (is_error by hermes's own ``model_tools._tool_result_observer_fields``).
* usage ← ``session_model_usage`` rows (hermes stores usage per session and model, not per call),
  ``cost_usd`` = hermes's ``estimated_cost_usd``.

What does not exist in hermes (its requirements come out ``fail`` for a MUST):

* hook points ``agent_loop_stopped`` and ``transform_api_error_classification`` (not in
  ``hermes_cli.plugins.VALID_HOOKS``): never registered, never dispatched;
* two ``Modify`` hooks composed on one call: hermes calls every ``tool_request`` middleware with
  the same arguments and keeps the last result (``hermes_cli/middleware.py:137-156``);
* tags (no tag concept: TurnInfo.tags is empty), turn records and per-turn status in the journal,
  a stored turn id per message, risk / duration / approval on tool-call records;
* the scenario's pricing (hermes prices from its own tables; a custom endpoint's cost is unknown);
* a per-call usage record, spans;
* ``on_session_end``'s status when a turn neither completed nor was interrupted (hermes passes only
  the ``completed`` and ``interrupted`` flags): reported as ``null``;
* a TurnInfo in the loop (its ``profile_id`` is hermes's active profile name, the rest the
  adapter builds), UUID v7 ids (hermes's are ``YYYYMMDD_HHMMSS_xxxxxx`` and ``<session>:<task>:<hex>``), session titles
  without an auxiliary title model.

Hermes's own choices that the checks see (not the adapter's): registry tools run one at a time
(``agent/tool_dispatch_helpers.py``: only an allowlist of built-in read-only tools and opted-in
MCP tools run in parallel); identical calls (same name and arguments) in one response are dropped
but the first (``AIAgent._deduplicate_tool_calls``); ``pre_llm_call`` context is appended *after*
the user message and stays in the returned history; a spent ``max_iterations`` ends the loop and
``_handle_max_iterations`` (run_agent.py:6316) makes a tool-less summary call (no grace call: 0.19
never sets ``_budget_grace_call``, agent/agent_init.py:667, agent/conversation_loop.py:721-741); a failed model call is retried; a block or a denied approval
reaches the model as ``{"error": <hermes's text>}``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from conformance.adapters.hermes_info import ADAPTER_INFO, HERMES_POINTS  # noqa: F401  (re-exported)
from conformance.children import reap

_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PROXY")
#: A zygote whose harness is gone, or that has not forked for this long, exits.
_ZYGOTE_IDLE_S = 600.0
#: How long the zygote waits for the previous child to exit before it kills it.
_CHILD_GRACE_S = 5.0


def worker_env(home: str) -> dict[str, str]:
    """The harness's environment without API keys and proxies, with its own HERMES_HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().endswith(_SECRET_SUFFIXES) and k.upper() not in ("ALL_PROXY", "NO_PROXY")
    }
    env["HERMES_HOME"] = home
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env["HERMES_SAFE_MODE"] = "1"  # no plugin discovery: only our hooks are registered
    return env


def _debug(text: str) -> None:
    if os.environ.get("AKC_HERMES_DEBUG"):
        print(f"hermes adapter [{os.getpid()} {time.monotonic():.2f}]: {text}", file=sys.stderr, flush=True)


# =========================================================================== front


def _zygote_dir(harness_pid: int) -> str:
    """One zygote per (hermes interpreter, harness process): a restarted front (after a hang) finds
    the warm one its harness already has; two suites running at once never share one."""
    key = hashlib.sha256(f"{sys.executable}|{harness_pid}".encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"akc-hermes-{os.getuid()}-{key}")


def _connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        return sock
    except OSError:
        sock.close()
        return None


class _Zygote:
    """The fork server: hermes imported and warmed once; each scenario is a fork of it.

    A fork is a fresh process (the zygote never touches hermes's registry or plugin manager) that
    costs milliseconds instead of seconds of imports. The zygote outlives a front the harness
    kills after a hang, so the restarted front answers ``start`` at once; it exits when its
    harness is gone or after ``_ZYGOTE_IDLE_S`` without work. Children run one at a time and
    empty the zygote's ``HERMES_HOME`` first (hermes computes paths from it at import time, so it
    cannot move between forks); each talks to the front over two FIFOs.
    """

    def __init__(self, harness_pid: int) -> None:
        self.harness_pid = harness_pid
        self.dir = _zygote_dir(harness_pid)
        self.sock_path = os.path.join(self.dir, "zygote.sock")
        #: The zygote's and its children's stderr (they outlive the front, whose stderr the harness reads).
        self.log_path = os.path.join(self.dir, "stderr.log")
        self.failure = ""

    def log_tail(self, lines: int = 8) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4000))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def ensure(self, timeout: float = 60.0) -> bool:
        """Start the zygote unless it runs; True once it accepts forks."""
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        with open(os.path.join(self.dir, "lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            sock = _connect(self.sock_path)
            if sock is not None:
                sock.close()
                return True
            home = os.path.join(self.dir, "home")
            os.makedirs(home, exist_ok=True)
            # the zygote writes one byte to this pipe once it listens; it closes it (EOF) if it dies
            ready_r, ready_w = os.pipe()
            try:
                with open(self.log_path, "ab") as log:
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "conformance.adapters.hermes", "--zygote", str(self.harness_pid), self.sock_path, str(ready_w)],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=worker_env(home),
                        start_new_session=True, pass_fds=(ready_w,),
                    )
                os.close(ready_w)
                readable, _, _ = select.select([ready_r], [], [], timeout)
                if readable and os.read(ready_r, 1) == b"1":
                    return True
            finally:
                os.close(ready_r)
            self.failure = self.log_tail()
            proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def fork(self, count: int) -> _Worker | None:
        fifo_dir = os.path.join(self.dir, f"run-{os.getpid()}-{count}")
        os.mkdir(fifo_dir)
        os.mkfifo(os.path.join(fifo_dir, "in"))
        os.mkfifo(os.path.join(fifo_dir, "out"))
        sock = _connect(self.sock_path)
        if sock is None and self.ensure():
            sock = _connect(self.sock_path)
        if sock is None:
            shutil.rmtree(fifo_dir, ignore_errors=True)
            return None
        with sock:
            sock.sendall(f"fork {fifo_dir}\n".encode())
        return _Worker(fifo_dir)


class _Worker:
    """One forked child, through its FIFOs (same open order on both sides: in, then out)."""

    def __init__(self, fifo_dir: str) -> None:
        self.dir = fifo_dir
        self.stdin = open(os.path.join(fifo_dir, "in"), "wb", buffering=0)
        self.stdout = open(os.path.join(fifo_dir, "out"), "rb")
        self.exited = threading.Event()

    def send(self, line: bytes) -> None:
        try:
            self.stdin.write(line)
        except (BrokenPipeError, ValueError, OSError):
            pass

    def close(self) -> None:
        try:
            self.stdin.close()
        except OSError:
            pass


class Front:
    """Relays one run at a time to a fresh fork of the zygote (docs/protocol.md, unchanged)."""

    def __init__(self) -> None:
        self.out = os.fdopen(os.dup(1), "wb", buffering=0)
        self.lock = threading.Lock()
        self.zygote = _Zygote(os.getppid())
        self.current: _Worker | None = None
        self.count = 0

    def write(self, obj: dict[str, Any] | bytes) -> None:
        data = obj if isinstance(obj, bytes) else (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        with self.lock:
            self.out.write(data)

    def pump(self, worker: _Worker, run_id: Any, seq: Any) -> None:
        """Child stdout → harness, until the child exits (EOF)."""
        answered = False
        for line in worker.stdout:
            if not line.strip() or answered:
                continue
            self.write(line)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "method" not in msg and msg.get("id") == run_id:
                answered = True
                worker.close()  # EOF on its stdin: the child exits
        if not answered:
            self.write({"jsonrpc": "2.0", "id": run_id, "result": {
                "seq": seq, "status": "errored",
                "error": {"type": "WorkerDied", "message": "the hermes worker exited before answering",
                          "context": self.zygote.log_tail(15)}}})
        worker.close()
        worker.stdout.close()
        shutil.rmtree(worker.dir, ignore_errors=True)
        worker.exited.set()

    def serve(self) -> None:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            method = msg.get("method")
            _debug(f"front got {method or 'a response'} id={msg.get('id')}")
            if method == "start":
                version = (msg.get("params") or {}).get("protocol")
                if version != 1:
                    self.write({"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                        "code": -32001, "message": f"unsupported protocol version {version!r}",
                        "data": {"supported": [1]}}})
                    continue
                if not self.zygote.ensure():  # warm before the first scenario's clock starts
                    self.write({"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                        "code": -32603, "message": f"the hermes fork server did not start: is hermes-agent "
                        f"installed in {sys.executable}? (scripts/make_env_hermes.sh) Its stderr: {self.zygote.failure}"}})
                    continue
                self.write({"jsonrpc": "2.0", "id": msg.get("id"), "result": {"protocol": 1, "info": ADAPTER_INFO}})
            elif method == "stop":
                self.write({"jsonrpc": "2.0", "id": msg.get("id"), "result": {}})
                break
            elif method == "run":
                if self.current is not None:
                    self.current.exited.wait(10)  # children run one at a time (shared HERMES_HOME)
                seq = (msg.get("params") or {}).get("seq")
                self.count += 1
                worker = self.zygote.fork(self.count)
                if worker is None:
                    self.write({"jsonrpc": "2.0", "id": msg.get("id"), "result": {"seq": seq, "status": "errored",
                                "error": {"type": "WorkerDied", "message": "the hermes fork server is gone",
                                          "context": self.zygote.log_tail(15)}}})
                    continue
                self.current = worker
                threading.Thread(target=self.pump, args=(worker, msg.get("id"), seq), daemon=True).start()
                worker.send(line)
            elif self.current is not None:
                self.current.send(line)
        if self.current is not None:
            self.current.close()


# =========================================================================== worker


#: What a first run imports (measured on 0.19.0); imported ahead so a scenario's seconds go to it.
_WARM_MODULES = (
    "openai", "run_agent", "hermes_state", "model_tools", "toolsets", "tools.registry", "tools.approval",
    "tools.terminal_tool", "tools.budget_config", "tools.checkpoint_manager", "tools.env_probe",
    "tools.hook_output_spill", "tools.schema_sanitizer", "tools.skill_provenance", "tools.tool_result_storage",
    "tools.tool_search", "hermes_cli.plugins", "hermes_cli.profiles", "hermes_cli.codex_models",
    "hermes_cli.moa_config", "hermes_cli.model_normalize", "hermes_cli.models", "hermes_cli.nous_account",
    "hermes_cli.nous_subscription", "hermes_cli.skin_engine", "agent.agent_init", "agent.agent_runtime_helpers",
    "agent.anthropic_adapter", "agent.aux_accounting", "agent.bounded_response", "agent.chat_completion_helpers",
    "agent.coding_context", "agent.conversation_loop", "agent.credits_tracker", "agent.display", "agent.errors",
    "agent.gemini_native_adapter", "agent.gemini_schema", "agent.kanban_stop", "agent.lmstudio_reasoning",
    "agent.models_dev", "agent.moonshot_schema", "agent.prompt_caching", "agent.rate_limit_tracker",
    "agent.ssl_guard", "agent.ssl_verify", "agent.stream_single_writer", "agent.subdirectory_hints",
    "agent.system_prompt", "agent.think_scrubber", "agent.tool_executor", "agent.transports",
    "agent.transports.chat_completions", "agent.turn_finalizer", "agent.turn_retry_state",
    "agent.verification_stop", "agent.verify_hooks", "agent.turn_context", "agent.error_classifier",
    "gateway.config", "gateway.session", "gateway.platforms.base",
)


def _warm_up() -> None:
    """Import what a run imports (and openai's lazily loaded resources), touching no hermes state."""
    import importlib

    for name in _WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a module renamed upstream only costs time
            print(f"hermes worker: warm-up import {name} failed: {exc}", file=sys.stderr)
    try:  # the Python-toolchain probe of the system prompt (subprocesses; a machine fact, cached per process)
        from tools.env_probe import get_environment_probe_line

        get_environment_probe_line()
    except Exception as exc:  # noqa: BLE001
        print(f"hermes worker: env probe warm-up failed: {exc}", file=sys.stderr)
    try:
        import openai

        client = openai.OpenAI(api_key="sk-warm-up", base_url="http://127.0.0.1:9/v1")
        client.chat.completions  # noqa: B018 - loads the resource modules
        client.models  # noqa: B018
        client.close()
    except Exception as exc:  # noqa: BLE001
        print(f"hermes worker: openai warm-up failed: {exc}", file=sys.stderr)


def _empty(directory: str) -> None:
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def _child(fifo_dir: str) -> None:
    """A forked child: a fresh hermes state, serving one scenario over its FIFOs."""
    _debug(f"child for {fifo_dir}")
    stdin_fd = os.open(os.path.join(fifo_dir, "in"), os.O_RDONLY)
    out_fd = os.open(os.path.join(fifo_dir, "out"), os.O_WRONLY)
    if os.environ.get("AKC_HERMES_DEBUG"):
        import faulthandler

        faulthandler.dump_traceback_later(4, exit=False)
    _empty(os.environ["HERMES_HOME"])
    import anyio

    from conformance.adapters.hermes_worker import HermesAdapter
    from reference_kernel.stdio import Server

    class ChildServer(Server):
        async def lines(self):  # type: ignore[no-untyped-def]
            async for line in super().lines():
                yield line
            os._exit(0)  # the front is gone: do not wait for hermes threads stuck on callbacks

    server = ChildServer(out_fd, stdin_fd)
    server.adapter = HermesAdapter()  # type: ignore[assignment]
    try:
        anyio.run(server.serve)
    except BaseException as exc:  # noqa: BLE001
        print(f"hermes worker: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    os._exit(0)  # hermes leaves daemon threads behind; a child serves one scenario only


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True




def zygote_main(harness_pid: int, sock_path: str, ready_fd: int) -> None:
    os.dup2(2, 1)  # anything hermes writes to stdout goes to stderr
    sys.stdout = sys.stderr
    t0 = time.monotonic()
    try:
        import run_agent  # noqa: F401
    except ImportError as exc:
        print(f"hermes adapter: hermes-agent is not importable in {sys.executable}: {exc}", file=sys.stderr, flush=True)
        os._exit(3)
    _warm_up()
    import conformance.adapters.hermes_worker  # noqa: F401
    import reference_kernel.stdio  # noqa: F401

    _debug(f"zygote warm-up took {time.monotonic() - t0:.2f} s")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    server.bind(sock_path)
    server.listen(8)
    os.write(ready_fd, b"1")  # the front waiting in _Zygote.ensure goes on
    os.close(ready_fd)
    server.settimeout(1.0)
    child: int | None = None
    idle_since = time.monotonic()
    while _alive(harness_pid) and time.monotonic() - idle_since < _ZYGOTE_IDLE_S:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            if child is not None and os.waitpid(child, os.WNOHANG)[0] != 0:
                child = None
            continue
        with conn:
            conn.settimeout(5.0)
            try:
                command, _, arg = conn.makefile("rb").readline().decode().strip().partition(" ")
            except OSError:
                continue
        if command != "fork":
            continue
        if child is not None:
            reap(child, _CHILD_GRACE_S)  # one at a time: they share HERMES_HOME
        idle_since = time.monotonic()
        pid = os.fork()
        if pid == 0:
            server.close()
            _child(arg)
        child = pid
    if child is not None:
        reap(child, _CHILD_GRACE_S)
    server.close()
    shutil.rmtree(os.path.dirname(sock_path), ignore_errors=True)
    os._exit(0)


def factory() -> Any:
    """In-process spec for a harness running in the hermes env itself (``akc matrix``): the same
    front, started with this interpreter."""
    import shlex

    from conformance.wire.client import load_stdio

    return load_stdio(f"{shlex.quote(sys.executable)} -m conformance.adapters.hermes")


def main() -> None:
    if sys.argv[1:2] == ["--zygote"]:
        zygote_main(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        Front().serve()


if __name__ == "__main__":
    main()
