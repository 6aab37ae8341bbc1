"""The generic step vocabulary, and the ``akc`` fixture (a :class:`ScenarioContext`) every step
uses to build the scenario, run it and query what the doubles observed.

Numbering in step texts is 1-based ("model request 1" is the first request, "model turn 2" the
second turn); the log itself is 0-based. Area steps live in ``conformance/steps/<area>.py`` and
take the same ``akc`` fixture.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from conformance.boundary.adapter import AdapterInfo, Outcome, RunResult
from conformance.catalog.mechanisms import blocker_for_missing_point, dispatch_subject, owner_of
from conformance.errors import (
    AdapterError,
    Blocked,
    ConformanceFailure,
    HarnessError,
    Unsupported,
    expect_equal,
    expect_order,
    expect_subsequence,
    show,
)
from conformance.harness.evidence import EvidenceLog
from conformance.harness.runner import PortalRunner, ScenarioRun
from conformance.boundary.scenario import (
    HOOK_POINTS,
    ConcurrencySpec,
    HookDef,
    HookMatch,
    ModelResponse,
    Scenario,
    ScriptedOutcome,
    ScriptedToolCall,
    ToolDef,
    UserMessage,
)

#: The hook point that starts a model turn, per profile.
TURN_START = {"kernel": "context-assemble", "commonagent": "pre_api_request"}

#: Cancelling also stops a model call in flight (000 "Stopping a turn").
STOP_MODEL_CALL = "STOP-002"

_QUOTED = re.compile(r'"([^"]*)"')


def deep_merge(base: Any, extra: Any) -> Any:
    """``extra`` merged over ``base``: dicts merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(extra, dict):
        out = dict(base)
        for key, value in extra.items():
            out[key] = deep_merge(base.get(key), value) if key in base else value
        return out
    return extra


def split_ids(text: str) -> list[str]:
    """``"a, b c"`` → ``["a", "b", "c"]`` (commas and/or spaces)."""
    return [p for p in re.split(r"[,\s]+", text.strip()) if p]


def table_rows(datatable: list[list[str]]) -> list[dict[str, str]]:
    """A datatable with a header row as a list of dicts (cells stripped)."""
    if not datatable:
        return []
    header = [h.strip() for h in datatable[0]]
    return [{h: cell.strip() for h, cell in zip(header, row, strict=False)} for row in datatable[1:]]


def list_items(datatable: list[list[str]] | None = None, docstring: str | None = None) -> list[str]:
    """A one-column list from a datatable (no header) or a docstring (one item per line)."""
    if docstring is not None:
        return [line.strip() for line in docstring.splitlines() if line.strip()]
    return [row[0].strip() for row in datatable or [] if row and row[0].strip()]


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{what}: invalid JSON in the feature file ({exc}): {text!r}") from None


#: The requirement a call of a tool no scenario offered breaks, whatever scenario was running.
TOOL_NEVER_OFFERED = "TOOL-004"


def not_offered(run: Any, requirement_ids: list[str] | None = None) -> None:
    """A tool call the model never asked for, of a tool the scenario never offered, is the
    kernel's failure of TOOL-004 (each call runs the tool registered under the name the model
    called). Blame follows the fault: in a scenario of TOOL-004 it fails the check; in any other
    scenario it is charged to TOOL-004 (:func:`conformance.harness.plugin.charge`) and this
    scenario, whose situation the stray call spoilt, is blocked by it."""
    asked = {c.name for r in run.scenario.model.responses for c in r.tool_calls}
    offered = {t.name for t in run.scenario.tools}
    for e in run.log:
        if e["kind"] == "unknown_tool" and e.get("name") not in asked | offered:
            what = (
                f"the kernel invoked the tool {e.get('name')!r} (call {e.get('call_id')}), which the scenario never offered "
                f"and the model never asked for ({TOOL_NEVER_OFFERED}: each call runs the tool registered under the name the model called)"
            )
            if not requirement_ids or TOOL_NEVER_OFFERED in requirement_ids:
                raise ConformanceFailure(what, raw=True)
            from conformance.harness.plugin import charge

            charge(TOOL_NEVER_OFFERED, what)
            raise Blocked(by=TOOL_NEVER_OFFERED, reason=what)


#: CONC-006 (distinct provider-wide keys run concurrently) and the safe keys' rules beside it.
UNSAFE_KEYS_CONCURRENT = "CONC-006"
#: One tool_result per call in the history a turn hands on (LOOP-012).
LOOP_HISTORY = "LOOP-012"
SAFE_KEYS_CONCURRENT = {"CONC-001", "CONC-005"}


