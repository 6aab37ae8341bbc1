"""Run the conformance suite in-process and get the Report: the engine behind ``akc run`` and
:func:`certify` (the function kit a kernel author can call from their own tests).

Both call ``pytest.main`` on ``conformance.suite`` with the suite's own ini file (so the user's
pytest configuration does not leak in) and the ``akc`` plugin options, and collect the Report
the plugin builds at session end through a small collector plugin.

Inside a running pytest session (a kernel author's ``test_conformance.py``), :func:`certify`
still runs the inner session in-process: pytest supports nested ``pytest.main`` calls (its own
``pytester.inline_run`` does this), the plugin keeps its state per config, and the inner
session's output is captured. Usage errors raise :class:`~conformance.errors.UsageError`.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import sys
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import UsageError
from conformance.harness.loading import DEFAULT_ADAPTER, adapter_info, check_adapter, load_adapter, register_scheme
from conformance.report.model import Report

SUITE_DIR = Path(__file__).resolve().parent.parent / "suite"
SUITE_INI = SUITE_DIR / "pytest.ini"
BACKENDS = ("asyncio", "trio")

# In-process adapters handed to certify() as objects are reached through an "object:<n>" spec.
_OBJECTS: dict[str, Any] = {}
_COUNTER = itertools.count(1)


def _load_object(token: str) -> Any:
    target = _OBJECTS.get(token)
    if target is None:
        raise UsageError(f"no in-process adapter registered as object:{token}")
    if isinstance(target, type) or (callable(target) and not hasattr(target, "run")):
        return target()
    return target


register_scheme("object", _load_object)


@dataclass
class SuiteOptions:
    adapter: str = DEFAULT_ADAPTER
    profile: str | None = None
    reqs: list[str] = field(default_factory=list)
    json_path: str | None = None
    junit_path: str | None = None
    markdown_path: str | None = None
    strict: bool = False
    backend: str = "asyncio"
    verbose: bool = False
    timeout_cap_s: float | None = None
    #: Multiply every scenario's timeout (``--timeout-scale``).
    timeout_scale: float = 1.0
    #: The circuit breaker (``--max-hangs``; None: the plugin's default).
    max_hangs: int | None = None
    smoke: bool = False
    #: Write each scenario's canonical trace into this folder (``--akc-traces``).
    traces_dir: str | None = None
    #: ``ci`` (10 derandomized examples per property) or ``explore`` (hundreds, shrinking on).
    hypothesis_profile: str = "ci"
    #: ``--expect`` / ``--write-expectations``: expected failures read from / written to this TOML file.
    expect_path: str | None = None
    write_expectations_path: str | None = None
    #: ``--warn-changed``: an expected failure failing for another reason only warns.
    warn_changed: bool = False
    extra_args: list[str] = field(default_factory=list)
    #: ``--jobs``: scenarios in flight at once, as that many supervised processes
    #: (:mod:`conformance.harness.shards`); 1 is the one supervised child of old.
    jobs: int = 1


@dataclass
class SuiteRun:
    report: Report | None
    exit_code: int
    #: pytest's own output (captured unless verbose).
    output: str = ""
    pytest_exit: int = 0
    #: The plugin's session state (its checks, harness errors…): what a shard hands back to be
    #: merged with the others (:mod:`conformance.harness.shards`). None without a report.
    state: Any = None


def _plugin_autoloaded() -> bool:
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    try:
        eps = metadata.entry_points(group="pytest11")
    except Exception:  # noqa: BLE001
        return False
    return any(ep.value.startswith("conformance.harness.plugin") for ep in eps)


@dataclass
class Prepared:
    """What validation learnt: the adapter's info and the profiles the run covers."""

    info: Any
    profiles: list[str]
    started: float


