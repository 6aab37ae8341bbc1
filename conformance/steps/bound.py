"""Steps for the BOUND features (003 "Loop termination and bounds", "Limit-reached behavior"):
the final tool-less request, its synthetic instruction, subtypes that only have to differ from a
value, and the whole limit-reached path as one check (shared with the properties).

Readings (``akc readings``):

* final-turn-counts: with max_turns = N the kernel runs tools in N turns, or in N-1 when the
  limit-reached turn is one of the N (never fewer than 1: the bound is checked at step 17 of a
  turn). Checks that count turns accept both; scenarios script more tool calls than either needs.
* limit-instruction-form: the synthetic instruction may have any wording and sit in a user or
  system message or in the system text. What makes it synthetic is that it is *new*: the final
  request holds words that no earlier request of the session held, more of them than the
  per-request churn of the earlier requests (a volatile prompt tier that changes on every request
  is not an instruction), outside the history (no stored message, tool result or answer); and it
  is never stored.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_bdd import given, parsers, then

from conformance.errors import Blocked, ConformanceFailure, expect_equal, show
from conformance.boundary.scenario import ModelResponse, ScriptedToolCall
from conformance.steps.common import ScenarioContext

#: A word of an instruction: three letters or more (digits, ids and timestamps are churn, not words).
_WORD = re.compile(r"[A-Za-z]{3,}")

# ========================================================================== shared helpers


def text_of(message: Any) -> str:
    """The readable text of a message: ``text``, a string ``content`` or its text blocks."""
    if not isinstance(message, dict):
        return ""
    for key in ("text", "content"):
        value = message.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return "".join(str(b.get("text", "")) for b in value if isinstance(b, dict))
    return ""


def request_tools(request: dict[str, Any]) -> list[Any]:
    """The tool specs a request offers (``tools`` empty or absent: none)."""
    return list(request.get("tools") or [])


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def instruction_texts(request: dict[str, Any]) -> list[str]:
    """The texts of a request where an instruction can sit: user and system messages and a
    top-level system text (not the model's answers, not tool results)."""
    out = [text_of(m) for m in request.get("messages") or [] if isinstance(m, dict) and m.get("role") in ("user", "system")]
    system = request.get("system")
    if isinstance(system, str):
        out.append(system)
    elif isinstance(system, list):
        out.append(text_of({"content": system}))
    return [t for t in out if t.strip()]


def history_words(request: dict[str, Any]) -> set[str]:
    """Words of the request's answers and tool results: the history the loop itself added."""
    out: set[str] = set()
    for m in request.get("messages") or []:
        if isinstance(m, dict) and m.get("role") not in ("user", "system"):
            out |= words(text_of(m))
            for c in m.get("tool_calls") or []:
                if isinstance(c, dict):
                    out |= words(str(c.get("name", ""))) | words(str(c.get("args", "")))
    return out


def stored_texts(akc: ScenarioContext) -> list[str]:
    """Every text the kernel stored in its journal (messages)."""
    return [text_of(r.message) for r in akc.result.journal.messages]


def session_requests(akc: ScenarioContext, k: int) -> list[dict[str, Any]]:
    """Model requests 1..k (1-based, global) made in the session of request k, in order."""
    events = akc.events("model_request")
    if not 1 <= k <= len(events):
        raise ConformanceFailure(f"model request {k}", f"at least {k} model requests", len(events))
    sid = (events[k - 1].get("turn") or {}).get("session_id")
    return [e["request"] for e in events[:k] if sid is None or (e.get("turn") or {}).get("session_id") == sid]


def novel_words(earlier: list[dict[str, Any]], request: dict[str, Any], stored: set[str]) -> set[str]:
    """Words in the instruction texts of ``request`` that no earlier request held anywhere, that
    the loop's own history does not explain and that the journal does not hold."""
    seen: set[str] = set()
    for r in earlier:
        for t in instruction_texts(r):
            seen |= words(t)
        seen |= history_words(r)
    new: set[str] = set()
    for t in instruction_texts(request):
        new |= words(t)
    return new - seen - history_words(request) - stored


def instruction_words(akc: ScenarioContext, k: int) -> set[str]:
    """The words model request k (1-based) holds that no earlier request of its session held,
    outside its history: the limit-reached instruction's, when k is the final request."""
    requests = session_requests(akc, k)
    return novel_words(requests[:-1], requests[-1], set())


def instruction_problem(akc: ScenarioContext, k: int) -> str | None:
    """None when model request k (1-based) carries the limit-reached instruction: words no earlier
    request of its session held, more of them than any earlier request's churn, outside the
    history and the journal, and no stored message holds the text carrying them."""
    requests = session_requests(akc, k)
    final = requests[-1]
    stored_all = stored_texts(akc)
    stored = set().union(*(words(t) for t in stored_all)) if stored_all else set()
    churn = 0
    for j in range(1, len(requests) - 1):  # request 1 is all new: no baseline
        churn = max(churn, len(novel_words(requests[:j], requests[j], stored)))
    new_all = novel_words(requests[:-1], final, set())
    new = new_all - stored
    carriers = [t for t in instruction_texts(final) if words(t) & new_all]
    kept = [t for t in carriers if any(t.strip() and t.strip() in s for s in stored_all)]
    if kept or (new_all and not new):
        return (
            f"the limit-reached instruction in model request {k}: expected never stored / observed stored "
            f"in the journal: {show([t[:80] for t in kept] or sorted(new_all)[:8])}"
        )
    if len(new) <= churn:
        return (
            f"model request {k}: expected a synthetic instruction (words no earlier request of the session held, "
            f"more than the {churn} new words an earlier request's churn brought) / observed "
            f"{show(sorted(new)) if new else 'none'} in {show([t[:60] for t in instruction_texts(final)])}"
        )
    akc.evidence.saw(f"model request {k} carries new words {show(sorted(new)[:6])} (earlier churn: {churn})")
    return None


def final_answer_call_ids(akc: ScenarioContext, k: int) -> list[str]:
    """The tool_use ids the model streamed in its answer to request k (1-based)."""
    for e in akc.events("model_response"):
        if e["index"] == k - 1:
            return [str(c.get("id")) for c in e["chunks"] if c.get("type") == "tool_use"]
    return []


def limit_path_problem(akc: ScenarioContext, k: int) -> str | None:
    """None when, after model request k (the turn whose step 16/17 fired), the session took the
    limit-reached path: exactly one more request, without tool specs, with a synthetic
    instruction, no tool of its answer run. Otherwise what went wrong, as expected/observed.
    Records its evidence (the final request's shape) when it holds."""
    requests = akc.model_requests()
    akc.evidence.require("model requests the kernel made", requests)
    if len(requests) != k + 1:
        return f"model requests: expected {k + 1} (the bound fired after request {k}, then one final request) / observed {len(requests)}"
    final = requests[k]
    tools = [t.get("name") if isinstance(t, dict) else t for t in request_tools(final)]
    if tools:
        return f"tool specs in the final model request {k + 1}: expected none / observed {show(tools)}"
    if k >= 1:
        problem = instruction_problem(akc, k + 1)
        if problem:
            return problem
    ran = [cid for cid in final_answer_call_ids(akc, k + 1) if akc.tool_ran(cid)]
    if ran:
        return f"tool calls of the final answer: expected none run / observed {show(ran)} ran"
    akc.evidence.saw(f"after model request {k}: one final request without tool specs, nothing of its answer run")
    return None


def tool_turns(akc: ScenarioContext) -> list[int]:
    """The 1-based indexes of the model requests whose answers had a tool call that ran."""
    return [k for k in range(1, len(akc.model_requests()) + 1) if any(akc.tool_ran(c) for c in final_answer_call_ids(akc, k))]


def last_turn_with_tools(akc: ScenarioContext) -> int:
    """The 1-based index of the last model request whose answer had a tool call that ran."""
    akc.require_kernel_ran()
    turns = tool_turns(akc)
    if not turns:
        raise ConformanceFailure("tool calls", "some turn ran tools before the bound fired", "none ran")
    return turns[-1]


def max_turns_tool_turns(akc: ScenarioContext, n: int) -> set[int]:
    """How many turns may run tools under max_turns = n (reading final-turn-counts)."""
    accepted = akc.accepts("final-turn-counts")
    out = set()
    if "not-counted" in accepted:
        out.add(n)
    if "counted" in accepted:
        out.add(max(1, n - 1))
    return out


#: The requirement whose subject is that this bound, set alone, fires (stops the loop in time).
FIRING_OWNER = {"max_turns": "BOUND-002", "max_cost_usd": "BOUND-004", "max_wall_clock_s": "BOUND-005"}
#: Other requirements whose subject is the turn this bound fires in: the cost bound's running sum
#: (COST-003: compared at step 17; COST-004: a sum equal to the limit fires it).
FIRING_SUBJECTS = {"max_cost_usd": {"COST-003", "COST-004"}}


def bound_stop_problem(akc: ScenarioContext, bound: str, k: int) -> str | None:
    """None when ``bound``, reached in model call k, stopped the loop after that call's tools ran.
    Otherwise what went wrong, or Blocked where it is another requirement's subject (one fault,
    one verdict), over every bound:

    * model call k's tools did not run while the earlier calls' did: "the turn in which a bound is
      reached still executes its tools" is BOUND-001's subject;
    * the loop went on past model call k (a later call's tools ran, or the run went on and ended
      with "success"): that ``bound`` fires at all is its own requirement's (FIRING_OWNER), and
      for max_cost_usd first the cost it reads, computed from the model's pricing (usage,
      COST-001's subject), when the kernel lacks it;
    * the loop stopped before model call k: the bound fired early, its own requirement's.

    Blocks name only requirements that are not among the check's own; BOUND-006 (each bound fires
    on its own) owns the firing of every bound, and FIRING_SUBJECTS the turn it fires in."""
    akc.require_kernel_ran()
    requests = akc.model_requests()
    calls = [final_answer_call_ids(akc, j) for j in range(1, len(requests) + 1)]
    own = set(akc.requirement_ids)
    firing_own = bool(own & ({"BOUND-006", FIRING_OWNER[bound]} | FIRING_SUBJECTS.get(bound, set())))
    problem = None
    raised = akc.result.raised
    went_on = any(akc.tool_ran(c) for later in calls[k:] for c in later) or (
        len(requests) > k and raised is None and bool(akc.result.outcomes) and akc.outcome().subtype == "success"
    )
    if len(requests) < k:
        problem = f"{bound} stopped the loop after model call {len(requests)}, before model call {k} where it is reached"
    elif went_on:
        problem = f"{bound} did not stop the loop after model call {k}: {len(requests)} model calls, tools ran: {show([e['call_id'] for e in akc.tool_starts()])}"
        if bound == "max_cost_usd":
            akc.block_on_lacking_mechanism("usage", problem)
    elif not all(akc.tool_ran(c) for earlier in calls[: k - 1] for c in earlier):
        return f"the tools of model calls 1..{k - 1} did not all run: tools ran {show([e['call_id'] for e in akc.tool_starts()])}"
    elif not all(akc.tool_ran(c) for c in calls[k - 1]):
        missing = [c for c in calls[k - 1] if not akc.tool_ran(c)]
        reason = f"model call {k}, in which {bound} is reached, asked for {show(missing)}: they did not run"
        if "BOUND-001" not in own:
            raise Blocked("BOUND-001", reason)
        return reason
    if problem is not None and not firing_own:
        raise Blocked(FIRING_OWNER[bound], problem)
    return problem


def outcome_subtype(akc: ScenarioContext, k: int | None = None) -> str | None:
    """The subtype of user message k (1-based; None: the last)."""
    return akc.outcome(-1 if k is None else k - 1).subtype


def _require_outcome_subtype(akc: ScenarioContext, k: int | None = None) -> str | None:
    """Evidence for a subtype check: the kernel ran (it called the model) and reported an outcome
    (a run that raised instead blocks the check: BOUND-008's subject)."""
    akc.require_kernel_ran()
    akc.require_no_raise_at_limit()
    return outcome_subtype(akc, k)


# ========================================================================== Given


@given(parsers.re(r'the model calls "(?P<tool>[^"]+)" with distinct arguments (?P<n>\d+) times$'))
def bound_given_distinct_calls(akc: ScenarioContext, tool: str, n: str) -> None:
    """n responses, each one call of this tool with its own arguments ({"q": i}, id c<i>): a model
    that always asks for tools, which no doom-loop detector takes for a loop."""
    for i in range(1, int(n) + 1):
        akc.add_response(ModelResponse(tool_calls=[ScriptedToolCall(id=f"c{i}", name=tool, args={"q": i})]))


# ========================================================================== Then


@then(parsers.re(r'the run ends with a subtype other than "(?P<value>[^"]*)"$'))
def bound_then_subtype_other(akc: ScenarioContext, value: str) -> None:
    """The last user message's outcome has some subtype, not this one (which subtype is another
    requirement's business)."""
    observed = _require_outcome_subtype(akc)
    if observed == value or observed is None:
        raise ConformanceFailure("subtype of the run", f"a subtype other than {value!r}", show(observed))
    akc.evidence.saw(f"the run ended with subtype {observed!r}")


@then(parsers.re(r'the run ends with a subtype that starts with "(?P<prefix>[^"]*)"$'))
def bound_then_subtype_starts(akc: ScenarioContext, prefix: str) -> None:
    """The last user message's outcome subtype starts with this prefix."""
    observed = _require_outcome_subtype(akc)
    if observed is None or not observed.startswith(prefix):
        raise ConformanceFailure("subtype of the run", f"an {prefix}* subtype", show(observed))
    akc.evidence.saw(f"the run ended with subtype {observed!r}")


@then(parsers.re(r'user message (?P<k>\d+) ends with a subtype that does not start with "(?P<prefix>[^"]*)"$'))
def bound_then_subtype_prefix(akc: ScenarioContext, k: str, prefix: str) -> None:
    """User message k's (1-based) outcome has a subtype that does not start with this prefix."""
    observed = _require_outcome_subtype(akc, int(k))
    if observed is None or observed.startswith(prefix):
        raise ConformanceFailure(f"subtype of user message {k}", f"a subtype, not an {prefix}* one", show(observed))
    akc.evidence.saw(f"user message {k} ended with subtype {observed!r}")


@then("the run reports an outcome")
def bound_then_outcome(akc: ScenarioContext) -> None:
    """Every user message has an Outcome, and it is the fired bound's (or detector's): the kernel
    ran (model calls, tool calls) and ended with a subtype other than success. Which subtype is
    BOUND-013..015's / DOOM-009's business. A run that raised is BOUND-008's / DOOM-010's subject."""
    akc.require_kernel_ran()
    akc.require_no_raise_at_limit()
    ran = akc.evidence.require("tool calls the kernel ran before the bound fired", akc.tool_starts())
    expect_equal(
        "user messages with an outcome",
        list(range(len(akc.scenario.user_messages))),
        sorted(o.message for o in akc.result.outcomes),
    )
    subtype = outcome_subtype(akc)
    if subtype in (None, "success"):
        raise ConformanceFailure("subtype of the run ended by a bound", "the bound's subtype, not success", show(subtype))
    akc.evidence.saw(f"outcome with subtype {subtype!r} after {len(ran)} tool calls")


@then(parsers.re(r"tools ran only in the model calls max_turns (?P<n>\d+) allows$"))
def bound_then_tool_turns(akc: ScenarioContext, n: str) -> None:
    """max_turns = n, a model that always asks for tools: the kernel ran tools in n turns (or n-1,
    reading final-turn-counts), each turn's tools, and then none."""
    accepted = max_turns_tool_turns(akc, int(n))
    akc.require_kernel_ran()
    turns = akc.evidence.require("turns whose tool calls ran", tool_turns(akc))
    if len(turns) not in accepted or turns != list(range(1, len(turns) + 1)):
        raise ConformanceFailure(
            f"turns that ran tools under max_turns = {n}",
            " or ".join(str(a) for a in sorted(accepted)) + " turns, the first ones",
            f"model requests {turns} (of {len(akc.model_requests())})",
        )
    akc.evidence.saw(f"tools ran in {len(turns)} turns under max_turns = {n}")


@then(parsers.re(r"(?P<bound>max_turns|max_cost_usd|max_wall_clock_s) stopped the loop after the tools of model call (?P<k>\d+)$"))
def bound_then_stopped_after(akc: ScenarioContext, bound: str, k: str) -> None:
    """The bound, reached in model call k, stopped the loop there, after that call's tools ran
    (003 step 17: the limiting turn still executes its tools). Blocked where the fault is
    another requirement's subject (bound_stop_problem)."""
    problem = bound_stop_problem(akc, bound, int(k))
    if problem is not None:
        raise ConformanceFailure(f"{bound} reached in model call {k}", "the loop stopped after that call's tools ran", problem)
    akc.evidence.saw(f"{bound} stopped the loop after the tools of model call {k}")


@then(parsers.re(r"the request of model call (?P<k>\d+) offers no tool specs$"))
def bound_then_no_tools(akc: ScenarioContext, k: str) -> None:
    """Model request k's ``tools`` is empty or absent."""
    tools = request_tools(akc.model_request(int(k)))
    expect_equal(f"tool specs in model request {k}", [], [t.get("name") if isinstance(t, dict) else t for t in tools])
    akc.evidence.saw(f"model request {k} offers no tool specs")


@then("the limit-reached request carries a synthetic instruction that is not in the history")
def bound_then_limit_synthetic(akc: ScenarioContext) -> None:
    """The final request (the one after the last turn that ran tools) carries the instruction:
    new words beyond the earlier requests' churn, outside the history, never stored."""
    k = last_turn_with_tools(akc) + 1
    if k > len(akc.model_requests()):
        raise ConformanceFailure("the limit-reached request", f"a model request after request {k - 1}", "none")
    problem = instruction_problem(akc, k)
    if problem:
        raise ConformanceFailure(problem, raw=True)


def _shown(request: dict[str, Any]) -> list[str]:
    return [f"{m.get('role')}: {text_of(m)[:60]}" for m in request.get("messages") or [] if isinstance(m, dict)]


@then("no tool call the last model call asked for ran")
def bound_then_last_answer_not_run(akc: ScenarioContext) -> None:
    """The tool_use blocks the model streamed in answer to the last request were not executed
    (evidence: the kernel ran the turns before, and the last answer did ask for a tool)."""
    n = len(akc.require_kernel_ran())
    asked = akc.evidence.require(f"tool calls in the answer to the last model request ({n})", final_answer_call_ids(akc, n))
    akc.evidence.require("tool calls the kernel ran before the final turn", akc.tool_starts())
    ran = [cid for cid in asked if akc.tool_ran(cid)]
    if ran:
        raise ConformanceFailure(f"tool calls in the answer to the last model request ({n})", "none run", f"{show(ran)} ran")


@then(parsers.re(r'the request of the last model call holds the result of call "(?P<call_id>[^"]+)"$'))
def bound_then_last_has_result(akc: ScenarioContext, call_id: str) -> None:
    """The last model request has a tool_result message for this call (the history continued)."""
    akc.require_kernel_ran()
    ids = [m.get("call_id") for m in akc.model_request(-1).get("messages") or [] if m.get("role") == "tool_result"]
    if call_id not in ids:
        raise ConformanceFailure("tool results in the last model request", f"one for {call_id}", show(ids))
    akc.evidence.saw(f"the last model request holds the result of {call_id}")


@then(
    parsers.re(
        r"the session took the limit-reached path after (?:model call (?P<k>\d+)|its last turn that ran tools)$"
    )
)
def bound_then_limit_path(akc: ScenarioContext, k: str | None) -> None:
    """Exactly one more request after request k (or after the last request whose answer's tools
    ran): no tool specs, a synthetic instruction, no tool of its answer run, then no further
    request."""
    n = int(k) if k else last_turn_with_tools(akc)
    problem = limit_path_problem(akc, n)
    if problem:
        raise ConformanceFailure(f"the limit-reached path: {problem}", raw=True)


@then(parsers.re(r"the limit-reached instruction of user message (?P<a>\d+) is in no request of user message (?P<b>\d+)$"))
def bound_then_instruction_not_later(akc: ScenarioContext, a: str, b: str) -> None:
    """The words the final request of message a's run brought (its instruction) appear in no
    model request of message b's run of the same session that offers tools (a limit-reached
    request of message b carries its own instruction): the instruction was never stored."""
    from conformance.steps.turn import turn_events

    first = akc.evidence.require(f"model requests of message {a}", turn_events(akc, int(a), "model_request"))
    later = akc.evidence.require(f"model requests of message {b}", turn_events(akc, int(b), "model_request"))
    k = _index(akc, first[-1])
    new = akc.evidence.require(f"new words in the final request of message {a} (its instruction)", instruction_words(akc, k))
    for e in later:
        if not request_tools(e["request"]):
            continue
        texts = [text_of(m) for m in e["request"].get("messages") or [] if isinstance(m, dict)]
        system = e["request"].get("system")
        texts += [system] if isinstance(system, str) else []
        back = new & set().union(*(words(t) for t in texts)) if texts else set()
        if back:
            raise ConformanceFailure(
                f"model request {e['index'] + 1} (message {b})",
                f"none of the words of message {a}'s limit-reached instruction",
                f"{show(sorted(back))} in {show([t[:60] for t in texts if words(t) & back])}",
            )


def _index(akc: ScenarioContext, event: dict[str, Any]) -> int:
    """The 1-based global index of a model_request event."""
    return int(event["index"]) + 1
