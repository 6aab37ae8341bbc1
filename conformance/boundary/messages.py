"""001's message shapes as pydantic models: the canonical message JSON at the adapter boundary.

The harness validates the messages a kernel stores (the journal) and sends (model requests) against
these, and ``schemas/message.schema.json`` is generated from :data:`Message`. Unknown extra keys are
ignored, not refused: the seeds fix the keys below and nothing else, and a kernel may store more.
``role`` has no default: it is the discriminator, so the schema requires it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter


class ToolCall(BaseModel):
    """One tool call of an assistant message: ``{"id", "name", "args"}``."""

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class UserMessage(BaseModel):
    role: Literal["user"]
    text: str


class AssistantMessage(BaseModel):
    """A model response: text (a final answer), tool calls, or both."""

    role: Literal["assistant"]
    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)


class ToolResultMessage(BaseModel):
    """The result of one tool call, matched to it by ``call_id``."""

    role: Literal["tool_result"]
    call_id: str
    content: str
    is_error: bool = False


class SystemMessage(BaseModel):
    """Not among 001's examples; kept because prompts and synthetic instructions travel this way."""

    role: Literal["system"]
    text: str


Message = Annotated[
    UserMessage | AssistantMessage | ToolResultMessage | SystemMessage,
    Field(discriminator="role"),
]

_MESSAGE = TypeAdapter(Message)


def parse_message(data: Any) -> UserMessage | AssistantMessage | ToolResultMessage | SystemMessage:
    """Validate one message dict (raises ``pydantic.ValidationError`` naming the bad field)."""
    return _MESSAGE.validate_python(data)