def prepare(options: SuiteOptions) -> Prepared:
    """Validate (UsageError, one line), then clear the report paths so that no earlier run's
    report survives a run that fails or is interrupted."""
    import time

    from conformance.harness import signals
    from conformance.harness.outputs import remove_stale

    started = time.perf_counter()
    for path in (options.json_path, options.junit_path, options.markdown_path):
        if path:
            remove_stale(path)
    signals.run_began()
    info, profiles = validate(options)
    return Prepared(info=info, profiles=profiles, started=started)


def validate(options: SuiteOptions) -> tuple[Any, list[str]]:
    """Check everything that makes a usage error before any scenario runs (one-line errors);
    returns the adapter's info and the profiles to run."""
    from conformance.harness.outputs import check_output_paths
    from conformance.harness.plugin import HYPOTHESIS_PROFILES, PROFILES, REQ_ID, catalog_get, load_catalog_or_none, parse_profile

    if options.backend not in BACKENDS:
        raise UsageError(f"unknown backend {options.backend!r} (use asyncio or trio)")
    if options.hypothesis_profile not in HYPOTHESIS_PROFILES:
        raise UsageError(f"unknown hypothesis profile {options.hypothesis_profile!r} (use {' or '.join(HYPOTHESIS_PROFILES)})")
    wanted = parse_profile(options.profile)
    bad = [r for r in options.reqs if not REQ_ID.match(r.strip().upper())]
    if bad:
        raise UsageError(f"not a requirement id: {', '.join(bad)} (expected e.g. LOOP-001)")
    catalog = load_catalog_or_none()
    if catalog is not None:
        unknown = [r for r in options.reqs if catalog_get(catalog, r.strip().upper()) is None]
        if unknown:
            raise UsageError(f"unknown requirement id(s): {', '.join(unknown)}")
    if options.expect_path:
        from conformance.report.expectations import load as load_expectations

        load_expectations(options.expect_path, catalog.ids() if catalog is not None else None)
    check_output_paths(json=options.json_path, junit=options.junit_path, markdown=options.markdown_path, traces=options.traces_dir,
                       expectations=options.write_expectations_path)
    if not options.timeout_scale > 0 or options.timeout_scale == float("inf"):
        raise UsageError(f"--timeout-scale {options.timeout_scale}: must be a positive number (e.g. 2 on a slow machine)")
    if options.jobs < 1:
        raise UsageError(f"--jobs {options.jobs}: must be 1 (one scenario at a time) or more")
    if options.max_hangs is not None and options.max_hangs < 0:
        raise UsageError(f"--max-hangs {options.max_hangs}: must be 0 (never stop) or more")
    adapter = load_adapter(options.adapter)
    info = adapter_info(adapter)
    claimed = [p for p in PROFILES if p in info.profiles]
    if not claimed:
        raise UsageError(f"adapter {options.adapter!r} claims no profile (AdapterInfo.profiles is empty)")
    if wanted is not None and not set(wanted) & set(claimed):
        raise UsageError(
            f"adapter {options.adapter!r} does not claim the {' or '.join(wanted)} profile (it claims {', '.join(claimed) or 'none'})"
        )
    return info, [p for p in claimed if wanted is None or p in wanted]


