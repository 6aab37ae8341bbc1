"""``--validate-protocol``: check every message, both ways, against ``schemas/protocol/``.

The validators are built from the same pydantic models the checked-in schema files are generated
from (a test keeps the files in step), so what is validated is exactly what is published.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from conformance.wire.messages import ERROR_DATA, METHODS, file_stem

ENV_VAR = "AKC_VALIDATE_PROTOCOL"


class ProtocolViolation(Exception):
    """A message does not match its schema; the text names direction, method and JSON path."""


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


@lru_cache(maxsize=None)
def _validator(name: str) -> jsonschema.Draft202012Validator:
    from pydantic import TypeAdapter

    from conformance.wire.messages import schema_files

    model = schema_files()[f"protocol/{name}.schema.json"]
    return jsonschema.Draft202012Validator(TypeAdapter(model).json_schema(mode="validation"))


def _check(name: str, value: Any, what: str) -> None:
    err = best_match(_validator(name).iter_errors(value))  # descends into oneOf branches
    if err is not None:
        raise ProtocolViolation(f"{what}: at {err.json_path}: {err.message}")


def check_message(msg: Any, direction: str, request_method: str | None = None) -> None:
    """Validate one message sent in ``direction`` (``harness→kernel`` or ``kernel→harness``).

    ``request_method`` is the method of the request a response answers (the caller tracks ids).
    """
    _check("envelope", msg, f"{direction} message")
    method = msg.get("method")
    if method is not None:
        entry = METHODS.get(method)
        if entry is None or entry[0] != direction:
            raise ProtocolViolation(f"{direction} message: unknown method {method!r}")
        kind = "request" if "id" in msg else "notification"
        if (entry[2] is None) != (kind == "notification"):
            raise ProtocolViolation(f"{direction} {method}: must be a {'notification' if entry[2] is None else 'request'}")
        _check(f"{file_stem(method)}.params", msg.get("params", {}), f"{direction} {method} params")
        return
    if request_method is None:
        return
    if "result" in msg:
        _check(f"{file_stem(request_method)}.result", msg["result"], f"{direction} {request_method} result")
    elif msg.get("error", {}).get("code") in ERROR_DATA and request_method == "model.complete":
        _check("model.complete.error-data", msg["error"].get("data"), f"{direction} {request_method} error.data")
