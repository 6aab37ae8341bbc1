"""What the dialects share: the names, a request the dialect cannot read, small text helpers.

A dialect module (``anthropic``, ``openai_chat``, ``openai_responses``) offers ``NAME``,
``request(body) -> suite request``, ``streaming(body)``, ``error_body(status, message)`` and an
``Encoder(model, id)`` that turns the model double's chunks into the dialect's answer.
"""

from __future__ import annotations

from collections.abc import Iterable
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


#: What each dialect cannot carry, by name (the ``dialect-limits`` row of
#: ``conformance/catalog/readings.toml``): the checks judge those requirements on what the
#: dialect can say. ``tool-error-flag``: a tool result has no error flag (judged on its text);
#: ``usage-events``: usage is one figure per call (a completed call delivers the sum of its usage
#: chunks, a cut one what the dialect had sent before the cut).
CANNOT_CARRY: dict[str, frozenset[str]] = {
    "anthropic": frozenset({"usage-events"}),
    "openai-chat": frozenset({"tool-error-flag", "usage-events"}),
    "openai-responses": frozenset({"tool-error-flag", "usage-events"}),
}


def _usage_sum(usages: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("input_tokens", "output_tokens", "cached_input_tokens")
    return {"type": "usage", **{k: sum(int(u.get(k) or 0) for u in usages) for k in keys}}


def delivered_usage(
    dialect: str | None, chunks: list[dict[str, Any]], complete: bool, in_process: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The usage a kernel received of one model call's streamed ``chunks``: every usage chunk,
    unless the call's model API has one usage figure per call — a dialect's (``CANNOT_CARRY``)
    or, in process (no dialect), the framework's (``in_process``: what the adapter declares in
    ``AdapterInfo.model_api_cannot_carry``). Then one summed figure for a completed call, and for
    a cut one only Anthropic's ``message_start`` usage (a first chunk that is usage); in process
    none, the figure coming with the completed response."""
    usages = [c for c in chunks if c.get("type") == "usage"]
    limits = frozenset(in_process) if dialect is None else CANNOT_CARRY.get(dialect, frozenset())
    if "usage-events" not in limits:
        return usages
    if complete:
        return [_usage_sum(usages)] if usages else []
    if dialect == "anthropic" and chunks and chunks[0].get("type") == "usage":
        return [chunks[0]]
    return []