def pytest_args(options: SuiteOptions) -> list[str]:
    """The pytest command line for this run."""
    args = [
        "--pyargs",
        "conformance.suite",
        "-c",
        str(SUITE_INI),
        "--rootdir",
        str(SUITE_DIR),
        "-p",
        "no:cacheprovider",
        "-q" if not options.verbose else "-v",
        "--kernel",
        options.adapter,
        "--akc-backend",
        options.backend,
        "--akc-no-summary",
        "--continue-on-collection-errors",
        # The steps raise their own failures (ConformanceFailure with expected and observed), so
        # pytest's assertion rewriting of every plugin module is pure start-up cost (~19% CPU).
        "--assert=plain",
        # Test-suite plugins the conformance suite does not use (their imports cost start-up).
        "-p",
        "no:respx",
        "-p",
        "no:syrupy",
        # anyio's pytest plugin (for async tests; the suite has none: the harness runs its own
        # event loop) imports every installed backend, trio included, when it loads.
        "-p",
        "no:anyio",
    ]
    if not options.verbose:
        # The verdicts' messages come from the exceptions themselves, and the captured output is
        # not shown: pytest's own tracebacks (re-parsing each frame's module) were most of the
        # cost of a run with many failures (a do-nothing kernel: 30 s of 34).
        args.append("--tb=native")
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "pytest_bdd.plugin"]
    if not _plugin_autoloaded():
        args += ["-p", "conformance.harness.plugin"]
    if options.reqs:
        from conformance.harness.plugin import properties_selected

        if not properties_selected(SUITE_DIR, options.reqs):
            # No property will be collected: Hypothesis's own plugin would still import it.
            args += ["-p", "no:hypothesispytest"]
    if options.profile:
        args += ["--akc-profile", options.profile]
    for r in options.reqs:
        args += ["--akc-req", r.strip().upper()]
    if options.json_path:
        args += ["--akc-json", str(options.json_path)]
    if options.junit_path:
        args += ["--akc-junit", str(options.junit_path)]
    if options.markdown_path:
        args += ["--akc-markdown", str(options.markdown_path)]
    if options.strict:
        args.append("--akc-strict")
    if options.smoke:
        args.append("--akc-smoke")
    if options.timeout_cap_s is not None:
        args += ["--akc-timeout-cap", str(options.timeout_cap_s)]
    if options.hypothesis_profile != "ci":
        args += ["--akc-hypothesis-profile", options.hypothesis_profile]
    if options.timeout_scale != 1.0:
        args += ["--akc-timeout-scale", str(options.timeout_scale)]
    if options.max_hangs is not None:
        args += ["--akc-max-hangs", str(options.max_hangs)]
    if options.traces_dir:
        args += ["--akc-traces", str(options.traces_dir)]
    if options.expect_path:
        args += ["--akc-expect", str(options.expect_path)]
        if options.warn_changed:
            args.append("--akc-warn-changed")
    if options.write_expectations_path:
        args += ["--akc-write-expectations", str(options.write_expectations_path)]
    return args + list(options.extra_args)


class _Collector:
    """Receives the Report the akc plugin built at the end of the session."""

    def __init__(self) -> None:
        self.report: Report | None = None
        self.state: Any = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from conformance.harness.plugin import STATE_KEY

        state = session.config.stash.get(STATE_KEY, None)
        self.report = state.report if state is not None else None
        self.state = state


def hypothesis_storage(stack: contextlib.ExitStack, backend: str = "asyncio") -> None:
    """Hypothesis keeps an example database: in this run's own temp folder (unless the user chose
    one), never in the working directory nor in a folder shared by every run on the machine."""
    if backend != "trio" and "HYPOTHESIS_NO_PLUGINS" not in os.environ and "hypothesis" not in sys.modules:
        # Hypothesis loads its plugins when imported: trio's (installed with trio) only makes
        # trio's scheduling deterministic, and costs importing trio plus a full garbage collection.
        os.environ["HYPOTHESIS_NO_PLUGINS"] = "1"
        stack.callback(os.environ.pop, "HYPOTHESIS_NO_PLUGINS", None)
    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="akc-hypothesis-"))
        share_unicode_table(Path(tmp))
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = tmp
        stack.callback(os.environ.pop, "HYPOTHESIS_STORAGE_DIRECTORY", None)


