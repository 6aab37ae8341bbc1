"""A scripted model behind an OpenAI-compatible chat-completions API.

For kernels that call a model over HTTP instead of taking a model object. The scripts are the
same JSON the scripted model uses (a list of ``conformance.boundary.scenario.ModelResponse``, a
``ModelDef`` or a whole ``Scenario``), served two ways:

* out of process: ``akc model-server --script FILE [--port N] [--record FILE]`` (or
  :class:`ModelServer`), a stdlib HTTP server bound to 127.0.0.1; the base URL ends in ``/v1``;
* in process: ``conformance.httpmodel.respx_router.scripted_router(script)``, a respx router
  for kernels built on plain ``httpx`` (needs respx, a test dependency).

Both serve ``POST /v1/chat/completions`` (plain JSON, or SSE when ``stream`` is set, with the
usage in a final chunk when ``stream_options.include_usage`` is set) and ``GET /v1/models``. A
scripted ``error`` is the HTTP status with an OpenAI error body, or, after ``after_chunks``
streamed chunks, an ``{"error": ...}`` event. Calls take the script's responses in order,
whatever the transport. Every chat request is recorded in ``endpoint.requests``: the raw
``messages`` and ``tools``, and ``request``, the same request in our own shape (see
:func:`from_chat_request`).
"""

from conformance.httpmodel.endpoint import (
    Reply,
    ScriptedEndpoint,
    ScriptError,
    from_chat_message,
    from_chat_request,
    load_script,
)
from conformance.httpmodel.server import ModelServer

__all__ = [
    "ModelServer",
    "Reply",
    "ScriptError",
    "ScriptedEndpoint",
    "from_chat_message",
    "from_chat_request",
    "load_script",
]
