"""Legal variants of the readings of bounds and cost (``akc readings``), ported from the blind
round (/work/blind/blind_variants, names kept). Each takes an alternative the reference kernel
does not take and must pass the full suite.

* final-turn-counts: ``max_turns_includes_final``.
* cost-precision: ``cost_micro_rounded``, ``cost_decimal``.
* limit-instruction-form: ``limit_as_system_message``, ``limit_in_system_text``, ``limit_wording``
  (``limit_instruction_as_system`` and ``other_limit_wording`` live in choices.py).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from conformance.selftest.registry import variant
from reference_kernel.agent import CommonAgent
from reference_kernel.kernel import MAX_TURNS, Kernel
from reference_kernel.records import UsageEvent

# =========================================================================== final-turn-counts


@variant()
class MaxTurnsIncludesFinal(Kernel):
    """Open point: does the limit-reached final turn count against max_turns?

    Seed 003: "max_turns int // MUST be supported" and "The kernel MUST run exactly one more turn
    with tool specs withheld". Reference: N turns execute tools, then one final turn (N+1 model
    calls). Variant: the final turn counts, so the bound fires at step 17 of turn N-1 and the
    session makes N model calls in all (N-1 tool turns + 1 final). With max_turns = 1 the bound
    still can only fire at step 17 of turn 1 (1 tool turn + final)."""

    def _check_bounds(self, run: Any) -> str | None:
        b = run.bounds
        if b.max_turns is not None and run.turns_used >= max(1, b.max_turns - 1):
            return MAX_TURNS
        return super()._check_bounds(run)


# =========================================================================== cost-precision


class _CostVariant:
    """Costs each usage event with ``_cost`` instead of float arithmetic; the rest as the
    reference (persisted at receipt, charged to the session tree)."""

    def _cost(self, i: int, o: int, c: int) -> float:
        raise NotImplementedError

    def _exact(self, i: int, o: int, c: int) -> Decimal:
        p = self.pricing  # type: ignore[attr-defined]
        return (
            Decimal(i) * Decimal(repr(p.input_usd_per_mtok))
            + Decimal(c) * Decimal(repr(p.cached_input_usd_per_mtok))
            + Decimal(o) * Decimal(repr(p.output_usd_per_mtok))
        ) / Decimal(1_000_000)

    async def _on_usage(self, turn: Any, chunk: dict[str, Any], ledger_key: str | None) -> dict[str, Any]:
        i = int(chunk.get("input_tokens") or 0)
        o = int(chunk.get("output_tokens") or 0)
        c = int(chunk.get("cached_input_tokens") or 0)
        cost = self._cost(i, o, c)
        event = UsageEvent(
            session_id=turn.session_id, turn_id=turn.turn_id, model=self.profile.model,  # type: ignore[attr-defined]
            input_tokens=i, output_tokens=o, cached_input_tokens=c, cost_usd=cost,
        )
        self.usage.append(event)  # type: ignore[attr-defined]
        if ledger_key is not None:
            self.ledger.charge(ledger_key, cost)  # type: ignore[attr-defined]
        await self.journal.record_usage(turn, event)  # type: ignore[attr-defined]
        return {"input_tokens": i, "output_tokens": o, "cached_input_tokens": c, "cost_usd": cost}


class _DecimalCost(_CostVariant):
    def _cost(self, i: int, o: int, c: int) -> float:
        return float(self._exact(i, o, c))


class _MicroCost(_CostVariant):
    def _cost(self, i: int, o: int, c: int) -> float:
        return float(self._exact(i, o, c).quantize(Decimal("0.000001")))


class AgentDecimalCost(_DecimalCost, CommonAgent):
    """CommonAgent side of cost_decimal."""


class AgentMicroCost(_MicroCost, CommonAgent):
    """CommonAgent side of cost_micro_rounded."""


@variant(agent_cls=AgentDecimalCost)
class CostDecimal(_DecimalCost, Kernel):
    """Open point: arithmetic precision of cost_usd (reading cost-precision).

    Seed 003: "compute and persist cost_usd per usage event" (formula in the missing
    model/protocol.md). Reference: float arithmetic. Variant: exact Decimal arithmetic from the
    prices' decimal text, converted to float at the end."""


@variant(agent_cls=AgentMicroCost)
class CostMicroRounded(_MicroCost, Kernel):
    """Open point: stored precision of cost_usd (reading cost-precision).

    Seed 003: "compute and persist cost_usd per usage event" — no precision. Reference: full
    float. Variant: cost computed exactly and persisted rounded (half-even) to micro-dollars, the
    ledger charged with the persisted amount."""


# =========================================================================== limit-instruction-form


class _LimitAs(Kernel):
    def _place(self, messages: list[dict[str, Any]], text: str) -> None:
        raise NotImplementedError

    def _build_request(self, run: Any, out: Any, limit: str | None) -> dict[str, Any]:
        req = super()._build_request(run, out, limit)
        if limit is None:
            return req
        instruction = req["messages"].pop()  # the user message super() appended (a fresh list)
        self._place(req["messages"], instruction["text"])
        return req


@variant()
class LimitAsSystemMessage(_LimitAs):
    """Open point: how the limit-reached turn's synthetic instruction is carried.

    Seed 003: "a synthetic instruction telling the model the limit was reached and to produce a
    final answer". Reference: a trailing ``user`` message. Variant: a trailing ``system``
    message."""

    def _place(self, messages: list[dict[str, Any]], text: str) -> None:
        messages.append({"role": "system", "text": text})


@variant()
class LimitInSystemText(_LimitAs):
    """Open point: as LimitAsSystemMessage. Variant: the instruction is appended to the system
    prompt's text (a new system message first when the profile has none); no extra message."""

    def _place(self, messages: list[dict[str, Any]], text: str) -> None:
        if messages and messages[0].get("role") == "system":
            messages[0] = {"role": "system", "text": f"{messages[0].get('text', '')}\n\n{text}"}
        else:
            messages.insert(0, {"role": "system", "text": text})


@variant()
class LimitWording(Kernel):
    """Open point: the wording of the synthetic instruction.

    Seed 003: "a synthetic instruction telling the model the limit was reached and to produce a
    final answer from what it has" — no text. Reference: "The limit was reached (...). Do not call
    tools; give your final answer from what you have." Variant: "You have used up the budget for
    this task. Tools are no longer available: reply now with your best final answer, using only
    what you already know." """

    def _limit_instruction(self, limit: str) -> str:
        return (
            "You have used up the budget for this task. Tools are no longer available: reply now "
            "with your best final answer, using only what you already know."
        )