class ScenarioContext:
    """One scenario being built, run and inspected (the ``akc`` fixture)."""

    def __init__(
        self,
        adapter: Any,
        info: AdapterInfo,
        runner: PortalRunner,
        profile: str,
        name: str = "scenario",
        feature: str = "",
        requirement_ids: list[str] | None = None,
        evidence: EvidenceLog | None = None,
    ) -> None:
        self.adapter = adapter
        #: What the checks of this scenario saw (evidence before pass: every Then step records).
        self.evidence = evidence if evidence is not None else EvidenceLog()
        self.info = info
        self.runner = runner
        self.feature = feature
        self.requirement_ids = requirement_ids or []
        self.scenario = Scenario(name=name, profile=profile)  # type: ignore[arg-type]
        #: Register one recording hook (``rec:<point>``) at every hook point of the profile.
        self.record_hooks = True
        self._user_messages_set = False
        self.last: ScenarioRun | None = None
        #: Set by a step (a feature's Background) that runs the scenario its own way; the
        #: generic "When" steps then use it instead of :meth:`run`.
        self.run_with: Callable[[ScenarioContext], RunResult] | None = None

    # ----------------------------------------------------------------- building

    @property
    def profile(self) -> str:
        return self.scenario.profile

    def set_profile(self, profile: str) -> None:
        """Switch profile; a profile the adapter does not claim cannot be tested (incomplete)."""
        if profile not in self.info.profiles:
            raise Unsupported(f"the adapter does not claim the {profile} profile")
        self.scenario.profile = profile  # type: ignore[assignment]

    def update(self, **fields: Any) -> None:
        """Deep-merge ``fields`` into the scenario and re-validate it."""
        self.merge(fields)

    def merge(self, settings: dict[str, Any]) -> None:
        """Deep-merge a JSON object into the scenario (the escape hatch for anything)."""
        data = deep_merge(self.scenario.model_dump(), settings)
        try:
            self.scenario = Scenario.model_validate(data)
        except Exception as exc:
            raise HarnessError(f"scenario settings do not fit the Scenario model: {exc}") from None
        if "user_messages" in settings:
            self._user_messages_set = True

    def add_tool(self, tool: ToolDef) -> None:
        self.scenario.tools = [t for t in self.scenario.tools if t.name != tool.name] + [tool]

    def tool(self, name: str) -> ToolDef:
        for t in self.scenario.tools:
            if t.name == name:
                return t
        raise HarnessError(f"no tool {name!r} was declared in this scenario")

    def add_response(self, response: ModelResponse) -> None:
        self.scenario.model.responses.append(response)

    def add_user_message(self, text: str, **fields: Any) -> None:
        if not self._user_messages_set:
            self.scenario.user_messages = []
            self._user_messages_set = True
        self.scenario.user_messages.append(UserMessage(text=text, **fields))

    def hook(self, hook_id: str, point: str) -> HookDef:
        """The scripted hook ``hook_id`` (created at ``point`` if new)."""
        self._check_point(point)
        for h in self.scenario.hooks:
            if h.id == hook_id:
                return h
        h = HookDef(id=hook_id, point=point)
        self.scenario.hooks.append(h)
        return h

    def _check_point(self, point: str) -> None:
        points = HOOK_POINTS[self.profile]
        if point not in points:
            raise HarnessError(f"{point!r} is not a hook point of the {self.profile} profile ({', '.join(points)})")

    def final_scenario(self) -> Scenario:
        """The scenario as handed to the adapter (recording hooks first, then scripted ones)."""
        # Dumped and validated anew: a copy the adapter may change without touching the step's
        # scenario (no deep copy first: the dump is already one).
        data = self.scenario.model_dump()
        if self.record_hooks:
            recs = [HookDef(id=f"rec:{p}", point=p).model_dump() for p in HOOK_POINTS[self.scenario.profile]]
            data["hooks"] = recs + [h for h in data["hooks"] if not h["id"].startswith("rec:")]
        return Scenario.model_validate(data)

    # ----------------------------------------------------------------- running

    def run(self) -> RunResult:
        """Run the scenario: through :attr:`run_with` when a step set one, else :meth:`run_strict`.
        A scenario cancelled at a hook point the kernel never dispatched judges nothing it is not
        about: blocked by that point's dispatch requirement (:meth:`require_points_dispatched`)."""
        result = self.run_with(self) if self.run_with is not None else self.run_strict()
        cancel = self.scenario.cancel
        if cancel is not None and cancel.at == "hook" and cancel.point and not self.events("cancel"):
            self.require_points_dispatched([cancel.point])
        return result

    def run_strict(self) -> RunResult:
        """Run the scenario through the adapter; raise for a hang, an adapter error, a failed
        rendezvous or finish order."""
        self.last = self.runner.run(self.adapter, self.final_scenario())
        run = self.last
        if run.unsupported:
            raise Unsupported(run.unsupported)
        if run.error:
            raise AdapterError(run.error)
        if run.timed_out:
            self.block_on_uncancelled_model_call(run)
            raise ConformanceFailure(run.diagnostic or "the kernel hung", raw=True)
        if run.in_flight_at_end:
            self.block_on_uncancelled_model_call(run)
        not_offered(run, self.requirement_ids)
        for e in self.events("rendezvous_timeout"):
            others = " and ".join(e["missing"])
            self.block_on_kindless_rendezvous(f"calls {e['call_id']} and {others} did not run concurrently")
            if UNSAFE_KEYS_CONCURRENT in self.requirement_ids and not SAFE_KEYS_CONCURRENT & set(self.requirement_ids):
                # different providers' provider-wide keys kept apart: a kernel without concurrency
                # keys serialises unsafe calls with one global barrier, CONC-002's subject
                self.block_on_lacking_mechanism("concurrency_keys", f"calls {e['call_id']} and {others} did not run concurrently")
            raise ConformanceFailure(
                f"calls {e['call_id']} and {others} did not run concurrently "
                f"({e['call_id']} waited for {others} to start, in vain)",
                raw=True,
                subject=CONCURRENCY_SUBJECTS[self.profile],
            )
        for e in self.events("finish_order_timeout"):
            raise ConformanceFailure(
                f"call {e['call_id']} waited for {e['waited_for']} to finish first, in vain "
                f"({e['waited_for']} started but did not finish)",
                raw=True,
            )
        self.note_unmet_finish_order()
        assert run.result is not None
        return run.result

    def note_unmet_finish_order(self) -> None:
        """Say in the evidence when the scenario's finish order could not be forced: the kernel
        did not start a call's predecessor while that call ran (it runs them one at a time)."""
        for e in self.events("finish_order_unmet"):
            self.evidence.saw(
                f"call {e['waited_for']} had not started when {e['call_id']} finished: "
                "the calls ran one at a time, in the order the kernel chose"
            )

    @property
    def ran(self) -> ScenarioRun:
        if self.last is None:
            raise HarnessError("a Then step ran before the scenario was run (missing 'When the kernel runs')")
        return self.last

    @property
    def result(self) -> RunResult:
        """The adapter's RunResult of the last run."""
        result = self.ran.result
        if result is None:
            raise HarnessError("the scenario has no result")
        return result

    @property
    def log(self) -> list[dict[str, Any]]:
        """The doubles' ordered observation log of the last run."""
        return self.ran.log

    # ----------------------------------------------------------------- log queries

    def events(self, *kinds: str) -> list[dict[str, Any]]:
        """Log events of these kinds (all events if none given), in order."""
        log = self.ran.log
        return [e for e in log if e["kind"] in kinds] if kinds else list(log)

    def hook_dispatches(
        self, point: str | None = None, hook_id: str | None = None, recorded_only: bool = True
    ) -> list[dict[str, Any]]:
        """``hook`` events; by default only the recording hooks' (one per dispatch of a point)."""
        out = []
        for e in self.events("hook"):
            if hook_id is not None:
                if e["hook_id"] != hook_id:
                    continue
            elif recorded_only and self.record_hooks and not e["hook_id"].startswith("rec:"):
                continue
            if point is not None and e["point"] != point:
                continue
            out.append(e)
        return out

    def dispatched_points(self) -> list[str]:
        """The hook points dispatched, in order (one entry per dispatch)."""
        return [e["point"] for e in self.hook_dispatches()]

    def model_turns(self) -> list[list[dict[str, Any]]]:
        """Hook dispatches grouped by model turn: each group starts at the profile's turn-start
        point (context-assemble / pre_api_request) and runs to the next one."""
        start = TURN_START[self.profile]
        self.require_points_dispatched([start])  # no turn start, no turns to tell apart
        turns: list[list[dict[str, Any]]] = []
        for e in self.hook_dispatches():
            if e["point"] == start:
                turns.append([])
            if turns:
                turns[-1].append(e)
        return turns

    def model_turn_points(self, k: int) -> list[str]:
        """The points dispatched in model turn ``k`` (1-based)."""
        turns = self.model_turns()
        if not 1 <= k <= len(turns):
            raise ConformanceFailure(f"model turn {k}", f"at least {k} model turns", f"{len(turns)} turns")
        return [e["point"] for e in turns[k - 1]]

    def model_requests(self) -> list[dict[str, Any]]:
        """The requests the scripted model received, in order."""
        return [e["request"] for e in self.events("model_request")]

    def model_request(self, k: int) -> dict[str, Any]:
        """Model request ``k`` (1-based; -1 for the last)."""
        requests = self.model_requests()
        if k == -1 and requests:
            return requests[-1]
        if not 1 <= k <= len(requests):
            raise ConformanceFailure(f"model request {k}", f"at least {max(k, 1)} model requests", f"{len(requests)}")
        return requests[k - 1]

    def carries(self, k: int, what: str) -> bool:
        """Whether model request ``k`` came in a way that can carry ``what`` (a ``ModelApiLimit``):
        over HTTP what its dialect can (``CANNOT_CARRY``), in process what the framework's model
        API can (``AdapterInfo.model_api_cannot_carry``, everything when undeclared)."""
        from conformance.httpmodel.dialect import CANNOT_CARRY

        events = self.events("model_request")
        event = events[k - 1] if 1 <= k <= len(events) else (events[-1] if k == -1 and events else {})
        dialect = event.get("dialect")
        if dialect is None:
            return what not in self.info.model_api_cannot_carry
        return what not in CANNOT_CARRY.get(dialect, frozenset())

    @staticmethod
    def request_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
        return list(request.get("messages") or [])

    def tool_result_ids(self, k: int) -> list[str]:
        """The call ids of the tool_result messages in model request ``k`` (1-based), in order."""
        return [m.get("call_id") for m in self.request_messages(self.model_request(k)) if m.get("role") == "tool_result"]

    def latest_tool_result_ids(self, k: int) -> list[str]:
        """The call ids of the tool_result messages after the last assistant message of model
        request ``k`` (1-based): the results of the previous turn only."""
        messages = self.request_messages(self.model_request(k))
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        return [m.get("call_id") for m in messages[last + 1 :] if m.get("role") == "tool_result"]

    def tool_starts(self) -> list[dict[str, Any]]:
        return self.events("tool_start")

    def tool_ends(self) -> list[dict[str, Any]]:
        return self.events("tool_end")

    def tool_ran(self, call: str) -> bool:
        """Did a tool call with this call id (or tool name) start?"""
        return any(call in (e["call_id"], e["name"]) for e in self.tool_starts())

    def outcome(self, message: int = -1) -> Outcome:
        """The outcome of user message ``message`` (0-based; -1 the last)."""
        outcomes = self.result.outcomes
        if not outcomes:
            self.require_no_raise_at_limit()
            raise ConformanceFailure("the run's outcomes", "one outcome per user message", "none")
        if message == -1:
            return outcomes[-1]
        for o in outcomes:
            if o.message == message:
                return o
        raise ConformanceFailure(f"outcome of user message {message}", "an outcome", [o.message for o in outcomes])

    # ----------------------------------------------------------------- readings

    def accepts(self, reading_id: str) -> set[str]:
        """The alternatives of an open point (``akc readings``) this check must accept: the one
        the adapter declared in ``AdapterInfo.readings``, or all of them."""
        from conformance.catalog.readings import load_readings

        row = load_readings().get(reading_id)
        if row is None:
            raise HarnessError(f"a check names unknown reading {reading_id!r}")
        declared = self.info.readings.get(reading_id)
        return {declared} if declared else {a.id for a in row.alternatives}

    # ----------------------------------------------------------------- evidence

    def served_calls(self) -> list[dict[str, Any]]:
        """The tool_use blocks the scripted model actually streamed to the kernel, in order."""
        return [
            {"id": c.get("id"), "name": c.get("name")}
            for e in self.events("model_response")
            for c in e["chunks"]
            if c.get("type") == "tool_use"
        ]

    def require_no_raise_at_limit(self) -> None:
        """Precondition of a check on how a run with a bound (or a doom-loop scenario) ends: the
        run reported an outcome. A run that raised instead is BOUND-008's subject (a fired bound)
        or DOOM-010's (a fired detector), so the check is blocked by it, not failed (one fault, one
        verdict). A run without a bound or detector to fire is not judged here."""
        raised = self.result.raised
        if raised is None:
            return
        b = self.scenario.bounds
        if any(i.startswith("DOOM-") for i in self.requirement_ids):
            by = "DOOM-010"
        elif any(v is not None for v in (b.max_turns, b.max_cost_usd, b.max_wall_clock_s)):
            by = "BOUND-008"
        else:
            return
        raise Blocked(by, f"the run raised {raised.type}: {raised.message}"[:300])

    def require_run_ended_as_scripted(self) -> None:
        """Precondition of a check on how a run closes (session-end): the run ended where the
        scenario scripts its end, so the model was never asked past its script. A kernel that went
        on asking did not end the run that way, and that way is another requirement's subject —
        the doom-loop detector firing (DOOM-001), a terminal tool (DONE-002), an answer without
        tool calls (DONE-001) — so the check is blocked by it (one fault, one verdict), unless it
        is among the check's own. Scenarios with a cancel or a bound end otherwise: not judged here."""
        extra = self.events("script_exhausted")
        b = self.scenario.bounds
        if not extra or self.scenario.cancel is not None or any(v is not None for v in (b.max_turns, b.max_cost_usd, b.max_wall_clock_s)):
            return
        if self.scenario.doom_loop.threshold is not None:
            by, end = "DOOM-001", "the doom-loop detector firing"
        elif any(t.terminates_turn for t in self.scenario.tools):
            by, end = "DONE-002", "the terminal tool"
        else:
            by, end = "DONE-001", "the answer without tool calls"
        if by in self.requirement_ids:
            return
        raise Blocked(by, f"the run did not end at {end}: the model was asked {len(extra)} times past its script")

    def require_answer_ended_run(self) -> None:
        """Precondition of a check on a run's model calls (kernel profile): the run ended at the
        script's closing answer without tool calls. A kernel that went on asking the model past the
        script did not end there, which is DONE-001's subject (an answer without tool calls ends
        the loop; its own scenarios include a later turn's answer): the check is blocked by it, not
        failed again (smolagents failed LOOP-013 and LOOP-004 on the calls after "done"). A script
        closing otherwise (tool calls, an error, a terminal tool, a doom loop) is not judged here;
        nor, through :meth:`require_run_ended_as_scripted`, a bound or a cancel."""
        last = self.scenario.model.responses[-1:]
        if self.profile != "kernel" or not last or last[0].tool_calls or last[0].error is not None:
            return
        if any(t.terminates_turn for t in self.scenario.tools) or self.scenario.doom_loop.threshold is not None:
            return
        self.require_run_ended_as_scripted()

    def block_on_uncancelled_model_call(self, run: ScenarioRun) -> None:
        """Precondition of a check after a cancel: the kernel stopped the model call in flight.
        A run that hung after the cancel on a model call still streaming is STOP-002's subject
        (cancelling stops a model call in flight), so another requirement's check is blocked by
        it, not failed (one fault, one verdict): what it would judge never happened."""
        if STOP_MODEL_CALL in self.requirement_ids or not any(e.get("kind") == "cancel" for e in run.log):
            return
        flying = [f for f in run.in_flight_at_timeout if f.startswith("model call")]
        if flying:
            raise Blocked(STOP_MODEL_CALL, f"after the cancel the kernel went on waiting for {flying[0]} until the timeout")
        if run.in_flight_at_end:
            raise Blocked(STOP_MODEL_CALL, f"after the cancel the kernel's run returned with {run.in_flight_at_end[0]} still open")

    def block_on_kindless_rendezvous(self, what: str) -> None:
        """Precondition of a rendezvous beside an interactive call (kernel profile): the kernel
        tells interactive calls from the others (tool kinds, LOOP-008's subject). A kernel whose
        adapter declares ``tool_kinds`` lacking can run interactive calls one at a time (CONC-007)
        only by running every call one at a time, so a rendezvous that did not meet there is
        blocked by the owner of tool kinds, not failed (one fault, one verdict). Without a
        mechanism table nothing is declared lacking."""
        mechanisms = self.info.mechanisms or {}
        if self.profile != "kernel" or not mechanisms or not any(t.kind == "interactive" for t in self.scenario.tools):
            return
        declared = mechanisms.get("tool_kinds")
        if declared is not None and declared.kind == "native":
            return
        owner = owner_of("tool_kinds", [self.profile])
        if owner is not None:
            kind = "absent" if declared is None else declared.kind
            raise Blocked(owner, f"{what} beside an interactive call, and tool_kinds is {kind}")

    def require_points_dispatched(self, points: Iterable[str]) -> None:
        """Precondition of a check on hook points: each point it needs was dispatched at least once
        in the run. A point never dispatched, that the adapter does not claim (declared absent,
        not-wired, emulated, or no mechanism table), is the subject of the requirement that names
        its dispatch (mechanisms.toml [dispatch]): unless this check is about that point, it is
        blocked by that requirement, so a missing hook point is counted once. A point the adapter
        claims native but the run never dispatched is judged by the check itself (a kernel that
        skips post-apply in the limiting turn fails BOUND-001)."""
        seen = set(self.dispatched_points())
        for point in dict.fromkeys(points):
            if point in seen:
                continue
            owner = dispatch_subject(point)
            if owner is not None and owner in self.requirement_ids:
                # the check's own subject, beside other tags: they are blocked by it, not failed
                raise ConformanceFailure(f"dispatches of {point}", "at least one", "never", subject=owner)
            if self._claims(point):
                continue  # the adapter says the kernel has it: missing here is this check's to judge
            by = blocker_for_missing_point(point, self.requirement_ids)
            if by is not None:
                raise Blocked(by, f"{point} was never dispatched in this run (declared {self._declared(point)})")

    def block_on_lacking_mechanism(self, mechanism: str, what: str) -> None:
        """Precondition of a check whose failure needs a mechanism (not a hook point) that is
        another requirement's subject (mechanisms.toml [owners]): the adapter declares the kernel
        without it (any kind but native; a mechanism its table leaves out is absent), so ``what``
        went wrong for want of it. Unless the check is about it, it is blocked by that owner: the
        missing mechanism is counted once, there. Called where the check fails, never before: a
        kernel that meets the check another way (calls run one at a time) still passes it. Without
        a mechanism table the check judges it itself."""
        table = self.info.mechanisms or {}
        if not table:
            return
        m = table.get(mechanism)
        kind = "absent" if m is None else m.kind
        owner = owner_of(mechanism, [self.profile])
        if kind == "native" or owner is None or owner in self.requirement_ids:
            return
        raise Blocked(owner, f"{what}; the kernel has no {mechanism} (declared {kind}), {owner}'s subject")

    def _declared(self, point: str) -> str:
        m = (self.info.mechanisms or {}).get(point)
        return "not at all" if m is None else m.kind

    def _claims(self, point: str) -> bool:
        """Does the adapter declare that the kernel has this hook point (native or observe-only)?
        Without a mechanism table nothing is claimed (every missing point may block)."""
        m = (self.info.mechanisms or {}).get(point)
        return m is not None and m.kind in ("native", "observe-only")

    def require_approver_asked(self, call_id: str) -> None:
        """Precondition of a check on a stored approval (commonagent): the approver was asked about
        the call. Asking it is pre_tool_call's AskUser (TOOL-008's subject; pre_tool_call itself is
        TOOL-005's): a check about something else is blocked by them, not failed."""
        if self.profile != "commonagent" or any(e["request"].get("call_id") == call_id for e in self.events("approval")):
            return
        self.require_points_dispatched(["pre_tool_call"])
        if "TOOL-008" not in self.requirement_ids:
            raise Blocked("TOOL-008", f"the approver was never asked about call {call_id}")

    def require_kernel_ran(self) -> list[dict[str, Any]]:
        """Evidence that the kernel ran the scenario at all: it called the model (mandatory —
        every scenario scripts at least one model call)."""
        return self.evidence.require("model requests the kernel made", self.model_requests())

    def require_call_served(self, call: str) -> None:
        """Evidence for a check about call ``call`` (id or tool name): the model asked for it."""
        served = [c for c in self.served_calls() if call in (c["id"], c["name"])]
        self.evidence.require(f"the model asked for call {call}", served)


