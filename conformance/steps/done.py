"""Steps for the DONE features: 003's done detection (implicit: no tool_use; explicit: a
terminates_turn tool, effective right after that call's post-tool-call)."""

from __future__ import annotations

from pytest_bdd import parsers, then

from conformance.errors import ConformanceFailure, show
from conformance.steps.common import ScenarioContext
from conformance.steps.loop import call_id_of


@then(parsers.re(r'the post-tool-call of call "(?P<cid>[^"]+)" was dispatched before the loop ended$'))
def then_ptc_before_end(akc: ScenarioContext, cid: str) -> None:
    """post-tool-call was dispatched for the (terminal) call, before the run's session-end.
    Whether the loop really ended there is DONE-002's and DONE-004's check."""
    ptc = [e for e in akc.hook_dispatches("post-tool-call") if str(call_id_of(e["payload"])) == cid]
    if not ptc:
        seen = [call_id_of(e["payload"]) for e in akc.hook_dispatches("post-tool-call")]
        raise ConformanceFailure(f"post-tool-call of call {cid}", "dispatched before the loop ends", f"post-tool-call dispatched for {show(seen)}")
    ends = akc.hook_dispatches("session-end")
    if ends and ptc[0]["seq"] > ends[-1]["seq"]:
        raise ConformanceFailure(f"post-tool-call of call {cid}", "before the loop ends (before session-end)", "after session-end")
    akc.evidence.saw(f"post-tool-call of the terminal call {cid} was dispatched before the loop ended")


@then(parsers.re(r"no model call follows the first answer without tool calls$"))
def then_no_request_after_answer(akc: ScenarioContext) -> None:
    """Implicit done: after the first model response with no tool_use block, the model is not
    asked again (in this session run)."""
    akc.require_kernel_ran()
    answers = [e["index"] for e in akc.events("model_response") if not any(c.get("type") == "tool_use" for c in e["chunks"])]
    akc.evidence.require("a model response without tool calls (the answer)", answers)
    later = [e["index"] + 1 for e in akc.events("model_request") if e["index"] > answers[0]]
    if later:
        raise ConformanceFailure(
            f"model requests after the answer of model call {answers[0] + 1}", "none (the answer ends the loop)", f"model calls {show(later)}"
        )
    akc.evidence.saw(f"no model request after the answer of model call {answers[0] + 1}")
