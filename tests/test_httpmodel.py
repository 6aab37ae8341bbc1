"""The reference kernel's OpenAI-compatible provider (plain httpx) against the served model: the
chunks it reads back are the in-process model double's, the requests the double logs are the ones
it was asked to send, and ``akc model-server`` serves a script through the same host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from conformance.boundary.scenario import ModelDef, Scenario
from conformance.harness.doubles import HarnessDoubles
from conformance.httpmodel import ModelHost, ScriptError, load_script
from conformance.httpmodel.openai_chat import request as from_chat_request
from reference_kernel.errors import ProviderError
from reference_kernel.providers import OpenAICompatProvider

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "fixtures" / "model-scripts"

REQUEST = {
    "messages": [
        {"role": "system", "text": "You are a test agent."},
        {"role": "user", "text": "Do I need an umbrella?"},
    ],
    "tools": [{"name": "weather", "description": "Weather by city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "params": {"temperature": 0},
}
FOLLOW_UP = {
    "messages": REQUEST["messages"] + [
        {"role": "assistant", "text": "Let me check the weather.",
         "tool_calls": [{"id": "call_weather", "name": "weather", "args": {"city": "Charleston"}}]},
        {"role": "tool_result", "call_id": "call_weather", "content": "18°C, light rain", "is_error": False},
    ],
    "tools": REQUEST["tools"],
    "params": {"temperature": 0},
}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@asynccontextmanager
async def serve(script: Any) -> AsyncIterator[tuple[str, HarnessDoubles]]:
    """(OpenAI base URL, doubles) of ``script`` served by a host of its own."""
    model = script if isinstance(script, ModelDef) else load_script(script)
    doubles = HarnessDoubles(Scenario(name="x", profile="kernel", model=model))
    async with anyio.create_task_group() as tg:
        host = await tg.start(ModelHost(api_key="sk-test").serve)
        served = host.open(doubles)
        yield served.base_url("openai-chat"), doubles
        tg.cancel_scope.cancel()


def requests_of(doubles: HarnessDoubles) -> list[dict]:
    return [dict(e["request"], messages=list(e["request"]["messages"])) for e in doubles.log.of("model_request")]


@asynccontextmanager
async def provider_for(base_url: str) -> AsyncIterator[OpenAICompatProvider]:
    # trust_env=False: a proxy from the environment must not see loopback traffic.
    async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
        yield OpenAICompatProvider(base_url, "sk-test", "gpt-test", client=client)


async def collect(provider: OpenAICompatProvider, request: dict) -> list[dict]:
    return [chunk async for chunk in provider.stream(request)]


async def in_process_chunks(model: ModelDef, calls: int) -> list[list[dict]]:
    """What the in-process scripted model streams for the same script."""
    doubles = HarnessDoubles(Scenario(name="x", profile="kernel", model=model))
    return [[c async for c in doubles.model_stream({"messages": []}, {})] for _ in range(calls)]


def strip_is_error(request: dict) -> dict:
    """``is_error`` of a tool result does not travel over chat completions."""
    msgs = [{k: v for k, v in m.items() if k != "is_error"} for m in request["messages"]]
    return {**request, "messages": msgs}


# --------------------------------------------------------------------------- streaming


@pytest.mark.anyio
async def test_provider_reads_the_in_process_chunks_and_the_double_logs_its_requests() -> None:
    model = load_script(SCRIPTS / "weather.json")
    async with serve(model) as (url, doubles):
        async with provider_for(url) as provider:
            chunks = [await collect(provider, REQUEST), await collect(provider, FOLLOW_UP)]
    assert chunks == await in_process_chunks(model, 2)
    assert [c["type"] for c in chunks[0]] == ["text", "text", "text", "tool_use", "usage"]
    assert chunks[0][3] == {"type": "tool_use", "id": "call_weather", "name": "weather",
                            "input_json": '{"city": "Charleston"}'}
    assert chunks[0][4] == {"type": "usage", "input_tokens": 120, "output_tokens": 18, "cached_input_tokens": 80}
    # What the double logged, is the request the provider was asked to send (less what the dialect cannot carry).
    assert requests_of(doubles) == [
        {**strip_is_error(REQUEST), "params": {"temperature": 0}},
        {**strip_is_error(FOLLOW_UP), "params": {"temperature": 0}},
    ]


@pytest.mark.anyio
async def test_repeat_ids_and_exhaustion_are_the_model_doubles() -> None:
    model = ModelDef.model_validate({"responses": [
        {"tool_calls": [{"name": "search", "args": {"q": "x"}}, {"id": "k", "name": "search", "raw_args": "{bad"}],
         "repeat": 2, "usage": {"input_tokens": 3, "output_tokens": 1}},
    ]})
    async with serve(model) as (url, doubles):
        async with provider_for(url) as provider:
            chunks = [await collect(provider, REQUEST) for _ in range(3)]
    assert chunks == await in_process_chunks(model, 3)
    assert [c["id"] for c in chunks[1] if c["type"] == "tool_use"] == ["c1_0", "k_r1"]
    assert chunks[2][0] == {"type": "text", "text": "(script exhausted)"}
    assert [e["index"] for e in doubles.log.of("script_exhausted")] == [2]


@pytest.mark.anyio
async def test_reference_kernel_runs_a_session_over_http() -> None:
    """The whole reference kernel, its model an OpenAI-compatible API."""
    from reference_kernel.config import ProfileConfig, ToolSpec
    from reference_kernel.cost import Pricing
    from reference_kernel.kernel import Kernel

    model = load_script(SCRIPTS / "weather.json")

    async def weather(args: dict, turn: Any) -> str:
        return "18°C, light rain"

    spec = ToolSpec(name="weather", description="Weather by city", concurrency={"safe": True})
    async with serve(model) as (url, doubles):
        async with provider_for(url) as provider:
            kernel = Kernel(ProfileConfig(system_prompt="sys"), provider, [(spec, weather)],
                            pricing=Pricing(**model.pricing.model_dump()))
            with anyio.fail_after(10):
                result = await kernel.run_session(None, "Do I need an umbrella?")
    requests = requests_of(doubles)
    assert (result.subtype, result.reply) == ("success", "Bring an umbrella: 18°C and light rain.")
    assert [len(r["tools"]) for r in requests] == [1, 1]
    assert requests[1]["messages"][-1] == {"role": "tool_result", "call_id": "call_weather", "content": "18°C, light rain"}
    # cost = (non-cached input * 3 + cached * 0.3 + output * 15) / 1e6, per usage event
    assert [u.cost_usd for u in kernel.usage] == pytest.approx([(120 * 3 + 80 * 0.3 + 18 * 15) / 1e6, (160 * 3 + 200 * 0.3 + 12 * 15) / 1e6])


# --------------------------------------------------------------------------- errors


@pytest.mark.anyio
async def test_scripted_errors() -> None:
    async with serve(SCRIPTS / "errors.json") as (url, doubles):
        async with provider_for(url) as provider:
            with pytest.raises(ProviderError) as first:
                await collect(provider, REQUEST)
            got: list[dict] = []
            with pytest.raises(ProviderError) as second:
                async for chunk in provider.stream(REQUEST):
                    got.append(chunk)
        async with httpx.AsyncClient(trust_env=False) as client:
            raw = await client.post(url + "/chat/completions", json={"messages": [], "stream": True},
                                    headers={"authorization": "Bearer sk-test"})
            bad = await client.post(url + "/chat/completions", content=b"{nope", headers={"authorization": "Bearer sk-test"})
            missing = await client.get(url + "/nowhere", headers={"authorization": "Bearer sk-test"})
    assert (first.value.status, first.value.message) == (429, "rate limited (scripted)")
    assert got == [{"type": "text", "text": "partial"}]  # one chunk streamed, then the error
    assert (second.value.status, second.value.message) == (503, "upstream went away (scripted)")
    assert raw.status_code == 200  # third scripted call: fine
    assert doubles.model_calls == 3
    assert bad.status_code == 400 and "Expecting" in bad.json()["error"]["message"]
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"


# --------------------------------------------------------------------------- cancellation


@pytest.mark.anyio
async def test_blocked_answer_streams_its_text_then_waits_for_cancellation() -> None:
    model = ModelDef.model_validate({"responses": [{"text": "thinking", "block_until_cancelled": True}, {"text": "next"}]})
    async with serve(model) as (url, doubles):
        async with provider_for(url) as provider:
            got: list[dict] = []
            with anyio.fail_after(5), anyio.CancelScope() as scope:
                async for chunk in provider.stream(REQUEST):
                    got.append(chunk)
                    scope.cancel()  # the kernel cancels the call once it saw the text
            assert scope.cancelled_caught
            assert got == [{"type": "text", "text": "thinking"}]
            with anyio.fail_after(5):
                assert await collect(provider, REQUEST) == [
                    {"type": "text", "text": "next"},
                    {"type": "usage", "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0},
                ]
        assert [e["complete"] for e in doubles.log.of("model_response")] == [False, True]


# --------------------------------------------------------------------------- scripts, recording, CLI


def test_load_script_shapes(tmp_path: Path) -> None:
    responses = [{"text": "hi"}]
    assert load_script(responses).responses[0].text == "hi"
    assert load_script({"name": "m2", "responses": responses}).name == "m2"
    scenario = {"name": "s", "profile": "kernel", "model": {"name": "m3", "responses": responses}}
    assert load_script(scenario).name == "m3"
    (tmp_path / "bad.json").write_text('[{"text": "x", "chunks": "many"}]')
    with pytest.raises(ScriptError, match=r"bad\.json: 0\.chunks"):
        load_script(tmp_path / "bad.json")
    with pytest.raises(ScriptError, match="not valid JSON"):
        (tmp_path / "nope.json").write_text("{")
        load_script(tmp_path / "nope.json")


def test_the_chat_dialect_reads_back_the_providers_request() -> None:
    from reference_kernel.providers import to_chat_request

    assert from_chat_request(to_chat_request("m", FOLLOW_UP)) == {**strip_is_error(FOLLOW_UP), "params": {"temperature": 0}}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def test_cli_model_server_serves_and_records(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance", "model-server", "--script", str(SCRIPTS / "weather.json"),
         "--port", "0", "--record", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), (url, proc.stderr.read() if proc.poll() is not None else "")
        key = {"authorization": "Bearer akc-model-server"}
        with httpx.Client(trust_env=False, timeout=10) as client:
            assert client.get(url + "/models", headers=key).json()["data"][0]["id"] == "scripted-model"
            r = client.post(url + "/chat/completions", headers=key, json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["tool_calls"][0]["id"] == "call_weather"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(entry["index"], entry["request"]["messages"]) for entry in lines] == [(0, [{"role": "user", "text": "hi"}])]


def test_cli_model_server_bad_script_is_one_line_exit_2(tmp_path: Path, akc_here: Any) -> None:
    """Through the entry point in this interpreter (tests/inprocess.py): a usage error is no
    matter of the process (the server's own process is the test above)."""
    (tmp_path / "s.json").write_text('{"responses": 3}')
    out = akc_here("model-server", "--script", str(tmp_path / "s.json"))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "s.json: responses" in out.stderr, out.stderr


# ----------------------------------------------------------------------------- issue 25: edge cases


def _raw(port: int, request: bytes, host: str = "127.0.0.1") -> bytes:
    """Send ``request`` as is and read the answer until the server closes the connection."""
    import socket

    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@asynccontextmanager
async def served_path(host: str = "127.0.0.1") -> AsyncIterator[tuple[ModelHost, str]]:
    """(host, the chat route's path under its scenario token)."""
    async with anyio.create_task_group() as tg:
        server = await tg.start(ModelHost(host=host, api_key="sk-test").serve)
        served = server.open(HarnessDoubles(Scenario(name="x", profile="kernel", model=ModelDef())))
        yield server, served.base_url("openai-chat").split(str(server.port), 1)[1] + "/chat/completions"
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(("headers", "status"), [
    (b"Host: 127.0.0.1\r\nContent-Length: -5\r\n", b"400"),
    (b"Host: 127.0.0.1\r\nContent-Length: lots\r\n", b"400"),
    (b"Host: 127.0.0.1\r\nContent-Length: 99999999999\r\n", b"413"),
    (b"Host: evil.example:80\r\nContent-Length: 0\r\n", b"421"),
])
def test_the_served_model_answers_bad_requests(headers: bytes, status: bytes) -> None:
    async def main() -> None:
        async with served_path() as (server, path):
            request = f"POST {path} HTTP/1.1\r\n".encode() + headers + b"Authorization: Bearer sk-test\r\nConnection: close\r\n\r\n"
            answer = await anyio.to_thread.run_sync(_raw, server.port, request)
            assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]

    anyio.run(main)


