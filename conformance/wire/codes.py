"""The stdio wire protocol's version and error codes (docs/protocol.md, "Error codes"), apart
from the pydantic models of :mod:`conformance.wire.messages`: a kernel process that needs only
these numbers does not pay for building the models at every start."""

from __future__ import annotations

PROTOCOL_VERSION = 1
SUPPORTED_VERSIONS = (1,)

# JSON-RPC and protocol error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
UNSUPPORTED_VERSION = -32001
MODEL_ERROR = 1001
TOOL_FAILED = 1002
