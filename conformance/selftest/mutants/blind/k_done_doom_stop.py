"""Kernel profile (003): done detection (DONE), doom-loop detection (DOOM), cancellation (STOP)."""
from __future__ import annotations

import hashlib
import json
from collections import Counter

from reference_kernel.cancel import CancellationToken
from reference_kernel.doom import DoomLoopDetector
from reference_kernel.kernel import CANCELLED, DOOM_LOOP, Kernel

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["DONE-004"], "a terminal tool that is not the last tool_use block of its message")
class KTerminalOnlyIfLast(Kernel):
    """Seed 003: a terminal tool is DoneCheck success "independent of whether other tool_use blocks were present
    in the same message". The mutant honours terminates_turn only when it is the last call of the message.
    Realistic: checking `calls[-1].terminates_turn`."""

    async def _post_tool_calls(self, run, calls):
        terminal = await super()._post_tool_calls(run, calls)
        if terminal and not (calls and calls[-1].entry is not None and calls[-1].entry.spec.terminates_turn):
            for c in calls[[i for i, x in enumerate(calls) if x.entry and x.entry.spec.terminates_turn][0] + 1:]:
                await self._dispatch("post-tool-call", {"call": c.call, "result": {"content": c.content, "is_error": c.is_error}}, run.turn, run.turn_span)
            return False
        return terminal


@mutant(["DONE-003"], "a terminal tool call")
class KTerminalBeforePostToolCall(Kernel):
    """Seed 003: "the kernel treats it as DoneCheck success immediately after that call's post-tool-call hook".
    The mutant ends the loop before dispatching post-tool-call for the terminal call. Realistic: checking
    the flag at the top of the loop body."""

    async def _post_tool_calls(self, run, calls):
        for c in calls:
            if c.entry is not None and c.entry.spec.terminates_turn:
                return True
            await self._dispatch("post-tool-call", {"call": c.call, "result": {"content": c.content, "is_error": c.is_error}}, run.turn, run.turn_span)
        return False


@mutant(["DONE-001"], "a final model response with no tool_use blocks and empty (or no) text")
class KEmptyTextNotDone(Kernel):
    """Seed 003: "a model response containing no tool_use blocks ends the turn loop successfully". The mutant
    requires non-empty text as well and loops again on an empty answer. Realistic: "retry on empty
    response"."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._msg_text: str | None = None

    async def _post_model_response(self, run, message):
        message = await super()._post_model_response(run, message)
        self._msg_text = message.get("text")
        return message

    def _done_check(self, tool_calls):
        return not tool_calls and bool(self._msg_text)


def _raw_hash(name, args):
    return hashlib.sha256((name + "\0" + json.dumps(args, ensure_ascii=False)).encode()).hexdigest()


@mutant(["DOOM-006"], "identical calls whose argument objects differ only in key order")
class KDoomKeyOrderSensitive(Kernel):
    """Seed 003: `hash_of(call) = hash(tool_name, canonicalize(input_json))`. The mutant hashes the arguments
    as serialised, without canonicalising (key order matters). Realistic: `json.dumps(args)` without
    sort_keys."""

    def _check_doom(self, run, calls):
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                run.doom._hashes.append(_raw_hash(c.name, c.call.get("args")))
        return DOOM_LOOP if run.doom.fired() else None


@mutant(["DOOM-008"], "the same interactive call repeated threshold times")
class KDoomCountsInteractive(Kernel):
    """Seed 003: "compare the most recent threshold resource/data-source calls' hashes". The mutant records
    every call, interactive ones included. Realistic: hashing every tool_use block."""

    def _check_doom(self, run, calls):
        for c in calls:
            if c.entry is not None:
                run.doom.record(c.name, c.raw if c.raw is not None else c.call.get("args"))
        return DOOM_LOOP if run.doom.fired() else None


@mutant(["DOOM-007"], "the same tool called repeatedly with different arguments")
class KDoomNameOnly(Kernel):
    """Seed 003: `hash_of(call) = hash(tool_name, canonicalize(input_json))` - identical means same name and
    same input. The mutant hashes the tool name only. Realistic: "same tool again and again" heuristic."""

    def _check_doom(self, run, calls):
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                run.doom.record(c.name, {})
        return DOOM_LOOP if run.doom.fired() else None


@mutant(["DOOM-004"], "doom_loop.threshold configured to a value other than 3")
class KDoomThresholdFixed(Kernel):
    """Seed 003: `threshold int // MUST default in [3,5]; MUST be configurable`. The mutant always uses 3.
    Realistic: a hard-coded constant the config never reaches."""

    def _check_doom(self, run, calls):
        if run.doom.threshold != 3:
            run.doom = DoomLoopDetector(3, max(3, run.doom.window_size))
        return super()._check_doom(run, calls)


@mutant(["DOOM-007"], "identical calls interleaved with other calls (A B A B A)")
class KDoomNonConsecutive(Kernel):
    """Seed 003: "on threshold consecutive identical hashes it MUST treat this as a bound-fired condition".
    The mutant counts identical hashes over the last 10 calls, consecutive or not. Realistic: a Counter over
    a sliding window."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._seen: dict[int, list] = {}

    def _check_doom(self, run, calls):
        seen = self._seen.setdefault(id(run), [])
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                seen.append(_raw_hash(c.name, json.loads(json.dumps(c.call.get("args"), sort_keys=True))))
        recent = seen[-10:]
        if recent and Counter(recent).most_common(1)[0][1] >= run.doom.threshold:
            return DOOM_LOOP
        return None


