"""The served model: each scenario's model double behind a loopback HTTP socket, in three dialects.

One :class:`ModelHost` per harness event loop: an anyio TCP listener on 127.0.0.1 (HTTP/1.1
parsed by h11), serving every scenario under its own path token ``/s/<token>/``. A request is
translated by its dialect into the suite's model request and answered through the scenario's own
``doubles.model_stream``, so the model log, the cancellation points, the scripted errors and the
usage chunks are the same evidence as in process:

* the kernel closing the connection while its call is open cancels the call (the double logs the
  response as not complete, as it does when an in-process kernel cancels the stream);
* a scripted error before any chunk is the HTTP status with the dialect's error body (a
  ``timeout`` 504, a ``broken_stream`` 502, as a gateway answers); after some chunks it is the
  dialect's mid-stream error event, but a ``broken_stream`` cuts the connection;
* a request for a scenario that has ended is a stray: logged on that scenario (``http_stray``),
  kept in ``host.strays`` for the report, and answered 410 — never the next scenario's script.

The edges are answered, never a traceback: a request whose ``Host`` is not loopback gets 421 (no
DNS rebinding from a browser page), a malformed request or ``Content-Length`` 400, a body over
64 MiB 413, a body nested too deeply 400.

Routes (under ``/s/<token>``): ``POST /v1/messages`` and ``/v1/messages/count_tokens``
(Anthropic), ``POST /v1/chat/completions`` (OpenAI Chat Completions), ``POST /v1/responses``
(OpenAI Responses), ``GET /v1/models``. Every route wants the host's API key (``x-api-key`` or
``Authorization: Bearer``).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import anyio
import h11
from anyio.abc import SocketAttribute, SocketStream, TaskStatus

from conformance.boundary.adapter import ModelCallError
from conformance.httpmodel import anthropic, openai_chat, openai_responses
from conformance.httpmodel.dialect import DIALECTS, BadRequest

JSON = dict[str, Any]

#: Dialect modules by name.
_MODULES: dict[str, Any] = {"anthropic": anthropic, "openai-chat": openai_chat, "openai-responses": openai_responses}
#: The path (after ``/v1``) each dialect's model calls are made on.
_ROUTES = {"/messages": "anthropic", "/chat/completions": "openai-chat", "/responses": "openai-responses"}
#: The routes of model calls and token counts (anything else a kernel requests is logged ``http_other``).
_MODEL_ROUTES = {*_ROUTES, "/messages/count_tokens"}
#: Ended scenarios remembered for stray requests.
_ENDED_KEEP = 32
#: The largest request body read (a chat request with a long history is a few megabytes).
MAX_BODY = 64 << 20


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host of a ``Host`` header (``[::1]:80`` → ``::1``, ``127.0.0.1:80`` → ``127.0.0.1``)."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class HttpModel:
    """One scenario's served model, as an adapter sees it (``doubles.http_model``)."""

    def __init__(self, host: ModelHost, token: str) -> None:
        self._host = host
        self.token = token
        #: The dialects the kernel's model calls came in (for the report).
        self.used: set[str] = set()

    @property
    def api_key(self) -> str:
        """The key to send (``x-api-key`` or ``Authorization: Bearer``); any other is refused."""
        return self._host.api_key

    def base_url(self, dialect: str) -> str:
        """The base URL to point ``dialect``'s client at: Anthropic's SDK adds ``/v1/messages``
        itself, OpenAI's SDK wants the ``/v1`` in its base URL."""
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; the served model speaks {', '.join(DIALECTS)}")
        address = f"[{self._host.host}]" if ":" in self._host.host else self._host.host
        root = f"http://{address}:{self._host.port}/s/{self.token}"
        return root if dialect == "anthropic" else root + "/v1"

    def base_urls(self) -> dict[str, str]:
        return {d: self.base_url(d) for d in DIALECTS}


#: An optional request header: the TurnInfo (JSON) the call belongs to, for an adapter that can
#: attach it (in process, the model double gets it as ``turn``); without it the turn is null.
TURN_HEADER = "x-akc-turn"


def _turn(raw: str | None) -> JSON | None:
    if not raw:
        return None
    try:
        turn = json.loads(raw)
    except ValueError:
        return None
    return turn if isinstance(turn, dict) else None


def _http_status(exc: ModelCallError) -> int:
    """The status of a scripted failure: an ``http`` error's own; a ``timeout`` or a
    ``broken_stream`` before any chunk has none, and is answered as a gateway would (504 / 502)."""
    if exc.status is not None:
        return int(exc.status)
    return 504 if getattr(exc, "kind", "") == "timeout" else 502


class _Dropped(Exception):
    """The client closed the connection."""


class _TooLarge(Exception):
    """A request body over MAX_BODY."""


