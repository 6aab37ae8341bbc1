"""The layout holds: every module imports on its own, imports run one way between the layers,
and the public API is exactly what ``conformance/__init__.py`` exports (frozen, as httpx's
``test_exported_members`` freezes its own)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import conformance

ROOT = Path(conformance.__file__).resolve().parent.parent

#: The layers, lowest first. A module may import from its own layer or a lower one, never higher:
#: commands → self-test, book → checks → harness → reports, traces, catalog, wire → boundary → base.
LAYERS: list[tuple[str, ...]] = [
    # report.escape: a leaf (re only) that every sink of kernel text calls, the trace files too
    ("conformance", "conformance.errors", "conformance.paths", "conformance.files", "conformance.children", "conformance.report.escape"),
    ("conformance.boundary",),
    ("conformance.catalog", "conformance.trace", "conformance.harness.doubles"),
    ("conformance.report", "conformance.wire", "conformance.httpmodel", "reference_kernel", "conformance.adapters"),
    ("conformance.harness",),
    ("conformance.steps", "conformance.suite", "conformance.catalog.coverage", "conformance.catalog.dimensions",
     "conformance.journalkit"),
    ("conformance.selftest", "conformance.book"),
    ("conformance.cli", "conformance.__main__"),
]
#: Allowed exceptions, each with its reason.
ALLOWED = {
    # the package's lazy public API re-exports from every layer (only on attribute access)
    ("conformance", "*"),
}


def _layer(module: str) -> int:
    best, rank = -1, -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, rank = len(name), i
    return rank


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in ("conformance", "reference_kernel"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "_data" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _statements(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    """Every statement of ``nodes`` and of the blocks nested in them (functions, classes, if,
    try, with, loops, match): an import is a statement, so the expressions (most of a module's
    nodes, which ``ast.walk`` would visit too) need no visit."""
    for node in nodes:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                yield from _statements(block)


def _imports(module: str, path: Path) -> set[str]:
    """Every conformance/reference_kernel module this one imports, at any depth of its code."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_pkg else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in found if m.split(".")[0] in ("conformance", "reference_kernel") and m in MODULES}


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_imports_run_one_way_between_layers() -> None:
    wrong = []
    for module, targets in GRAPH.items():
        for target in targets:
            if (module, "*") in ALLOWED or (module, target) in ALLOWED:
                continue
            if _layer(target) > _layer(module):
                wrong.append(f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def test_every_module_has_a_layer() -> None:
    assert not [m for m in MODULES if _layer(m) < 0]


def test_no_import_circles() -> None:
    """No cycle in the module import graph (function-level imports included)."""
    graph = {m: {t for t in ts if t != m and (m, "*") not in ALLOWED} for m, ts in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # a package's __init__ is imported by its submodules implicitly, not a cycle edge
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import circles:\n" + "\n".join(" → ".join(c) for c in cycles)


_ALONE = """
import importlib, sys, traceback
ours = lambda: {m for m in sys.modules if m.split(".")[0] in ("conformance", "reference_kernel")}
failed, loaded, same = [], {}, 0
for name in sys.argv[1:]:  # sorted: a package before its modules
    parent = name.rpartition(".")[0]
    if name in loaded.get(parent, ()):
        # Importing NAME alone imports its parent first, exactly as importing the parent alone
        # did, and that already loaded NAME: Python returns it, nothing more runs. Same outcome.
        loaded[name] = loaded[parent]
        same += 1
        continue
    for m in ours():
        del sys.modules[m]
    try:
        importlib.import_module(name)
    except BaseException:
        failed.append(name + ":\\n" + traceback.format_exc(limit=-3))
    else:
        loaded[name] = ours()
print("\\n".join(failed))
print(f"same as their package: {same}", file=sys.stderr)
"""


def test_every_module_imports_alone() -> None:
    """Each module imports on its own, our packages unloaded before each (a circle shows up as an
    ImportError); one interpreter for all, third-party imports stay cached. A module that its
    package's own import (alone) loads is not imported again: importing it alone runs exactly
    that import, so it has that import's outcome (about a fifth of the modules, mostly mutants)."""
    names = sorted(m for m in MODULES if not m.startswith(("conformance.adapters.", "conformance.suite")) and m != "conformance.__main__")
    proc = subprocess.run([sys.executable, "-c", _ALONE, *names], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "same as their package: " in proc.stderr


#: The public API, frozen: changing it is a decision (a version bump and a note), not a side effect.
PUBLIC_API = [
    "AdapterInfo", "Bounds", "CAPABILITIES", "CheckResult", "ClockDef", "ConcurrencySpec",
    "ConformanceFailure", "DoomLoop", "Doubles", "HOOK_POINTS", "HarnessError", "HookDef",
    "JournalDump", "KernelAdapter", "KernelInfo", "KernelRaised", "MessageRecord", "ModelCallError",
    "Outcome", "Pricing", "Rejection", "Report", "RequirementResult", "RunResult", "Scenario",
    "SessionRecord", "Span", "SubagentDef", "SuiteInfo", "ToolCallRecord", "ToolDef", "ToolFailed",
    "TurnInfo", "TurnRecord", "Unsupported", "UntestableEntry", "UsageError", "UsageEvent",
    "UserMessage", "VERDICTS", "__version__", "certify", "run_user_messages",
]


def test_exported_members() -> None:
    assert sorted(conformance.__all__) == sorted(PUBLIC_API)
    for name in PUBLIC_API:
        assert getattr(conformance, name) is not None, name
    assert set(PUBLIC_API) <= set(dir(conformance))


def test_importing_the_package_stays_cheap() -> None:
    """``import conformance`` (done by every pytest run through the plugin) loads no submodule."""
    code = "import sys, conformance; print(sorted(m for m in sys.modules if m.startswith('conformance.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"