class DoomLoopError(RuntimeError):
    pass


@mutant(["DOOM-009"], "a doom loop (threshold identical calls)")
class KDoomRaisesError(Kernel):
    """Seed 003: on a doom loop "it MUST treat this as a bound-fired condition and route through the
    Limit-reached behavior path ..., not a raw exception". The mutant raises inside the loop, which ends
    the session with an error status (not raised out of the API). Realistic: `raise DoomLoopError`."""

    def _check_doom(self, run, calls):
        if super()._check_doom(run, calls):
            raise DoomLoopError("doom loop detected")
        return None


@mutant(["DOOM-005"], "a doom loop (the turn holding the threshold-th identical call)")
class KDoomCheckedBeforeExecution(Kernel):
    """Seed 003: DoomLoopCheck is step 16, after the calls ran (steps 9-14). The mutant checks at step 8,
    before execution, and does not run the threshold-th identical call. Realistic: "don't even run the
    repeated call"."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._fired: set[int] = set()

    def _split_by_kind(self, calls):
        ds, res, inter = Kernel._split_by_kind(calls)
        run = self._cur
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                run.doom.record(c.name, c.raw if c.raw is not None else c.call.get("args"))
        if run.doom.fired():
            self._fired.add(id(run))
            for c in ds + res + inter:
                c.fail("Not run: doom loop detected")
            return [], [], []
        return ds, res, inter

    async def _dispatch_pre_tool_calls(self, run, tool_calls):
        self._cur = run
        await super()._dispatch_pre_tool_calls(run, tool_calls)

    def _check_doom(self, run, calls):
        if id(run) in self._fired:
            self._fired.discard(id(run))
            return DOOM_LOOP
        return None


@mutant(["STOP-006"], "cancelling the parent while a delegated child session runs")
class KChildTokenDetached(Kernel):
    """Seed 000 (held for both profiles): "Child agents get a child token, so stopping the parent stops its
    children too." The mutant gives a child session a fresh token. Realistic: `CancellationToken()` in the
    spawn code."""

    async def _delegate(self, c, run, span):
        refused = self._child_allowed(run.turn.depth)
        if refused:
            return refused, True
        delegate = c.entry.spec.delegate
        goal = self._goal(c.args)
        session_id = await self.new_session(goal, run.turn.tags, source="subagent", parent_session_id=run.turn.session_id, title=goal)
        child_turn = run.turn.child(session_id, self.ids())
        bounds = self.profile.bounds.model_copy(update={k: v for k, v in (("max_turns", delegate.max_turns), ("max_cost_usd", delegate.max_cost_usd)) if v is not None})
        result = await self._run(child_turn, goal, CancellationToken(), bounds, run.ledger_key, span)
        if result.status in ("error", CANCELLED):
            return f"Sub-agent {result.subtype}: {result.error or ''}".rstrip(": "), True
        return result.reply or "", False


class _Uncancelled:
    def __init__(self, run):
        self._run = run
        self.token = CancellationToken()

    def __getattr__(self, name):
        return getattr(self._run, name)


@mutant(["STOP-001"], "cancel during the first of two interactive calls of one message")
class KInteractiveIgnoresCancel(Kernel):
    """Seed 000: "Cancelling it stops the turn between steps" - no tool starts after the cancel. The mutant's
    sequential interactive loop neither checks the token between calls nor runs them in the token's
    scope. Realistic: a plain for-loop over blocking user prompts."""

    async def _execute_interactive(self, run, calls):
        for c in await self._policy_precheck(run, calls):
            await self._execute(c, _Uncancelled(run), run.turn_span)
        run.token.check()
