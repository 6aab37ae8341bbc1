"""Configuration of the reference kernel, validated once when the kernel is built.

Bad values raise :class:`ConfigError` naming the field (``max_turns``, ``doom_loop.threshold``,
``concurrency`` ...), never a pydantic traceback: an adapter reports the field as a Rejection.
Also here: the protocols the loop talks to (model provider, tool, hook) and the hook outcomes.
Outcomes are plain dataclasses, not pydantic models, because hooks run on the hot path.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reference_kernel.concurrency import ConcurrencySpec, validate_tool_spec
from reference_kernel.doom import DEFAULT_THRESHOLD
from reference_kernel.errors import ConfigError
from reference_kernel.records import TurnInfo
from reference_kernel.tags import merge_tags

ToolKind = Literal["data_source", "resource", "interactive"]

#: 000: "max_iterations caps the number of model calls in one turn. The default is 500".
DEFAULT_MAX_ITERATIONS = 500
#: Our choice (the seeds point at a depth-limits document we do not have).
DEFAULT_MAX_DEPTH = 3


class _Config(BaseModel):
    """Turns pydantic's ValidationError into one ConfigError naming the first bad field."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    _field_prefix: ClassVar[str] = ""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(part) for part in err["loc"])
            ctx_error = (err.get("ctx") or {}).get("error")
            if isinstance(ctx_error, ConfigError):
                raise ConfigError(ctx_error.field, ctx_error.message) from None
            name = self._field_prefix + loc if loc else self._field_prefix.rstrip(".") or "config"
            raise ConfigError(name, err["msg"]) from None


class DelegateSpec(_Config):
    """Makes a tool a delegation tool: calling it runs a child RunSession (sub-agent) of the same
    profile (001: TurnInfo::child keeps the profile). The call's ``goal`` argument is the child's
    first message and its session title; unset bounds are the profile's.
    """

    max_cost_usd: float | None = None
    max_turns: int | None = None

    @model_validator(mode="after")
    def _check(self) -> DelegateSpec:
        _positive("max_cost_usd", self.max_cost_usd)
        _positive("max_turns", self.max_turns)
        return self


class ToolSpec(_Config):
    """A tool as registered: what the model sees (name, description, input_schema) plus what the
    loop needs (kind, provider, ConcurrencySpec, terminates_turn, risk, delegation)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    kind: ToolKind = "data_source"
    provider: str = "default"
    concurrency: ConcurrencySpec | None = None
    terminates_turn: bool = False
    risk: str = "low"
    delegate: DelegateSpec | None = None

    @model_validator(mode="after")
    def _interactive_has_no_spec(self) -> ToolSpec:
        validate_tool_spec(self.kind, self.concurrency)  # ConfigError(field="concurrency")
        return self

    def model_view(self) -> dict[str, Any]:
        """The spec as the model gets it in a request."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