class ModelHost:
    """The loopback listener serving every scenario of one event loop (see the module doc)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, api_key: str | None = None) -> None:
        if not is_loopback(host):
            raise ValueError(f"model server: host {host!r} is not a loopback address")
        self.host = "127.0.0.1" if host == "localhost" else host
        self.api_key = api_key or "akc-" + secrets.token_hex(12)
        self.port = port
        self._live: dict[str, Any] = {}
        self._ended: OrderedDict[str, Any] = OrderedDict()
        #: (doubles, what) of each request that came for an ended scenario.
        self.strays: list[tuple[Any, str]] = []
        #: What broke in a connection's handling (the connection is closed; the listener goes on).
        self.errors: list[str] = []

    async def serve(self, *, task_status: TaskStatus[ModelHost] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``await tg.start(host.serve)`` returns once it is bound."""
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port)
        self.port = int(listener.extra(SocketAttribute.local_port))
        task_status.started(self)
        await listener.serve(self._connection)

    # ------------------------------------------------------------ scenarios

    def open(self, doubles: Any) -> HttpModel:
        """Serve ``doubles`` under a fresh token (``doubles.http_model``) until :meth:`close`."""
        model = HttpModel(self, secrets.token_hex(8))
        self._live[model.token] = doubles
        doubles.http_model = model
        return model

    def close(self, model: HttpModel) -> None:
        doubles = self._live.pop(model.token, None)
        if doubles is not None:
            self._ended[model.token] = doubles
            while len(self._ended) > _ENDED_KEEP:
                self._ended.popitem(last=False)

    def take_strays(self) -> list[tuple[Any, str]]:
        out, self.strays = self.strays, []
        return out

    # ------------------------------------------------------------ HTTP

    async def _connection(self, stream: SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        async with stream:
            try:
                while True:
                    try:
                        got = await self._read(conn, stream)
                    except h11.RemoteProtocolError as exc:
                        await self._refuse_raw(conn, stream, exc.error_status_hint, f"malformed request: {exc}")
                        return
                    except _TooLarge as exc:
                        await self._refuse_raw(conn, stream, 413, str(exc))
                        return
                    if got is None:
                        return
                    await self._respond(conn, stream, *got)
                    if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                        return
                    conn.start_next_cycle()
            except (_Dropped, anyio.BrokenResourceError, anyio.ClosedResourceError, h11.ProtocolError):
                return
            except Exception as exc:  # noqa: BLE001 - one connection's trouble never ends the listener
                self.errors.append(f"{type(exc).__name__}: {exc}")  # (whose task group is the harness loop's)

    async def _read(self, conn: h11.Connection, stream: SocketStream) -> tuple[h11.Request, bytes] | None:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    data = b""
                conn.receive_data(data)
                if not data and request is None:
                    return None
                continue
            if isinstance(event, h11.Request):
                request = event
                length = dict(event.headers).get(b"content-length", b"0")
                if length.isdigit() and int(length) > MAX_BODY:
                    raise _TooLarge(f"request body of {int(length)} bytes is over the limit of {MAX_BODY}")
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY:
                    raise _TooLarge(f"request body is over the limit of {MAX_BODY} bytes")
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            elif isinstance(event, (h11.ConnectionClosed, h11.PAUSED)):
                return None

    async def _refuse_raw(self, conn: h11.Connection, stream: SocketStream, status: int, message: str) -> None:
        """A 4xx for a request that could not be read (no dialect known yet: OpenAI's error shape)."""
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = json.dumps(openai_chat.error_body(status, message)).encode()
            headers = [("content-type", "application/json"), ("content-length", str(len(body))), ("connection", "close")]
            await stream.send(conn.send(h11.Response(status_code=status, headers=headers)) + conn.send(h11.Data(data=body))
                              + conn.send(h11.EndOfMessage()))

    @staticmethod
    async def _send_json(conn: h11.Connection, stream: SocketStream, status: int, body: JSON) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        headers = [("content-type", "application/json"), ("content-length", str(len(data)))]
        await stream.send(
            conn.send(h11.Response(status_code=status, headers=headers))
            + conn.send(h11.Data(data=data))
            + conn.send(h11.EndOfMessage())
        )

    async def _respond(self, conn: h11.Connection, stream: SocketStream, request: h11.Request, body: bytes) -> None:
        method = request.method.decode()
        target = request.target.decode("latin-1")
        path = urlsplit(target).path
        parts = path.split("/", 3)  # "", "s", token, rest
        token = parts[2] if len(parts) > 2 and parts[1] == "s" else ""
        rest = "/" + parts[3] if len(parts) > 3 else "/"
        route = rest[3:] if rest.startswith("/v1/") else rest
        route = route.rstrip("/") or "/"
        module = _MODULES.get(_ROUTES.get(route.removesuffix("/count_tokens"), ""), anthropic)

        async def refuse(status: int, message: str) -> None:
            await self._send_json(conn, stream, status, module.error_body(status, message))

        headers = {k.decode().lower(): v.decode("latin-1") for k, v in request.headers}
        if not is_loopback(_host_name(headers.get("host", ""))):
            await refuse(421, f"Host {headers.get('host')!r} is not a loopback address")
            return

        doubles = self._live.get(token)
        if doubles is None:
            ended = self._ended.get(token)
            if ended is None:
                await refuse(404, f"no scenario is served under {path!r} (take the base URL from the harness)")
                return
            what = f"{method} {rest}: a model request after its scenario had ended"
            ended.log.add("http_stray", method=method, path=rest)
            self.strays.append((ended, what))
            await refuse(410, f"this scenario has ended; {what}")
            return
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
        if key != self.api_key:
            doubles.log.add("http_rejected", status=401, path=rest, message="wrong or missing API key")
            await refuse(401, "wrong or missing API key: send the key the harness gave (x-api-key or Authorization: Bearer)")
            return
        if route not in _MODEL_ROUTES:  # every request that is not a model call, for kernels held to those
            doubles.log.add("http_other", method=method, path=rest)
        if route == "/models":
            if method != "GET":
                await refuse(405, f"{method} is not allowed on {rest}")
                return
            model = doubles.scenario.model.name
            await self._send_json(conn, stream, 200, {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "akc", "type": "model", "display_name": model}]})
            return
        dialect = _ROUTES.get(route.removesuffix("/count_tokens"))
        if dialect not in _MODULES or method != "POST":
            await refuse(404, f"no route {method} {rest}")
            return
        try:
            parsed = json.loads(body or b"null")
            if not isinstance(parsed, dict):
                raise BadRequest("the request body must be a JSON object")
            if route.endswith("/count_tokens"):
                await self._send_json(conn, stream, 200, module.count_tokens(parsed))
                return
            suite_request = module.request(parsed)
        except (ValueError, BadRequest, RecursionError) as exc:
            why = "request body is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            doubles.log.add("http_rejected", status=400, path=rest, message=why)
            await refuse(400, f"{rest}: {why}")
            return
        doubles.http_model.used.add(dialect)
        await self._model_call(conn, stream, doubles, module, parsed, suite_request, _turn(headers.get(TURN_HEADER)))

    async def _model_call(
        self, conn: h11.Connection, stream: SocketStream, doubles: Any, module: Any, body: JSON, suite_request: JSON, turn: JSON | None
    ) -> None:
        """One model call through the double, watching the connection: a client that goes away
        cancels the call (the double's stream is closed, as an in-process kernel would)."""
        index = doubles.model_calls
        chunks = doubles.model_stream(suite_request, turn, dialect=module.NAME)
        encoder = module.encoder(doubles.scenario.model.name, f"{doubles.http_model.token}_{index}", body)
        streaming = module.streaming(body)
        dropped = False

        async def watch(scope: anyio.CancelScope) -> None:
            nonlocal dropped
            while True:
                try:
                    data = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    break
                conn.receive_data(data)  # a pipelined next request waits in h11's buffer
            dropped = True
            scope.cancel()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, tg.cancel_scope)
                try:
                    dropped = await self._answer(conn, stream, chunks, encoder, module, streaming) or dropped
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await chunks.aclose()
        if dropped:
            raise _Dropped

    async def _answer(self, conn: h11.Connection, stream: SocketStream, chunks: Any, encoder: Any, module: Any, streaming: bool) -> bool:
        """Answer the call from the double's chunks; True when the connection must be cut."""
        started = False
        try:
            async for chunk in chunks:
                if not streaming:
                    encoder.events(chunk)
                    continue
                frames = encoder.chunk(chunk)
                if not started:
                    started = True
                    head = h11.Response(status_code=200, headers=[("content-type", "text/event-stream"), ("cache-control", "no-cache")])
                    frames = conn.send(head) + (conn.send(h11.Data(data=frames)) if frames else b"")
                elif frames:
                    frames = conn.send(h11.Data(data=frames))
                if frames:
                    await stream.send(frames)
        except ModelCallError as exc:
            kind = getattr(exc, "kind", "http")
            if kind == "broken_stream" and started:
                return True  # the connection is cut, no terminal event
            status = _http_status(exc)
            if not started:
                await self._send_json(conn, stream, status, module.error_body(status, exc.message))
                return False
            await stream.send(conn.send(h11.Data(data=encoder.error(status, exc.message))) + conn.send(h11.EndOfMessage()))
            return False
        if not streaming:
            await self._send_json(conn, stream, 200, encoder.body())
            return False
        tail = encoder.end()
        if not started:
            head = h11.Response(status_code=200, headers=[("content-type", "text/event-stream"), ("cache-control", "no-cache")])
            await stream.send(conn.send(head) + conn.send(h11.Data(data=tail)) + conn.send(h11.EndOfMessage()))
            return False
        await stream.send(conn.send(h11.Data(data=tail)) + conn.send(h11.EndOfMessage()))
        return False
