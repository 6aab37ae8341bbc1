"""The ``akc`` command: one typer app; each command lives in the module that owns its job.

Exit codes (documented in README.md): 0 conformant / ok, 1 a MUST failed (or a diff found),
2 usage error, 3 blocked, incomplete or harness error with no MUST failing.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

from conformance.harness import signals


def _take_signals(handler: object = signals.early_handler) -> None:
    """From here on a SIGINT or SIGTERM is an interruption main() reports in one line (exit
    130/143), never a traceback nor a default death that leaves an earlier run's report in place;
    a run installs its own handlers later (conformance.harness.signals, .supervisor)."""
    for signum in signals.SIGNALS:
        try:
            signal.signal(signum, handler)  # type: ignore[arg-type]
        except ValueError:  # not the main thread: leave them be
            return


if os.path.basename(sys.argv[0]) in ("akc", "__main__.py"):  # the program itself: before typer's imports
    _take_signals(signals.early_note)

import typer  # noqa: E402

app = typer.Typer(
    name="akc",
    help="Agent kernel conformance: certify an agent kernel against the seeds' requirements.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Which module defines each command (each module has ``register(app)``): ``akc run ...`` imports
#: only conformance.cli.run (the others pull in rich tables, the catalog and the selftest machinery
#: for nothing). The one table of commands.
COMMANDS = {
    "list": "conformance.cli.catalog",
    "show": "conformance.cli.catalog",
    "schemas": "conformance.cli.catalog",
    "readings": "conformance.cli.readings",
    "run": "conformance.cli.run",
    "journal": "conformance.cli.journal",
    "smoke": "conformance.cli.smoke",
    "selftest": "conformance.cli.selftest",
    "trace": "conformance.cli.trace",
    "model-server": "conformance.cli.model_server",
    "matrix": "conformance.cli.matrix",
    "book": "conformance.cli.book",
}
#: The command modules, each once, in the order of the table.
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
#: Flags people try from other tools, and the one that does the job here.
SYNONYMS = {"--kernel": "--adapter", "--expected-failures": "--expect", "--version": "akc --version"}

_registered = False


def _version(value: bool) -> None:
    if value:
        from conformance import __version__

        typer.echo(f"akc {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="print akc's version and exit", is_eager=True, callback=_version),
) -> None:
    """Agent kernel conformance: certify an agent kernel against the seeds' requirements."""


def _register(argv: list[str] | None = None) -> None:
    global _registered
    if _registered:
        return
    wanted = COMMANDS.get(argv[0]) if argv else None
    for name in (wanted,) if wanted else COMMAND_MODULES:
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


def _message(exc: BaseException) -> str:
    """The usage error's message; for an unknown flag, suggest only a flag that looks like it."""
    if type(exc).__name__ != "NoSuchOption":
        return exc.format_message()  # type: ignore[attr-defined]
    import difflib

    name = getattr(exc, "option_name", "")
    close = [p for p in getattr(exc, "possibilities", None) or []
             if p.startswith(name) or name.startswith(p) or difflib.SequenceMatcher(None, name, p).ratio() >= 0.8]
    hint = SYNONYMS.get(name)
    if hint and hint not in close:
        close.insert(0, hint)
    return f"no such option: {name}" + (f" (did you mean {' or '.join(close)}?)" if close else "")


def _interrupted(argv: list[str]) -> SystemExit:
    """A signal the start-up handler caught: one line, exit 128 + the signal. Before a run
    cleared its report paths, ``akc run``'s are removed (no earlier run's report may stay)."""
    signum = signals.early() or signals.received() or signal.SIGINT
    if not signals.began():
        if argv[:1] == ["run"]:
            from conformance.harness.outputs import remove_stale

            for i, arg in enumerate(argv):
                flag, _, value = arg.partition("=")
                if flag in ("--json", "--junit", "--markdown"):
                    path = value or (argv[i + 1] if i + 1 < len(argv) else "")
                    if path:
                        remove_stale(path)
        print(f"akc: interrupted by {signals.name(signum)} before the run started; no report was written", file=sys.stderr)
    else:
        print(f"akc: interrupted by {signals.name(signum)}", file=sys.stderr)
    return SystemExit(signals.exit_code_for(signum))


def main() -> None:
    """Run ``akc``; a usage error is one line on stderr and exit 2, never a box or a traceback."""
    previous = {s: signal.getsignal(s) for s in signals.SIGNALS}
    _take_signals()
    try:
        if signals.early() is not None:  # it came while akc's modules were importing
            raise _interrupted(sys.argv[1:])
        _main()
    except KeyboardInterrupt:
        raise _interrupted(sys.argv[1:]) from None
    finally:  # a caller in this process (a test) gets its own handlers back, and a fresh start
        signals.cli_ended()
        for s, handler in previous.items():
            try:
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)
            except ValueError:
                break


def _main() -> None:
    _register(sys.argv[1:])
    try:
        code = app(prog_name="akc", standalone_mode=False)
        if signals.early() is not None:  # typer turned the start-up handler's interruption into 130
            raise _interrupted(sys.argv[1:])
    except typer.Abort:
        typer.echo("akc: aborted", err=True)
        raise SystemExit(130) from None
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        message = _message(exc)
        if not message:  # bare ``akc``: the help was printed, nothing more to say
            raise SystemExit(2) from None
        ctx = getattr(exc, "ctx", None)
        path = getattr(ctx, "command_path", "") or ""
        command = path.split(" ", 1)[1] if " " in path else ""
        help_hint = f"akc {command} --help" if command else "akc --help"
        typer.echo(f"akc: error: {message} (see '{help_hint}')", err=True)
        raise SystemExit(2) from None
    raise SystemExit(code if isinstance(code, int) else 0)
