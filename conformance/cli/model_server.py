"""``akc model-server``: serve a model script as an OpenAI-compatible endpoint on 127.0.0.1.

For kernels that call a model API over HTTP. The first line on stdout is the base URL (ending in
``/v1``) so a wrapper script can read it; the server runs until interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``model-server`` command to the ``akc`` app."""

    @app.command("model-server")
    def model_server(
        script: Annotated[Path, typer.Option("--script", help="model script: a JSON list of responses, a model or a scenario")],
        port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: any free port)")] = 0,
        host: Annotated[str, typer.Option("--host", help="loopback address to bind")] = "127.0.0.1",
        record: Annotated[Path | None, typer.Option("--record", help="append every request here as JSON lines")] = None,
    ) -> None:
        """Serve a scripted model: POST /v1/chat/completions (JSON or SSE), GET /v1/models."""
        from conformance.httpmodel import ModelServer, ScriptedEndpoint, ScriptError, load_script

        try:
            endpoint = ScriptedEndpoint(load_script(script), record=record)
        except ScriptError as exc:
            typer.echo(f"akc model-server: {exc}", err=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            typer.echo(f"akc model-server: --record {record}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
        try:
            server = ModelServer(endpoint, host=host, port=port)
        except ValueError as exc:
            typer.echo(f"akc model-server: --host: {exc}", err=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            typer.echo(f"akc model-server: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
        typer.echo(server.base_url)
        sys.stdout.flush()  # a wrapper reads the URL from a pipe
        typer.echo(f"serving {endpoint.scripted_calls} scripted model call(s) as {endpoint.model!r}; Ctrl-C stops", err=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
