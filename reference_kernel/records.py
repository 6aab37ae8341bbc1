"""001's data types: who is running (TurnInfo), a new session, tool-call and usage records.

TurnInfo and NewSession (one per session run) are frozen pydantic models; the per-call and
per-model-call records (ToolCallRecord, UsageEvent) are named tuples, made on the hot path.

Messages stay plain dicts in 001's JSON shapes (the canonical form at the adapter boundary):
``{"role": "user", "text"}``, ``{"role": "assistant", "text"?, "tool_calls"?: [{"id", "name",
"args"}]}``, ``{"role": "tool_result", "call_id", "content", "is_error"}``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

#: 000 leaves the status set open (its list is cut off); statuses are plain strings.
TurnStatus = str
Message = dict[str, Any]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class TurnInfo(_Record):
    """Every hook, tool and journal call receives one: who is running and where."""

    profile_id: str
    session_id: str
    turn_id: str
    parent_turn_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    depth: int = 0

    def child(self, session_id: str, turn_id: str) -> TurnInfo:
        """The identity of a delegated turn: tags are copied so tag-keyed costs roll up."""
        return TurnInfo(
            profile_id=self.profile_id,
            session_id=session_id,
            turn_id=turn_id,
            parent_turn_id=self.turn_id,
            tags=list(self.tags),
            depth=self.depth + 1,
        )


class NewSession(_Record):
    profile_id: str
    #: Where it came from: ``web``, ``cli``, ``subagent``.
    source: str = "cli"
    title: str | None = None
    tags: list[str] = Field(default_factory=list)
    parent_session_id: str | None = None


class ToolCallRecord(NamedTuple):
    """One tool call as the journal records it (001's ToolCallRecord).

    A named tuple, not a pydantic model: the loop makes one per tool call, on the hot path;
    pydantic validates it at the boundary (``conformance.boundary.adapter.ToolCallRecord``, via
    ``as_dict()``). ``model_copy(update=...)`` is kept so it reads like the other records.
    """

    call_id: str
    name: str
    args: Any = None
    result: str = ""
    is_error: bool = False
    risk: str | None = None
    duration_ms: float = 0.0
    approval: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()

    def model_copy(self, *, update: dict[str, Any] | None = None) -> ToolCallRecord:
        return self._replace(**update) if update else self


class UsageEvent(NamedTuple):
    """One model call's usage with its cost computed at receipt time (003, cost accounting).

    A named tuple of scalars (one per model call; immutable, so the journal keeps it as it is,
    and the garbage collector stops tracking it); validated at the boundary like ToolCallRecord.
    """

    session_id: str
    turn_id: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()

    def model_copy(self, *, update: dict[str, Any] | None = None) -> UsageEvent:
        return self._replace(**update) if update else self
