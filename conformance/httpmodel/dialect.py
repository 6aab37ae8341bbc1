"""What the dialects share: the names, a request the dialect cannot read, small text helpers.

A dialect module (``anthropic``, ``openai_chat``, ``openai_responses``) offers ``NAME``,
``request(body) -> suite request``, ``streaming(body)``, ``error_body(status, message)`` and an
``Encoder(model, id)`` that turns the model double's chunks into the dialect's answer.
"""

from __future__ import annotations

from typing import Any, get_args

from conformance.boundary.adapter import Dialect

#: The dialects the served model speaks (``AdapterInfo.dialects``).
DIALECTS: tuple[str, ...] = get_args(Dialect)


class BadRequest(ValueError):
    """A request the dialect cannot read; the message names the field (answered with a 400)."""


def text_of(content: Any) -> str:
    """A string, or the text of a list of content parts (``{"type": "text", "text"}`` and the like)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def halves(text: str) -> list[str]:
    """Tool arguments are streamed in two pieces when they can be, so clients must accumulate."""
    if len(text) < 2:
        return [text]
    mid = len(text) // 2
    return [text[:mid], text[mid:]]
