"""``akc smoke``: does the *adapter* work? Runs only the trivial @smoke scenarios.

A failing smoke run points at the adapter or basic kernel behaviour (wiring, protocol, result shape,
the simplest loop): the smoke scenarios are the simplest things every kernel does.

Exit codes: 0 the adapter works, 1 a smoke scenario did not pass (what broke is printed),
2 usage error (bad spec, the adapter cannot be loaded, a refused protocol version).
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from conformance.harness.loading import DEFAULT_ADAPTER


def register(app: typer.Typer) -> None:
    """Add the ``smoke`` command to the ``akc`` app."""

    @app.command("smoke")
    def smoke(
        adapter: Annotated[str, typer.Option("--adapter", "-a", help="pkg.mod:factory or 'stdio:COMMAND ARGS…'")] = DEFAULT_ADAPTER,
        profile: Annotated[str | None, typer.Option("--profile", help="kernel | commonagent | both")] = None,
        backend: Annotated[str, typer.Option("--backend", help="asyncio | trio")] = "asyncio",
        validate_protocol: Annotated[bool, typer.Option("--validate-protocol", help="stdio: validate every message against schemas/protocol/")] = False,
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="show pytest's own output")] = False,
    ) -> None:
        """Check that an adapter works, with a handful of trivial scenarios."""
        from conformance.harness.certify import SuiteOptions, run_suite
        from conformance.errors import UsageError
        from conformance.report.model import explanation

        if validate_protocol:
            os.environ["AKC_VALIDATE_PROTOCOL"] = "1"
        try:
            result = run_suite(SuiteOptions(adapter=adapter, profile=profile, backend=backend, smoke=True, verbose=verbose))
        except UsageError as exc:
            typer.echo(f"akc smoke: {exc}", err=True)
            raise typer.Exit(2) from None
        report = result.report
        if report is None:
            tail = "\n".join(result.output.strip().splitlines()[-20:])
            typer.echo(f"akc smoke: the smoke run produced no report (pytest exit {result.pytest_exit})\n{tail}", err=True)
            raise typer.Exit(1)
        bad = [r for r in report.requirements if r.verdict not in ("pass", "not-offered", "not-applicable")]
        checks = sum(len(r.checks) for r in report.requirements)
        if not bad and not report.errors and report.requirements:
            typer.echo(
                f"adapter works: {report.kernel.name} {report.kernel.version} passed {checks} smoke check(s) "
                f"({', '.join(report.profiles)})"
            )
            raise typer.Exit(0)
        from conformance.harness.plugin import UNREACHED

        unreached = next((e for e in report.errors if UNREACHED in e), None)
        if unreached is not None:  # one fault: every smoke check failed for it
            typer.echo(f"adapter does not work: {unreached.removeprefix('stopped: ')}")
            raise typer.Exit(1)
        typer.echo(f"adapter does not work: {len(bad)} smoke requirement(s) did not pass — suspect the adapter or basic kernel behaviour before reading the full suite's verdicts")
        for r in bad:
            typer.echo(f"  {r.id} {r.verdict}: {explanation(r)}")
        for e in report.errors:
            typer.echo(f"  harness: {e}")
        if not report.requirements:
            typer.echo("  no smoke scenario ran for the profiles this adapter claims")
        raise typer.Exit(1)
