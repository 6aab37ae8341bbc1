"""The ``akc`` pytest plugin: certify a kernel with ``pytest --pyargs conformance.suite --kernel=pkg.mod:factory``.

Inert unless ``--kernel`` is given (it is auto-loaded in every pytest run of the environment):
no autouse fixture, no collection change, nothing imported beyond pytest at import time.

When active it loads the adapter, registers a marker for every feature-file tag, tags each
collected suite item with its requirement ids / profile / scenario / feature, deselects what the
profile and ``--req`` selection exclude, skips as *not offered* what needs an undeclared
capability, classifies each item's outcome (pass / fail / error / incomplete / not-offered),
and at the end computes the verdicts, writes the reports and sets the exit code
(0 conformant, 1 a gating requirement failed, 3 incomplete or error; a usage error is pytest's 4).
"""

from __future__ import annotations

import functools
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.harness.evidence import EvidenceLog

if TYPE_CHECKING:  # pragma: no cover
    from conformance.report.model import Report
    from conformance.harness.runner import PortalRunner
    from conformance.report.verdicts import Check

REQ_ID = re.compile(r"^[A-Z]+-\d{3}$")
PROFILES = ("kernel", "commonagent")
CAP_TAG = "cap_"
#: The circuit breaker: after this many consecutive scenarios that hung (or whose kernel process
#: died and had to be restarted), the run stops with exit 3 instead of paying every timeout.
DEFAULT_MAX_HANGS = 5


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("akc", "agent kernel conformance")
    group.addoption("--kernel", default=None, metavar="PKG.MOD:FACTORY", help="adapter factory to certify (activates the plugin)")
    # --profile and --req are short, common names: if another plugin already owns one, only the
    # --akc- spelling is offered (this plugin is auto-loaded in every run, it must never clash).
    _add_with_alias(group, "--akc-profile", "--profile", dest="akc_profile", default=None, metavar="P",
                    help="kernel | commonagent | both (default: what the adapter claims)")
    _add_with_alias(group, "--akc-req", "--req", dest="akc_req", action="append", default=[], metavar="ID",
                    help="only these requirement ids (repeatable)")
    group.addoption("--akc-smoke", action="store_true", default=False, help="only the @smoke scenarios (tells an adapter bug from a kernel bug)")
    group.addoption("--akc-json", default=None, metavar="PATH", help="write the JSON report here")
    group.addoption("--akc-junit", default=None, metavar="PATH", help="write the JUnit XML report (one testcase per requirement)")
    group.addoption("--akc-markdown", default=None, metavar="PATH", help="write a Markdown summary (for CI step summaries)")
    group.addoption("--akc-backend", default="asyncio", choices=("asyncio", "trio"), help="event loop the scenarios run on")
    group.addoption("--akc-strict", action="store_true", default=False, help="a failing SHOULD/MAY also fails the run")
    group.addoption("--akc-timeout-cap", type=float, default=None, metavar="S", help="cap every scenario's timeout at S seconds")
    group.addoption("--akc-timeout-scale", type=float, default=1.0, metavar="FACTOR",
                    help="multiply every scenario's timeout by FACTOR (a slow machine or kernel: 2, 3, ...)")
    group.addoption("--akc-max-hangs", type=int, default=None, metavar="N",
                    help=f"stop the run (exit 3) after N consecutive scenarios hang or lose the kernel process (default {DEFAULT_MAX_HANGS}; 0: never)")
    group.addoption("--akc-progress", default=None, metavar="PATH", help=argparse_suppress())
    group.addoption("--akc-traces", default=None, metavar="DIR", help="write each scenario's canonical trace to DIR (one JSON file per scenario)")
    group.addoption("--akc-hypothesis-profile", default="ci", choices=HYPOTHESIS_PROFILES,
                    help="ci: 10 derandomized examples per property, no shrinking (fast, the same every run); "
                         "explore: hundreds of random examples, shrinking on, failures kept in the run's own temp dir")
    group.addoption("--akc-expect", default=None, metavar="FILE",
                    help="expected failures (TOML): listed results do not fail the run; new ones do, stale ones are reported")
    group.addoption("--akc-warn-changed", action="store_true", default=False,
                    help="with --akc-expect: an expected failure failing in other checks or for another reason warns instead of failing the run")
    group.addoption("--akc-write-expectations", default=None, metavar="FILE",
                    help="write this run's non-passing requirements to FILE (for --akc-expect)")
    group.addoption("--akc-golden", default=None, metavar="DIR",
                    help="compare every scenario's canonical trace with the goldens in DIR: a change of behaviour exits 4")
    group.addoption("--akc-update-golden", action="store_true", default=False, help="with --akc-golden DIR: write this run's traces as the goldens")
    group.addoption("--akc-all", action="store_true", default=False, help="show every requirement in the verdict table, not only those that do not pass")
    group.addoption("--akc-no-summary", action="store_true", default=False, help="do not print the verdict table (akc run prints its own)")


HYPOTHESIS_PROFILES = ("ci", "explore")
#: Examples per property in the explore profile.
EXPLORE_EXAMPLES = 300
def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


def _add_with_alias(group: Any, name: str, alias: str, **kwargs: Any) -> None:
    import argparse

    try:
        group.addoption(name, alias, **kwargs)
    except (ValueError, argparse.ArgumentError):
        group.addoption(name, **kwargs)


# --------------------------------------------------------------------------- session state


@dataclass
class ItemMeta:
    requirement_ids: list[str]
    profiles: list[str]
    scenario: str
    feature: str
    capabilities: list[str] = field(default_factory=list)


