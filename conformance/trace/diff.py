"""Compare canonical traces (two files or two folders of them) and show the first divergence.

Two traces are equivalent when their events are equal after :func:`~conformance.trace.normalise.apply_freedoms`
(each side with its own kernel's doom-loop subtype). Interleavings of concurrent calls were already
made canonical when the traces were built, so plain equality here is equality of the partial orders.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from conformance.errors import UsageError
from conformance.trace.normalise import apply_freedoms, canonical_json
from conformance.trace.canonical import Trace, load

#: Events shown before and after the first divergence.
CONTEXT = 3

JSON = dict[str, Any]

#: What ``--only`` / ``--ignore`` select, by event kind. ``attributes`` is not a kind of event but
#: a part of one: ignoring it compares spans by their tree, names and kinds only.
CATEGORIES: dict[str, frozenset[str]] = {
    "outcome": frozenset({"outcome", "end", "raised", "rejected"}),
    "hooks": frozenset({"hook"}),
    "tools": frozenset({"tool_start", "tool_end", "policy", "approval"}),
    "messages": frozenset({"model_request", "model_response", "model_error"}),
    "usage": frozenset({"usage"}),
    "spans": frozenset({"span"}),
    "notes": frozenset({"cancel", "cancel_missing", "script_exhausted", "rendezvous_timeout", "finish_order_timeout",
                        "unknown_tool", "unknown_hook"}),
    "attributes": frozenset(),
}


def parse_categories(text: str | None, option: str) -> frozenset[str]:
    """``"outcome,hooks"`` → the set of names; UsageError naming the option for an unknown one."""
    if not text:
        return frozenset()
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    unknown = sorted(names - set(CATEGORIES))
    if unknown:
        raise UsageError(f"{option}: unknown part {', '.join(unknown)} (use {', '.join(CATEGORIES)})")
    return names


@dataclass(frozen=True)
class Selection:
    """Which parts of a trace are compared (``--only`` / ``--ignore``)."""

    only: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()

    def keeps(self, kind: str) -> bool:
        category = next((c for c, kinds in CATEGORIES.items() if kind in kinds), "notes")
        only = self.only - {"attributes"}
        if only and category not in only:
            return False
        return category not in self.ignore

    def apply(self, events: list[JSON]) -> list[JSON]:
        if not (self.only or self.ignore):
            return events
        out = []
        for e in events:
            if not self.keeps(str(e.get("kind"))):
                continue
            if e.get("kind") == "span" and "attributes" in self.ignore:
                e = {k: v for k, v in e.items() if k != "attributes"}
            out.append(e)
        return out


def divergence_kind(a: JSON | None, b: JSON | None, path: str = "") -> str:
    """A name for what differs, for the summary: "hook order", "tool results", "span attributes"..."""
    event = a if a is not None else b
    kind = str((event or {}).get("kind"))
    if a is None or b is None:  # an event on one side only: "extra model request in B", not a shift
        return f"extra {_ONE_EVENT.get(kind, kind)} in {'A' if b is None else 'B'}"
    if a.get("kind") != b.get("kind"):
        return "event order"
    if kind == "hook":
        if a.get("point") != b.get("point") or a.get("call_id") != b.get("call_id"):
            return "hook order"
        return "hook outcome" if path.startswith("outcome") else "hook payload"
    if kind == "span":
        return "span attributes" if path.startswith("attributes") else "spans"
    return _KIND_NAMES.get(kind, kind)


_KIND_NAMES = {
    "hook": "hooks", "model_request": "model requests", "model_response": "model responses", "model_error": "model errors",
    "tool_start": "tool calls", "tool_end": "tool results", "policy": "policy prechecks", "approval": "approvals",
    "usage": "usage", "outcome": "outcome", "end": "outcome", "raised": "outcome", "rejected": "outcome", "span": "spans",
}


#: One event of a kind, for "extra … in A/B".
_ONE_EVENT = {
    "hook": "hook dispatch", "model_request": "model request", "model_response": "model response",
    "model_error": "model error", "tool_start": "tool call", "tool_end": "tool result", "policy": "policy precheck",
    "approval": "approval", "usage": "usage event", "outcome": "outcome", "end": "end of run", "raised": "raised error",
    "rejected": "rejection", "span": "span",
}


class Spot(BaseModel):
    """One divergence of a scenario (``--all`` lists every one)."""

    kind: str
    a_index: int | None = None
    b_index: int | None = None
    path: str = ""
    a: str = ""
    b: str = ""


class Divergence(BaseModel):
    """Where two traces of one scenario first differ."""

    feature: str
    scenario: str
    name: str
    #: The requirement ids the scenario checks (from the traces).
    requirements: list[str] = Field(default_factory=list)
    #: Index in the (normalised) event lists of the first differing event.
    index: int
    #: The first differing field inside that event (e.g. ``messages[3]``), "" for the event itself.
    path: str = ""
    a: JSON | None = None
    b: JSON | None = None
    a_value: Any = None
    b_value: Any = None
    #: (index, event) pairs around the divergence on each side.
    context_a: list[tuple[int, JSON]] = Field(default_factory=list)
    context_b: list[tuple[int, JSON]] = Field(default_factory=list)
    a_events: int = 0
    b_events: int = 0
    #: What differs at the first divergence ("hook order", "span attributes"...).
    kind: str = ""
    #: Every divergence of the scenario, the first included, aligned by a sequence diff.
    spots: list[Spot] = Field(default_factory=list)


class DiffResult(BaseModel):
    a: str
    b: str
    compared: int = 0
    equal: int = 0
    differences: list[Divergence] = Field(default_factory=list)
    only_in_a: list[str] = Field(default_factory=list)
    only_in_b: list[str] = Field(default_factory=list)
    #: The parts compared (``--only``) and left out (``--ignore``).
    only: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)

    def by_kind(self) -> dict[str, tuple[int, int]]:
        """Divergence kind → (scenarios where it occurs, scenarios where it is the first)."""
        out: dict[str, list[int]] = {}
        for d in self.differences:
            for kind in {s.kind for s in d.spots} | {d.kind}:
                out.setdefault(kind, [0, 0])[0] += 1
            out.setdefault(d.kind, [0, 0])[1] += 1
        return {k: (v[0], v[1]) for k, v in sorted(out.items(), key=lambda kv: (-kv[1][0], kv[0]))}

    @property
    def equivalent(self) -> bool:
        return not (self.differences or self.only_in_a or self.only_in_b)

    @property
    def exit_code(self) -> int:
        return 0 if self.equivalent else 1


# --------------------------------------------------------------------------- comparison


def comparable(trace: Trace, selection: Selection | None = None) -> list[JSON]:
    """The events as compared: JSON form, the kernel's free choices as placeholders, only the
    selected parts."""
    events = apply_freedoms(trace.event_dicts(), trace.kernel.doom_loop_subtype)
    return selection.apply(events) if selection is not None else events


def spots(ea: list[JSON], eb: list[JSON]) -> list[Spot]:
    """Every divergence between two event lists, aligned by a sequence diff (an extra event on one
    side is one divergence, not a shift of everything after it)."""
    ka = [canonical_json(e) for e in ea]
    kb = [canonical_json(e) for e in eb]
    out: list[Spot] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            i, j = i1 + k, j1 + k
            x = ea[i] if i < i2 else None
            y = eb[j] if j < j2 else None
            path = ""
            if x is not None and y is not None and x.get("kind") == y.get("kind"):
                found = first_difference(x, y)
                path = found[0] if found else ""
            out.append(Spot(kind=divergence_kind(x, y, path), a_index=i if x is not None else None,
                            b_index=j if y is not None else None, path=path, a=describe(x), b=describe(y)))
    return out


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """(path, a value, b value) of the first place ``a`` and ``b`` differ; None if equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return (f"{path}.{key}".lstrip("."), a.get(key, "<absent>"), b.get(key, "<absent>"))
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                m = re.match(re.escape(f"{path}.{key}".lstrip(".")) + r"\[(\d+)\]$", found[0])
                if m and key in ("new", "messages") and a.get("kept") == b.get("kept") and "kept" in a:
                    n = int(m.group(1)) + int(a.get("kept") or 0) + 1
                    found = (f"{found[0]} (message {n} of the list)", found[1], found[2])
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        if len(a) != len(b):
            i = min(len(a), len(b))
            return (f"{path}[{i}]", a[i] if i < len(a) else "<absent>", b[i] if i < len(b) else "<absent>")
        return None
    if a == b:
        return None
    return (path.lstrip("."), a, b)


