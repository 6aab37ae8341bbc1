"""What the book shows, gathered from the project's data: the catalog, the readings table, the
feature files (parsed with the ``gherkin`` parser pytest-bdd uses), the properties' docstrings,
the committed matrix with its per-kernel reports, and any extra report (a fresh run).

Everything here is plain data (dataclasses and dicts), so the templates only lay it out. Fields
other engineers are adding (a kernel's ``mechanisms``, its declared ``readings``, the readings
table) are read when present and skipped when absent.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gherkin.parser import Parser
from gherkin.token_scanner import TokenScanner

from conformance.catalog.requirements import Catalog, Requirement, load_catalog
from conformance.paths import features_dir

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
MATRIX_JSON = REPO_ROOT / "docs" / "conformance-matrix.json"
#: Per-kernel reports committed beside the matrix (``docs/conformance-reports/<kernel>.json``).
REPORTS_DIR = REPO_ROOT / "docs" / "conformance-reports"
#: Where the readings table may live (the first that exists wins).
READINGS_FILES = (
    Path(__file__).resolve().parent.parent / "catalog" / "readings.toml",
    Path(__file__).resolve().parent.parent / "readings.toml",
)
GLOSSARY_DOC = REPO_ROOT / "docs" / "writing-scenarios.md"

REQ_ID = re.compile(r"^[A-Z]+-\d{3}$")
PROFILES = ("kernel", "commonagent")

#: The areas in catalog order, with a plain title each.
AREA_TITLES = {
    "LOOP": "The turn loop (003 RunTurn)",
    "SPAN": "Trace spans",
    "CONC": "Tool-call concurrency",
    "GATE": "Policy precheck and the plan-ready gate",
    "BOUND": "Loop bounds and the limit-reached path",
    "COST": "Cost accounting",
    "DONE": "Done detection",
    "DOOM": "Doom-loop detection",
    "TURN": "The CommonAgent turn",
    "TOOL": "Tool calls",
    "STOP": "Cancellation",
    "BUDGET": "The iteration budget",
    "IDENT": "TurnInfo and ids",
    "SESS": "Sessions",
    "MSG": "Stored messages",
    "TAG": "Tags",
    "CHILD": "Child agents",
    "JOURNAL": "The journal",
}


class BookError(Exception):
    """A source the book is built from is unreadable (named in the message)."""


# --------------------------------------------------------------------------- scenarios


@dataclass
class Step:
    keyword: str
    text: str
    doc_string: str | None = None
    table: list[list[str]] | None = None


@dataclass
class Examples:
    name: str
    tags: list[str]
    header: list[str]
    rows: list[list[str]]


@dataclass
class ScenarioDoc:
    feature_file: str
    feature_name: str
    keyword: str
    name: str
    line: int
    tags: list[str]
    description: str
    steps: list[Step]
    background: list[Step] = field(default_factory=list)
    examples: list[Examples] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return sorted({t for t in self.tags if REQ_ID.match(t)})

    @property
    def profiles(self) -> list[str]:
        found = [p for p in PROFILES if p in self.tags]
        return found or list(PROFILES)

    @property
    def other_tags(self) -> list[str]:
        return [t for t in self.tags if not REQ_ID.match(t) and t not in PROFILES and not t.startswith("dim:")]

    @property
    def dims(self) -> list[str]:
        """The input-dimension cells the scenario covers (its ``@dim:`` tags), as ``name=value``."""
        return [t.removeprefix("dim:") for t in self.tags if t.startswith("dim:")]


def _steps(raw: list[dict[str, Any]]) -> list[Step]:
    out = []
    for s in raw:
        table = None
        if s.get("dataTable"):
            table = [[c["value"] for c in row["cells"]] for row in s["dataTable"]["rows"]]
        doc = s.get("docString", {}).get("content") if s.get("docString") else None
        out.append(Step(keyword=s["keyword"].strip(), text=s["text"], doc_string=doc, table=table))
    return out


def parse_feature(path: Path) -> list[ScenarioDoc]:
    """Every scenario of one feature file, with the feature's and any rule's tags merged in."""
    try:
        doc = Parser().parse(TokenScanner(path.read_text(encoding="utf-8")))
    except Exception as exc:  # gherkin raises its own CompositeParserException
        raise BookError(f"{path}: not a valid feature file: {exc}") from None
    feature = doc.get("feature") or {}
    feature_tags = [t["name"].lstrip("@") for t in feature.get("tags", [])]
    out: list[ScenarioDoc] = []

    def walk(children: list[dict[str, Any]], tags: list[str], background: list[Step]) -> None:
        for child in children:
            if "background" in child:
                background = background + _steps(child["background"].get("steps", []))
            elif "rule" in child:
                rule = child["rule"]
                walk(rule.get("children", []), tags + [t["name"].lstrip("@") for t in rule.get("tags", [])], background)
            elif "scenario" in child:
                sc = child["scenario"]
                own = [t["name"].lstrip("@") for t in sc.get("tags", [])]
                examples = []
                for ex in sc.get("examples", []):
                    ex_tags = [t["name"].lstrip("@") for t in ex.get("tags", [])]
                    own += ex_tags
                    header = [c["value"] for c in (ex.get("tableHeader") or {}).get("cells", [])]
                    rows = [[c["value"] for c in r["cells"]] for r in ex.get("tableBody", [])]
                    examples.append(Examples(ex.get("name", ""), ex_tags, header, rows))
                out.append(
                    ScenarioDoc(
                        feature_file=path.name,
                        feature_name=feature.get("name", path.stem),
                        keyword=sc["keyword"],
                        name=sc["name"],
                        line=sc["location"]["line"],
                        tags=list(dict.fromkeys(tags + own)),
                        description=_dedent(sc.get("description", "")),
                        steps=_steps(sc.get("steps", [])),
                        background=background,
                        examples=examples,
                    )
                )

    walk(feature.get("children", []), feature_tags, [])
    return out


def _dedent(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines())


@dataclass
class FeatureDoc:
    file: str
    name: str
    description: str
    tags: list[str]


def features() -> tuple[list[FeatureDoc], list[ScenarioDoc]]:
    base = features_dir()
    docs, scenarios = [], []
    for path in sorted(base.glob("*.feature")):
        doc = Parser().parse(TokenScanner(path.read_text(encoding="utf-8")))
        f = doc.get("feature") or {}
        docs.append(FeatureDoc(path.name, f.get("name", path.stem), _dedent(f.get("description", "")), [t["name"].lstrip("@") for t in f.get("tags", [])]))
        scenarios += parse_feature(path)
    return docs, scenarios


# --------------------------------------------------------------------------- properties


@dataclass
class PropertyDoc:
    module: str
    name: str
    ids: list[str]
    profiles: list[str]
    capability: str | None
    doc: str
    module_doc: str


def properties() -> list[PropertyDoc]:
    """The Hypothesis properties (``conformance/suite/test_prop_*.py``) with their docstrings."""
    import conformance.suite as suite

    out = []
    for info in pkgutil.iter_modules(suite.__path__):
        if not info.name.startswith("test_prop_"):
            continue
        module = importlib.import_module(f"conformance.suite.{info.name}")
        module_doc = inspect.cleandoc(module.__doc__ or "")
        for name, obj in vars(module).items():
            if not name.startswith("test_"):
                continue
            for mark in getattr(obj, "pytestmark", []):
                if mark.name != "akc":
                    continue
                profile = mark.kwargs.get("profile")
                profiles = [profile] if isinstance(profile, str) else list(profile or PROFILES)
                doc = inspect.getdoc(getattr(obj, "hypothesis", None) and obj.hypothesis.inner_test or obj) or ""
                out.append(
                    PropertyDoc(info.name, name, list(mark.kwargs.get("ids", ())), profiles, mark.kwargs.get("capability"), doc, module_doc)
                )
    return out


# --------------------------------------------------------------------------- readings


@dataclass
class Reading:
    id: str
    requirements: list[str]
    fields: dict[str, Any]

    @property
    def title(self) -> str:
        for key in ("title", "question", "point", "summary", "name"):
            if isinstance(self.fields.get(key), str):
                return self.fields[key]
        return self.id


def readings(path: Path | None = None) -> list[Reading]:
    """The readings table, when one exists: every row of every array of tables in it. The
    requirement ids a row touches are every catalog-shaped id among its values."""
    candidates = [path] if path else list(READINGS_FILES)
    source = next((p for p in candidates if p is not None and p.is_file()), None)
    if source is None:
        return []
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BookError(f"{source}: cannot read the readings table: {exc}") from None
    rows: list[dict[str, Any]] = []
    for value in data.values():
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            rows += value
    out = []
    for i, row in enumerate(rows):
        rid = str(row.get("id") or f"reading-{i + 1}")
        reqs = sorted({v for v in _strings(row) if REQ_ID.match(v)})
        out.append(Reading(rid, reqs, {k: v for k, v in row.items() if k != "id"}))
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return re.findall(r"[A-Z]+-\d{3}", value) if not REQ_ID.match(value) else [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# --------------------------------------------------------------------------- kernels


@dataclass
class KernelDoc:
    """One column of the book: a kernel of the matrix, or one added from a report."""

    name: str
    slug: str
    adapter: str = ""
    description: str = ""
    status: str = "ok"
    note: str | None = None
    version: str | None = None
    profiles: list[str] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)
    summary: dict[str, int] = field(default_factory=dict)
    failures: str | None = None
    #: requirement id → verdict (None: not run for this kernel).
    verdicts: dict[str, str | None] = field(default_factory=dict)
    #: requirement id → the requirements that block it (its verdict is ``blocked``).
    blocked_by: dict[str, list[str]] = field(default_factory=dict)
    #: The full report as JSON data, when one is available.
    report: dict[str, Any] | None = None
    mechanisms: Any = None
    declared_readings: Any = None

    def result(self, req_id: str) -> dict[str, Any] | None:
        if not self.report:
            return None
        return next((r for r in self.report.get("requirements", []) if r.get("id") == req_id), None)


def kernel_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "kernel"


def _from_report(k: KernelDoc, report: dict[str, Any]) -> None:
    kernel = report.get("kernel") or {}
    k.report = report
    k.version = k.version or kernel.get("version")
    k.profiles = k.profiles or list(report.get("profiles") or kernel.get("profiles") or [])
    k.capabilities = k.capabilities or list(kernel.get("capabilities") or [])
    if not k.summary and report.get("summary"):
        k.summary = dict(report["summary"])
    for r in report.get("requirements", []):
        k.verdicts.setdefault(r["id"], r.get("verdict"))
        if r.get("blocked_by"):
            k.blocked_by.setdefault(r["id"], list(r["blocked_by"]))
    k.mechanisms = k.mechanisms or kernel.get("mechanisms") or report.get("mechanisms")
    k.declared_readings = k.declared_readings or kernel.get("readings") or report.get("readings")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BookError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BookError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise BookError(f"{path} is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise BookError(f"{path}: expected a JSON object")
    return data


def matrix_kernels(matrix_path: Path | None = MATRIX_JSON, reports_dir: Path | None = REPORTS_DIR) -> list[KernelDoc]:
    """The kernels of the committed matrix, each with its committed report when there is one."""
    if matrix_path is None or not matrix_path.is_file():
        return []
    matrix = _read_json(matrix_path)
    kernels = []
    for entry in matrix.get("kernels", []):
        k = KernelDoc(
            name=entry["name"],
            slug=kernel_slug(entry["name"]),
            adapter=entry.get("adapter", ""),
            description=entry.get("description", ""),
            status=entry.get("status", "ok"),
            note=entry.get("note"),
            version=entry.get("version"),
            profiles=list(entry.get("profiles") or []),
            capabilities=list(entry.get("capabilities") or []),
            summary=dict(entry.get("summary") or {}),
            failures=entry.get("failures"),
            mechanisms=entry.get("mechanisms"),
            declared_readings=entry.get("readings"),
        )
        for row in matrix.get("requirements", []):
            k.verdicts[row["id"]] = (row.get("verdicts") or {}).get(k.name)
            if k.name in (row.get("blocked_by") or {}):
                k.blocked_by[row["id"]] = list(row["blocked_by"][k.name])
        if reports_dir is not None:
            path = reports_dir / f"{entry['name']}.json"
            if path.is_file():
                _from_report(k, _read_json(path))
        kernels.append(k)
    return kernels


def report_kernel(report: dict[str, Any], adapter: str = "", taken: set[str] | None = None) -> KernelDoc:
    """A kernel column made from one report (``--report FILE`` or a fresh ``--adapter`` run)."""
    kernel = report.get("kernel") or {}
    name = str(kernel.get("name") or "kernel")
    slug = kernel_slug(name)
    while taken and slug in taken:
        slug += "-2"
    k = KernelDoc(name=name, slug=slug, adapter=adapter, description="added to this book from a report")
    _from_report(k, report)
    return k


def load_report_file(path: Path) -> dict[str, Any]:
    data = _read_json(path)
    if "requirements" not in data or "kernel" not in data:
        raise BookError(f"{path} is not an akc report (no 'kernel' and 'requirements')")
    from pydantic import ValidationError

    from conformance.report.model import Report

    try:
        Report.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        raise BookError(f"{path} is not a valid akc report: field {loc}: {err.get('msg')}") from None
    return data


# --------------------------------------------------------------------------- the whole book


@dataclass
class Area:
    code: str
    title: str
    requirements: list[Requirement]
    scenarios: dict[str, list[ScenarioDoc]]
    properties: dict[str, list[PropertyDoc]]

    @property
    def slug(self) -> str:
        return self.code.lower()

    @property
    def scenario_count(self) -> int:
        return len({(s.feature_file, s.name) for ss in self.scenarios.values() for s in ss})

    @property
    def property_count(self) -> int:
        return len({(p.module, p.name) for ps in self.properties.values() for p in ps})


@dataclass
class Book:
    catalog: Catalog
    areas: list[Area]
    features: list[FeatureDoc]
    scenarios: list[ScenarioDoc]
    properties: list[PropertyDoc]
    kernels: list[KernelDoc]
    readings: list[Reading]
    glossary_markdown: str | None
    suite_version: str

    def area_of(self, req_id: str) -> Area:
        code = req_id.split("-", 1)[0]
        return next(a for a in self.areas if a.code == code)

    def readings_for(self, req_id: str) -> list[Reading]:
        return [r for r in self.readings if req_id in r.requirements]


def glossary_markdown(path: Path = GLOSSARY_DOC) -> str | None:
    """docs/writing-scenarios.md's step glossary section (from its heading to the next ``## ``)."""
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^## Step glossary.*?(?=^## |\Z)", text, flags=re.M | re.S)
    return m.group(0) if m else None