@dataclass
class AkcState:
    spec: str
    adapter: Any
    info: Any
    profiles: list[str]  # selected and claimed, in PROFILES order
    requested_profiles: list[str]
    req_filter: list[str] | None
    catalog: Any
    backend: str
    strict: bool
    timeout_cap_s: float | None = None
    timeout_scale: float = 1.0
    max_hangs: int = DEFAULT_MAX_HANGS
    smoke: bool = False
    #: Consecutive hung / restarted scenarios, and why the run was stopped (the circuit breaker).
    hangs_in_a_row: int = 0
    #: How the kernel was lost in those scenarios (``lost_how``).
    lost_how: set[str] = field(default_factory=set)
    stopped: str | None = None
    #: Model calls the scenarios run so far scripted, and the model requests that reached the
    #: harness (a kernel whose model calls never arrive is not wired to the harness's model).
    scripted_calls: int = 0
    reached_calls: int = 0
    unreached_runs: int = 0
    refused_requests: list[str] = field(default_factory=list)
    #: The dialects the kernel's model calls came in over HTTP (``doubles.http_model.used``).
    dialects_used: set[str] = field(default_factory=set)
    #: id of each scenario run's doubles → the item that ran it (to place HTTP strays).
    doubles_items: dict[int, str] = field(default_factory=dict)
    #: The scenario an interruption (signal, os._exit in a supervised child) landed in.
    interrupted_in: str | None = None
    progress: Any = None
    #: stdio adapters: the seq of each scenario run → the item that ran it (to place strays).
    seq_items: dict[int, str] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    checks: dict[str, Check] = field(default_factory=dict)
    runner: PortalRunner | None = None
    report: Report | None = None
    step: dict[str, str] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    #: ``--akc-traces``: the folder each scenario's canonical trace is written to.
    traces_dir: str | None = None
    #: ``--akc-golden``: the goldens compared after the run (conformance.trace.golden), whether
    #: to rewrite them, the run's own traces folder when none was asked for, and the result.
    golden_dir: str | None = None
    update_golden: bool = False
    golden_scratch: Any = None
    golden_result: Any = None
    #: The node id of the item running now, and the last ScenarioRun it made.
    current: str | None = None
    last_run: Any = None
    #: Canonical traces of the checks that failed or errored, by (feature, scenario).
    failed_traces: dict[tuple[str, str], Any] = field(default_factory=dict)
    trace_names: set[str] = field(default_factory=set)
    restore_hypothesis: Any = None
    #: Undoes the memoised pytest-bdd step lookup (``bddcache``).
    restore_bdd: Any = None
    #: ``--akc-hypothesis-profile``; for ``explore``, the run's own folder for Hypothesis's
    #: example database (removed with the run).
    hypothesis_profile: str = "ci"
    hypothesis_dir: str | None = None
    #: Each item's evidence (conformance.harness.evidence), by node id; and, per item, how many
    #: lines it had when its current Then step began.
    evidence: dict[str, EvidenceLog] = field(default_factory=dict)
    evidence_mark: dict[str, int] = field(default_factory=dict)

    def evidence_log(self, nodeid: str | None) -> EvidenceLog:
        """The evidence log of item ``nodeid`` (of the running item when None)."""
        key = nodeid if nodeid is not None else (self.current or "")
        log = self.evidence.get(key)
        if log is None:
            log = self.evidence[key] = EvidenceLog()
        return log
    #: ``--akc-expect``: the expected results (conformance.report.expectations.Expectations).
    expectations: Any = None
    restore_signals: Any = None
    thaw_gc: Any = None
    restore_gc: Any = None
    #: Set by conformance.harness.batch for the state of its session: the collection is kept
    #: whole (each job selects from it) and the session builds no report of its own.
    batch: bool = False

    def portal(self) -> PortalRunner:
        if self.runner is None:
            self.runner = _recording_runner(self)
        return self.runner

    def record(self, run: Any) -> None:
        """Keep the current item's last scenario run (a property keeps its last, failing example),
        and count hangs in a row for the circuit breaker."""
        if self.current is not None:
            self.last_run = run
        self._tally_model_calls(run)
        if getattr(run, "timed_out", False) or getattr(run, "lost_kernel", False):
            self.hangs_in_a_row += 1
            self.lost_how.add(lost_how(run))
        else:
            self.hangs_in_a_row = 0
            self.lost_how = set()
        if self.max_hangs and self.hangs_in_a_row >= self.max_hangs and self.stopped is None:
            how = sorted(self.lost_how)
            self.stopped = (
                f"stopped after {self.hangs_in_a_row} consecutive scenarios in which the kernel "
                f"{', '.join(how[:-1]) + ' or ' + how[-1] if len(how) > 1 else how[0]} "
                f"(circuit breaker, --max-hangs {self.max_hangs}); the rest did not run"
            )

    def _tally_model_calls(self, run: Any) -> None:
        """Count what the scenarios scripted and what reached the harness: a run in which
        scenarios ran to an end and no model call ever arrived says so once, at the head of the
        report (``unreached_message``). The verdicts stay: from the harness's side a kernel
        pointed at a model of its own and a kernel that does nothing look the same (no model
        call), and the second must fail."""
        doubles = getattr(run, "doubles", None)
        served = getattr(doubles, "http_model", None)
        if served is not None:
            self.dialects_used |= served.used
        scripted = getattr(doubles, "scripted_calls", 0)
        if not scripted:
            return
        self.scripted_calls += scripted
        self.reached_calls += doubles.model_calls
        self.refused_requests += [f"{e['status']} {e['message']}" for e in doubles.log.of("http_rejected")]
        result = getattr(run, "result", None)
        if result is not None and result.rejected is None and doubles.model_calls == 0:
            self.unreached_runs += 1

    def unreached_message(self) -> str:
        refused = ""
        if self.refused_requests:
            refused = f" ({len(self.refused_requests)} HTTP request(s) were refused, the first: {self.refused_requests[0]})"
        return (
            f"{self.reached_calls} of {self.scripted_calls} {UNREACHED}{refused}; the kernel must call "
            "the model the harness serves (doubles.model_stream or the HTTP base URL in the run request; docs/http-kernels.md)"
        )


#: The words of that message a command can look for (``akc smoke`` makes it its headline).
UNREACHED = "model requests reached the harness"


def lost_how(run: Any) -> str:
    """How a scenario lost the kernel, for the circuit breaker's message: it hung, its process
    died, or it broke the protocol (its connection was dropped: invalid UTF-8, a wrong seq…)."""
    if getattr(run, "timed_out", False):
        return "hung"
    error = getattr(run, "error", None) or ""
    if "the kernel process " in error or "event loop had stopped" in error:
        return "died"
    return "broke the protocol" if "WireError" in error else "was lost"


def take_strays(state: AkcState, adapter: Any) -> None:
    """Messages a stdio kernel sent for a scenario that had already ended: an ``error`` of *that*
    scenario's check (it may have finished long ago: verdicts are computed at the end)."""
    take = getattr(adapter, "take_strays", None)
    if take is None:
        return
    for seq, what in take():
        check = state.checks.get(state.seq_items.get(seq, ""))
        message = f"stray message from the kernel for this scenario (seq {seq}): {what}"
        if check is not None:
            check.worsen("error", message)
        else:
            state.collect_errors.append(message)


