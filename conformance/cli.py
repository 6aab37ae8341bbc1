"""The ``akc`` command: one typer app; each command lives in the module that owns its job.

Exit codes (documented in README.md): 0 conformant / ok, 1 a MUST failed (or a diff found),
2 usage error, 3 incomplete or harness error with no MUST failing.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="akc",
    help="Agent kernel conformance: certify an agent kernel against the seeds' requirements.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Imported here so that each command module stays independent of the others.
    from conformance import cli_catalog

    cli_catalog.register(app)
    try:
        from conformance import cli_run
    except ImportError:  # pragma: no cover - until the runner lands
        return
    cli_run.register(app)


def main() -> None:
    _register()
    app()
