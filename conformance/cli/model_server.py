"""``akc model-server``: serve a model script on 127.0.0.1 in the three dialects of the served model.

A thin front over ``conformance.httpmodel.standalone`` (the harness's own host and model double).
The first line on stdout is the OpenAI base URL (ending in ``/v1``) so a wrapper script can read
it; the Anthropic and Responses base URLs and the API key follow on stderr. It runs until
interrupted. Under ``akc run`` a kernel needs none of this: the harness serves each scenario's
model itself (docs/http-kernels.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

DEFAULT_KEY = "akc-model-server"


def register(app: typer.Typer) -> None:
    """Add the ``model-server`` command to the ``akc`` app."""

    @app.command("model-server")
    def model_server(
        script: Annotated[Path, typer.Option("--script", help="model script: a JSON list of responses, a model or a scenario")],
        port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: any free port)")] = 0,
        host: Annotated[str, typer.Option("--host", help="loopback address to bind (127.0.0.1, ::1)")] = "127.0.0.1",
        record: Annotated[Path | None, typer.Option("--record", help="append every model request here as JSON lines")] = None,
        api_key: Annotated[str, typer.Option("--api-key", help="the key clients must send")] = DEFAULT_KEY,
    ) -> None:
        """Serve a scripted model: /v1/chat/completions, /v1/responses, /v1/messages (JSON or SSE)."""
        import anyio

        from conformance.httpmodel import ScriptError, load_script
        from conformance.httpmodel.host import HttpModel, is_loopback
        from conformance.httpmodel.standalone import serve

        try:
            model = load_script(script)
        except ScriptError as exc:
            typer.echo(f"akc model-server: {exc}", err=True)
            raise typer.Exit(2) from None
        if not is_loopback(host):
            typer.echo(f"akc model-server: --host: {host!r} is not a loopback address", err=True)
            raise typer.Exit(2)
        if record is not None:
            try:
                record.write_text("", encoding="utf-8")
            except OSError as exc:
                typer.echo(f"akc model-server: --record {record}: {exc.strerror or exc}", err=True)
                raise typer.Exit(2) from None

        def ready(served: HttpModel) -> None:
            typer.echo(served.base_url("openai-chat"))
            sys.stdout.flush()  # a wrapper reads the URL from a pipe
            typer.echo(f"anthropic: {served.base_url('anthropic')}\nopenai-responses: {served.base_url('openai-responses')}\n"
                       f"API key: {api_key}\nserving {len(model.responses)} scripted response(s) as {model.name!r}; Ctrl-C stops", err=True)

        try:
            anyio.run(lambda: serve(model, host=host, port=port, record=record, api_key=api_key, ready=ready))
        except KeyboardInterrupt:
            pass
        except OSError as exc:
            typer.echo(f"akc model-server: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