def _positive(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or (isinstance(value, float) and math.isnan(value)) or value <= 0:
        raise ConfigError(name, f"must be > 0, got {value!r}")


class LoopBounds(_Config):
    """003's three independent bound dimensions of a session run (None: unbounded).

    ``soft``: on max_turns / max_cost_usd the run ends ``paused`` instead of ending for good
    (003's optional soft limit; the default stays hard).
    """

    max_turns: int | None = None
    max_cost_usd: float | None = None
    max_wall_clock_s: float | None = None
    soft: bool = False

    @model_validator(mode="after")
    def _check(self) -> LoopBounds:
        for name in ("max_turns", "max_cost_usd", "max_wall_clock_s"):
            _positive(name, getattr(self, name))
        return self


class DoomLoopConfig(_Config):
    """003: threshold MUST default in [3,5] -- ours is 3 -- and window_size defaults to it."""

    _field_prefix: ClassVar[str] = "doom_loop."
    threshold: int = DEFAULT_THRESHOLD
    window_size: int | None = None

    @model_validator(mode="after")
    def _check(self) -> DoomLoopConfig:
        if self.threshold < 1:
            raise ConfigError("doom_loop.threshold", f"must be >= 1, got {self.threshold}")
        if self.window_size is not None and self.window_size < self.threshold:
            raise ConfigError(
                "doom_loop.window_size", f"must be >= threshold ({self.threshold}), got {self.window_size}"
            )
        return self

    @property
    def window(self) -> int:
        return self.window_size if self.window_size is not None else self.threshold


class ProfileConfig(_Config):
    """One profile: identity, tags, SOUL text, 000's per-turn iteration cap, 003's bounds."""

    profile_id: str = "default"
    tags: list[str] = Field(default_factory=list)
    system_prompt: str = ""
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    bounds: LoopBounds = Field(default_factory=LoopBounds)
    max_depth: int = DEFAULT_MAX_DEPTH
    doom_loop: DoomLoopConfig = Field(default_factory=DoomLoopConfig)
    model: str = "model"

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        return merge_tags(tags)

    @field_validator("max_iterations")
    @classmethod
    def _iterations(cls, value: int) -> int:
        _positive("max_iterations", value)
        return value

    @field_validator("max_depth")
    @classmethod
    def _depth(cls, value: int) -> int:
        if value < 0:
            raise ConfigError("max_depth", f"must be >= 0, got {value}")
        return value


# --------------------------------------------------------------------------- protocols


@runtime_checkable
class ModelProvider(Protocol):
    """Streams chunk dicts (``text`` / ``tool_use`` / ``usage``, see conformance.boundary.adapter)."""

    def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]: ...


@runtime_checkable
class Tool(Protocol):
    """A tool implementation: returns the result text (or ``{"content", "is_error"}``); raises on
    failure (the loop turns the exception message into an error tool_result). The call being run
    (``{"id", "name", "args"}``) is in ``current_call`` for tools that need its id."""

    async def __call__(self, args: dict[str, Any], turn: TurnInfo) -> str | dict[str, Any]: ...


#: The tool call a Tool is running for, set by the loop around each tool invocation.
current_call: ContextVar[dict[str, Any] | None] = ContextVar("current_call", default=None)


# --------------------------------------------------------------------------- hooks


@dataclass(frozen=True, slots=True)
class Continue:
    pass


@dataclass(frozen=True, slots=True)
class Replace:
    payload: Any


@dataclass(frozen=True, slots=True)
class Veto:
    call_ids: list[str]
    reason: str = "vetoed"


@dataclass(frozen=True, slots=True)
class Block:
    reason: str


@dataclass(frozen=True, slots=True)
class AskUser:
    prompt: str


@dataclass(frozen=True, slots=True)
class Modify:
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AddContext:
    text: str


HookOutcome = Continue | Replace | Veto | Block | AskUser | Modify | AddContext | None
#: A hook: ``await hook(point, payload, turn)``; None means continue. Raising fails the run.
HookFn = Callable[[str, Any, TurnInfo], Awaitable[HookOutcome]]
#: 003's policy precheck of data-source / interactive calls: ``(allow, reason)``.
PolicyFn = Callable[[dict[str, Any], TurnInfo], Awaitable[tuple[bool, str | None]]]
#: 000's approver for AskUser: returns ``approved`` / ``denied`` / ``timed_out``.
ApproverFn = Callable[[dict[str, Any], TurnInfo], Awaitable[str]]


@dataclass(slots=True)
class HookRegistry:
    """Hooks per point, in registration order; a chain passes each hook the previous output."""

    _by_point: dict[str, list[tuple[str, HookFn]]] = field(default_factory=dict)

    def register(self, point: str, hook_id: str, fn: HookFn) -> None:
        self._by_point.setdefault(point, []).append((hook_id, fn))

    def at(self, point: str) -> list[tuple[str, HookFn]]:
        return self._by_point.get(point, _EMPTY)


_EMPTY: list[tuple[str, HookFn]] = []
