"""Steps for the BOUND features (003 "Loop termination and bounds", "Limit-reached behavior"):
the final tool-less request, its synthetic instruction, subtypes that only have to differ from a
value, and the whole limit-reached path as one check (shared with the properties).

The synthetic instruction may have any wording and sit in a user or system message or in the
system text; what makes it synthetic is that it is new: the previous request (the history up to
then) did not hold it, and it is not the model's own answer or a tool result.
"""

from __future__ import annotations

from typing import Any

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, expect_equal, show
from conformance.steps.common import ScenarioContext

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


def known_texts(request: dict[str, Any]) -> set[str]:
    """Every text a request already held (messages and a top-level system text)."""
    texts = {text_of(m) for m in request.get("messages") or []}
    system = request.get("system")
    if isinstance(system, str):
        texts.add(system)
    return texts


def synthetic_instructions(akc: ScenarioContext, k: int) -> list[str]:
    """User/system texts of model request k that were not in request k-1 and are not the model's
    answer or a tool result of turn k-1 (the history): candidates for the synthetic instruction."""
    final = akc.model_request(k)
    seen = known_texts(akc.model_request(k - 1)) if k > 1 else set()
    out = []
    for m in final.get("messages") or []:
        if isinstance(m, dict) and m.get("role") in ("user", "system"):
            text = text_of(m)
            if text.strip() and text not in seen:
                out.append(text)
    system = final.get("system")
    if isinstance(system, str) and system.strip() and system not in seen:
        out.append(system)
    return out


def final_answer_call_ids(akc: ScenarioContext, k: int) -> list[str]:
    """The tool_use ids the model streamed in its answer to request k (1-based)."""
    for e in akc.events("model_response"):
        if e["index"] == k - 1:
            return [str(c.get("id")) for c in e["chunks"] if c.get("type") == "tool_use"]
    return []


def limit_path_problem(akc: ScenarioContext, k: int) -> str | None:
    """None when, after model request k (the turn whose step 16/17 fired), the session took the
    limit-reached path: exactly one more request, without tool specs, with a synthetic
    instruction, no tool of its answer run. Otherwise what went wrong, as expected/observed."""
    requests = akc.model_requests()
    if len(requests) != k + 1:
        return f"model requests: expected {k + 1} (the bound fired after request {k}, then one final request) / observed {len(requests)}"
    final = requests[k]
    tools = [t.get("name") if isinstance(t, dict) else t for t in request_tools(final)]
    if tools:
        return f"tool specs in the final model request {k + 1}: expected none / observed {show(tools)}"
    if k >= 1 and not synthetic_instructions(akc, k + 1):
        return (
            f"the final model request {k + 1}: expected a synthetic instruction (a user or system text that "
            f"request {k} did not hold) / observed none"
        )
    ran = [cid for cid in final_answer_call_ids(akc, k + 1) if akc.tool_ran(cid)]
    if ran:
        return f"tool calls of the final answer: expected none run / observed {show(ran)} ran"
    return None


def last_turn_with_tools(akc: ScenarioContext) -> int:
    """The 1-based index of the last model request whose answer had a tool call that ran."""
    last = 0
    for k in range(1, len(akc.model_requests()) + 1):
        if any(akc.tool_ran(cid) for cid in final_answer_call_ids(akc, k)):
            last = k
    if last == 0:
        raise ConformanceFailure("tool calls", "some turn ran tools before the bound fired", "none ran")
    return last


def outcome_subtype(akc: ScenarioContext, k: int | None = None) -> str | None:
    """The subtype of user message k (1-based; None: the last)."""
    return akc.outcome(-1 if k is None else k - 1).subtype


# ========================================================================== Then


@then(parsers.re(r'the run ends with a subtype other than "(?P<value>[^"]*)"$'))
def bound_then_subtype_other(akc: ScenarioContext, value: str) -> None:
    """The last user message's outcome has some subtype, not this one (which subtype is another
    requirement's business)."""
    observed = outcome_subtype(akc)
    if observed == value or observed is None:
        raise ConformanceFailure("subtype of the run", f"a subtype other than {value!r}", show(observed))