def gather(
    *,
    matrix_path: Path | None = MATRIX_JSON,
    reports_dir: Path | None = REPORTS_DIR,
    extra_reports: list[tuple[dict[str, Any], str]] = (),  # type: ignore[assignment]
    readings_path: Path | None = None,
) -> Book:
    """Everything the book shows. ``extra_reports`` are (report, adapter) pairs added as columns."""
    from conformance import __version__ as suite_version

    catalog = load_catalog()
    feature_docs, scenario_docs = features()
    props = properties()
    by_req_s: dict[str, list[ScenarioDoc]] = defaultdict(list)
    for s in scenario_docs:
        for i in s.ids:
            by_req_s[i].append(s)
    by_req_p: dict[str, list[PropertyDoc]] = defaultdict(list)
    for p in props:
        for i in p.ids:
            by_req_p[i].append(p)
    areas: list[Area] = []
    for req in catalog.requirements:
        if not areas or areas[-1].code != req.area:
            existing = next((a for a in areas if a.code == req.area), None)
            if existing is None:
                areas.append(Area(req.area, AREA_TITLES.get(req.area, req.area), [], {}, {}))
        area = next(a for a in areas if a.code == req.area)
        area.requirements.append(req)
        area.scenarios[req.id] = by_req_s.get(req.id, [])
        area.properties[req.id] = by_req_p.get(req.id, [])
    kernels = matrix_kernels(matrix_path, reports_dir)
    taken = {k.slug for k in kernels}
    for report, adapter in extra_reports:
        k = report_kernel(report, adapter, taken)
        taken.add(k.slug)
        kernels.append(k)
    return Book(
        catalog=catalog,
        areas=areas,
        features=feature_docs,
        scenarios=scenario_docs,
        properties=props,
        kernels=kernels,
        readings=readings(readings_path),
        glossary_markdown=glossary_markdown(),
        suite_version=str(suite_version),
    )
