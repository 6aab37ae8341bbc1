"""What the hermes-agent adapter declares, shared by its front (``hermes``) and its worker
(``hermes_worker``) without either importing the other."""

from __future__ import annotations

from typing import Any

HERMES_VERSION = "0.19.0"
ADAPTER_INFO: dict[str, Any] = {
    "name": "hermes-agent",
    "version": HERMES_VERSION,
    "language": "python",
    "homepage": "https://pypi.org/project/hermes-agent/",
    "profiles": ["commonagent"],
    "capabilities": [],
    "doom_loop_subtype": None,
}


def _m(kind: str, via: str | None = None, note: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "via": via, "note": note}


#: How each 000 hook point, capability and observation maps onto hermes-agent 0.19 (anything not
#: named is absent); carried in ADAPTER_INFO["mechanisms"].
MECHANISMS: dict[str, dict[str, Any]] = {
    "on_session_start": _m("observe-only", "PluginManager hook on_session_start"),
    "pre_llm_call": _m("native", "PluginManager hook pre_llm_call ({'context': text})"),
    "pre_api_request": _m("observe-only", "PluginManager hook pre_api_request"),
    "post_api_request": _m("observe-only", "PluginManager hook post_api_request"),
    "api_request_error": _m("observe-only", "PluginManager hook api_request_error"),
    "transform_api_error_classification": _m("absent", note="not in hermes_cli.plugins.VALID_HOOKS"),
    "transform_llm_output": _m("native", "PluginManager hook transform_llm_output"),
    "post_llm_call": _m("observe-only", "PluginManager hook post_llm_call"),
    "pre_tool_call": _m("native", "PluginManager hook pre_tool_call (block / approve) + tool_request middleware (modify)"),
    "post_tool_call": _m("observe-only", "PluginManager hook post_tool_call"),
    "transform_tool_result": _m("native", "PluginManager hook transform_tool_result"),
    "agent_loop_stopped": _m("absent", note="not in hermes_cli.plugins.VALID_HOOKS"),
    "on_session_end": _m("observe-only", "PluginManager hook on_session_end"),
    "approver": _m("native", "tools.approval.request_tool_approval (gateway approval: register_gateway_notify / resolve_gateway_approval)"),
    "tool_risk": _m("absent", note="hermes's pre_tool_call arguments carry no risk"),
    "max_iterations": _m("native", "AIAgent(max_iterations=) / IterationBudget"),
    "usage": _m("absent", note="usage per session and model (session_model_usage), priced from hermes's own tables"),
    "spans": _m("absent"),
    "journal": _m("native", "hermes_state.SessionDB (state.db)"),
    "turn_info": _m("emulated", note="hermes has no TurnInfo: the adapter builds profile_id, tags, depth and parent_turn_id"),
    "tags": _m("absent", note="no tag concept"),
    "cancellation": _m("native", "AIAgent.interrupt()"),
    "subagents": _m("not-wired", "delegate_task (tools/delegate_tool.py)", "the adapter does not map child agents onto it"),
}
ADAPTER_INFO["mechanisms"] = MECHANISMS

#: The 000 hook points hermes-agent has (hermes_cli/plugins.py VALID_HOOKS).
HERMES_POINTS: tuple[str, ...] = (
    "on_session_start",
    "pre_llm_call",
    "pre_api_request",
    "post_api_request",
    "api_request_error",
    "transform_llm_output",
    "post_llm_call",
    "pre_tool_call",
    "post_tool_call",
    "transform_tool_result",
    "on_session_end",
)