def compare(
    a: Trace, b: Trace, name: str = "", context: int = CONTEXT, selection: Selection | None = None
) -> Divergence | None:
    """The first divergence between two traces of a scenario (and every one in ``spots``), or
    None when equivalent in the selected parts."""
    ea, eb = comparable(a, selection), comparable(b, selection)
    if ea == eb:
        return None
    index = next((i for i, (x, y) in enumerate(zip(ea, eb, strict=False)) if x != y), min(len(ea), len(eb)))
    x = ea[index] if index < len(ea) else None
    y = eb[index] if index < len(eb) else None
    path, xv, yv = "", x, y
    if x is not None and y is not None and x.get("kind") == y.get("kind"):
        found = first_difference(x, y)
        if found:
            path, xv, yv = found
    lo = max(0, index - context)
    aligned = spots(ea, eb)
    return Divergence(
        feature=a.feature,
        scenario=a.scenario,
        name=name or a.scenario,
        requirements=sorted(set(a.requirements) | set(b.requirements)),
        index=index,
        path=path,
        a=x,
        b=y,
        a_value=xv,
        b_value=yv,
        context_a=[(i, ea[i]) for i in range(lo, min(len(ea), index + context + 1))],
        context_b=[(i, eb[i]) for i in range(lo, min(len(eb), index + context + 1))],
        a_events=len(ea),
        b_events=len(eb),
        # what the aligned diff says differs first: an inserted event is "extra … in B", where
        # the positional comparison would see every later event shifted ("hook order")
        kind=aligned[0].kind if aligned else divergence_kind(x, y, path),
        spots=aligned,
    )