def take_http_strays(state: AkcState, host: Any) -> None:
    """Model requests that came over HTTP for a scenario that had ended: an ``error`` of that
    scenario's check, as a stdio stray is."""
    for doubles, what in host.take_strays() if host is not None else []:
        check = state.checks.get(state.doubles_items.get(id(doubles), ""))
        message = f"stray HTTP request from the kernel for this scenario: {what}"
        if check is not None:
            check.worsen("error", message)
        else:
            state.collect_errors.append(message)


def charge(req_id: str, message: str) -> None:
    """Charge a fault that names its requirement to that requirement, whatever scenario saw it
    (blame follows the fault, not the clock): a failing check of ``req_id`` under the running
    item's feature and scenario. Reported even when ``--req`` did not select ``req_id``."""
    from conformance.report.verdicts import Check

    state = current_state()
    seen = state.checks.get(state.current or "")
    key = f"{state.current} (charged to {req_id})"
    check = state.checks.get(key)
    if check is None:
        check = state.checks[key] = Check(
            [req_id], seen.feature if seen else "", seen.scenario if seen else "", profiles=list(state.profiles), charged=True,
        )
    selected = state.req_filter is None or req_id in state.req_filter
    check.worsen("fail", f"seen in this scenario, charged to {req_id}: {message}"
                 + ("" if selected else f" ({req_id} was not selected with --req; reported all the same)"))


def _recording_runner(state: AkcState) -> PortalRunner:
    """A PortalRunner that hands every ScenarioRun of ``run`` (a hang included) to
    ``state.record`` (for the traces)."""
    from conformance.harness.runner import PortalRunner

    class RecordingRunner(PortalRunner):
        def run(self, adapter: Any, scenario: Any, **options: Any) -> Any:
            restarts = getattr(adapter, "restarts", 0)
            result = super().run(adapter, scenario, **options)
            if getattr(adapter, "restarts", 0) != restarts:
                result.lost_kernel = True
            seq = getattr(adapter, "seq", None)
            if isinstance(seq, int) and state.current is not None:
                state.seq_items[seq] = state.current
            if state.current is not None:
                state.doubles_items[id(result.doubles)] = state.current
            state.record(result)
            take_strays(state, adapter)
            take_http_strays(state, self.host)
            return result

    return RecordingRunner(state.backend, state.timeout_cap_s, timeout_scale=state.timeout_scale).start()


STATE_KEY = pytest.StashKey[AkcState]()
META_KEY = pytest.StashKey[ItemMeta]()
_STACK: list[AkcState] = []


def current_state() -> AkcState:
    """The active plugin state (for conformance.suite.properties); HarnessError outside a run."""
    if not _STACK:
        from conformance.errors import HarnessError

        raise HarnessError("no active conformance run (pass --kernel=pkg.mod:factory to pytest)")
    return _STACK[-1]


def _active(config: pytest.Config) -> bool:
    return STATE_KEY in config.stash


def parse_profile(value: str | None) -> list[str] | None:
    """``kernel`` / ``commonagent`` / ``both`` → list; None for the default (what is claimed)."""
    if value is None or value == "":
        return None
    if value == "both":
        return list(PROFILES)
    if value in PROFILES:
        return [value]
    from conformance.errors import UsageError

    raise UsageError(f"unknown profile {value!r} (use kernel, commonagent or both)")


def load_catalog_or_none() -> Any:
    """The requirements catalog, or None while it does not exist yet."""
    try:
        from conformance.catalog.requirements import CATALOG_PATH, load_catalog
    except ImportError:
        return None
    if not CATALOG_PATH.exists():
        return None
    return load_catalog()


def catalog_get(catalog: Any, req_id: str) -> Any:
    """The catalog row with this id, or None."""
    try:
        return catalog.get(req_id)
    except KeyError:
        return None