def share_unicode_table(storage: Path) -> None:
    """Hypothesis caches its table of Unicode categories (a scan of every code point, ~0.2 s) in
    its storage folder; that table holds nothing of a run (it depends on the Unicode version
    only), so a run's own folder links to one kept in the user's cache folder
    (``$XDG_CACHE_HOME/akc``) instead of building it anew every run. The example database stays
    in the run's folder."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    shared = Path(base) / "akc" / "hypothesis-unicode"
    try:
        shared.mkdir(parents=True, exist_ok=True)
        (storage / "unicode_data").symlink_to(shared, target_is_directory=True)
    except OSError:
        pass  # built in the run's folder, as before


def run_suite(options: SuiteOptions, *, prepared: Prepared | None = None) -> SuiteRun:
    """Validate, run the suite in-process, return the Report and the exit code (130/143 for a
    run interrupted by SIGINT/SIGTERM, with an incomplete report).

    Raises UsageError for usage errors (exit code 2 for the CLI).
    """
    if prepared is None:
        prepare(options)
    collector = _Collector()
    args = pytest_args(options)
    buffer = io.StringIO()
    with contextlib.ExitStack() as stack:
        hypothesis_storage(stack, options.backend)
        if options.verbose:
            code = pytest.main(args, plugins=[collector])
        else:
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                code = pytest.main(args, plugins=[collector])
    output = buffer.getvalue()
    if collector.report is None:
        if int(code) == int(pytest.ExitCode.USAGE_ERROR):
            line = next((ln for ln in output.splitlines() if ln.startswith("ERROR:")), "pytest usage error")
            raise UsageError(line.removeprefix("ERROR: ").strip())
        return SuiteRun(report=None, exit_code=3, output=output, pytest_exit=int(code))
    return SuiteRun(report=collector.report, exit_code=collector.report.exit_code, output=output, pytest_exit=int(code), state=collector.state)


def certify(
    factory_or_spec: str | Callable[[], Any] | Any,
    profile: str | None = None,
    reqs: Sequence[str] | None = None,
    *,
    strict: bool = False,
    backend: str = "asyncio",
    json_path: str | None = None,
    junit_path: str | None = None,
    markdown_path: str | None = None,
    timeout_cap_s: float | None = None,
    smoke: bool = False,
    traces_dir: str | None = None,
    expect: str | None = None,
    pytest_args: Sequence[str] = (),
) -> Report:
    """Certify a kernel and return the Report (``report.exit_code``, ``report.verdicts()``).

    ``factory_or_spec`` is a ``"pkg.mod:factory"`` spec, a factory (a callable returning an
    adapter), or an adapter object. ``smoke=True`` runs only the @smoke scenarios (and reports
    only their requirements); ``expect`` is an expectations file (known failures do not fail
    the run, see docs/ci.md); ``traces_dir`` receives one canonical trace per scenario; ``pytest_args`` are passed on (e.g. ``["-k", "cancel"]``). Usable from a kernel author's own pytest run::

        def test_conformance():
            report = conformance.certify(my_kernel.adapter_factory, profile="kernel")
            assert report.exit_code == 0, report.failing()
    """
    token: str | None = None
    if isinstance(factory_or_spec, str):
        spec = factory_or_spec
    else:
        token = str(next(_COUNTER))
        if hasattr(factory_or_spec, "run") and hasattr(factory_or_spec, "info"):
            check_adapter(factory_or_spec, "object")
        _OBJECTS[token] = factory_or_spec
        spec = f"object:{token}"
    try:
        run = run_suite(
            SuiteOptions(
                adapter=spec,
                profile=profile,
                reqs=list(reqs or []),
                strict=strict,
                backend=backend,
                json_path=json_path,
                junit_path=junit_path,
                markdown_path=markdown_path,
                timeout_cap_s=timeout_cap_s,
                smoke=smoke,
                traces_dir=str(traces_dir) if traces_dir else None,
                expect_path=str(expect) if expect else None,
                extra_args=list(pytest_args),
            )
        )
    finally:
        if token is not None:
            _OBJECTS.pop(token, None)
    if run.report is None:
        from conformance.errors import HarnessError

        tail = "\n".join(run.output.strip().splitlines()[-15:])
        raise HarnessError(f"the conformance run produced no report (pytest exit {run.pytest_exit}):\n{tail}")
    return run.report
