"""The harness's doubles: the scripted model, instrumented tools, recording hooks, policy
precheck, approver and clock that a kernel is wired to for one scenario.

Everything they see goes into ONE ordered observation log (a list of dicts, each with a global
``seq``), so a check can ask "what happened, in what order" without trusting the kernel. The
event kinds and their fields:

* ``model_request`` (index, request, turn, and ``dialect`` for a call over HTTP; ``request["messages"]`` is a read-only
  :class:`LoggedMessages`, list-like) / ``model_response`` (index, chunks) /
  ``model_error`` (index, status, message, error_kind) / ``script_exhausted`` (index)
* ``tool_start`` (call_id, name, args, turn) / ``tool_end`` (call_id, name, args, turn, result
  or error, cancelled)
* ``hook`` (hook_id, point, payload, turn, outcome, occurrence)
* ``policy`` (call, decision) / ``approval`` (request, decision)
* ``cancel`` (where, message) / ``cancel_missing`` (where, message)
* ``rendezvous_timeout`` (call_id, group, missing) / ``finish_order_timeout`` (call_id,
  waited_for): the predecessor in the finish order started but did not finish in time /
  ``finish_order_unmet`` (call_id, waited_for): it did not even start while this call waited (a
  kernel running the calls one at a time; the order cannot be forced: not a failure)
* ``unknown_tool`` / ``unknown_hook``
* ``hook_returned`` (hook_id, point, occurrence, turn, other_turn): a held hook dispatch
  (``Scenario.hold_hooks``) returned; ``other_turn`` says whether another turn showed up meanwhile
* ``hold_timeout`` (call_id, group): the first call of a ``hold_first`` group waited in vain
  for another to start (the calls ran one at a time: not a failure)
* ``submit`` (message): the harness submitted user message ``message`` to the kernel (through
  ``run_user_messages``); ``submission_timeout`` (call_id, message): a held call gave up waiting
* ``journal_write`` (op, record, turn): a write the kernel made to its journal, as its adapter
  reported it (``Doubles.journal_write``)
* ``http_rejected`` (status, path, message): the served model (``conformance.httpmodel.host``)
  refused a request it could not take as a model call (wrong key, unreadable body) /
  ``http_stray`` (method, path): a request that came after its scenario had ended /
  ``http_other`` (method, path): a request to the served model that was not a model call or token count

Model responses that must be cancelled (``block_until_cancelled``, or the call a
``CancelAt(at="model_call")`` names) stream their *text* chunks (``chunks`` of them), then — for a
cancel point — call the adapter's canceller, and then block until the kernel cancels the call;
a kernel that does not is failed by the scenario timeout.

Concurrency is proven without sleeps: a rendezvous group's calls each set their own event and
wait for all the others under ``anyio.fail_after``; a kernel that runs them one after the other
makes the wait time out, which is logged (the tool still returns) and turned into a failure.
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from itertools import compress
from operator import index, ne
from typing import Any, overload

import anyio

from conformance.boundary.adapter import JSON, ModelCallError, ToolFailed
from conformance.boundary.scenario import ModelError, ModelResponse, Scenario, ScriptedToolCall, ToolDef

#: Upper bound (seconds) for a rendezvous or finish-order wait; it never exceeds half the
#: scenario's timeout so that a failed rendezvous is reported as such, not as a hang.
RENDEZVOUS_TIMEOUT_S = 2.0
#: How long a call of a finish order waits for its predecessor to *start* before giving up on
#: the order (a kernel that runs calls one at a time would otherwise deadlock against it). A
#: concurrent kernel starts its calls within microseconds; a window missed on a loaded machine
#: only makes a check less sharp (the calls finish in the order asked), never wrong.
FINISH_ORDER_START_WINDOW_S = 0.25
#: How long a held hook dispatch (``Scenario.hold_hooks``) waits for another turn to show up. A
#: kernel that lets a waiting turn run does so within microseconds of releasing it; a correct
#: kernel makes the dispatch wait the whole window (the cost of the check).
HOOK_HOLD_WINDOW_S = 0.25

EXHAUSTED_TEXT = "(script exhausted)"
#: A model asked this many times past the end of its script answers a plain text each time; past
#: that, every call fails (status 500). A kernel that never stops asking (implicit done detection
#: off) then ends on a model error with the violation in the log, instead of spinning until the
#: scenario's timeout, which reads as "incomplete" for a kernel still making progress (issue 21).
EXHAUSTED_GRACE = 10


def exhausted_response(past_end: int) -> ModelResponse:
    """What the ``past_end``-th call (0-based) past the end of the script gets."""
    if past_end < EXHAUSTED_GRACE:
        return ModelResponse(text=EXHAUSTED_TEXT)
    return ModelResponse(error=ModelError(status=500, message=f"the model script is exhausted ({past_end + 1} calls past its end)"))


class HookRaised(RuntimeError):
    """What a hook scripted with ``Raise`` raises into the kernel."""


_IMMUTABLE = (str, int, float, bool, type(None))


def snapshot(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), ~5x faster than
    ``copy.deepcopy``; anything else falls back to ``copy.deepcopy``. The log must not change
    when the kernel later mutates what it handed over (its history list, for one)."""
    t = type(value)
    if t is dict:
        return {k: snapshot(v) for k, v in value.items()}
    if t is list or t is tuple:
        return [snapshot(v) for v in value]
    if t in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces: the form used for ``{args}`` in result templates."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def split_text(text: str, parts: int) -> list[str]:
    """``text`` cut into ``parts`` non-empty pieces (fewer if the text is shorter)."""
    parts = max(1, min(parts, len(text) or 1))
    size, extra = divmod(len(text), parts)
    out, pos = [], 0
    for i in range(parts):
        n = size + (1 if i < extra else 0)
        out.append(text[pos : pos + n])
        pos += n
    return [p for p in out if p] or [text]