def feature_tags() -> set[str]:
    """Every tag used in the feature files (to register them as markers)."""
    from conformance.paths import features_dir

    tags: set[str] = set()
    try:
        root = features_dir()
    except FileNotFoundError:
        return tags
    for path in root.rglob("*.feature"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith("@"):
                tags.update(t.lstrip("@") for t in stripped.split() if t.startswith("@") and not is_dimension_tag(t))
    return tags


#: A scenario's ``@dim:<dimension>=<value>`` tags name the cells of its requirements' input
#: dimensions it covers (``conformance/catalog/dimensions.toml``); they are data, not markers.
DIMENSION_TAG_PREFIX = "dim:"


def is_dimension_tag(tag: str) -> bool:
    return tag.lstrip("@").startswith(DIMENSION_TAG_PREFIX)


def pytest_bdd_apply_tag(tag: str, function: Any) -> bool | None:
    """Dimension tags are not markers (their ``:`` and ``=`` are not marker names): handled here."""
    return True if is_dimension_tag(tag) else None


def build_state(config: pytest.Config) -> AkcState:
    """Load the adapter and catalog and check the options; UsageError (one line) if bad."""
    from conformance.errors import UsageError
    from conformance.harness.loading import adapter_info, load_adapter

    spec = config.getoption("kernel")
    requested = parse_profile(config.getoption("akc_profile"))
    catalog = load_catalog_or_none()
    reqs = [r.strip().upper() for r in config.getoption("akc_req") or [] if r.strip()] or None
    if reqs:
        bad = [r for r in reqs if not REQ_ID.match(r)]
        if bad:
            raise UsageError(f"not a requirement id: {', '.join(bad)} (expected e.g. LOOP-001)")
    if reqs and catalog is not None:
        unknown = [r for r in reqs if catalog_get(catalog, r) is None]
        if unknown:
            raise UsageError(f"unknown requirement id(s): {', '.join(unknown)}")
    expectations = None
    if config.getoption("akc_expect", None):
        from conformance.report.expectations import load as load_expectations

        expectations = load_expectations(config.getoption("akc_expect"), catalog.ids() if catalog is not None else None,
                                         warn_changed=bool(config.getoption("akc_warn_changed", False)))
    adapter = load_adapter(spec)
    info = adapter_info(adapter)
    claimed = [p for p in PROFILES if p in info.profiles]
    wanted = requested if requested is not None else claimed
    profiles = [p for p in PROFILES if p in wanted and p in claimed]
    if not profiles:
        raise UsageError(
            f"adapter {spec!r} claims {', '.join(claimed) or 'no profile'}; nothing to certify for {', '.join(wanted) or 'it'}"
        )
    return AkcState(
        spec=spec,
        adapter=adapter,
        info=info,
        profiles=profiles,
        requested_profiles=wanted,
        req_filter=reqs,
        catalog=catalog,
        backend=config.getoption("akc_backend"),
        strict=config.getoption("akc_strict"),
        timeout_cap_s=config.getoption("akc_timeout_cap"),
        hypothesis_profile=config.getoption("akc_hypothesis_profile"),
        timeout_scale=_scale(config.getoption("akc_timeout_scale")),
        max_hangs=_max_hangs(config.getoption("akc_max_hangs")),
        smoke=config.getoption("akc_smoke"),
        expectations=expectations,
        **_golden_options(config),
    )


def _golden_options(config: pytest.Config) -> dict[str, Any]:
    """``--akc-traces``, and ``--akc-golden DIR`` (checked now, before anything runs) with a
    traces folder of its own when none was asked for."""
    traces = config.getoption("akc_traces", None)
    golden = config.getoption("akc_golden", None)
    update = bool(config.getoption("akc_update_golden", False))
    if golden is None:
        if update:
            raise pytest.UsageError("--akc-update-golden needs --akc-golden DIR")
        return {"traces_dir": traces}
    from conformance.errors import UsageError
    from conformance.trace.golden import check_folder

    try:
        check_folder(golden, update=update)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    out: dict[str, Any] = {"golden_dir": str(golden), "update_golden": update, "traces_dir": traces}
    if not traces:
        import tempfile

        scratch = tempfile.TemporaryDirectory(prefix="akc-golden-")
        out.update(golden_scratch=scratch, traces_dir=scratch.name)
    return out


def _scale(value: float | None) -> float:
    from conformance.errors import UsageError

    if value is None:
        return 1.0
    if not value > 0 or value != value or value == float("inf"):
        raise UsageError(f"--timeout-scale {value}: must be a positive number (e.g. 2 on a slow machine)")
    return float(value)


def _max_hangs(value: int | None) -> int:
    from conformance.errors import UsageError

    if value is None:
        return DEFAULT_MAX_HANGS
    if value < 0:
        raise UsageError(f"--max-hangs {value}: must be 0 (never stop) or more")
    return value


def pytest_configure(config: pytest.Config) -> None:
    # The one thing done in every run: properties carry an ``akc`` mark even when imported
    # outside a certification run (e.g. by the coverage gate).
    config.addinivalue_line("markers", "akc(ids, profile, capability): conformance check metadata")
    if not config.getoption("kernel", None):
        return
    from conformance.errors import UsageError

    try:
        state = build_state(config)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE_KEY] = state
    _STACK.append(state)
    if config.getoption("akc_progress", None):
        from conformance.harness.progress import ProgressWriter

        state.progress = ProgressWriter(config.getoption("akc_progress"))
    from conformance.harness import signals

    state.restore_signals = signals.install_for_session()
    from conformance.harness import bddcache

    state.restore_bdd = bddcache.install()
    skip_final_collections(config)
    state.restore_gc = fewer_young_collections()
    if state.traces_dir:
        from conformance.trace.canonical import clear_traces

        try:
            clear_traces(state.traces_dir)
        except OSError as exc:
            raise pytest.UsageError(f"--akc-traces {state.traces_dir}: not a usable folder ({exc.strerror or exc})") from None
    for tag in sorted(feature_tags() | {"smoke", *PROFILES}):
        config.addinivalue_line("markers", f"{tag}: conformance feature tag")


FEATURES_MODULE = "conformance.suite.test_features"


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None:
        drop_stale_features(state)


def drop_stale_features(state: AkcState) -> None:
    """The feature module builds the scenarios of its run's selection when it is imported
    (``--akc-req``: only those tagged with a selected id), and pytest imports a module once per
    process: a later run in the same process (``certify()`` called twice, a test session) would
    get the first run's scenarios, and "no check ran" for the others. A module built for another
    selection is dropped here, before collection, so that it is imported again for this one
    (cheaper too than deselecting from a wider one: 10 ms against 80 for a one-requirement run
    after a full one)."""
    module = sys.modules.get(FEATURES_MODULE)
    if module is None:
        return
    wanted = None if state.batch or state.req_filter is None else set(state.req_filter)
    if getattr(module, "BUILT_FOR", None) != wanted:
        del sys.modules[FEATURES_MODULE]