# ========================================================================== the fixture


def judges(*ids: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Step decorator (under ``@then``): this step judges these requirements' subject, whatever the
    scenario's tags. A failure it raises names them (``ConformanceFailure.subject``): in a scenario
    also tagged with others, those are blocked by it, not failed (one fault, one verdict)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def step(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except ConformanceFailure as exc:
                if not exc.subject:
                    exc.subject = list(ids)
                raise

        return step

    return decorate


#: The requirements whose subject is "these calls run at once", the profile's general one first:
#: a failed "must meet" rendezvous fails a scenario tagged with one of them and blocks any other
#: (a result-order scenario is blocked by concurrency, not failed by it).
CONCURRENCY_SUBJECTS = {
    "kernel": ("CONC-001", "CONC-005", "CONC-006", "CONC-009"),
    "commonagent": ("TOOL-001",),
}


@pytest.fixture
def akc(request: pytest.FixtureRequest) -> ScenarioContext:
    """The scenario under construction for this test (see ScenarioContext), built from the
    plugin's state for this session and the item's requirement ids."""
    from conformance.harness.plugin import META_KEY, PROFILES, STATE_KEY

    if STATE_KEY not in request.config.stash:
        # e.g. the suite module was imported by an earlier in-process run and is reused here
        pytest.skip("the conformance suite needs --kernel=pkg.mod:factory")
    state = request.config.stash[STATE_KEY]
    meta = request.node.stash.get(META_KEY, None)
    profiles = meta.profiles if meta else list(PROFILES)
    profile = next((p for p in state.profiles if p in profiles), state.profiles[0] if state.profiles else "kernel")
    return ScenarioContext(
        adapter=state.adapter,
        info=state.info,
        runner=state.portal(),
        profile=profile,
        name=meta.scenario if meta else request.node.name,
        feature=meta.feature if meta else "",
        requirement_ids=meta.requirement_ids if meta else [],
        evidence=state.evidence_log(request.node.nodeid),
    )


# ========================================================================== Given: profile


@given(parsers.re(r"the (?P<profile>kernel|commonagent) profile"))
def given_profile(akc: ScenarioContext, profile: str) -> None:
    """Use this profile's vocabulary (default: the feature's @kernel/@commonagent tag)."""
    akc.set_profile(profile)


# ========================================================================== Given: tools

_TOOL_MODS = re.compile(
    r'with concurrency safe on "(?P<keys>[^"]*)"|(?P<safe>with concurrency safe)|(?P<unsafe>declared unsafe)'
    r'|(?P<term>that terminates the turn)|with risk "(?P<risk>[^"]+)"|from provider "(?P<provider>[^"]+)"'
    r'|returning "(?P<result>[^"]*)"'
)


@given(parsers.re(r'a tool "(?P<name>[^"]+)"(?: of kind "(?P<kind>[^"]+)")?(?P<rest>.*)$'))
def given_tool(akc: ScenarioContext, name: str, kind: str | None, rest: str) -> None:
    """A tool; modifiers may follow: with concurrency safe [on "f1,f2"], declared unsafe, that
    terminates the turn, with risk "high", from provider "p", returning "text"."""
    fields: dict[str, Any] = {"name": name, "kind": kind or "data_source"}
    leftover = _TOOL_MODS.sub("", rest)
    if re.sub(r"\b(and|,)\b|,", "", leftover).strip():
        raise HarnessError(f"tool step: cannot understand {leftover.strip()!r}")
    for m in _TOOL_MODS.finditer(rest):
        if m.group("keys") is not None:
            fields["concurrency"] = ConcurrencySpec(safe=True, key_fields=split_ids(m.group("keys")))
        elif m.group("safe"):
            fields["concurrency"] = ConcurrencySpec(safe=True)
        elif m.group("unsafe"):
            fields["concurrency"] = ConcurrencySpec(safe=False)
        elif m.group("term"):
            fields["terminates_turn"] = True
        elif m.group("risk"):
            fields["risk"] = m.group("risk")
        elif m.group("provider"):
            fields["provider"] = m.group("provider")
        elif m.group("result") is not None:
            fields["result"] = m.group("result")
    akc.add_tool(ToolDef.model_validate(fields))


def _yes(text: str) -> bool:
    return text.strip().lower() in ("yes", "true", "y", "1")


@given("the tools:")
def given_tools(akc: ScenarioContext, datatable: list[list[str]]) -> None:
    """Tools from a table: name | kind | provider | concurrency (safe, safe:f1+f2, unsafe, empty) |
    terminates_turn (yes/no) | risk | result — only name is required."""
    for row in table_rows(datatable):
        fields: dict[str, Any] = {"name": row["name"]}
        for key in ("kind", "provider", "risk", "result", "description"):
            if row.get(key):
                fields[key] = row[key]
        conc = row.get("concurrency", "")
        if conc:
            if conc == "unsafe":
                fields["concurrency"] = {"safe": False}
            elif conc.startswith("safe"):
                keys = conc.partition(":")[2]
                fields["concurrency"] = {"safe": True, "key_fields": [k for k in re.split(r"[+,\s]+", keys) if k]}
            else:
                raise HarnessError(f"tools table: concurrency {conc!r} (use safe, safe:f1+f2 or unsafe)")
        if row.get("terminates_turn"):
            fields["terminates_turn"] = _yes(row["terminates_turn"])
        akc.add_tool(ToolDef.model_validate(fields))


@given(parsers.re(r'the call "(?P<call_id>[^"]+)" returns "(?P<text>[^"]*)"'))
def given_call_returns(akc: ScenarioContext, call_id: str, text: str) -> None:
    """The tool call with this id returns this text."""
    akc.merge({"calls": {call_id: {"result": text}}})


@given(parsers.re(r'the call "(?P<call_id>[^"]+)" fails with "(?P<text>[^"]*)"'))
def given_call_fails(akc: ScenarioContext, call_id: str, text: str) -> None:
    """The tool call with this id fails (the tool raises with this message)."""
    akc.merge({"calls": {call_id: {"error": text}}})


# ========================================================================== Given: model


@given(parsers.re(r'the model answers "(?P<text>[^"]*)"(?: in (?P<chunks>\d+) chunks)?$'))
def given_model_answers(akc: ScenarioContext, text: str, chunks: str | None) -> None:
    """The next model response is this text (optionally streamed in n chunks)."""
    akc.add_response(ModelResponse(text=text, chunks=int(chunks or 1)))


@given(
    parsers.re(
        r'the model calls "(?P<tool>[^"]+)" with (?P<args>\{.*\})(?: as "(?P<call_id>[^"]+)")?'
        r'(?: (?P<times>\d+) times)?$'
    )
)
def given_model_calls(akc: ScenarioContext, tool: str, args: str, call_id: str | None, times: str | None) -> None:
    """The next model response is one call of this tool (optional id; optional "n times": the
    response is repeated, ids get _r<k> suffixes)."""
    call = ScriptedToolCall(id=call_id, name=tool, args=_json(args, "model call arguments"))
    akc.add_response(ModelResponse(tool_calls=[call], repeat=int(times or 1)))


@given("the model calls in one response:")
def given_model_calls_table(akc: ScenarioContext, datatable: list[list[str]]) -> None:
    """One response with several calls, from a table: id | name | args (JSON; empty = {})."""
    calls = [
        ScriptedToolCall(id=row.get("id") or None, name=row["name"], args=_json(row.get("args") or "{}", "args"))
        for row in table_rows(datatable)
    ]
    akc.add_response(ModelResponse(tool_calls=calls))


@given("the model script:")
def given_model_script(akc: ScenarioContext, docstring: str) -> None:
    """Append these responses (a JSON list of ModelResponse objects) to the model script."""
    items = _json(docstring, "model script")
    if not isinstance(items, list):
        raise HarnessError("model script: expected a JSON list of responses")
    for item in items:
        akc.add_response(ModelResponse.model_validate(item))


@given(parsers.re(r"the model fails with status (?P<status>\d+)(?: after (?P<after>\d+) chunks)?$"))
def given_model_fails(akc: ScenarioContext, status: str, after: str | None) -> None:
    """The next model call fails with this HTTP status (optionally after n streamed chunks)."""
    akc.add_response(ModelResponse(text="partial", error={"status": int(status), "after_chunks": int(after or 0)}))


@given(parsers.re(r"every model response uses (?P<inp>\d+) input and (?P<out>\d+) output tokens$"))
def given_usage(akc: ScenarioContext, inp: str, out: str) -> None:
    """Set the usage of every response scripted so far (and the exhausted-script default stays 0)."""
    for r in akc.scenario.model.responses:
        r.usage.input_tokens = int(inp)
        r.usage.output_tokens = int(out)


# ========================================================================== Given: settings, bounds


@given("the scenario settings:")
def given_settings(akc: ScenarioContext, docstring: str) -> None:
    """Deep-merge this JSON object into the Scenario (the escape hatch for anything)."""
    settings = _json(docstring, "scenario settings")
    if not isinstance(settings, dict):
        raise HarnessError("scenario settings: expected a JSON object")
    akc.merge(settings)


@given(
    parsers.re(
        r"(?P<bound>max_turns|max_cost_usd|max_wall_clock_s|max_iterations|max_depth) is (?P<value>\d+(?:\.\d+)?)$"
    )
)
def given_bound(akc: ScenarioContext, bound: str, value: str) -> None:
    """Set one bound (max_turns, max_cost_usd, max_wall_clock_s, max_iterations, max_depth)."""
    number: float | int = float(value) if bound in ("max_cost_usd", "max_wall_clock_s") else int(float(value))
    akc.merge({"bounds": {bound: number}})


@given("the bounds are soft")
def given_soft_bounds(akc: ScenarioContext) -> None:
    """Ask for the soft mode of max_turns / max_cost_usd (capability soft_limits)."""
    akc.merge({"bounds": {"soft": True}})


@given(parsers.re(r"the doom-loop (?P<field>threshold|window_size) is (?P<value>\d+)$"))
def given_doom(akc: ScenarioContext, field: str, value: str) -> None:
    """Set the doom-loop detector's threshold or window size."""
    akc.merge({"doom_loop": {field: int(value)}})


@given(parsers.re(r"the scenario timeout is (?P<seconds>\d+(?:\.\d+)?) seconds?$"))
def given_timeout(akc: ScenarioContext, seconds: str) -> None:
    """How long the harness waits before failing the scenario as hung (default 5 s)."""
    akc.merge({"timeout_s": float(seconds)})


@given(parsers.re(r"calls (?P<ids>.+) must meet$"))
def given_rendezvous(akc: ScenarioContext, ids: str) -> None:
    """These calls must all be running at once (e.g. calls "a" and "b" must meet)."""
    group = _QUOTED.findall(ids)
    if len(group) < 2:
        raise HarnessError(f"rendezvous step: name at least two quoted call ids, got {ids!r}")
    akc.scenario.rendezvous.append(group)


@given(parsers.re(r'calls finish in the order "(?P<ids>[^"]+)"$'))
def given_finish_order(akc: ScenarioContext, ids: str) -> None:
    """Each of these calls finishes only after its predecessor did (ids comma/space separated)."""
    akc.scenario.finish_order = split_ids(ids)


# ========================================================================== Given: hooks, policy


_HOOK_WHEN = re.compile(r'tool "(?P<tool>[^"]+)"|call "(?P<call_id>[^"]+)"|occurrence (?P<occ>\d+)')


@given(parsers.re(r'hook "(?P<hook_id>[^"]+)" at "(?P<point>[^"]+)" returns (?P<outcome>\{.*\})(?P<when>.*)$'))
def given_hook_outcome(akc: ScenarioContext, hook_id: str, point: str, outcome: str, when: str) -> None:
    """A scripted hook; optional conditions after the JSON: for tool "t", for call "c", on
    occurrence n (0-based). Several steps on one hook id add entries in order."""
    match: dict[str, Any] = {}
    for m in _HOOK_WHEN.finditer(when):
        if m.group("tool"):
            match["tool"] = m.group("tool")
        elif m.group("call_id"):
            match["call_id"] = m.group("call_id")
        elif m.group("occ"):
            match["occurrence"] = int(m.group("occ"))
    hook = akc.hook(hook_id, point)
    hook.script.append(
        ScriptedOutcome.model_validate({"when": HookMatch(**match).model_dump(), "outcome": _json(outcome, "hook outcome")})
    )


@given(parsers.re(r'hook "(?P<hook_id>[^"]+)" at "(?P<point>[^"]+)"(?P<when>.*) replaces the payload with:$'))
def given_hook_replacement(akc: ScenarioContext, hook_id: str, point: str, when: str, docstring: str) -> None:
    """A scripted ``replace`` outcome whose payload (JSON) is the doc string; the same optional
    conditions as 'hook ... returns <json>' (for tool "t", for call "c", on occurrence n)."""
    payload = _json(docstring, "replacement payload")
    given_hook_outcome(akc, hook_id, point, json.dumps({"kind": "replace", "payload": payload}), when)


@given(parsers.re(r'a hook "(?P<hook_id>[^"]+)" at "(?P<point>[^"]+)"$'))
def given_hook(akc: ScenarioContext, hook_id: str, point: str) -> None:
    """A hook that only records (continue)."""
    akc.hook(hook_id, point)


@given("no recording hooks")
def given_no_recording(akc: ScenarioContext) -> None:
    """Do not register the rec:<point> hooks (only the scenario's own hooks are registered)."""
    akc.record_hooks = False


@given(parsers.re(r'the policy denies "(?P<what>[^"]+)"(?: because "(?P<reason>[^"]*)")?$'))
def given_policy_denies(akc: ScenarioContext, what: str, reason: str | None) -> None:
    """The policy precheck denies this call id or tool name."""
    akc.merge({"policy_deny": {what: reason or "denied by policy"}})


@given(parsers.re(r'the approver answers "(?P<answers>[^"]+)"$'))
def given_approver(akc: ScenarioContext, answers: str) -> None:
    """The approver's answers in order (approved, denied, timed_out), then denied."""
    akc.merge({"approver": split_ids(answers)})


# ========================================================================== Given: messages, cancel


@given(parsers.re(r'the user message "(?P<text>[^"]*)"(?: in session "(?P<session>[^"]+)")?(?P<conc> sent concurrently)?$'))
def given_user_message(akc: ScenarioContext, text: str, session: str | None, conc: str | None) -> None:
    """Queue a user message (replaces the default "hello"); optional session label, concurrency."""
    akc.add_user_message(text, session=session or "s1", concurrent=bool(conc))


@given(parsers.re(r"the turn is cancelled at model call (?P<index>\d+)$"))
def given_cancel_model(akc: ScenarioContext, index: str) -> None:
    """Cancel the turn on the n-th model call (1-based); the call streams its text, then blocks."""
    akc.merge({"cancel": {"at": "model_call", "index": int(index) - 1}})


@given(parsers.re(r'the turn is cancelled at hook "(?P<point>[^"]+)"(?: occurrence (?P<occ>\d+))?$'))
def given_cancel_hook(akc: ScenarioContext, point: str, occ: str | None) -> None:
    """Cancel the turn when this point is dispatched (its occurrence-th time, 1-based; default 1st)."""
    akc.merge({"cancel": {"at": "hook", "point": point, "occurrence": int(occ or 1) - 1}})


@given(parsers.re(r'the turn is cancelled when call "(?P<call_id>[^"]+)" starts$'))
def given_cancel_tool(akc: ScenarioContext, call_id: str) -> None:
    """Cancel the turn when this tool call starts."""
    akc.merge({"cancel": {"at": "tool", "call_id": call_id}})


@given(parsers.re(r'the turn is cancelled when the first of the calls "(?P<ids>[^"]+)" starts$'))
def given_cancel_first_tool(akc: ScenarioContext, ids: str) -> None:
    """Cancel the turn when the first of these calls starts, whichever the kernel starts first."""
    akc.merge({"cancel": {"at": "tool", "call_ids": split_ids(ids)}})


# ========================================================================== When


@when("the kernel runs")
def when_kernel_runs(akc: ScenarioContext) -> None:
    """Run the scenario through the adapter (hard timeout; a hang fails the scenario)."""
    akc.run()


@when(parsers.re(r'the user sends "(?P<text>[^"]*)"$'))
def when_user_sends(akc: ScenarioContext, text: str) -> None:
    """Add this user message and run the scenario."""
    akc.add_user_message(text)
    akc.run()


# ========================================================================== Then: outcome


@then(parsers.re(r'the run ends with (?P<field>subtype|status) "(?P<value>[^"]*)"$'))
def then_run_ends(akc: ScenarioContext, field: str, value: str) -> None:
    """The last user message's outcome has this status subtype / status."""
    outcome = akc.outcome()
    expect_equal(f"{field} of the run", value, getattr(outcome, field))
    akc.evidence.saw(f"the run ended with {field} {value!r}")


@then(parsers.re(r'user message (?P<k>\d+) ends with (?P<field>subtype|status) "(?P<value>[^"]*)"$'))
def then_message_ends(akc: ScenarioContext, k: str, field: str, value: str) -> None:
    """User message k's (1-based) outcome has this status subtype / status."""
    outcome = akc.outcome(int(k) - 1)
    expect_equal(f"{field} of user message {k}", value, getattr(outcome, field))
    akc.evidence.saw(f"user message {k} ended with {field} {value!r}")


@then(parsers.re(r'the reply is "(?P<text>[^"]*)"$'))
def then_reply(akc: ScenarioContext, text: str) -> None:
    """The last user message's final answer text."""
    expect_equal("the reply", text, akc.outcome().reply)
    akc.evidence.saw(f"the reply {text!r}")


@then("the kernel did not raise")
def then_not_raised(akc: ScenarioContext) -> None:
    """The kernel ended with a status instead of raising out of its API."""
    raised = akc.result.raised
    if raised is not None:
        raise ConformanceFailure("the kernel's API", "a status, no exception", f"raised {raised.type}: {raised.message}")
    outcomes = akc.evidence.require("outcomes with a status (one per user message)", [o for o in akc.result.outcomes if o.status])
    expect_equal("outcomes with a status", len(akc.scenario.user_messages), len(outcomes))


@then(parsers.re(r'the kernel rejected the scenario(?: naming "(?P<field>[^"]+)")?$'))
def then_rejected(akc: ScenarioContext, field: str | None) -> None:
    """The kernel refused the configuration (optionally: the rejection names this field)."""
    rejected = akc.result.rejected
    if rejected is None:
        raise ConformanceFailure("the configuration", "rejected", "accepted")
    if field and field not in rejected.field:
        raise ConformanceFailure("the rejected field", field, rejected.field)
    akc.evidence.saw(f"the kernel rejected the scenario naming {rejected.field!r}")


# ========================================================================== Then: model


@then(parsers.re(r"the model was called (?P<n>\d+) times?$"))
def then_model_called(akc: ScenarioContext, n: str) -> None:
    """Exactly n model calls happened."""
    if int(n) == 0:
        seen = list(akc.result.outcomes) + ([akc.result.rejected] if akc.result.rejected else [])
        akc.evidence.require("an outcome or a rejection for the scenario", seen)
    if len(akc.model_requests()) > int(n):
        akc.require_answer_ended_run()  # calls past the closing answer: DONE-001's, unless tagged
    expect_equal("model calls", int(n), len(akc.model_requests()))
    akc.evidence.saw(f"{n} model calls")


@then("the model script was not exhausted")
def then_script_not_exhausted(akc: ScenarioContext) -> None:
    """The kernel did not call the model more often than the script allows."""
    akc.require_kernel_ran()
    extra = akc.events("script_exhausted")
    if extra:
        raise ConformanceFailure(
            "model calls", f"at most {len(akc.scenario.model.responses)} scripted responses", f"{len(akc.model_requests())} calls"
        )


@then("the request of the last model call offers no tool specs")
def then_last_request_no_tools(akc: ScenarioContext) -> None:
    """The last request's ``tools`` is empty or absent."""
    requests = akc.require_kernel_ran()
    tools = akc.model_request(-1).get("tools") or []
    expect_equal("tool specs in the last model request", [], [t.get("name") for t in tools])
    akc.evidence.saw(f"model request {len(requests)} (the last) has no tool specs")


@then(parsers.re(r"the request of model call (?P<k>\d+) has tool specs$"))
def then_request_has_tools(akc: ScenarioContext, k: str) -> None:
    """Model request k (1-based) offers at least one tool spec."""
    tools = akc.model_request(int(k)).get("tools") or []
    akc.evidence.require(f"tool specs in model request {k}", tools)


def block_on_no_tool_results(akc: ScenarioContext, k: int, observed: list[str]) -> None:
    """Precondition of an order check on tool results: model request k carries tool_result
    messages at all. A kernel that hands the results back another way (one text for the step)
    has no order to judge: one tool_result per call in the history is LOOP-012's subject, so the
    check is blocked by it (kernel profile), not failed (one fault, one verdict)."""
    if observed or akc.profile != "kernel" or LOOP_HISTORY in akc.requirement_ids:
        return
    if len(akc.events("model_request")) >= k and akc.tool_starts():
        raise Blocked(LOOP_HISTORY, f"model request {k} holds no tool_result message, though tools ran")


@then(parsers.re(r'the tool results sent in model call (?P<k>\d+) are in the order "(?P<ids>[^"]*)"$'))
def then_tool_results_order(akc: ScenarioContext, k: str, ids: str) -> None:
    """All tool_result messages of model request k (1-based, whole history) carry these call ids, in order."""
    observed = akc.tool_result_ids(int(k))
    block_on_no_tool_results(akc, int(k), observed)
    expect_order(f"tool results in model request {k}", split_ids(ids), observed)
    akc.evidence.require(f"tool results in model request {k}", observed)


@then(parsers.re(r'the latest tool results sent in model call (?P<k>\d+) are in the order "(?P<ids>[^"]*)"$'))
def then_latest_tool_results_order(akc: ScenarioContext, k: str, ids: str) -> None:
    """The tool_result messages after the last assistant message of model request k carry these ids, in order."""
    observed = akc.latest_tool_result_ids(int(k))
    block_on_no_tool_results(akc, int(k), observed)
    expect_order(f"latest tool results in model request {k}", split_ids(ids), observed)
    akc.evidence.require(f"latest tool results in model request {k}", observed)


# ========================================================================== Then: hooks


@then(parsers.re(r"the hook points of model call (?P<k>\d+) were dispatched in the order:$"))
def then_turn_points(akc: ScenarioContext, k: str, datatable: Any = None, docstring: Any = None) -> None:
    """Exactly these points, in this order, in model turn k (a one-column table or a docstring)."""
    akc.require_points_dispatched([TURN_START[akc.profile], *list_items(datatable, docstring)])
    observed = akc.model_turn_points(int(k))
    expect_order(f"hook points of model turn {k}", list_items(datatable, docstring), observed)
    akc.evidence.require(f"hook dispatches in model turn {k}", observed)


@then(parsers.re(r"the hook points of model call (?P<k>\d+) include, in order:$"))
def then_turn_points_include(akc: ScenarioContext, k: str, datatable: Any = None, docstring: Any = None) -> None:
    """These points appear in model turn k in this order (others may come between)."""
    akc.require_points_dispatched([TURN_START[akc.profile], *list_items(datatable, docstring)])
    observed = akc.model_turn_points(int(k))
    expect_subsequence(f"hook points of model turn {k}", list_items(datatable, docstring), observed)
    akc.evidence.require(f"hook dispatches in model turn {k}", observed)


@then("the hook points were dispatched in the order:")
def then_all_points(akc: ScenarioContext, datatable: Any = None, docstring: Any = None) -> None:
    """Exactly these points, in this order, over the whole run."""
    akc.require_points_dispatched(list_items(datatable, docstring))
    observed = akc.dispatched_points()
    expect_order("hook points of the run", list_items(datatable, docstring), observed)
    akc.evidence.require("hook dispatches in the run", observed)


@then(parsers.re(r'"(?P<point>[^"]+)" was dispatched (?P<n>\d+) times?$'))
def then_point_count(akc: ScenarioContext, point: str, n: str) -> None:
    """This hook point was dispatched exactly n times."""
    akc._check_point(point)
    if int(n) == 0:
        akc.require_kernel_ran()
    else:
        akc.require_points_dispatched([point])
    if point == "session-end":
        akc.require_run_ended_as_scripted()
    expect_equal(f"dispatches of {point}", int(n), len(akc.hook_dispatches(point)))
    akc.evidence.saw(f"{point} dispatched {n} times")


@then(parsers.re(r'"(?P<point>[^"]+)" was not dispatched$'))
def then_point_not_dispatched(akc: ScenarioContext, point: str) -> None:
    """This hook point was never dispatched."""
    then_point_count(akc, point, "0")


# ========================================================================== Then: tools


@then(parsers.re(r'tool "(?P<call>[^"]+)" ran$'))
def then_tool_ran(akc: ScenarioContext, call: str) -> None:
    """A tool call with this call id (or tool name) started."""
    if not akc.tool_ran(call):
        raise ConformanceFailure(f"tool {call}", "it ran", f"tool starts: {show([e['call_id'] for e in akc.tool_starts()])}")
    akc.evidence.saw(f"tool {call} ran")


@then(parsers.re(r'tool "(?P<call>[^"]+)" did not run$'))
def then_tool_not_ran(akc: ScenarioContext, call: str) -> None:
    """No tool call with this call id (or tool name) started."""
    akc.require_call_served(call)
    if akc.tool_ran(call):
        raise ConformanceFailure(f"tool {call}", "it did not run", "it ran")


@then(parsers.re(r"(?P<n>\d+) tool calls? ran$"))
def then_tool_count(akc: ScenarioContext, n: str) -> None:
    """Exactly n tool calls started."""
    if int(n) == 0:
        akc.evidence.require("tool calls the model asked for", akc.served_calls())
    expect_equal("tool calls that ran", int(n), len(akc.tool_starts()))
    akc.evidence.saw(f"{n} tool calls ran")
