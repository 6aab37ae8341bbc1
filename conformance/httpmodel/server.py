"""The loopback server: a :class:`ScriptedEndpoint` over real HTTP, for kernels in any language.

Stdlib only (``ThreadingHTTPServer``), bound to 127.0.0.1. JSON answers carry a
``Content-Length``; SSE answers use chunked transfer encoding, one frame per chunk. A blocked
answer (``block_until_cancelled``) holds the stream open until the client goes away or the server
stops.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from conformance.httpmodel.endpoint import Reply, ScriptedEndpoint

#: How often a blocked stream checks whether its client is still there (a keep-alive comment).
_BLOCK_POLL_S = 0.2


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the endpoint records
        pass

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        reply = self.server.endpoint.handle(method, self.path, body)
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
        super().__init__((host, port), _Handler)


class ModelServer:
    """Serve ``endpoint`` on ``host:port`` (port 0: an ephemeral one) in a background thread.

    Use as a context manager, or ``start()`` / ``stop()``; ``base_url`` ends in ``/v1``.
    """

    def __init__(self, endpoint: ScriptedEndpoint, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError(f"model server: host {host!r} is not a loopback address")
        self.endpoint = endpoint
        self._server = _Server(endpoint, "127.0.0.1", port)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

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
