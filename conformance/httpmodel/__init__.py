"""The harness's model double served over HTTP, for kernels that call a model API.

One implementation (``host.ModelHost``: h11 on an anyio loopback listener) serves every
scenario's own ``doubles.model_stream`` in three dialects — Anthropic Messages
(``anthropic``), OpenAI Chat Completions (``openai_chat``), OpenAI Responses
(``openai_responses``) — each a pure translation module. The harness runs one host per event
loop and gives each scenario its base URLs (``doubles.http_model``, the stdio ``run`` request's
``http_model``); ``akc model-server`` serves a model script on its own through the same host
(``standalone``). See docs/http-kernels.md.

The earlier script player (``ScriptedEndpoint``, its stdlib server and respx router) answered
without the harness seeing the requests; it is retired: a kernel tested through it was failed
for requests the checks never saw.
"""

from conformance.httpmodel.host import HttpModel, ModelHost
from conformance.httpmodel.script import ScriptError, load_script

__all__ = ["HttpModel", "ModelHost", "ScriptError", "load_script"]