@then(parsers.re(r'the run ends with a subtype that starts with "(?P<prefix>[^"]*)"$'))
def bound_then_subtype_starts(akc: ScenarioContext, prefix: str) -> None:
    """The last user message's outcome subtype starts with this prefix."""
    observed = outcome_subtype(akc)
    if observed is None or not observed.startswith(prefix):
        raise ConformanceFailure("subtype of the run", f"an {prefix}* subtype", show(observed))


@then(parsers.re(r'message (?P<k>\d+) ends with a subtype that does not start with "(?P<prefix>[^"]*)"$'))
def bound_then_subtype_prefix(akc: ScenarioContext, k: str, prefix: str) -> None:
    """User message k's (1-based) outcome subtype does not start with this prefix."""
    observed = outcome_subtype(akc, int(k))
    if observed is not None and observed.startswith(prefix):
        raise ConformanceFailure(f"subtype of user message {k}", f"not an {prefix}* subtype", show(observed))


@then("the run reports an outcome")
def bound_then_outcome(akc: ScenarioContext) -> None:
    """Every user message has an Outcome (the kernel ended with a status)."""
    expect_equal(
        "user messages with an outcome",
        list(range(len(akc.scenario.user_messages))),
        sorted(o.message for o in akc.result.outcomes),
    )


@then(parsers.re(r"model request (?P<k>\d+) offers no tool specs$"))
def bound_then_no_tools(akc: ScenarioContext, k: str) -> None:
    """Model request k's ``tools`` is empty or absent."""
    tools = request_tools(akc.model_request(int(k)))
    expect_equal(f"tool specs in model request {k}", [], [t.get("name") if isinstance(t, dict) else t for t in tools])


@then(parsers.re(r"model request (?P<k>\d+) carries a synthetic instruction that is not in the history$"))
def bound_then_synthetic(akc: ScenarioContext, k: str) -> None:
    """Request k has a user/system text (or system text) that the request before it did not hold."""
    n = int(k)
    if not synthetic_instructions(akc, n):
        raise ConformanceFailure(
            f"model request {k}",
            f"a user or system text telling the model the limit was reached, absent from request {n - 1}",
            f"only the history: {show(_shown(akc.model_request(n)))}",
        )


@then("a model request after the first carries a synthetic instruction that is not in the history")
def bound_then_some_synthetic(akc: ScenarioContext) -> None:
    """Some request k >= 2 has a user/system text that request k-1 did not hold (a plain loop
    only adds the model's answers and tool results, so that is the limit-reached instruction)."""
    n = len(akc.model_requests())
    if n < 2:
        raise ConformanceFailure("model requests", "at least 2 (the limit-reached request follows a turn)", n)
    if not any(synthetic_instructions(akc, k) for k in range(2, n + 1)):
        raise ConformanceFailure(
            f"model requests 2 to {n}",
            "one with a user or system text telling the model the limit was reached, absent from the request before",
            f"only the history; last request: {show(_shown(akc.model_request(n)))}",
        )


def _shown(request: dict[str, Any]) -> list[str]:
    return [f"{m.get('role')}: {text_of(m)[:60]}" for m in request.get("messages") or [] if isinstance(m, dict)]


@then("no tool call in the answer to the last model request ran")
def bound_then_last_answer_not_run(akc: ScenarioContext) -> None:
    """The tool_use blocks the model streamed in answer to the last request were not executed."""
    n = len(akc.model_requests())
    ran = [cid for cid in final_answer_call_ids(akc, n) if akc.tool_ran(cid)]
    if ran:
        raise ConformanceFailure(f"tool calls in the answer to the last model request ({n})", "none run", f"{show(ran)} ran")


@then(parsers.re(r'the last model request holds the result of call "(?P<call_id>[^"]+)"$'))
def bound_then_last_has_result(akc: ScenarioContext, call_id: str) -> None:
    """The last model request has a tool_result message for this call (the history continued)."""
    ids = [m.get("call_id") for m in akc.model_request(-1).get("messages") or [] if m.get("role") == "tool_result"]
    if call_id not in ids:
        raise ConformanceFailure("tool results in the last model request", f"one for {call_id}", show(ids))


@then(
    parsers.re(
        r"the session took the limit-reached path after (?:model request (?P<k>\d+)|its last turn that ran tools)$"
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
