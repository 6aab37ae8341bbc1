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