class ObservationLog:
    """The ordered, append-only event log shared by all doubles of one scenario. With a ``tick``
    (the harness clock's per-event step), each event advances the clock and carries its time ``t``."""

    def __init__(self, tick: Callable[[], float] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._tick = tick
        #: When the kernel last did something the harness saw (tells a slow kernel from a hung one).
        self.last_activity: float | None = None

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            event = {"seq": len(self.events), "kind": kind, **fields}
            if self._tick is not None:
                event["t"] = self._tick()
            self.events.append(event)
            self.last_activity = time.monotonic()
        return event

    def of(self, *kinds: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] in kinds]


#: Messages compared at once (``_Positions.record``).
_BLOCK = 256


class _Positions:
    """The copies of the messages of every model request of one scenario, by position: a
    persistent array (a "fat node" per position), so that requests share what did not change.

    ``copies[j]`` is what position j held in the latest request that reached it and ``since[j]``
    that request's version; ``older[j]`` lists what it held before, as (since, copy), oldest first.
    Request v reads position j as the newest copy whose ``since`` is at most v.

    Per request, the Python work and the memory are for the positions that differ from the
    copies (new messages, messages changed in place, a history rebuilt in another order), not for
    the history (but for one loop step per 256 messages). What stays O(history) is one comparison of every message handed over with its
    position's copy, by content, in C (``list ==``). It cannot be skipped: only content shows that
    a message handed over before was changed in place since (identity says nothing about it), and
    the log must show exactly what each request held. It costs (benchmarks/model_double.py) about
    75-100 ns a message of a tool-call history when the kernel hands over the same objects (25 ns
    a short user message, 40 a tool result, 90 an assistant message with a call), 150-250 ns when
    they are freshly parsed JSON (a stdio kernel), more once the copies fall out of the CPU cache
    (~650 ns at 4,000 messages): 90 of the ~110 µs a request costs at 1,000 messages. When some
    message differs, a second pass in C over its block of 256 finds which.

    Equality is Python's: a message whose content changed to an equal value of another type
    (``0`` for ``False``) or only in key order keeps its earlier copy."""

    __slots__ = ("copies", "since", "older", "version")

    def __init__(self) -> None:
        self.copies: list[Any] = []
        self.since: list[int] = []
        self.older: dict[int, list[tuple[int, Any]]] = {}
        self.version = -1

    def record(self, messages: list[Any], copy: Callable[[Any], Any]) -> LoggedMessages:
        """Record one request's messages as the next version; ``copy`` copies one message."""
        v = self.version = self.version + 1
        copies, since, n = self.copies, self.since, len(messages)
        m = min(len(copies), n)
        for lo in range(0, m, _BLOCK):  # by blocks, so that finding which message differs
            hi = min(lo + _BLOCK, m)  # rereads one block, not the whole history
            if copies[lo:hi] != messages[lo:hi]:
                for j in compress(range(lo, hi), map(ne, copies[lo:hi], messages[lo:hi])):
                    self.older.setdefault(j, []).append((since[j], copies[j]))
                    copies[j], since[j] = copy(messages[j]), v
        for message in messages[len(copies) :]:
            copies.append(copy(message))
            since.append(v)
        return LoggedMessages(self, v, n)

    def at(self, j: int, v: int) -> Any:
        """Position j as version v held it."""
        if self.since[j] <= v:
            return self.copies[j]
        return next(c for s, c in reversed(self.older[j]) if s <= v)

    def prefix(self, v: int, n: int) -> list[Any]:
        """The n first positions as version v held them, as a new list."""
        out = self.copies[:n]
        if v < self.version:  # later versions may have rewritten some positions
            for j in self.older:
                if j < n and self.since[j] > v:
                    out[j] = self.at(j, v)
        return out


