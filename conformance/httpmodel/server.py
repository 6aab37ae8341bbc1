"""The loopback server: a :class:`ScriptedEndpoint` over real HTTP, for kernels in any language.

Stdlib only (``ThreadingHTTPServer``), bound to a loopback address (127.0.0.1 by default, or
``::1``), answering only requests whose Host is loopback (no DNS rebinding); a bad or negative
``Content-Length``, a body over :data:`MAX_BODY` or nested too deeply gets a 4xx answer. JSON answers carry a
``Content-Length``; SSE answers use chunked transfer encoding, one frame per chunk. A blocked
answer (``block_until_cancelled``) holds the stream open until the client goes away or the server
stops.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from conformance.httpmodel import translate
from conformance.httpmodel.endpoint import Reply, ScriptedEndpoint

#: How often a blocked stream checks whether its client is still there (a keep-alive comment).
_BLOCK_POLL_S = 0.2
#: The largest request body read (a chat request with a long history is a few megabytes).
MAX_BODY = 64 << 20


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host of a Host header, without its port ("[::1]:8080" → "::1")."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the endpoint records
        pass

    def _refuse(self, status: int, message: str) -> None:
        self.close_connection = True
        self._json(Reply(status, translate.error_body(status, message)))

    def _serve(self, method: str) -> None:
        # Only a loopback Host: a page in a browser cannot reach the server by DNS rebinding.
        if not is_loopback(_host_name(self.headers.get("Host") or "")):
            return self._refuse(421, f"Host {self.headers.get('Host')!r} is not a loopback address")
        raw = self.headers.get("Content-Length") or "0"
        if not raw.isdigit():
            return self._refuse(400, f"bad Content-Length {raw[:40]!r}: expected a non-negative integer")
        length = int(raw)
        if length > MAX_BODY:
            return self._refuse(413, f"request body of {length} bytes is over the limit of {MAX_BODY}")
        body = self.rfile.read(length) if length else b""
        try:
            reply = self.server.endpoint.handle(method, self.path, body)
        except RecursionError:
            return self._refuse(400, "request body is nested too deeply")
        try:
            if reply.streaming:
                self._stream(reply)
            else:
                self._json(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _json(self, reply: Reply) -> None:
        data = json.dumps(reply.json, ensure_ascii=False).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame in reply.events:
            self._chunk(frame)
        if reply.block:
            self.close_connection = True
            while not self.server.stopping.wait(_BLOCK_POLL_S):
                self._chunk(b": waiting\n\n")  # raises once the client has gone
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, endpoint: ScriptedEndpoint, host: str, port: int) -> None:
        self.endpoint = endpoint
        self.stopping = threading.Event()
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _Handler)


class ModelServer:
    """Serve ``endpoint`` on ``host:port`` (port 0: an ephemeral one) in a background thread.

    Use as a context manager, or ``start()`` / ``stop()``; ``base_url`` ends in ``/v1``.
    """

    def __init__(self, endpoint: ScriptedEndpoint, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if not is_loopback(host):
            raise ValueError(f"model server: host {host!r} is not a loopback address")
        self.endpoint = endpoint
        self.host = "127.0.0.1" if host == "localhost" else host
        self._server = _Server(endpoint, self.host, port)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://[{self.host}]:{self.port}/v1" if ":" in self.host else f"http://{self.host}:{self.port}/v1"

    def start(self) -> ModelServer:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="akc-model-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the CLI)."""
        try:
            self._server.serve_forever()
        finally:
            self._server.stopping.set()
            self._server.server_close()

    def stop(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
