"""The OpenAI-compatible provider against a respx-scripted endpoint (no network)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from reference_kernel.errors import ProviderError
from reference_kernel.providers import OpenAICompatProvider, to_chat_request

BASE = "https://llm.test/v1"
URL = BASE + "/chat/completions"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


def sse(*events: Any, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def delta(**d: Any) -> dict:
    return {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d}]}


USAGE = {
    "choices": [],
    "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
              "prompt_tokens_details": {"cached_tokens": 40}},
}

REQUEST = {
    "messages": [
        {"role": "system", "text": "You are a test agent."},
        {"role": "user", "text": "Do I need an umbrella?"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Charleston"}}]},
        {"role": "tool_result", "call_id": "c1", "content": "18°C, light rain", "is_error": False},
        {"role": "assistant", "text": "Bring one.", "tool_calls": []},
    ],
    "tools": [{"name": "weather", "description": "Weather by city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "params": {"temperature": 0},
}


async def collect(provider: OpenAICompatProvider, request: dict = REQUEST) -> list[dict]:
    return [chunk async for chunk in provider.stream(request)]


def respond(body: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(status, content=body, headers={"content-type": "text/event-stream"})


def test_request_body_shape() -> None:
    body = to_chat_request("gpt-test", REQUEST)
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0
    assert body["messages"] == [
        {"role": "system", "content": "You are a test agent."},
        {"role": "user", "content": "Do I need an umbrella?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Charleston"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "18°C, light rain"},
        {"role": "assistant", "content": "Bring one."},
    ]
    assert body["tools"] == [{"type": "function", "function": {
        "name": "weather", "description": "Weather by city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def test_tools_are_omitted_when_withheld() -> None:
    assert "tools" not in to_chat_request("m", {"messages": [], "tools": []})
    assert "tools" not in to_chat_request("m", {"messages": []})


def test_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="'robot'"):
        to_chat_request("m", {"messages": [{"role": "robot"}]})


@pytest.mark.anyio
async def test_streams_text_and_usage_and_sends_the_request() -> None:
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(URL).mock(return_value=respond(sse(
            delta(role="assistant", content=""), delta(content="Bring "),
            delta(content="an umbrella."), USAGE)))
        chunks = await collect(OpenAICompatProvider(BASE + "/", "sk-test", "gpt-test"))
    assert chunks == [
        {"type": "text", "text": "Bring "},
        {"type": "text", "text": "an umbrella."},
        {"type": "usage", "input_tokens": 60, "output_tokens": 7, "cached_input_tokens": 40},
    ]
    sent = route.calls.last.request
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert json.loads(sent.content) == to_chat_request("gpt-test", REQUEST)


@pytest.mark.anyio
async def test_tool_calls_split_across_deltas_are_accumulated_by_index() -> None:
    body = sse(
        delta(role="assistant", tool_calls=[{"index": 0, "id": "call_a", "type": "function",
                                             "function": {"name": "weather", "arguments": ""}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"ci'}}]),
        delta(tool_calls=[{"index": 1, "id": "call_b", "type": "function",
                           "function": {"name": "time", "arguments": "{}"}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": 'ty": "Charleston"}'}}]),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
    )
    client = httpx.AsyncClient()
    with respx.mock:
        respx.post(URL).mock(return_value=respond(body))
        chunks = await collect(OpenAICompatProvider(BASE, "", "m", client=client))
    await client.aclose()
    assert chunks == [
        {"type": "tool_use", "id": "call_a", "name": "weather", "input_json": '{"city": "Charleston"}'},
        {"type": "tool_use", "id": "call_b", "name": "time", "input_json": "{}"},
        {"type": "usage", "input_tokens": 5, "output_tokens": 2, "cached_input_tokens": 0},
    ]


@pytest.mark.anyio
async def test_no_api_key_sends_no_authorization() -> None:
    with respx.mock:
        route = respx.post(URL).mock(return_value=respond(sse(delta(content="hi"), done=False)))
        chunks = await collect(OpenAICompatProvider(BASE, "", "m"))
    assert chunks == [{"type": "text", "text": "hi"}]
    assert "authorization" not in route.calls.last.request.headers


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}, "Rate limit reached"),
        (500, {"error": {"message": "The server had an error"}}, "The server had an error"),
        (503, None, "upstream down"),
    ],
)
async def test_non_2xx_raises_provider_error(status: int, body: Any, message: str) -> None:
    content = json.dumps(body).encode() if body is not None else message.encode()
    with respx.mock:
        respx.post(URL).mock(return_value=httpx.Response(status, content=content))
        with pytest.raises(ProviderError) as info:
            await collect(OpenAICompatProvider(BASE, "k", "m"))
    assert info.value.status == status
    assert info.value.message == message


@pytest.mark.anyio
async def test_error_event_inside_the_stream() -> None:
    body = sse(delta(content="par"), {"error": {"message": "overloaded", "code": 529}}, done=False)
    with respx.mock:
        respx.post(URL).mock(return_value=respond(body))
        seen: list[dict] = []
        with pytest.raises(ProviderError) as info:
            async for chunk in OpenAICompatProvider(BASE, "k", "m").stream(REQUEST):
                seen.append(chunk)
    assert seen == [{"type": "text", "text": "par"}]
    assert (info.value.status, info.value.message) == (529, "overloaded")


@pytest.mark.anyio
async def test_transport_failure_is_a_provider_error() -> None:
    with respx.mock:
        respx.post(URL).mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(ProviderError) as info:
            await collect(OpenAICompatProvider(BASE, "k", "m"))
    assert info.value.status == 0
    assert "ConnectError" in info.value.message


@pytest.mark.anyio
async def test_comments_event_lines_and_data_after_done_are_ignored() -> None:
    body = (
        b": keep-alive\n\nevent: message\n"
        + sse(delta(content="one"))
        + b"data: " + json.dumps(delta(content="late")).encode() + b"\n\n"
    )
    with respx.mock:
        respx.post(URL).mock(return_value=respond(body))
        chunks = await collect(OpenAICompatProvider(BASE, "k", "m"))
    assert chunks == [{"type": "text", "text": "one"}]


@pytest.mark.anyio
async def test_a_malformed_event_is_a_provider_error() -> None:
    with respx.mock:
        respx.post(URL).mock(return_value=respond(b"data: {not json\n\n"))
        with pytest.raises(ProviderError, match="malformed stream event"):
            await collect(OpenAICompatProvider(BASE, "k", "m"))
