"""Write the book: Jinja2 templates (``templates/``, autoescaped) over the data of
:mod:`conformance.book.data`, one CSS file and one search script (``static/``), and the search
index as a JavaScript file (``search-index.js``) so that the search works from ``file://``,
where a page cannot fetch a JSON file.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from conformance.book import timeline
from conformance.book.data import Book, KernelDoc

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

#: How each verdict reads in a cell, and its CSS class.
VERDICT_LABEL = {"pass": "pass", "fail": "FAIL", "blocked": "blocked", "not-applicable": "n/a", "not-offered": "not offered",
                 "incomplete": "incomplete", "error": "error", None: "—"}

#: What each symbol means, for the legend of every page that shows verdicts.
VERDICT_MEANING = {
    "pass": "every check of the requirement ran and passed",
    "fail": "the kernel does not do what the requirement says (a check failed, with what was expected and observed)",
    "blocked": "a check could not judge its subject because another requirement it needs failed first (named beside it)",
    "not-applicable": "a rule about a concept the kernel does not have (e.g. a MUST NOT about a declaration it has no way to make)",
    "not-offered": "a SHOULD or MAY capability the kernel does not declare, or a mechanism its adapter does not wire",
    "incomplete": "it could not be checked (a prerequisite missing, too slow to finish, not exercised)",
    "error": "the harness or the adapter broke: never the kernel's failure, never a pass",
    None: "not run for this kernel (a profile it does not claim, or not in its report)",
}

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

#: Step text split into plain words, quoted values, inline JSON, numbers and <outline params>.
_TOKENS = re.compile(r'(?P<q>"[^"]*")|(?P<j>[\[{].*[\]}])|(?P<p><[^>]+>)|(?P<n>\b\d+(?:\.\d+)?\b)')


def step_parts(text: str) -> list[tuple[str, str]]:
    """(css class, text) pieces of a step: ``q`` quoted value, ``j`` JSON, ``p`` parameter, ``n``
    number, ``""`` words."""
    out, pos = [], 0
    for m in _TOKENS.finditer(text):
        if m.start() > pos:
            out.append(("", text[pos : m.start()]))
        out.append((m.lastgroup or "", m.group(0)))
        pos = m.end()
    if pos < len(text):
        out.append(("", text[pos:]))
    return out


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(text: str | None) -> Markup:
    """A catalog statement with its `backticked` words as code (the rest escaped): the catalog is
    written in Markdown's inline style, and a reader should not see the backticks."""
    from markupsafe import escape

    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text or ""):
        out += [str(escape((text or "")[pos : m.start()])), f"<code>{escape(m.group(1))}</code>"]
        pos = m.end()
    out.append(str(escape((text or "")[pos:])))
    return Markup("".join(out))