def read_trace(path: Path) -> Trace:
    """A trace file; UsageError naming the file when it is not one."""
    try:
        return load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read trace {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        raise UsageError(f"{path} is not an akc trace (field {loc}: {err.get('msg')})") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None


def trace_files(folder: Path) -> dict[str, Path]:
    """The trace files of a folder by name (other JSON files, a report say, are not traces)."""
    out = {}
    for p in sorted(folder.glob("*.json")):
        try:
            with p.open(encoding="utf-8") as fh:
                head = fh.read(200)
        except (OSError, UnicodeDecodeError):
            continue
        if '"akc-trace/' in head:
            out[p.name] = p
    return out


def diff_paths(
    a: str | Path, b: str | Path, context: int = CONTEXT, selection: Selection | None = None
) -> DiffResult:
    """Compare two trace files, or two folders of traces matched by file name."""
    pa, pb = Path(a), Path(b)
    for p in (pa, pb):
        if not p.exists():
            raise UsageError(f"no such trace file or folder: {p}")
    if pa.is_dir() != pb.is_dir():
        raise UsageError(f"compare a folder with a folder and a file with a file ({pa} / {pb})")
    selection = selection or Selection()
    result = DiffResult(a=str(pa), b=str(pb), only=sorted(selection.only), ignore=sorted(selection.ignore))
    if pa.is_dir():
        fa, fb = trace_files(pa), trace_files(pb)
        if not fa and not fb:
            raise UsageError(f"no trace files (*.json) in {pa} or {pb}")
        result.only_in_a = sorted(set(fa) - set(fb))
        result.only_in_b = sorted(set(fb) - set(fa))
        pairs = [(name, fa[name], fb[name]) for name in sorted(set(fa) & set(fb))]
    else:
        pairs = [(pa.name, pa, pb)]
    for name, x, y in pairs:
        result.compared += 1
        d = compare(read_trace(x), read_trace(y), name=name, context=context, selection=selection)
        if d is None:
            result.equal += 1
        else:
            result.differences.append(d)
    return result


# --------------------------------------------------------------------------- rendering


def _short(value: Any, limit: int = 90) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(event: JSON | None) -> str:
    """One line per event, for the side-by-side view."""
    if event is None:
        return "(end of trace)"
    k = event.get("kind")
    if k == "hook":
        call = f" {event['call_id']}" if event.get("call_id") else ""
        out = event.get("outcome") or {}
        outcome = "" if out.get("kind") in (None, "continue") else f" → {out.get('kind')}"
        return f"hook {event.get('point')}{call} [{event.get('hook_id')}]{outcome}"
    if k == "model_request":
        msgs = event.get("messages") or []
        last = _short(msgs[-1], 50) if msgs else ""
        n = f"{event.get('kept')}+{len(msgs)}" if event.get("kept") else str(len(msgs))
        return f"model_request #{event.get('index')}: {n} msgs, tools [{','.join(event.get('tools') or [])}], last {last}"
    if k == "model_response":
        calls = ",".join(str(c.get("id")) for c in event.get("tool_calls") or [])
        text = _short(event.get("text"), 30) if event.get("text") is not None else ""
        return f"model_response #{event.get('index')}: {text}{' calls ' + calls if calls else ''}{'' if event.get('complete') else ' (cut)'}"
    if k == "tool_start":
        return f"tool_start {event.get('call_id')} {event.get('name')}"
    if k == "tool_end":
        how = "cancelled" if event.get("cancelled") else ("error" if event.get("is_error") or event.get("error") else "ok")
        return f"tool_end {event.get('call_id')} {event.get('name')} ({how})"
    if k == "policy":
        return f"policy {event.get('call_id')} {'allow' if event.get('allow') else 'deny'}"
    if k == "approval":
        return f"approval {event.get('call_id')} {event.get('decision')}"
    if k == "usage":
        return f"usage {event.get('turn_id')} in={event.get('input_tokens')} out={event.get('output_tokens')} ${event.get('cost_usd')}"
    if k == "outcome":
        return f"outcome {event.get('message')}: {event.get('status')} / {event.get('subtype')}"
    if k == "span":
        return f"span {event.get('span_id')} {event.get('span_kind')} {event.get('name')} (parent {event.get('parent_id')})"
    if k == "end":
        return f"end {event.get('status')}"
    return f"{k} {event.get('call_id') or ''}".strip()


def render(result: DiffResult, width: int | None = None, all_spots: bool = False) -> str:
    """The diff as text (rich tables; no colours, for files and tests)."""
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=width or 140, force_terminal=False, color_system=None)
    print_diff(result, console, all_spots=all_spots)
    return console.file.getvalue()  # type: ignore[attr-defined]


