"""The ``akc`` command: one typer app; each command lives in the module that owns its job.

Exit codes (documented in README.md): 0 conformant / ok, 1 a MUST failed (or a diff found),
2 usage error, 3 incomplete or harness error with no MUST failing.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="akc",
    help="Agent kernel conformance: certify an agent kernel against the seeds' requirements.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Modules that each define ``register(app)``; imported only when the command line runs.
COMMAND_MODULES = (
    "conformance.cli.catalog",
    "conformance.cli.readings",
    "conformance.cli.run",
    "conformance.cli.smoke",
    "conformance.cli.selftest",
    "conformance.cli.trace",
    "conformance.cli.model_server",
    "conformance.cli.matrix",
    "conformance.cli.book",
)

_registered = False


def _register() -> None:
    global _registered
    if _registered:
        return
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that command is not part of this build
                continue
            raise
        module.register(app)
    _registered = True


def _is_usage_error(exc: BaseException) -> bool:
    # click's UsageError (typer vendors click in recent versions, so match by class name)
    return any(cls.__name__ == "UsageError" for cls in type(exc).__mro__)


def main() -> None:
    """Run ``akc``; a usage error is one line on stderr and exit 2, never a box or a traceback."""
    _register()
    try:
        code = app(prog_name="akc", standalone_mode=False)
    except typer.Abort:
        typer.echo("akc: aborted", err=True)
        raise SystemExit(130) from None
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        message = exc.format_message()  # type: ignore[attr-defined]
        if not message:  # bare ``akc``: the help was printed, nothing more to say
            raise SystemExit(2) from None
        ctx = getattr(exc, "ctx", None)
        path = getattr(ctx, "command_path", "") or ""
        command = path.split(" ", 1)[1] if " " in path else ""
        help_hint = f"akc {command} --help" if command else "akc --help"
        typer.echo(f"akc: error: {message} (see '{help_hint}')", err=True)
        raise SystemExit(2) from None
    raise SystemExit(code if isinstance(code, int) else 0)