def skip_final_collections(config: pytest.Config) -> None:
    """pytest's unraisable-exception plugin runs full garbage collections when the session ends
    (~0.2 s of a run): whatever they would find comes after the report is made, so none."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # another pytest: it keeps its collections
        return
    config.stash[gc_collect_iterations_key] = 0


#: Allocations between two young-generation collections during a run (Python's default: 700).
YOUNG_THRESHOLD = 10_000


def fewer_young_collections() -> Any:
    """A run allocates many short-lived objects (events, dicts, models) and keeps few: with the
    default threshold the collector ran ~1,200 young collections a run (~0.3 s); with a larger
    one ~80, for ~0.1 s less. Returns the undo."""
    import gc

    previous = gc.get_threshold()
    if previous[0] == 0 or previous[0] >= YOUNG_THRESHOLD:
        return None  # disabled, or already tuned by the caller
    gc.set_threshold(YOUNG_THRESHOLD, *previous[1:])
    return lambda: gc.set_threshold(*previous)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (modules, features, items) lives until the session ends: frozen, the
    garbage collector no longer traverses it on every full collection of the run (a fifth of a
    run's CPU went to collections). Thawed when the session ends."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and state.thaw_gc is None:
        import gc

        gc.freeze()
        state.thaw_gc = gc.unfreeze


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    if state.thaw_gc is not None:
        state.thaw_gc()
        state.thaw_gc = None
    if state.restore_gc is not None:
        state.restore_gc()
        state.restore_gc = None
    if state.runner is not None:
        state.runner.stop()
        state.runner = None
    if state in _STACK:
        _STACK.remove(state)
    if state.restore_hypothesis is not None:
        state.restore_hypothesis()
        state.restore_hypothesis = None
    if state.hypothesis_dir is not None:
        import shutil

        shutil.rmtree(state.hypothesis_dir, ignore_errors=True)
        state.hypothesis_dir = None
    if state.restore_signals is not None:
        state.restore_signals()
        state.restore_signals = None
    if state.restore_bdd is not None:
        state.restore_bdd()
        state.restore_bdd = None
    if state.progress is not None:
        state.progress.close()


def freeze_hypothesis_constants() -> Any:
    """Hypothesis mixes literals from every loaded local module into the data it generates, so
    the examples a property runs (and so its trace) would depend on which modules happen to be
    imported: the adapter's, a mutant's, the caller's test session's. A certification run uses
    none, so the same kernel gets the same examples in every context. Returns the undo function
    (None when Hypothesis has no such pool)."""
    try:
        from hypothesis.internal.conjecture import providers

        original = providers._get_local_constants
        empty = providers.Constants()
        cache = providers.CONSTANTS_CACHE.cache
    except Exception:  # noqa: BLE001 - another Hypothesis version: nothing to freeze
        return None

    providers._get_local_constants = lambda: empty
    cache.clear()

    def restore() -> None:
        providers._get_local_constants = original
        cache.clear()

    return restore


def memoise_function_digest() -> Any:
    """Hypothesis hashes each property's source (``inspect.getsource``, re-tokenised) twice per
    run: for its random seed and for its database key. The digest depends on the function only,
    so it is computed once per function for the session. Returns the undo (None: not patched)."""
    try:
        from hypothesis import core
    except Exception:  # noqa: BLE001 - another Hypothesis version: nothing to memoise
        return None
    original = getattr(core, "function_digest", None)
    if original is None:
        return None
    memo: dict[Any, bytes] = {}

    def function_digest(function: Any) -> bytes:
        try:
            found = memo.get(function)
        except TypeError:  # unhashable: computed every time, as before
            return original(function)
        if found is None:
            found = memo[function] = original(function)
        return found

    core.function_digest = function_digest

    def restore() -> None:
        if core.function_digest is function_digest:
            core.function_digest = original

    return restore


# --------------------------------------------------------------------------- collection


def pytest_ignore_collect(collection_path: Any, config: pytest.Config) -> bool | None:
    """With ``--akc-req``, a property module none of whose requirements is selected is not even
    imported (importing Hypothesis is a good part of a small run's start-up)."""
    state = config.stash.get(STATE_KEY, None)
    if state is None or state.req_filter is None:
        return None
    name = getattr(collection_path, "name", "")
    if not (name.startswith("test_prop_") and name.endswith(".py")):
        return None
    ids = property_requirement_ids(collection_path)
    if ids and not ids & set(state.req_filter):
        return True
    return None


def properties_selected(suite_dir: Path, reqs: list[str]) -> bool:
    """Whether any property module of the suite checks one of ``reqs``."""
    wanted = {r.strip().upper() for r in reqs}
    return any(property_requirement_ids(p) & wanted or not property_requirement_ids(p) for p in suite_dir.glob("test_prop_*.py"))


def property_requirement_ids(path: Any) -> set[str]:
    """The requirement ids a property module names in its ``@requirement("ID", ...)`` decorators,
    read without importing it (empty when it cannot be read: then it is collected as usual)."""
    try:
        stat = Path(path).stat()
    except OSError:
        return set()
    return set(_property_requirement_ids(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=256)
def _property_requirement_ids(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    """Parsed once per process and version of the file (a ``--req`` run asks twice per module:
    to choose the plugins, then to skip the module)."""
    import ast

    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    ids: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "requirement":
            ids.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return frozenset(ids)


def item_meta(item: pytest.Item) -> ItemMeta | None:
    """Requirement ids, profile(s), scenario and feature names of a suite item (None: not ours)."""
    names = {m.name for m in item.iter_markers()}
    akc_marks = list(item.iter_markers("akc"))
    template = None
    try:
        from pytest_bdd.scenario import scenario_wrapper_template_registry

        template = scenario_wrapper_template_registry.get(getattr(item, "obj", None))
    except Exception:  # noqa: BLE001 - not a pytest-bdd item
        template = None
    if template is None and not akc_marks:
        return None
    ids = {n for n in names if REQ_ID.match(n)}
    profiles = {n for n in names if n in PROFILES}
    caps = {n[len(CAP_TAG) :] for n in names if n.startswith(CAP_TAG)}
    for mark in akc_marks:
        ids.update(mark.kwargs.get("ids", ()) or ())
        if mark.kwargs.get("profile"):
            profiles.update([mark.kwargs["profile"]] if isinstance(mark.kwargs["profile"], str) else mark.kwargs["profile"])
        if mark.kwargs.get("capability"):
            caps.add(mark.kwargs["capability"])
    if template is not None:
        scenario = template.name
        feature = template.feature.name or template.feature.rel_filename
    else:
        scenario = getattr(item, "originalname", item.name)
        feature = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else item.nodeid
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.id:
        scenario = f"{scenario} [{callspec.id}]"
    return ItemMeta(
        requirement_ids=sorted(ids),
        profiles=[p for p in PROFILES if p in profiles] or list(PROFILES),
        scenario=scenario,
        feature=feature,
        capabilities=sorted(caps),
    )


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_freeze_constants_first(config: pytest.Config) -> None:
    """Freeze Hypothesis's constant pool before Hypothesis's own plugin fills it at the end of
    collection (parsing every loaded local module: about half a second it would throw away)."""
    if _active(config) and "hypothesis" in sys.modules:  # a property was collected (else none can run)
        state = config.stash[STATE_KEY]
        if state.restore_hypothesis is None:
            undo = [u for u in (freeze_hypothesis_constants(), memoise_function_digest()) if u is not None]

            def restore() -> None:
                for u in reversed(undo):
                    u()

            state.restore_hypothesis = restore if undo else None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _active(config):
        return
    state = config.stash[STATE_KEY]
    if state.batch:
        return
    keep, dropped, not_offered = select_items(state, items)
    for item in keep:
        meta = item.stash.get(META_KEY, None)
        if meta is None or item.nodeid not in state.checks:
            continue
        if item.nodeid in not_offered:
            item.add_marker(pytest.mark.skip(reason=not_offered[item.nodeid]))
        item.user_properties.append(("requirements", " ".join(meta.requirement_ids)))
        item.user_properties.append(("scenario", meta.scenario))
        item.user_properties.append(("feature", meta.feature))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    if state.progress is not None:
        state.progress.header(state, items)
    if state.hypothesis_profile == "explore":
        _explore(state, keep)


def select_items(state: AkcState, items: list[pytest.Item]) -> tuple[list[pytest.Item], list[pytest.Item], dict[str, str]]:
    """What this run's profile, ``--req`` and smoke selection keep of ``items``: (kept, dropped,
    the kept items that are *not offered*: node id → skip reason). Gives each kept suite item
    its Check in ``state.checks``; marks nothing, so that a batch (conformance.harness.batch) can
    select anew for each job from one collection."""
    from conformance.report.verdicts import Check

    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    not_offered: dict[str, str] = {}
    declared = set(state.info.capabilities)
    for item in items:
        meta = item_meta(item)
        if meta is None:
            keep.append(item)
            continue
        if not set(meta.profiles) & set(state.profiles):
            dropped.append(item)
            continue
        if state.req_filter is not None and not set(meta.requirement_ids) & set(state.req_filter):
            dropped.append(item)
            continue
        if state.smoke and item.get_closest_marker("smoke") is None:
            dropped.append(item)
            continue
        item.stash[META_KEY] = meta
        needed = set(meta.capabilities)
        if state.catalog is not None:
            for rid in meta.requirement_ids:
                req = catalog_get(state.catalog, rid)
                if req is not None:
                    if getattr(req, "capability", None):
                        needed.add(req.capability)
                    needed.update(getattr(req, "also_requires", None) or ())
        missing = sorted(needed - declared)
        if missing:
            not_offered[item.nodeid] = f"not offered: capability {', '.join(missing)} not declared"
        state.checks[item.nodeid] = Check(
            requirement_ids=meta.requirement_ids, feature=meta.feature, scenario=meta.scenario, profiles=meta.profiles
        )
        keep.append(item)
    return keep, dropped, not_offered


def _explore(state: AkcState, items: list[pytest.Item]) -> None:
    """The explore profile: every property runs hundreds of random examples with shrinking, and a
    failure database under the run's own temp dir (not a folder shared by every run). The
    properties' own settings are swapped for this run and put back when it ends."""
    import tempfile

    from hypothesis import Phase, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    state.hypothesis_dir = tempfile.mkdtemp(prefix="akc-hypothesis-")
    database = DirectoryBasedExampleDatabase(state.hypothesis_dir)
    swapped: list[tuple[Any, Any]] = []
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if current is None:
            continue
        swapped.append((test, current))
        test._hypothesis_internal_use_settings = settings(
            current, max_examples=EXPLORE_EXAMPLES, derandomize=False, database=database, phases=tuple(Phase)
        )
    previous = state.restore_hypothesis

    def restore() -> None:
        for test, original in swapped:
            test._hypothesis_internal_use_settings = original
        if previous is not None:
            previous()

    state.restore_hypothesis = restore


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A suite module that fails to load is a harness error of the run (never a pass)."""
    if not report.failed or not _STACK:
        return
    text = (report.longreprtext or "").strip().splitlines()
    last = next((ln for ln in reversed(text) if ln.strip().startswith("E ")), text[-1] if text else "")
    _STACK[-1].collect_errors.append(f"collecting {report.nodeid or 'the suite'} failed: {last.strip().removeprefix('E').strip()}")


# --------------------------------------------------------------------------- running


@pytest.hookimpl(optionalhook=True)
def pytest_bdd_before_step_call(request: Any, feature: Any, scenario: Any, step: Any, step_func: Any, step_func_args: Any) -> None:
    """pytest-bdd never awaits async steps (an async Then would pass silently): reject them."""
    import inspect

    if inspect.iscoroutinefunction(step_func) or inspect.isasyncgenfunction(step_func):
        from conformance.errors import HarnessError

        raise HarnessError(
            f"step {step.keyword} {step.name!r} is defined with 'async def' ({step_func.__module__}.{step_func.__name__}); "
            "pytest-bdd never awaits it — write steps as plain functions"
        )
    if _active(request.config) and step.type == "then":
        state = request.config.stash[STATE_KEY]
        state.evidence_mark[request.node.nodeid] = len(state.evidence_log(request.node.nodeid))


@pytest.hookimpl(optionalhook=True)
def pytest_bdd_after_step(request: Any, feature: Any, scenario: Any, step: Any, step_func: Any, step_func_args: Any) -> None:
    """Evidence before pass: a Then step that judged nothing it had seen happen is a defect of the
    check (``error``), never a pass (see conformance.harness.evidence)."""
    if not (_active(request.config) and step.type == "then"):
        return
    state = request.config.stash[STATE_KEY]
    nodeid = request.node.nodeid
    if len(state.evidence_log(nodeid)) <= state.evidence_mark.get(nodeid, 0):
        from conformance.errors import HarnessError

        raise HarnessError(
            f"the check step 'Then {step.name}' recorded no evidence that its situation happened "
            f"({step_func.__module__}.{step_func.__name__}: a defect of the suite, not of the kernel)"
        )


@pytest.hookimpl(optionalhook=True)
def pytest_bdd_step_error(request: Any, feature: Any, scenario: Any, step: Any, step_func: Any, step_func_args: Any, exception: Any) -> None:
    if _active(request.config):
        request.config.stash[STATE_KEY].step[request.node.nodeid] = f"{step.keyword} {step.name}"


@pytest.hookimpl(optionalhook=True)
def pytest_bdd_step_func_lookup_error(request: Any, feature: Any, scenario: Any, step: Any, exception: Any) -> None:
    if _active(request.config):
        request.config.stash[STATE_KEY].step[request.node.nodeid] = f"{step.keyword} {step.name}"


def _first_line(text: str, limit: int = 1000) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def classify(report: pytest.TestReport, call: pytest.CallInfo[Any]) -> tuple[str, str | None]:
    """(outcome, message) of one phase report."""
    from conformance.errors import HarnessError, Unsupported

    if report.passed:
        return "pass", None
    if report.skipped:
        reason = ""
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2])
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith("not offered"):
            return "not-offered", reason
        if reason.startswith("blocked by "):
            return "blocked", reason
        return "incomplete", reason or "skipped"
    excinfo = call.excinfo
    if excinfo is None:
        return "error", _first_line(report.longreprtext or "failed")
    exc = excinfo.value
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if report.when != "call":
        return "error", f"{report.when} failed: {type(exc).__name__}: {_first_line(str(exc))}"
    if isinstance(exc, Unsupported):
        return "incomplete", _first_line(str(exc))
    if isinstance(exc, HarnessError):
        return "error", f"{type(exc).__name__}: {_first_line(str(exc))}"
    if isinstance(exc, (AssertionError, pytest.fail.Exception)):
        return "fail", _first_line(str(exc) or excinfo.exconly())
    if isinstance(exc, BaseExceptionGroup) and all(isinstance(e, AssertionError) for e in exc.exceptions):
        return "fail", _first_line("; ".join(str(e) for e in exc.exceptions))
    return "error", f"{type(exc).__name__}: {_first_line(str(exc))}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Know which item a scenario run belongs to; once the item is done, keep its trace."""
    state = item.config.stash.get(STATE_KEY, None)
    check = state.checks.get(item.nodeid) if state is not None else None
    if check is None:
        yield
        return
    if state.stopped is not None:
        item.session.shouldstop = state.stopped
    state.current, state.last_run = item.nodeid, None
    if state.progress is not None:
        state.progress.started(item.nodeid)
    try:
        outcome = yield
        excinfo = getattr(outcome, "excinfo", None)
        if excinfo is not None and isinstance(excinfo[1], (KeyboardInterrupt, SystemExit)):
            state.interrupted_in = f"{check.feature} / {check.scenario}"
    finally:
        if state.progress is not None:
            state.progress.ended(item.nodeid, check)
        run, state.current, state.last_run = state.last_run, None, None
        if run is not None:
            try:
                keep_trace(state, check, run)
            except Exception as exc:  # noqa: BLE001 - a trace must never break the run
                state.collect_errors.append(f"trace of {check.feature} / {check.scenario}: {type(exc).__name__}: {exc}")


def keep_trace(state: AkcState, check: Check, run: Any) -> None:
    """Build the item's canonical trace if anyone wants it: written to ``--akc-traces``, and kept
    for the JSON report when the check failed or errored."""
    failed = check.outcome in ("fail", "error")
    if not (failed or state.traces_dir):
        return
    from conformance.trace.canonical import build_trace, dump, trace_filename

    trace = build_trace(run, feature=check.feature, scenario=check.scenario, info=state.info, requirements=check.requirement_ids)
    if failed:
        state.failed_traces[(check.feature, check.scenario)] = trace
    if state.traces_dir:
        from conformance.report.writers import write_atomic

        name = trace_filename(check.feature, check.scenario)
        stem, n = name.removesuffix(".json"), 2
        while name in state.trace_names:
            name, n = f"{stem}-{n}.json", n + 1
        state.trace_names.add(name)
        write_atomic(f"{state.traces_dir}/{name}", dump(trace))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    if not _active(item.config):
        return
    state = item.config.stash[STATE_KEY]
    check = state.checks.get(item.nodeid)
    if check is None:
        return
    report: pytest.TestReport = outcome.get_result()
    from conformance.errors import Blocked, Unsupported

    fault = _innermost(call.excinfo.value) if call.excinfo is not None else None
    if isinstance(fault, Blocked) and report.when == "call":
        # Another requirement's subject did not happen: shown as a skip, counted as blocked.
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, str(fault))
    elif call.excinfo is not None and report.when == "call" and call.excinfo.errisinstance(Unsupported):
        # The adapter cannot express the scenario: shown as a skip, counted as incomplete.
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"incomplete: {call.excinfo.value}")
    result, message = classify(report, call)
    result, message = _charge_malformed(state.last_run, report, call, result, message)
    if result == "pass" and report.when != "call":
        return  # a passing setup or teardown is not a passing check: only a call that ran to its end is
    if message and result in ("fail", "error") and item.nodeid in state.step:
        message = f"{message} (at step: {state.step[item.nodeid]})"
    if report.when == "call":
        check.evidence = list(state.evidence_log(item.nodeid).lines)
        if result == "pass" and not check.evidence:
            result, message = "error", "the check passed without recording evidence that its situation happened (a defect of the suite)"
    check.worsen(
        result,
        message,
        blocked_by=getattr(fault, "by", ()) if result == "blocked" else (),
        subject=getattr(fault, "subject", ()) if result == "fail" else (),
    )


def _innermost(exc: BaseException) -> BaseException:
    """The exception a check raised, out of any one-member exception groups around it."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _charge_malformed(run: Any, report: pytest.TestReport, call: pytest.CallInfo[Any], result: str, message: str | None) -> tuple[str, str | None]:
    """A record the kernel produced held a value of the wrong type (``ScenarioRun.malformed``) and
    this check broke on it, or failed: the kernel's failure of the requirement the check reads it
    for, never an error of the suite (docs/adapter.md, "Wrong types")."""
    from conformance.errors import HarnessError

    malformed = getattr(run, "malformed", None)
    if not malformed or report.when != "call" or result not in ("fail", "error"):
        return result, message
    exc = call.excinfo.value if call.excinfo is not None else None
    if result == "error" and isinstance(exc, HarnessError):
        return result, message
    shown = "; ".join(malformed[:3]) + (f"; and {len(malformed) - 3} more" if len(malformed) > 3 else "")
    return "fail", f"the kernel produced a value of the wrong type: {shown} ({message})"


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    """Build and write the report before any other plugin's sessionfinish (the terminal summary
    and certify's collector read it), and set the exit code after all of them: another plugin
    (syrupy ORs the failed-tests status into it) must not turn an expected failure back into 1."""
    _finish(session, exitstatus)
    result = yield
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None and state.report is not None and exitstatus in (0, 1, 5):
        session.exitstatus = state.report.exit_code
    return result


def _finish(session: pytest.Session, exitstatus: int) -> None:
    if _active(session.config) and not session.config.stash[STATE_KEY].batch:
        finish_run(session, exitstatus)


def finish_run(session: pytest.Session, exitstatus: int) -> None:
    """Build the active state's report (``state.report``) and write the files asked for."""
    config = session.config
    state = config.stash[STATE_KEY]
    from conformance.report.writers import write_reports

    close = getattr(state.adapter, "aclose", None)
    finished = int(exitstatus) in (0, 1, 5) and state.stopped is None
    if finished and state.runner is not None and close is not None and getattr(state.adapter, "take_strays", None) is not None:
        try:  # stop the kernel now, reading what it still sends: a late stray is reported too
            state.runner.call(close, timeout=10)
        except BaseException:  # noqa: BLE001 - best effort: the kernel is killed at teardown anyway
            pass
        take_strays(state, state.adapter)
    # Deselected items never got a Check. An interrupted or stopped run writes an *incomplete*
    # report (its checks that did not run are not-run, never pass) so no earlier report survives.
    state.report = build_report(state)
    ended = abnormal_end(state, exitstatus)
    if ended is not None:
        code, why = ended
        state.report.errors.append(why)
        state.report.exit_code = code
    elif state.golden_dir and state.traces_dir:
        finish_golden(state)
    write_reports(
        state.report,
        json_path=config.getoption("akc_json"),
        junit_path=config.getoption("akc_junit"),
        markdown_path=config.getoption("akc_markdown"),
        expectations_path=config.getoption("akc_write_expectations", None),
        previous=state.expectations,
    )


def finish_golden(state: AkcState) -> None:
    """``--akc-golden``: compare the run's traces with the goldens (or rewrite them); a change of
    behaviour exits 4 when the run is otherwise conformant."""
    from conformance.trace.golden import EXIT_GOLDEN, compare_golden, update_golden

    partial = bool(state.req_filter or state.smoke)
    assert state.report is not None and state.golden_dir and state.traces_dir
    if state.update_golden:
        update_golden(state.traces_dir, state.golden_dir, partial=partial)
    else:
        state.golden_result = compare_golden(state.traces_dir, state.golden_dir, partial=partial)
        if state.golden_result.changed and state.report.exit_code == 0:
            state.report.exit_code = EXIT_GOLDEN
    if state.golden_scratch is not None:
        state.golden_scratch.cleanup()
        state.golden_scratch = None


def abnormal_end(state: AkcState, exitstatus: int) -> tuple[int, str] | None:
    """(exit code, why) for a session that did not run to its end; None for one that did."""
    from conformance.harness import signals

    ran = sum(1 for c in state.checks.values() if c.outcome != "not-run")
    where = f" during {state.interrupted_in}" if state.interrupted_in else ""
    if state.stopped is not None:
        return 3, f"{state.stopped} ({ran} of {len(state.checks)} checks ran)"
    if int(exitstatus) == int(pytest.ExitCode.INTERRUPTED):
        signum = signals.received() or signals.signal.SIGINT
        signals.note(signum)
        return signals.exit_code_for(signum), (
            f"interrupted by {signals.name(signum)}{where}: {ran} of {len(state.checks)} checks ran; no verdict for this run"
        )
    if int(exitstatus) not in (0, 1, 5):
        return 3, f"the test session ended abnormally (pytest exit status {int(exitstatus)}){where}; {ran} of {len(state.checks)} checks ran"
    return None


def build_report(state: AkcState) -> Report:
    """The Report of this run, from the recorded checks."""
    from conformance import __version__
    from conformance.report.model import KernelInfo, Report, SuiteInfo
    from conformance.report.verdicts import compute

    selected = state.req_filter
    if state.smoke:  # a smoke run reports only what the smoke scenarios check
        covered = {i for c in state.checks.values() for i in c.requirement_ids}
        selected = sorted(covered & set(selected)) if selected is not None else sorted(covered)
    charged = {i for c in state.checks.values() if getattr(c, "charged", False) for i in c.requirement_ids}
    if selected is not None and charged - set(selected):  # a fault is reported under the requirement it names
        selected = sorted(set(selected) | charged)
    verdicts = compute(
        state.catalog.requirements if state.catalog is not None else None,
        list(state.checks.values()),
        capabilities=state.info.capabilities,
        profiles=state.profiles,
        selected_ids=selected,
        strict=state.strict,
        mechanisms=state.info.mechanisms,
    )
    if state.failed_traces:
        for req in verdicts.requirements:
            for c in req.checks:
                if c.outcome in ("fail", "error"):
                    c.trace = state.failed_traces.get((c.feature, c.scenario))
    info = state.info
    code = verdicts.exit_code
    if getattr(state, "unreached_runs", 0) and not state.reached_calls:  # (a crashed child's state has no tally)
        state.collect_errors.insert(0, state.unreached_message())
    if state.collect_errors and code == 0:
        code = 3
    report = Report(
        suite=SuiteInfo(version=__version__, catalog_version=getattr(state.catalog, "version", None) if state.catalog else None),
        kernel=KernelInfo(
            name=info.name, version=info.version, language=info.language, profiles=list(info.profiles),
            capabilities=list(info.capabilities), readings=dict(info.readings), mechanisms=dict(info.mechanisms),
            dialects=list(getattr(info, "dialects", [])), dialects_used=sorted(getattr(state, "dialects_used", ())),
            model_api_cannot_carry=list(getattr(info, "model_api_cannot_carry", [])),
        ),
        profiles=list(state.profiles),
        requirements=verdicts.requirements,
        untestable=verdicts.untestable,
        summary=verdicts.summary,
        errors=list(state.collect_errors),
        exit_code=code,
        duration_s=round(time.perf_counter() - state.started, 3),
        selected=list(state.req_filter) if state.req_filter is not None else None,
    )
    if state.expectations is not None:
        from conformance.report.expectations import apply

        apply(report, state.expectations, strict=state.strict)
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _active(config) or config.getoption("akc_no_summary"):
        return
    state = config.stash[STATE_KEY]
    if state.report is None:
        return
    if state.report.exit_code not in (0, 1, 3, 4) or state.stopped:
        terminalreporter.section("agent kernel conformance")
        terminalreporter.write_line(state.report.errors[-1] if state.report.errors else "the run did not finish")
        return
    from conformance.report.terminal import render_table

    terminalreporter.section("agent kernel conformance")
    terminalreporter.write(render_table(state.report, all_rows=config.getoption("akc_all", False)))
    if state.golden_result is not None:
        import io

        from rich.console import Console

        from conformance.trace.golden import print_golden

        console = Console(file=io.StringIO(), width=terminalreporter._tw.fullwidth, color_system=None)
        print_golden(state.golden_result, console)
        terminalreporter.write(console.file.getvalue())  # type: ignore[attr-defined]