def print_diff(result: DiffResult, console: Any = None, all_spots: bool = False) -> None:
    """Print each differing scenario's first divergence side by side (with ``all_spots`` every
    divergence of it), then the missing ones, then the divergences grouped by kind."""
    from rich.console import Console
    from rich.markup import escape as _markup
    from rich.table import Table

    from conformance.report.escape import terminal

    def escape(text: str) -> str:
        """Kernel text (model answers, tool results, names) is data: one line, no control sequence,
        no rich markup."""
        return _markup(terminal(text))

    console = console or Console()
    if result.differences:
        console.print(f"A = {escape(result.a)}\nB = {escape(result.b)}\n", highlight=False)
    for d in result.differences:
        reqs = f"  [{', '.join(d.requirements)}]" if d.requirements else ""
        table = Table(title=escape(f"{d.feature} / {d.scenario}{reqs}"), title_justify="left", show_lines=False, expand=False)
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("A", overflow="fold")
        table.add_column("", no_wrap=True)
        table.add_column("B", overflow="fold")
        ca, cb = dict(d.context_a), dict(d.context_b)
        for i in sorted(set(ca) | set(cb)):
            x, y = ca.get(i), cb.get(i)
            if i == d.index:
                left, right = describe(x), describe(y)
                if d.path:
                    left += f"\n  {d.path.split(' (')[0]}: {_short(d.a_value, 120)}"
                    right += f"\n  {d.path.split(' (')[0]}: {_short(d.b_value, 120)}"
                # A and B in one style: neither side is "wrong"
                table.add_row(str(i), f"[bold]{escape(left)}[/]", "≠", f"[bold]{escape(right)}[/]")
            else:
                mark = "" if x == y else ("·" if i > d.index else "≠")
                style = "dim" if i < d.index else ""
                left = escape(describe(x)) if i in ca else ""
                right = escape(describe(y)) if i in cb else ""
                table.add_row(str(i), f"[{style}]{left}[/]" if style else left, mark, f"[{style}]{right}[/]" if style else right)
        console.print(table)
        where = f"event {d.index}" + (f", {d.path}" if d.path else "")
        console.print(f"  first divergence at {escape(where)} ({escape(d.kind)}):", highlight=False)
        console.print(f"    A: {escape(_short(d.a_value, 200))}", highlight=False)
        console.print(f"    B: {escape(_short(d.b_value, 200))}", highlight=False)
        if all_spots and len(d.spots) > 1:
            console.print(f"  all {len(d.spots)} divergences:", highlight=False)
            for s in d.spots:
                at = f"A#{'' if s.a_index is None else s.a_index} B#{'' if s.b_index is None else s.b_index}"
                path = f" {s.path.split(' (')[0]}" if s.path else ""
                console.print(escape(f"    {at} [{s.kind}]{path}: {s.a}  ≠  {s.b}"), highlight=False)
        elif len(d.spots) > 1:
            console.print(f"  ({len(d.spots) - 1} more divergence{'s' if len(d.spots) > 2 else ''} in this scenario: --all shows them)", highlight=False)
        console.print("")
    for name in result.only_in_a:
        console.print(f"only in A ({escape(result.a)}): {escape(name)}", highlight=False)
    for name in result.only_in_b:
        console.print(f"only in B ({escape(result.b)}): {escape(name)}", highlight=False)
    kinds = result.by_kind()
    if kinds:
        console.print("divergences by kind (scenarios where it occurs / where it is the first):", highlight=False)
        width = max(len(k) for k in kinds)
        for kind, (anywhere, first) in kinds.items():
            console.print(escape(f"  {kind:<{width}}  {anywhere:>4} / {first}"), highlight=False)
    if result.only or result.ignore:
        parts = (f"only {','.join(result.only)}" if result.only else "") + (" " if result.only and result.ignore else "") + (
            f"ignoring {','.join(result.ignore)}" if result.ignore else "")
        console.print(f"compared: {parts}", highlight=False)
    verdict = "equivalent" if result.equivalent else "different"
    console.print(
        f"{result.compared} compared, {result.equal} equal, {len(result.differences)} differ, "
        f"{len(result.only_in_a)} only in A, {len(result.only_in_b)} only in B: {verdict}",
        highlight=False,
    )


def to_json(result: DiffResult) -> str:
    data = result.model_dump(mode="json")
    data["equivalent"] = result.equivalent
    data["exit_code"] = result.exit_code
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