class LoggedMessages(Sequence[Any]):
    """The messages of one logged model request: a read-only list-like view (``len``, indexing,
    slicing and ``copy()`` give plain lists, iteration, ``==`` with lists, ``repr``, pickling and
    ``copy.deepcopy`` as a list). Not a ``list``: ``json.dumps`` needs ``list(messages)``. It holds
    no list of its own, so a long scenario's log stays linear in its history, not quadratic."""

    __slots__ = ("_positions", "_version", "_len")

    def __init__(self, positions: _Positions, version: int, length: int) -> None:
        self._positions = positions
        self._version = version
        self._len = length

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return self.copy()[i]
        j = index(i)
        j = j + self._len if j < 0 else j
        if not 0 <= j < self._len:
            raise IndexError("list index out of range")
        return self._positions.at(j, self._version)

    def copy(self) -> list[Any]:
        """The messages as a new (shallow) list."""
        return self._positions.prefix(self._version, self._len)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.copy())

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self.copy())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LoggedMessages):
            other = other.copy()
        return self.copy() == other if isinstance(other, list) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.copy())

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (self.copy(),))


class _Expanded:
    """One model call's scripted response after ``repeat`` expansion."""

    def __init__(self, response: ModelResponse, repetition: int) -> None:
        self.response = response
        self.repetition = repetition

    def call_id(self, call: ScriptedToolCall, index: int, pos: int) -> str:
        if call.id is None:
            return f"c{index}_{pos}"
        return call.id if self.repetition == 0 else f"{call.id}_r{self.repetition}"


def _usage_chunk(u: Any) -> JSON:
    return {
        "type": "usage",
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cached_input_tokens": u.cached_input_tokens,
    }