def markdown(text: str | None) -> Markup:
    """Markdown to HTML with raw HTML disabled (it is escaped), so the result is safe to embed."""
    return Markup(_MD.render(text or ""))


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(enabled_extensions=("html", "j2"), default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown
    env.filters["code_spans"] = code_spans
    env.filters["step_parts"] = step_parts
    env.filters["verdict_label"] = lambda v: VERDICT_LABEL.get(v, str(v))
    env.filters["verdict_class"] = lambda v: "v-" + (v or "none")
    env.filters["jsonish"] = lambda v: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    env.globals["verdict_meanings"] = list(VERDICT_MEANING.items())
    env.globals["is_mapping"] = lambda v: isinstance(v, dict)
    env.globals["is_list"] = lambda v: isinstance(v, list)
    return env


# --------------------------------------------------------------------------- kernel details


def mechanism_rows(mechanisms: Any) -> tuple[list[str], list[list[Any]]]:
    """A mechanism table of any reasonable shape as (header, rows): a mapping point → text or
    point → {fields}, or a list of records."""
    if not mechanisms:
        return [], []
    if isinstance(mechanisms, dict):
        values = list(mechanisms.values())
        if all(isinstance(v, dict) for v in values):
            keys = list(dict.fromkeys(k for v in values for k in v))
            return ["point", *keys], [[p, *[v.get(k, "") for k in keys]] for p, v in mechanisms.items()]
        return ["point", "mechanism"], [[p, v] for p, v in mechanisms.items()]
    if isinstance(mechanisms, list) and all(isinstance(v, dict) for v in mechanisms):
        keys = list(dict.fromkeys(k for v in mechanisms for k in v))
        return keys, [[v.get(k, "") for k in keys] for v in mechanisms]
    return ["mechanism"], [[m] for m in (mechanisms if isinstance(mechanisms, list) else [mechanisms])]


def failing_entries(kernel: KernelDoc, book: Book) -> list[dict[str, Any]]:
    """Every requirement this kernel did not pass, in catalog order, with its message and the
    failing check's trace as a timeline when the report carries one."""
    out = []
    for req in book.catalog.requirements:
        verdict = kernel.verdicts.get(req.id)
        if verdict in (None, "pass"):
            continue
        result = kernel.result(req.id) or {}
        checks = result.get("checks") or []
        bad = [c for c in checks if c.get("outcome") not in ("pass",)]
        check = next((c for c in bad if c.get("outcome") == verdict), bad[0] if bad else None)
        message = (check or {}).get("message") or result.get("message")
        if verdict in ("blocked", "not-applicable") and result.get("message"):
            message = result["message"]  # what blocks it (and over how many checks), or why it does not apply
        trace = (check or {}).get("trace")
        out.append(
            {
                "req": req,
                "verdict": verdict,
                "area": book.area_of(req.id),
                "check": check,
                "message": message,
                # why the FAIL holds, with its citation in the framework's source (or unconfirmed)
                "cause": result.get("fail_cause") if verdict == "fail" else None,
                "blocked_by": [(b, _blocker_link(b, kernel, book)) for b in result.get("blocked_by") or kernel.blocked_by.get(req.id) or []],
                "timeline": timeline.build(trace) if isinstance(trace, dict) else None,
            }
        )
    return out


def _blocker_link(rid: str, kernel: KernelDoc, book: Book) -> str:
    """Where a blocker is explained: its section on this kernel's page when it did not pass here,
    else its catalog entry."""
    if kernel.verdicts.get(rid) not in (None, "pass"):
        return f"#{rid}"
    try:
        return f"area-{book.area_of(rid).slug}.html#{rid}"
    except StopIteration:
        return f"#{rid}"


# --------------------------------------------------------------------------- the site


VOCABULARY = HERE / "vocabulary.toml"


def vocabulary_groups() -> list[list[str]]:
    """Terms of one meaning in the seeds' two vocabularies (``vocabulary.toml``)."""
    import tomllib

    return [list(g) for g in tomllib.loads(VOCABULARY.read_text(encoding="utf-8")).get("groups", [])]


def _mentions(text: str, term: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(term.lower()) + r"(?![\w-])", text) is not None


def related(book: Book, area: Any, req: Any, groups: list[list[str]]) -> dict[str, Any]:
    """What a reader may search a requirement by besides its own words, in two tiers: ``near``,
    the other words of every vocabulary group its statement mentions (``max_iterations`` for the
    ``budget_exhausted`` rule) and its profile twin (``conflicts_with``); ``related``, the words of
    its scenarios (names and steps), its properties and its twin's statement, once each. ``counts``:
    how often each vocabulary word occurs in those scenarios and properties (to rank the hits)."""
    parts: list[str] = []
    for sc in area.scenarios.get(req.id, []):
        parts += [sc.name, sc.description, *(s.text for s in [*sc.background, *sc.steps])]
    for prop in area.properties.get(req.id, []):
        parts += [prop.name.replace("_", " "), prop.doc]
    twins = [book.catalog.get(t) for t in req.conflicts_with]
    text = " ".join(p for p in [*parts, *(t.statement for t in twins)] if p).lower()
    own = req.statement.lower()
    near = [t for g in groups if any(_mentions(own, t) for t in g) for t in g]
    counts = {t: n for g in groups for t in g if (n := len(re.findall(r"(?<![\w-])" + re.escape(t.lower()) + r"(?![\w-])", text)))}
    words = sorted(set(re.findall(r"[\w:.()-]+", text)))
    return {"near": " ".join(dict.fromkeys([*near, *req.conflicts_with])), "related": " ".join(words), "counts": counts}


def search_index(book: Book) -> list[dict[str, str]]:
    entries = []
    groups = vocabulary_groups()
    for area in book.areas:
        for req in area.requirements:
            entries.append(
                {
                    "id": req.id,
                    "level": req.level,
                    "profiles": " ".join(req.profiles),
                    "statement": req.statement,
                    "href": f"area-{area.slug}.html#{req.id}",
                    "area": area.title,
                    **related(book, area, req, groups),
                }
            )
    for r in book.readings:
        entries.append({"id": r.id, "level": "reading", "profiles": "", "statement": r.title, "href": f"readings.html#{r.id}",
                        "area": "Readings", "related": " ".join(str(v) for v in r.fields.values() if isinstance(v, str))})
    return entries


def render_site(book: Book) -> dict[str, str]:
    """Every page of the book, rendered in memory: file name → text."""
    env = environment()
    pages: dict[str, str] = {}
    generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    common = {"book": book, "generated": generated, "has_readings": bool(book.readings)}

    def page(name: str, template: str, title: str, **ctx: Any) -> None:
        pages[name] = env.get_template(template).render(title=title, page=name, **common, **ctx)

    page("index.html", "index.html", "The spec book")
    for area in book.areas:
        page(f"area-{area.slug}.html", "area.html", f"{area.code}: {area.title}", area=area)
    for kernel in book.kernels:
        head, rows = mechanism_rows(kernel.mechanisms)
        page(
            f"kernel-{kernel.slug}.html",
            "kernel.html",
            f"Kernel: {kernel.name}",
            kernel=kernel,
            failing=failing_entries(kernel, book),
            mech_head=head,
            mech_rows=rows,
        )
    page("search.html", "search.html", "Search")
    page("glossary.html", "glossary.html", "Step glossary")
    if book.readings:
        page("readings.html", "readings.html", "Readings")
    pages["search-index.js"] = "window.AKC_INDEX = " + json.dumps(search_index(book), ensure_ascii=False).replace("</", "<\\/") + ";\n"
    for f in sorted(STATIC.iterdir()):
        if f.is_file():
            pages[f"static/{f.name}"] = f.read_text(encoding="utf-8")
    return pages


def build_site(book: Book, out: Path) -> list[Path]:
    """Render every page, then write them into ``out`` (created; the book's own files are
    replaced, other files are left alone). Nothing is written when a page fails to render."""
    pages = render_site(book)
    written = []
    for name, text in pages.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written


# --------------------------------------------------------------------------- trace diff page


def diff_html(result: Any) -> str:
    """``akc trace diff A B --html FILE``: each differing scenario's events around the first
    divergence side by side, the divergent event and field highlighted. One self-contained file
    (the stylesheet is inlined), so it opens wherever it is written."""
    from conformance.trace.diff import describe

    env = environment()
    cases = []
    for d in result.differences:
        ca, cb = dict(d.context_a), dict(d.context_b)
        rows = []
        for i in sorted(set(ca) | set(cb)):
            x, y = ca.get(i), cb.get(i)
            state = "diverge" if i == d.index else ("same" if x == y else "after")
            rows.append(
                {
                    "index": i,
                    "a": describe(x) if i in ca else "",
                    "b": describe(y) if i in cb else "",
                    "a_json": json.dumps(x, ensure_ascii=False, indent=1) if x is not None else "",
                    "b_json": json.dumps(y, ensure_ascii=False, indent=1) if y is not None else "",
                    "state": state,
                }
            )
        cases.append({"d": d, "rows": rows})
    css = (STATIC / "book.css").read_text(encoding="utf-8")
    return env.get_template("trace_diff.html").render(result=result, cases=cases, css=Markup(css.replace("</", "<\\/")))


def write_diff_html(result: Any, path: Path) -> Path:
    """Write :func:`diff_html` to ``path`` atomically; an unwritable path is a UsageError."""
    from conformance.errors import UsageError

    text = diff_html(result)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
