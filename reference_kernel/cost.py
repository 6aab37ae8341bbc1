"""Cost of a usage event (docs/adapter.md) and 003's cost roll-up over the live session tree."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from reference_kernel.errors import ConfigError


class Pricing(BaseModel):
    """USD per million tokens; ``input`` is the non-cached input price."""

    model_config = ConfigDict(frozen=True)

    input_usd_per_mtok: float = Field(default=0.0, ge=0)
    output_usd_per_mtok: float = Field(default=0.0, ge=0)
    cached_input_usd_per_mtok: float = Field(default=0.0, ge=0)


def compute_cost(
    pricing: Pricing, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0
) -> float:
    """(input*in + cached*cached_in + output*out) / 1e6, where input counts non-cached tokens."""
    return (
        input_tokens * pricing.input_usd_per_mtok
        + cached_input_tokens * pricing.cached_input_usd_per_mtok
        + output_tokens * pricing.output_usd_per_mtok
    ) / 1e6


@dataclass(slots=True)
class _Node:
    parent: str | None
    remaining: float
    spent: float = 0.0
    children: list[str] = field(default_factory=list)


class CostLedger:
    """remaining(child) = min(remaining(parent) at spawn, own max ?? +inf); every charge is
    subtracted at every session from the spender up to the root, atomically, so a bound cannot be
    dodged by spending in sub-agents.

    Atomic without a lock: the loop charges from its event loop's thread only, and no method
    awaits, so no other task sees a charge half done (a lock would be pure cost on every usage
    event).
    """

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}

    def open_session(
        self, session_id: str, parent_id: str | None = None, max_cost_usd: float | None = None
    ) -> None:
        if max_cost_usd is not None and (math.isnan(max_cost_usd) or max_cost_usd < 0):
            raise ConfigError("max_cost_usd", f"must be >= 0, got {max_cost_usd!r}")
        own = math.inf if max_cost_usd is None else float(max_cost_usd)
        if session_id in self._nodes:
            raise ValueError(f"cost ledger: session {session_id!r} is already open")
        if parent_id is None:
            remaining = own
        else:
            parent = self._nodes.get(parent_id)
            if parent is None:
                raise KeyError(f"cost ledger: unknown parent session {parent_id!r}")
            remaining = min(parent.remaining, own)
            parent.children.append(session_id)
        self._nodes[session_id] = _Node(parent=parent_id, remaining=remaining)

    def _node(self, session_id: str) -> _Node:
        try:
            return self._nodes[session_id]
        except KeyError:
            raise KeyError(f"cost ledger: unknown session {session_id!r}") from None

    def remaining(self, session_id: str) -> float:
        """remaining_cost_budget_usd of the session (may be +inf)."""
        return self._node(session_id).remaining

    def spent(self, session_id: str) -> float:
        """Own spend plus every descendant's."""
        return self._node(session_id).spent

    def exhausted(self, session_id: str) -> bool:
        node = self._nodes.get(session_id)  # once per RunTurn: _node's lookup, inline
        return (node if node is not None else self._node(session_id)).remaining <= 0

    def charge(self, session_id: str, cost_usd: float) -> list[str]:
        """Subtract ``cost_usd`` on the path to the root; return the sessions now at <= 0
        (spender first, root last)."""
        if not cost_usd >= 0:  # negative, or NaN (every comparison with NaN is false)
            raise ValueError(f"cost ledger: cost must be >= 0, got {cost_usd!r}")
        nodes = self._nodes
        node = nodes.get(session_id)
        if node is None:
            node = self._node(session_id)  # raises, naming the session
        current = session_id
        fired: list[str] = []
        while True:
            node.remaining -= cost_usd
            node.spent += cost_usd
            if node.remaining <= 0:
                fired.append(current)
            parent = node.parent
            if parent is None:
                return fired
            current, node = parent, nodes[parent]