class HarnessDoubles:
    """Implements :class:`conformance.boundary.adapter.Doubles` for one :class:`Scenario`."""

    def __init__(self, scenario: Scenario, *, rendezvous_timeout_s: float | None = None) -> None:
        self.scenario = scenario
        self._ticks = 0
        self.log = ObservationLog(self._tick if scenario.clock.advance_per_event else None)
        self.rendezvous_timeout_s = rendezvous_timeout_s or min(
            RENDEZVOUS_TIMEOUT_S, max(0.05, scenario.timeout_s / 2.5)
        )
        self._script: list[_Expanded] = [
            _Expanded(r, k) for r in scenario.model.responses for k in range(max(1, r.repeat))
        ]
        self._tools: dict[str, ToolDef] = {t.name: t for t in scenario.tools}
        self._hooks = {h.id: h for h in scenario.hooks}
        self._model_calls = 0
        #: This scenario's model served over HTTP (``conformance.httpmodel.host.HttpModel``:
        #: ``base_url(dialect)``, ``api_key``), set by the harness before the adapter runs.
        self.http_model: Any = None
        self._message_memo: dict[int, tuple[Any, Any]] = {}
        #: The copies of every model request's messages, by position (``_snapshot_request``).
        self._positions = _Positions()
        self._positions_lock = threading.Lock()  # as the log's: an adapter may call from threads
        self._approvals = 0
        self._hook_counts: dict[str, int] = {}
        self._point_counts: dict[str, int] = {}
        self._held_turn: Any = None  # the turn whose hook dispatch is held (hold_hooks)
        self._cancellers: dict[int, Callable[[], Awaitable[None] | None]] = {}
        self._cancelled = False
        # In-flight bookkeeping for the hang diagnostic.
        self._in_flight: dict[str, str] = {}
        # anyio events must be created inside the event loop: made lazily, by name.
        self._events: dict[str, anyio.Event] = {}
        self._started_calls: set[str] = set()
        self._submitted: int | None = None  # the user message submitted last
        self._ended_calls: set[str] = set()
        # The hook point whose occurrences a CancelAt(at="hook") counts: that point's first hook.
        self._cancel_hook_id: str | None = None
        cancel = scenario.cancel
        if cancel is not None and cancel.at == "hook":
            self._cancel_hook_id = next((h.id for h in scenario.hooks if h.point == cancel.point), None)

    # ----------------------------------------------------------------- bookkeeping

    def _activity(self, turn: Any = None) -> None:
        """The kernel did something (a hook, a model request, a tool start): the turn of the
        message submitted last is running; a held hook dispatch of another turn may return."""
        if self._submitted is not None:
            self._event(f"activity:{self._submitted}").set()
        if self._held_turn is not None and isinstance(turn, dict) and turn.get("turn_id") not in (None, self._held_turn):
            self._event("other_turn").set()

    async def _hold_hook(self, hook_id: str, point: str, occurrence: int, turn: Any) -> None:
        """Hold this dispatch until another turn shows up or HOOK_HOLD_WINDOW_S passes."""
        self._held_turn = turn.get("turn_id") if isinstance(turn, dict) else None
        self._events.pop("other_turn", None)
        self._in_flight[f"hook:{hook_id}"] = f"hook {hook_id} at {point} (held while another turn may start)"
        try:
            with anyio.move_on_after(HOOK_HOLD_WINDOW_S):
                await self._event("other_turn").wait()
        finally:
            self._in_flight.pop(f"hook:{hook_id}", None)
            other = self._event("other_turn").is_set()
            self._held_turn = None
            self.log.add("hook_returned", hook_id=hook_id, point=point, occurrence=occurrence, turn=snapshot(turn), other_turn=other)

    def _event(self, name: str) -> anyio.Event:
        ev = self._events.get(name)
        if ev is None:
            ev = self._events[name] = anyio.Event()
        return ev

    def in_flight(self) -> list[str]:
        """What had started and not finished (for a hang diagnostic)."""
        return list(self._in_flight.values())

    async def settle_model_calls(self, limit_s: float) -> list[str]:
        """The model calls still open once the kernel's run has returned, after waiting up to
        ``limit_s`` for them to close. Over HTTP the harness learns that a kernel dropped a call
        only when the connection closes, which may come after the run's result (a relaying
        client, a pooled connection): the log is read once they have closed, so a cancelled
        call's streamed text is in it. What stays open is the kernel's (it never dropped it)."""
        if any(k.startswith("model:") for k in self._in_flight):
            with anyio.move_on_after(limit_s):
                while any(k.startswith("model:") for k in self._in_flight):
                    await self._event("model_stream_closed").wait()
                    self._events.pop("model_stream_closed", None)
        return [v for k, v in self._in_flight.items() if k.startswith("model:")]

    @property
    def last_activity(self) -> float | None:
        return self.log.last_activity

    def touch(self) -> None:
        """The kernel did something for the scenario the log does not record (it consumed a
        chunk of a model stream). Never a wire message as such: chatter is not progress."""
        self.log.last_activity = time.monotonic()

    @property
    def model_calls(self) -> int:
        return self._model_calls

    @property
    def scripted_calls(self) -> int:
        """Model calls the scenario's script covers (``repeat`` unrolled)."""
        return len(self._script)

    # ----------------------------------------------------------------- cancellation

    async def _cancel(self, where: dict[str, Any]) -> None:
        message = self.scenario.cancel.message if self.scenario.cancel else 0
        canceller = self._cancellers.get(message)
        if canceller is None:
            self.log.add("cancel_missing", where=where, message=message)
            return
        self._cancelled = True
        self.log.add("cancel", where=where, message=message)
        result = canceller()
        if inspect.isawaitable(result):
            await result

    def register_canceller(self, message: int, cancel: Callable[[], Awaitable[None] | None]) -> None:
        """The adapter says how to cancel user message ``message``'s running turn."""
        self._cancellers[message] = cancel

    # ----------------------------------------------------------------- model

    def model_stream(self, request: JSON, turn: JSON, *, dialect: str | None = None) -> AsyncIterator[JSON]:
        """The scripted model: one response per call, in script order. ``dialect``: the call came
        over HTTP in that dialect (``conformance.httpmodel``); the log says so, for the checks
        that judge what a dialect cannot carry."""
        index = self._model_calls
        self._model_calls += 1
        extra = {"dialect": dialect} if dialect is not None else {}
        self.log.add("model_request", index=index, request=self._snapshot_request(request), turn=snapshot(turn), **extra)
        self._activity(turn)
        return self._stream(index)

    def _snapshot_request(self, request: JSON) -> JSON:
        """A snapshot of a model request whose messages are a :class:`LoggedMessages`: a read-only
        view of the copies kept in ``self._positions``, which every request of this scenario
        shares, so a message handed over again unchanged costs no copy and no memory (see
        :class:`_Positions` for what remains per request). Log entries are read-only."""
        messages = request.get("messages") if isinstance(request, dict) else None
        if not isinstance(messages, list):
            return snapshot(request)
        out = {k: snapshot(v) for k, v in request.items() if k != "messages"}
        with self._positions_lock:
            out["messages"] = self._positions.record(messages, self._copy_message)
        return out

    def _copy_message(self, message: Any) -> Any:
        """A copy of one message: the earlier copy if this very object was handed over before
        with the same content (a history rebuilt in another order), else a new one."""
        seen = self._message_memo.get(id(message))
        if seen is not None and seen[0] is message and seen[1] == message:
            return seen[1]
        copy_ = snapshot(message)
        self._message_memo[id(message)] = (message, copy_)  # holding it keeps the id unique
        return copy_

    def _chunks(self, expanded: _Expanded, index: int) -> tuple[list[JSON], list[JSON]]:
        """(opening chunks, the rest) of one response: the opening is the text, preceded by the
        first usage event when the response has several (``usage_events``: a provider reporting
        input usage as the stream opens, output usage at its end); the rest is the tool_use
        chunks and the other usage events."""
        r = expanded.response
        text_chunks = [{"type": "text", "text": t} for t in split_text(r.text, r.chunks)] if r.text else []
        rest: list[JSON] = []
        for pos, call in enumerate(r.tool_calls):
            raw = call.raw_args if call.raw_args is not None else json.dumps(call.args or {})
            rest.append(
                {"type": "tool_use", "id": expanded.call_id(call, index, pos), "name": call.name, "input_json": raw}
            )
        usages = [_usage_chunk(u) for u in (r.usage_events or [r.usage])]
        if r.usage_events:
            return usages[:1] + text_chunks, rest + usages[1:]
        return text_chunks, rest + usages

    async def _stream(self, index: int) -> AsyncIterator[JSON]:
        key = f"model:{index}"
        self._in_flight[key] = f"model call #{index}"
        sent: list[JSON] = []
        complete = False
        try:
            cancel = self.scenario.cancel
            cancel_here = cancel is not None and cancel.at == "model_call" and cancel.index == index
            if index < len(self._script):
                expanded = self._script[index]
            else:
                self.log.add("script_exhausted", index=index)
                expanded = _Expanded(exhausted_response(index - len(self._script)), 0)
            r = expanded.response
            text_chunks, rest = self._chunks(expanded, index)
            if cancel_here or r.block_until_cancelled:
                # Stream the text part, then never finish: the kernel must cancel the call.
                for chunk in text_chunks:
                    sent.append(chunk)
                    yield chunk
                self._in_flight[key] = f"model call #{index} (blocked until cancelled)"
                if cancel_here:
                    await self._cancel({"at": "model_call", "index": index})
                await anyio.sleep_forever()
            if r.error is not None:
                for chunk in (text_chunks + rest)[: r.error.after_chunks]:
                    sent.append(chunk)
                    yield chunk
                status = r.error.status if r.error.kind == "http" else None
                self.log.add("model_error", index=index, status=status, message=r.error.message, error_kind=r.error.kind)
                raise ModelCallError(status, r.error.message, r.error.kind)
            for chunk in text_chunks + rest:
                sent.append(chunk)
                yield chunk
                self.touch()  # the kernel consumed it and asked for the next
            complete = True
        finally:
            self._in_flight.pop(key, None)
            self.log.add("model_response", index=index, chunks=snapshot(sent), complete=complete)
            self._event("model_stream_closed").set()

    # ----------------------------------------------------------------- tools

    def _result_text(self, tool: ToolDef | None, call: JSON) -> str:
        call_id = str(call.get("id"))
        script = self.scenario.calls.get(call_id)
        if script is not None and script.result is not None:
            return script.result
        template = tool.result if tool is not None else "{name} ok"
        return (
            template.replace("{name}", str(call.get("name")))
            .replace("{args}", canonical_json(call.get("args")))
            .replace("{call_id}", call_id)
        )

    async def invoke_tool(self, call: JSON, turn: JSON) -> JSON:
        """An instrumented tool: logs start and end, meets its rendezvous, keeps finish order."""
        call = snapshot(call)
        call_id = str(call.get("id"))
        name = call.get("name")
        args = call.get("args")
        tool = self._tools.get(str(name))
        self._started_calls.add(call_id)
        self._event(f"start:{call_id}").set()
        for group in self.scenario.hold_first:
            if call_id in group:
                self._event(f"any_start:{id(group)}").set()
        self.log.add("tool_start", call_id=call_id, name=name, args=args, turn=snapshot(turn))
        self._activity(turn)
        self._in_flight[f"tool:{call_id}"] = f"tool call {call_id} ({name})"
        end: dict[str, Any] = {"cancelled": True}
        try:
            cancel = self.scenario.cancel
            if cancel is not None and cancel.at == "tool" and not self._cancelled and (
                cancel.call_id == call_id or call_id in cancel.call_ids
            ):
                await self._cancel({"at": "tool", "call_id": call_id})
            if tool is None:
                self.log.add("unknown_tool", call_id=call_id, name=name)
            await self._rendezvous(call_id)
            await self._wait_predecessor(call_id)
            await self._wait_submission(call_id)
            await self._hold_first(call_id)
            script = self.scenario.calls.get(call_id)
            if script is not None and script.error is not None:
                end = {"error": script.error, "cancelled": False}
                raise ToolFailed(script.error)
            if tool is None:
                content, is_error = f"unknown tool {name!r}", True
            else:
                content, is_error = self._result_text(tool, call), False
            end = {"result": content, "is_error": is_error, "cancelled": False}
            return {"content": content, "is_error": is_error}
        finally:
            self._in_flight.pop(f"tool:{call_id}", None)
            self._ended_calls.add(call_id)
            self.log.add("tool_end", call_id=call_id, name=name, args=args, turn=snapshot(turn), **end)
            self._event(f"end:{call_id}").set()

    async def _rendezvous(self, call_id: str) -> None:
        for group in self.scenario.rendezvous:
            if call_id not in group:
                continue
            others = [c for c in group if c != call_id]
            self._in_flight[f"tool:{call_id}"] = f"tool call {call_id} (waiting at rendezvous for {others})"
            with anyio.move_on_after(self.rendezvous_timeout_s):
                for other in others:
                    await self._event(f"start:{other}").wait()
            missing = [c for c in others if c not in self._started_calls]
            if missing:
                self.log.add("rendezvous_timeout", call_id=call_id, group=list(group), missing=missing)

    async def _hold_first(self, call_id: str) -> None:
        for group in self.scenario.hold_first:
            if call_id not in group:
                continue
            others = [c for c in group if c != call_id]
            if any(c in self._started_calls for c in others):
                continue  # not the first of its group to start
            self._in_flight[f"tool:{call_id}"] = f"tool call {call_id} (held until one of {others} starts)"
            with anyio.move_on_after(self.rendezvous_timeout_s):
                await self._event(f"any_start:{id(group)}").wait()
            if not any(c in self._started_calls for c in others):
                self.log.add("hold_timeout", call_id=call_id, group=list(group))

    async def _wait_submission(self, call_id: str) -> None:
        script = self.scenario.calls.get(call_id)
        if script is None or script.hold_until_submitted is None:
            return
        n = script.hold_until_submitted
        self._in_flight[f"tool:{call_id}"] = f"tool call {call_id} (held until user message {n} is submitted)"
        with anyio.move_on_after(self.rendezvous_timeout_s):
            await self._event(f"submitted:{n}").wait()
        if not self._event(f"submitted:{n}").is_set():
            self.log.add("submission_timeout", call_id=call_id, message=n)

    async def _wait_predecessor(self, call_id: str) -> None:
        order = self.scenario.finish_order
        if call_id not in order:
            return
        pos = order.index(call_id)
        if pos == 0:
            return
        before = order[pos - 1]
        if before not in self._started_calls:
            # A kernel that runs the calls one at a time never starts the predecessor while this
            # call runs: after a short wait for it to start, this call finishes (logged), so the
            # scenario's order only forces what the kernel's scheduling makes possible.
            self._in_flight[f"tool:{call_id}"] = f"tool call {call_id} (waiting for {before} to start)"
            with anyio.move_on_after(min(FINISH_ORDER_START_WINDOW_S, self.rendezvous_timeout_s)):
                await self._event(f"start:{before}").wait()
            if before not in self._started_calls:
                self.log.add("finish_order_unmet", call_id=call_id, waited_for=before)
                return
        self._in_flight[f"tool:{call_id}"] = f"tool call {call_id} (waiting for {before} to finish)"
        with anyio.move_on_after(self.rendezvous_timeout_s):
            await self._event(f"end:{before}").wait()
        if before not in self._ended_calls:
            self.log.add("finish_order_timeout", call_id=call_id, waited_for=before)

    # ----------------------------------------------------------------- hooks

    @staticmethod
    def _payload_field(payload: Any, *names: str) -> Any:
        if not isinstance(payload, dict):
            return None
        for name in names:
            if name in payload:
                return payload[name]
        call = payload.get("call")
        if isinstance(call, dict):
            for name in names:
                if name in call:
                    return call[name]
        return None

    async def dispatch_hook(self, hook_id: str, point: str, payload: Any, turn: JSON) -> JSON:
        """Record the dispatch; return the first matching scripted outcome (default continue)."""
        occurrence = self._hook_counts.get(hook_id, 0)
        self._hook_counts[hook_id] = occurrence + 1
        hook = self._hooks.get(hook_id)
        outcome: JSON = {"kind": "continue"}
        if hook is None:
            self.log.add("unknown_hook", hook_id=hook_id, point=point)
        else:
            tool = self._payload_field(payload, "name", "tool")
            call_id = self._payload_field(payload, "call_id", "id")
            for scripted in hook.script:
                w = scripted.when
                if w.tool is not None and w.tool != tool:
                    continue
                if w.call_id is not None and w.call_id != call_id:
                    continue
                if w.occurrence is not None and w.occurrence != occurrence:
                    continue
                outcome = scripted.outcome.model_dump()
                break
        self.log.add(
            "hook",
            hook_id=hook_id,
            point=point,
            payload=snapshot(payload),
            turn=snapshot(turn),
            outcome=outcome,
            occurrence=occurrence,
        )
        self._activity(turn)
        point_occurrence = self._point_counts.get(point, 0)
        self._point_counts[point] = point_occurrence + 1
        if any(h.point == point and h.occurrence == point_occurrence for h in self.scenario.hold_hooks):
            await self._hold_hook(hook_id, point, point_occurrence, turn)
        cancel = self.scenario.cancel
        if (
            cancel is not None
            and cancel.at == "hook"
            and hook_id == self._cancel_hook_id
            and occurrence == cancel.occurrence
        ):
            await self._cancel({"at": "hook", "point": point, "occurrence": occurrence})
            return {"kind": "continue"}
        if outcome["kind"] == "raise":
            raise HookRaised(outcome.get("message", "hook failed"))
        return outcome

    # ----------------------------------------------------------------- policy, approver, clock

    async def policy_precheck(self, call: JSON, turn: JSON) -> JSON:
        """Deny when the call id or the tool name is in ``scenario.policy_deny``."""
        deny = self.scenario.policy_deny
        reason = deny.get(str(call.get("id")), deny.get(str(call.get("name"))))
        decision = {"allow": reason is None, "reason": reason}
        self.log.add("policy", call=snapshot(call), decision=decision, turn=snapshot(turn))
        return dict(decision)

    async def ask_approver(self, request: JSON, turn: JSON) -> JSON:
        """Answers in scenario order, then ``denied``."""
        i = self._approvals
        self._approvals += 1
        answers = self.scenario.approver
        decision = answers[i] if i < len(answers) else "denied"
        self.log.add("approval", request=snapshot(request), decision=decision, turn=snapshot(turn))
        return {"decision": decision}

    # ----------------------------------------------------------------- journal, submissions

    async def submit_user_message(self, index: int) -> None:
        """Record the submission of user message ``index``. A ``concurrent`` message is first held
        (under the rendezvous timeout) until a turn is observably running: the kernel did
        something after the previous submission, or a model or tool call it started is still in
        flight (a call held until this very submission) — so the message really arrives during a
        turn."""
        messages = self.scenario.user_messages
        if 0 < index < len(messages) and messages[index].concurrent and not self._in_flight:
            with anyio.move_on_after(self.rendezvous_timeout_s):
                await self._event(f"activity:{index - 1}").wait()
        self._submitted = index
        self.log.add("submit", message=index)
        self._event(f"submitted:{index}").set()

    def journal_write(self, op: str, record: JSON, turn: JSON | None) -> None:
        """The adapter reports one write the kernel made to its journal (see Doubles)."""
        self.log.add("journal_write", op=str(op), record=snapshot(record), turn=snapshot(turn))

    def now(self) -> float:
        """start + advance_per_model_call × model calls so far + advance_per_event × events so far."""
        c = self.scenario.clock
        return c.start + c.advance_per_model_call * self._model_calls + c.advance_per_event * self._ticks

    def _tick(self) -> float:
        """One observed event: the clock steps, and the event is stamped with the new time."""
        self._ticks += 1
        return self.now()
