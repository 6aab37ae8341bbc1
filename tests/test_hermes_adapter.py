"""The hermes-agent adapter (conformance/adapters/hermes.py), run over the stdio wire protocol.

Skipped unless the hermes virtualenv exists (``scripts/make_env_hermes.sh``; found through
``$AKC_PYTHON_HERMES``, the ``hermes`` entry of ``conformance.adapters.KERNELS``, or
``/work/venv-hermes``). The harness runs here; the adapter runs in that env, a fresh forked process
per scenario. The checks below were confirmed by reading hermes-agent 0.19.0's source (paths
relative to its site-packages). Also confirmed, not run here because its check waits out a
rendezvous timeout: TOOL-001 fails, registry tools run one at a time (only a fixed allowlist of
built-in read-only tools and opted-in MCP tools join a parallel segment:
agent/tool_dispatch_helpers.py:46-58, 188-193).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

import conformance
from conformance.adapters import get


def _hermes_python() -> str | None:
    entry = get("hermes")
    candidates = [os.environ.get("AKC_PYTHON_HERMES"), entry.python() if entry else None,
                  os.environ.get("AKC_HERMES_VENV", "/work/venv-hermes") + "/bin/python"]
    return next((c for c in candidates if c and Path(c).exists()), None)


PYTHON = _hermes_python()
pytestmark = pytest.mark.skipif(
    PYTHON is None, reason="no hermes-agent virtualenv (create it with scripts/make_env_hermes.sh)"
)

#: requirement → (verdict, where hermes-agent's source decides it)
CONFIRMED = {
    # on_session_start is fired from _restore_or_build_system_prompt only on the branch that builds
    # the prompt for a brand-new session (a continued session restores the stored prompt).
    "TURN-009": ("pass", "agent/conversation_loop.py:333-357 (restore returns early), 384-397 (fires on build)"),
    # post_tool_call fires for a blocked call too (status="blocked", error_type="plugin_block").
    "TOOL-008": ("pass", "agent/tool_executor.py:454-480"),
    # agent_loop_stopped is not a hermes hook (VALID_HOOKS), so nothing fires after an interrupt.
    "STOP-005": ("fail", "hermes_cli/plugins.py:135-215"),
    # transform_api_error_classification is not a hermes hook either.
    "TURN-014": ("fail", "hermes_cli/plugins.py:135-215; run_agent.py:2611-2640 (api_request_error only)"),
    # A block's message becomes the tool result as JSON {"error": message}, not `Blocked: <reason>`.
    "TOOL-007": ("fail", "agent/tool_executor.py:469 (json.dumps({'error': block_message}))"),
    # Run under its named profile, the session is stored with it (profile_name from
    # get_active_profile_name() under set_hermes_home_override) and every TurnInfo names it, so the
    # check gets as far as the stored turns hermes does not keep: blocked by JOURNAL-002, not a
    # profile mismatch.
    "SESS-001": ("blocked", "run_agent.py:608-623; hermes_state.py:762-835"),
    # Through GatewayRunner's busy handler (busy_input_mode: queue + the explicit busy_text_mode:
    # interrupt), each message to a busy session is queued in arrival order without stopping the
    # running turn and drained as a turn of its own: three messages, three turns.
    "TURN-001": ("pass", "gateway/run.py:5334-5355, 5676-5716, 4742-4756, 21697-21704"),
}


def _spec() -> str:
    return f"stdio:{shlex.quote(str(PYTHON))} -m conformance.adapters.hermes"


#: The matrix entry's timeout scale (a fresh hermes process per scenario): unscaled, a loaded
#: machine times the first scenario out before hermes has done anything, on main as here.
SCALE = ["--akc-timeout-scale", str(get("hermes").timeout_scale or 1)]


def test_smoke_runs_without_adapter_error() -> None:
    report = conformance.certify(_spec(), smoke=True, pytest_args=SCALE)
    verdicts = report.verdicts()
    assert verdicts, "the smoke set reported nothing"
    assert all(v == "pass" for v in verdicts.values()), report.failing()


def test_source_confirmed_verdicts() -> None:
    report = conformance.certify(_spec(), profile="commonagent", reqs=sorted(CONFIRMED), pytest_args=SCALE)
    verdicts = report.verdicts()
    observed = {req: verdicts.get(req) for req in CONFIRMED}
    assert observed == {req: v for req, (v, _) in CONFIRMED.items()}
