"""``akc run``: certify a kernel through its adapter and print the verdict per requirement.
``akc run --smoke`` runs only the trivial @smoke scenarios: when they fail, suspect the adapter.
``akc run --traces DIR`` writes one canonical trace per scenario (``akc trace diff`` compares them).

Exit codes: 0 conformant, 1 a gating requirement failed (with ``--strict`` also a SHOULD/MAY),
2 usage error (bad flag, unknown adapter, requirement id or profile, unwritable output path),
3 blocked, incomplete or error (the circuit breaker included), 4 with ``--golden DIR`` the kernel's behaviour
differs from its goldens (and the run is otherwise conformant), 130 / 143 interrupted by SIGINT /
SIGTERM (no verdict table; the report files say "interrupted").

The suite runs in a supervised child process (:mod:`conformance.harness.supervisor`), so an
adapter that ends its process still leaves a report naming the cause.
``akc run --jobs N`` runs up to N such children at once, each on its own shard of requirements
with its own kernel instance, and merges their results into the report a serial run gives
(:mod:`conformance.harness.shards`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from conformance.harness.loading import DEFAULT_ADAPTER


def register(app: typer.Typer) -> None:
    """Add the ``run`` command to the ``akc`` app."""

    @app.command("run")
    def run(
        adapter: Annotated[str, typer.Option("--adapter", "-a", help="the kernel's adapter: pkg.module:factory (Python) or stdio:CMD (any language, docs/protocol.md)")] = DEFAULT_ADAPTER,
        profile: Annotated[str | None, typer.Option("--profile", help="kernel | commonagent | both (default: what the adapter claims)")] = None,
        req: Annotated[list[str] | None, typer.Option("--req", help="only this requirement id (repeatable)")] = None,
        json_path: Annotated[Path | None, typer.Option("--json", help="write the JSON report here")] = None,
        junit_path: Annotated[Path | None, typer.Option("--junit", help="write the JUnit XML report here")] = None,
        markdown_path: Annotated[Path | None, typer.Option("--markdown", help="write a Markdown summary here")] = None,
        traces: Annotated[Path | None, typer.Option("--traces", help="write each scenario's canonical trace to this folder (compare with akc trace diff)")] = None,
        smoke: Annotated[bool, typer.Option("--smoke", help="only the @smoke scenarios: an adapter check")] = False,
        strict: Annotated[bool, typer.Option("--strict", help="a failing SHOULD/MAY also fails the run, and so does a stale --expect entry")] = False,
        expect: Annotated[Path | None, typer.Option("--expect", help="expected failures (TOML, docs/ci.md): listed results do not fail the run, new ones do")] = None,
        write_expectations: Annotated[Path | None, typer.Option("--write-expectations", help="record this run's non-passing requirements in this TOML file (for --expect)")] = None,
        warn_changed: Annotated[bool, typer.Option("--warn-changed", help="with --expect: an expected failure that now fails in other checks or for another reason is a warning, not exit 1")] = False,
        all_rows: Annotated[bool, typer.Option("--all", help="show every requirement, not only those that do not pass")] = False,
        backend: Annotated[str, typer.Option("--backend", help="asyncio | trio")] = "asyncio",
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="show pytest's own output")] = False,
        timeout_cap: Annotated[float | None, typer.Option("--timeout-cap", help="cap every scenario's timeout (seconds)", hidden=True)] = None,
        timeout_scale: Annotated[float, typer.Option("--timeout-scale", help="multiply every scenario's timeout by this factor (slow machine or kernel: 2, 3…)")] = 1.0,
        max_hangs: Annotated[int | None, typer.Option("--max-hangs", help="stop (exit 3) after this many consecutive hung scenarios or kernel restarts (default 5; 0: never)")] = None,
        validate_protocol: Annotated[bool, typer.Option("--validate-protocol", help="stdio adapters: validate every message (docs/protocol.md)")] = False,
        hypothesis_profile: Annotated[str, typer.Option("--hypothesis-profile", help="ci (10 derandomized examples per property) | explore (hundreds, with shrinking)")] = "ci",
        jobs: Annotated[int, typer.Option("--jobs", "-j", help="run N scenarios at once, as N processes each with its own kernel instance (a stdio kernel: its own kernel process); same verdicts as a serial run (docs/ci.md)")] = 1,
        golden: Annotated[Path | None, typer.Option("--golden", help="compare every scenario's canonical trace with the goldens in DIR: a change of behaviour exits 4 (docs/ci.md)")] = None,
        update_golden: Annotated[bool, typer.Option("--update-golden", help="with --golden DIR: write this run's traces as the goldens")] = False,
        journal: Annotated[str | None, typer.Option("--journal", help="the reference kernel's journal: memory (default), sqlite or postgres (with --dsn)")] = None,
        dsn: Annotated[str | None, typer.Option("--dsn", help="with --journal postgres: the server (default: $AKC_JOURNAL_DSN)")] = None,
    ) -> None:
        """Run the conformance suite against a kernel adapter."""
        if journal is not None or dsn is not None:
            _select_journal(adapter, journal, dsn)
        if validate_protocol:  # read by conformance.wire.validate
            os.environ["AKC_VALIDATE_PROTOCOL"] = "1"
        from conformance.harness.certify import SuiteOptions
        from conformance.harness.shards import run_sharded
        from conformance.harness.supervisor import run_supervised
        from conformance.errors import UsageError
        from conformance.report.escape import terminal
        from conformance.report.terminal import print_report

        if update_golden and golden is None:
            typer.echo("akc run: --update-golden needs --golden DIR", err=True)
            raise typer.Exit(2)
        scratch = None
        if golden is not None:
            from conformance.trace.golden import check_folder

            try:
                check_folder(golden, update=update_golden)
            except UsageError as exc:
                typer.echo(f"akc run: {exc}", err=True)
                raise typer.Exit(2) from None
            if traces is None:  # the goldens are compared with this run's traces
                import tempfile

                scratch = tempfile.TemporaryDirectory(prefix="akc-golden-")
                traces = Path(scratch.name)
        options = SuiteOptions(
            adapter=adapter,
            profile=profile,
            reqs=list(req or []),
            json_path=str(json_path) if json_path else None,
            junit_path=str(junit_path) if junit_path else None,
            markdown_path=str(markdown_path) if markdown_path else None,
            strict=strict,
            smoke=smoke,
            backend=backend,
            verbose=verbose,
            timeout_cap_s=timeout_cap,
            timeout_scale=timeout_scale,
            max_hangs=max_hangs,
            traces_dir=str(traces) if traces else None,
            hypothesis_profile=hypothesis_profile,
            expect_path=str(expect) if expect else None,
            write_expectations_path=str(write_expectations) if write_expectations else None,
            warn_changed=warn_changed,
            jobs=jobs,
        )
        cores = os.cpu_count() or 1
        if jobs > cores:
            typer.echo(f"akc run: --jobs {jobs} is more than this machine's {cores} cores: each scenario gets less CPU than in a "
                       "serial run (a kernel whose time is latency still gains; a long scenario may need --timeout-scale 2)", err=True)
        try:
            result = run_supervised(options) if jobs == 1 else run_sharded(options)
        except UsageError as exc:
            typer.echo(f"akc run: {terminal(str(exc))}", err=True)
            raise typer.Exit(2) from None
        if result.report is None:
            tail = "\n".join(terminal(line) for line in result.output.strip().splitlines()[-20:])
            typer.echo(f"akc run: the suite did not produce a report (pytest exit {result.pytest_exit})\n{tail}", err=True)
            raise typer.Exit(3)
        if result.exit_code >= 128:  # interrupted: no table that could pass for a finished run
            why = result.report.errors[-1] if result.report.errors else "interrupted"
            typer.echo(f"akc run: {terminal(why)}", err=True)
            raise typer.Exit(result.exit_code)
        print_report(result.report, all_rows=all_rows)
        from conformance.report.writers import write_failed

        if write_expectations and not write_failed(result.report, "--write-expectations"):
            typer.echo(f"wrote the expectations of this run to {write_expectations}")
        code = result.exit_code
        if golden is not None and traces is not None:
            code = _golden(traces, golden, update=update_golden, partial=bool(req or smoke or profile), code=code)
        if scratch is not None:
            scratch.cleanup()
        raise typer.Exit(code)


def _select_journal(adapter: str, journal: str | None, dsn: str | None) -> None:
    """``--journal``/``--dsn``: the reference kernel's journal, passed on in the environment
    (``reference_kernel.adapter.journal_from_env``, read by every shard)."""
    if adapter != DEFAULT_ADAPTER:
        typer.echo("akc run: --journal and --dsn choose the reference kernel's journal; another adapter chooses its own", err=True)
        raise typer.Exit(2)
    if journal not in (None, "memory", "sqlite", "postgres"):
        typer.echo(f"akc run: unknown --journal {journal!r} (memory, sqlite or postgres)", err=True)
        raise typer.Exit(2)
    if dsn:
        os.environ["AKC_JOURNAL_DSN"] = dsn
    if journal == "postgres" and not os.environ.get("AKC_JOURNAL_DSN"):
        typer.echo("akc run: --journal postgres needs --dsn (or $AKC_JOURNAL_DSN)", err=True)
        raise typer.Exit(2)
    os.environ["AKC_JOURNAL"] = journal or "postgres"


def _golden(traces: Path, golden: Path, *, update: bool, partial: bool, code: int) -> int:
    """Compare the run's traces with (or write them as) the goldens; the exit code after it: a
    change of behaviour is 4 when the run is otherwise conformant (a failure keeps its own code)."""
    from conformance.trace.golden import EXIT_GOLDEN, compare_golden, print_golden, update_golden

    if update:
        written, removed = update_golden(traces, golden, partial=partial)
        typer.echo(f"golden: wrote {written} scenario traces to {golden}" + (f", removed {removed} stale" if removed else ""))
        return code
    result = compare_golden(traces, golden, partial=partial)
    print_golden(result)
    return EXIT_GOLDEN if result.changed and code == 0 else code