def test_the_served_model_answers_a_deep_body_with_400() -> None:
    body = b"[" * 100_000

    async def main() -> None:
        async with served_path() as (server, path):
            request = (f"POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer sk-test\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n").encode() + body
            answer = await anyio.to_thread.run_sync(_raw, server.port, request)
            assert answer.startswith(b"HTTP/1.1 400") and b"nested too deeply" in answer

    anyio.run(main)


def test_model_script_nested_too_deeply_is_a_script_error(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000)
    with pytest.raises(ScriptError, match="nested too deeply"):
        load_script(tmp_path / "deep.json")


def test_the_served_model_on_ipv6_loopback_and_never_elsewhere() -> None:
    import socket

    with pytest.raises(ValueError, match="loopback"):
        ModelHost(host="0.0.0.0")
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")

    async def main() -> None:
        try:
            cm = served_path("::1")
            server, path = await cm.__aenter__()
        except OSError as exc:  # the address family exists but ::1 is not configured
            pytest.skip(f"cannot bind ::1 here ({exc.strerror})")
        try:
            url = f"http://[::1]:{server.port}{path.removesuffix('/chat/completions')}"
            async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
                assert (await client.get(url + "/models", headers={"authorization": "Bearer sk-test"})).status_code == 200
        finally:
            await cm.__aexit__(None, None, None)

    anyio.run(main)
