"""Adapters for agent kernels we did not write, and the table ``akc matrix`` runs.

Each adapter module maps one framework's agent loop onto the adapter contract
(``docs/adapter.md``) and imports its framework lazily, so this package imports everywhere; the
framework itself is an optional extra (``pip install 'agent-kernel-conformance[pydantic-ai]'``),
normally installed into its own virtualenv by ``scripts/make_envs.sh``.

**Registering a kernel** (the one place to touch): add a :class:`KernelEntry` to :data:`KERNELS`.
``akc matrix`` runs the entries in table order, each in the Python interpreter
:meth:`KernelEntry.python` finds, and lists an entry whose interpreter or framework is missing as
"not installed" (never a pass).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


def envs_dir() -> Path:
    """Where ``scripts/make_envs.sh`` puts one virtualenv per kernel (``$AKC_ENVS_DIR``)."""
    return Path(os.environ.get("AKC_ENVS_DIR") or Path.home() / ".cache" / "akc" / "envs")


@dataclass(frozen=True)
class KernelEntry:
    """One column of the conformance matrix."""

    #: Column name, also the name of its env (``$AKC_ENVS_DIR/<name>``) and of its requirement
    #: file (``scripts/requirements/<name>.txt``) unless ``env`` says otherwise.
    name: str
    #: The adapter spec handed to ``akc run --adapter`` (``pkg.mod:factory`` or ``stdio:...``).
    adapter: str
    #: A module that must import in the kernel's interpreter (the framework); None: always there.
    probe: str | None = None
    #: ``"current"``: the interpreter running ``akc matrix``; a name: ``$AKC_ENVS_DIR/<env>``; an
    #: absolute path: that virtualenv (or that python). Overridden by ``$AKC_PYTHON_<NAME>``
    #: (name upper-cased, ``-`` → ``_``), the path of a python executable.
    env: str | None = None
    #: ``--profile`` for the run; None runs the profiles the adapter claims.
    profile: str | None = None
    #: One line for the matrix header.
    description: str = ""
    #: Cap on every scenario's timeout for this kernel (``akc run --timeout-cap``); None: the
    #: matrix's own setting (by default each scenario's timeout).
    timeout_cap_s: float | None = None
    #: Factor on every scenario's timeout (``akc run --timeout-scale``) for a kernel whose start
    #: alone is slow (a CLI process per session); None: 1.
    timeout_scale: float | None = None

    def python(self) -> str | None:
        """The interpreter to run this kernel's suite with, or None when it is not installed."""
        override = os.environ.get("AKC_PYTHON_" + self.name.upper().replace("-", "_"))
        if override:
            return override if Path(override).exists() else None
        env = self.env if self.env is not None else self.name
        if env == "current":
            return sys.executable
        base = Path(env) if os.path.isabs(env) else envs_dir() / env
        if base.is_file():
            return str(base)
        candidate = base / "bin" / "python"
        return str(candidate) if candidate.exists() else None


#: The matrix's columns, reference kernel first. Other helpers append their entries here.
KERNELS: list[KernelEntry] = [
    KernelEntry(
        name="reference",
        adapter="reference_kernel.adapter:factory",
        env="current",
        profile=None,  # both profiles: the book shows its verdict on every row (issue 26 §4)
        description="this project's reference kernel (003's RunTurn and the CommonAgent turn of 000/001)",
    ),
    KernelEntry(
        name="pydantic-ai",
        adapter="conformance.adapters.pydantic_ai:factory",
        probe="pydantic_ai",
        profile="kernel",
        description="pydantic-ai `Agent.run` with a `FunctionModel`",
    ),
    KernelEntry(
        name="openai-agents",
        adapter="conformance.adapters.openai_agents:factory",
        probe="agents",
        profile="kernel",
        description="openai-agents `Runner.run` with a custom `Model`",
    ),
    KernelEntry(
        name="smolagents",
        adapter="conformance.adapters.smolagents:factory",
        probe="smolagents",
        profile="kernel",
        description="smolagents `ToolCallingAgent` with a `Model` subclass",
    ),
    KernelEntry(
        name="langchain",
        adapter="conformance.adapters.langchain:factory",
        probe="langchain.agents",
        profile="kernel",
        description="langchain 1.5 `create_agent` (langgraph) with a `BaseChatModel` subclass and middleware",
    ),
    KernelEntry(
        name="strands-agents",
        adapter="conformance.adapters.strands:factory",
        probe="strands",
        profile="kernel",
        description="strands-agents 1.62 `Agent.invoke_async` with a `Model` subclass, hooks and middleware",
    ),
    KernelEntry(
        name="google-adk",
        adapter="conformance.adapters.google_adk:factory",
        probe="google.adk",
        profile="kernel",
        description="google-adk 2.13 `Runner.run_async` over an `LlmAgent` with a `BaseLlm` subclass and callbacks",
    ),
    KernelEntry(
        name="claude-agent-sdk",
        adapter="conformance.adapters.claude_agent_sdk:factory",
        probe="claude_agent_sdk",
        profile="kernel",
        description="Claude Code 2.1.332 (claude-agent-sdk 0.2.189 `ClaudeSDKClient`), its model over HTTP (Anthropic Messages)",
        timeout_scale=4,  # a CLI process per session: about 2 s to start
    ),
    KernelEntry(
        name="hermes",
        adapter="conformance.adapters.hermes:factory",
        probe="run_agent",
        profile="commonagent",
        description="hermes-agent 0.19.0 `AIAgent.run_conversation` under the scenario's named profile, a session's messages through its gateway's queue; a fresh process per scenario",
        # its fresh process imports hermes before the first event: a 5 s scenario ran out before
        # hermes did anything (the audit's TOOL-003); scaled by 6 it passed in 31.9 s
        timeout_scale=6,
    ),
]


def get(name: str) -> KernelEntry | None:
    return next((k for k in KERNELS if k.name == name), None)
