"""The served model (``conformance.httpmodel.host``): each dialect answers through the scenario's
own model double, driven by its official SDK and by a raw socket client — the same log, the same
scripted errors, usage and cancellation as in process."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from conformance.boundary.scenario import Scenario
from conformance.harness.doubles import HarnessDoubles
from conformance.httpmodel.host import HttpModel, ModelHost

anthropic = pytest.importorskip("anthropic")

TOOLS = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
TOOL_TURN = {"text": "Let me look.", "chunks": 2, "tool_calls": [{"name": "read", "args": {"path": "a.txt"}}],
             "usage": {"input_tokens": 5, "output_tokens": 7, "cached_input_tokens": 2}}


def scenario(*responses: dict[str, Any]) -> Scenario:
    return Scenario.model_validate({"name": "served", "profile": "kernel", "model": {"responses": list(responses)},
                                    "user_messages": [{"text": "hi"}]})


_CLIENTS: list[Any] = []


@asynccontextmanager
async def served(*responses: dict[str, Any]) -> AsyncIterator[tuple[HarnessDoubles, HttpModel, ModelHost]]:
    """A host serving one scenario's doubles; the SDK clients made meanwhile are closed on exit
    (left to the garbage collector, they close on a loop that is gone)."""
    async with anyio.create_task_group() as tg:
        host = await tg.start(ModelHost().serve)
        doubles = HarnessDoubles(scenario(*responses))
        model = host.open(doubles)
        try:
            with anyio.fail_after(10):
                yield doubles, model, host
        finally:
            while _CLIENTS:
                await _CLIENTS.pop().close()
            tg.cancel_scope.cancel()


def run(test: Callable[[], Any]) -> None:
    anyio.run(test)


def client(model: HttpModel, key: str | None = None) -> Any:
    sdk = anthropic.AsyncAnthropic(base_url=model.base_url("anthropic"), api_key=key or model.api_key, max_retries=0)
    _CLIENTS.append(sdk)
    return sdk


def kinds(doubles: HarnessDoubles) -> list[tuple[str, Any]]:
    return [(e["kind"], e.get("complete", e.get("status"))) for e in doubles.log.events]


def test_anthropic_sdk_streams_text_tool_use_and_usage_and_the_double_logs_the_request() -> None:
    async def main() -> None:
        async with served(TOOL_TURN) as (doubles, model, _):
            async with client(model).messages.stream(
                model="m", max_tokens=100, system="You are a test.", tools=TOOLS,
                messages=[{"role": "user", "content": "Read a.txt"}],
            ) as stream:
                types = [event.type async for event in stream]
                message = await stream.get_final_message()
            assert message.stop_reason == "tool_use"
            assert [b.type for b in message.content] == ["text", "tool_use"]
            assert message.content[0].text == "Let me look."
            assert (message.content[1].id, message.content[1].name, message.content[1].input) == ("c0_0", "read", {"path": "a.txt"})
            assert (message.usage.input_tokens, message.usage.output_tokens, message.usage.cache_read_input_tokens) == (5, 7, 2)
            assert types.count("text") == 2  # the scripted chunks stay chunks
            request = doubles.log.of("model_request")[0]["request"]
            assert list(request["messages"]) == [{"role": "system", "text": "You are a test."}, {"role": "user", "text": "Read a.txt"}]
            assert request["tools"] == TOOLS and request["params"] == {"max_tokens": 100}
            assert kinds(doubles) == [("model_request", None), ("model_response", True)]
            assert model.used == {"anthropic"}

    run(main)


def test_anthropic_sdk_non_streaming_and_the_history_in_the_suite_shape() -> None:
    async def main() -> None:
        async with served({"text": "done"}) as (doubles, model, _):
            message = await client(model).messages.create(
                model="m", max_tokens=100, tools=TOOLS,
                messages=[
                    {"role": "user", "content": "Read a.txt"},
                    {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                                      {"type": "tool_use", "id": "c0_0", "name": "read", "input": {"path": "a.txt"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c0_0", "content": "no such file", "is_error": True},
                                                 {"type": "text", "text": "and then?"}]},
                ],
            )
            assert (message.stop_reason, message.content[0].text) == ("end_turn", "done")
            assert list(doubles.log.of("model_request")[0]["request"]["messages"]) == [
                {"role": "user", "text": "Read a.txt"},
                {"role": "assistant", "text": "Let me look.", "tool_calls": [{"id": "c0_0", "name": "read", "args": {"path": "a.txt"}}]},
                {"role": "tool_result", "call_id": "c0_0", "content": "no such file", "is_error": True},
                {"role": "user", "text": "and then?"},
            ]

    run(main)


def test_anthropic_usage_events_ride_on_message_start_and_the_cumulative_message_delta() -> None:
    events = {"text": "ok", "usage_events": [{"input_tokens": 11}, {"output_tokens": 3}]}

    async def main() -> None:
        async with served(events) as (_, model, _):
            async with client(model).messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as stream:
                start = None
                async for event in stream:
                    if event.type == "message_start":
                        start = event.message.usage.input_tokens
                message = await stream.get_final_message()
            assert start == 11
            assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 3)

    run(main)


def test_anthropic_scripted_errors_are_the_status_with_its_body_or_an_error_event_mid_stream() -> None:
    async def main() -> None:
        async with served({"error": {"status": 429, "message": "slow down"}},
                          {"text": "abc", "chunks": 3, "error": {"status": 500, "message": "boom", "after_chunks": 2}}) as (doubles, model, _):
            with pytest.raises(anthropic.RateLimitError) as at_once:
                await client(model).messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
            assert at_once.value.body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
            texts = []
            with pytest.raises(anthropic.APIStatusError) as mid:
                async with client(model).messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as stream:
                    async for event in stream:
                        if event.type == "text":
                            texts.append(event.text)
            assert texts == ["a", "b"]
            assert mid.value.body == {"type": "error", "error": {"type": "api_error", "message": "boom"}}
            assert [(e["index"], e["status"]) for e in doubles.log.of("model_error")] == [(0, 429), (1, 500)]

    run(main)


def test_a_closed_connection_is_a_cancelled_call() -> None:
    async def main() -> None:
        async with served({"text": "ab", "chunks": 2, "block_until_cancelled": True}) as (doubles, model, _):
            texts = []
            async with client(model).messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as stream:
                async for event in stream:
                    if event.type == "text":
                        texts.append(event.text)
                    if len(texts) == 2:
                        break  # leaving the stream closes the connection
            # the server's task sees the close on its own schedule: the harness waits for it
            assert await doubles.settle_model_calls(5) == []
            assert texts == ["a", "b"]
            assert doubles.log.of("model_response")[0]["complete"] is False

    run(main)


def test_a_call_the_client_keeps_open_is_reported_open_until_it_closes() -> None:
    """The harness reads the log once the kernel's open calls have closed (settle_model_calls):
    a connection still open after the wait is the kernel's, reported as such; once closed, the
    cancelled call's streamed text is in the log."""
    async def main() -> None:
        async with served({"text": "ab", "chunks": 2, "block_until_cancelled": True}) as (doubles, model, host):
            body = json.dumps({"model": "m", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
            path = model.base_url("anthropic").split(str(host.port), 1)[1] + "/v1/messages"
            stream = await anyio.connect_tcp("127.0.0.1", host.port)
            await stream.send(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: {model.api_key}\r\ncontent-type: application/json\r\n"
                              f"content-length: {len(body)}\r\n\r\n".encode() + body)
            seen = b""
            while b"text_delta" not in seen or seen.count(b"text_delta") < 2:
                seen += await stream.receive()
            assert await doubles.settle_model_calls(0.05) == ["model call #0 (blocked until cancelled)"]
            assert not doubles.log.of("model_response")
            await stream.aclose()
            assert await doubles.settle_model_calls(5) == []
            assert [c["text"] for c in doubles.log.of("model_response")[0]["chunks"]] == ["a", "b"]

    run(main)


def test_anthropic_system_messages_inside_the_list_are_system_messages() -> None:
    """Claude Code sends its environment notes as a ``system``-role message in ``messages``."""
    async def main() -> None:
        async with served({"text": "ok"}) as (doubles, model, _):
            await client(model).messages.create(
                model="m", max_tokens=10, system="be brief",
                messages=[{"role": "user", "content": "hi"}, {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}],  # type: ignore[list-item]
            )
            assert list(doubles.log.of("model_request")[0]["request"]["messages"]) == [
                {"role": "system", "text": "be brief"}, {"role": "user", "text": "hi"}, {"role": "system", "text": "# Environment"}]

    run(main)


def test_count_tokens_models_and_the_refusals() -> None:
    async def main() -> None:
        async with served({"text": "x"}) as (doubles, model, host):
            sdk = client(model)
            count = await sdk.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
            assert count.input_tokens >= 1
            with pytest.raises(anthropic.AuthenticationError):
                await client(model, "nope").messages.create(
                    model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
            with pytest.raises(anthropic.BadRequestError):
                await sdk.messages.create(model="m", max_tokens=10, messages="hi")  # type: ignore[arg-type]
            assert [e["status"] for e in doubles.log.of("http_rejected")] == [401, 400]
            assert doubles.model_calls == 0  # neither is a model call
            await sdk.models.list()  # answered, and noted: not a model call nor a token count
            assert [(e["method"], e["path"]) for e in doubles.log.of("http_other")] == [("GET", "/v1/models")]
            host.close(model)
            with pytest.raises(anthropic.APIStatusError) as late:
                await sdk.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
            assert late.value.status_code == 410
            assert doubles.log.of("http_stray") and [what for _, what in host.take_strays()] == [
                "POST /v1/messages: a model request after its scenario had ended"]

    run(main)


def _raw_post(port: int, path: str, key: str, body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: {key}\r\ncontent-type: application/json\r\n"
                  f"content-length: {len(data)}\r\nconnection: close\r\n\r\n".encode() + data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_anthropic_through_a_raw_socket_client() -> None:
    async def main() -> None:
        async with served(TOOL_TURN, {"text": "plain"}) as (doubles, model, host):
            path = model.base_url("anthropic").split(str(host.port), 1)[1] + "/v1/messages"
            body = {"model": "m", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
            raw = await anyio.to_thread.run_sync(_raw_post, host.port, path, model.api_key, body)
            head, _, rest = raw.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
            names = [line[7:].decode() for line in rest.split(b"\n") if line.startswith(b"event: ")]
            assert names == ["message_start", "content_block_start", "content_block_delta", "content_block_delta",
                             "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta",
                             "content_block_stop", "message_delta", "message_stop"]
            raw = await anyio.to_thread.run_sync(_raw_post, host.port, path, model.api_key, {**body, "stream": False})
            head, _, rest = raw.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
            assert json.loads(rest)["content"] == [{"type": "text", "text": "plain"}]
            assert doubles.model_calls == 2

    run(main)


openai = pytest.importorskip("openai")


def oai(model: HttpModel, dialect: str) -> Any:
    sdk = openai.AsyncOpenAI(base_url=model.base_url(dialect), api_key=model.api_key, max_retries=0)
    _CLIENTS.append(sdk)
    return sdk


CHAT_TOOLS = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}} for t in TOOLS]


def test_openai_chat_sdk_streams_with_usage_and_reads_the_history() -> None:
    async def main() -> None:
        async with served(TOOL_TURN, {"text": "done"}) as (doubles, model, _):
            sdk = oai(model, "openai-chat")
            stream = await sdk.chat.completions.create(
                model="m", messages=[{"role": "system", "content": "You are a test."}, {"role": "user", "content": "Read a.txt"}],
                tools=CHAT_TOOLS, stream=True, stream_options={"include_usage": True})
            texts, args, usage, finish = [], "", None, None
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    texts += [choice.delta.content] if choice.delta.content else []
                    for call in choice.delta.tool_calls or []:
                        args += call.function.arguments or ""
                    finish = choice.finish_reason or finish
            assert (texts, args, finish) == (["Let me", " look."], '{"path": "a.txt"}', "tool_calls")
            assert (usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details.cached_tokens) == (7, 7, 2)
            answer = await sdk.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "Read a.txt"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c0_0", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}]},
                {"role": "tool", "tool_call_id": "c0_0", "content": "no such file"}])
            assert answer.choices[0].message.content == "done"
            assert list(doubles.log.of("model_request")[1]["request"]["messages"])[1:] == [
                {"role": "assistant", "tool_calls": [{"id": "c0_0", "name": "read", "args": {"path": "a.txt"}}]},
                {"role": "tool_result", "call_id": "c0_0", "content": "no such file"},  # no error flag in this dialect
            ]
            assert model.used == {"openai-chat"}

    run(main)


def test_openai_chat_errors_at_once_and_mid_stream() -> None:
    async def main() -> None:
        async with served({"error": {"status": 429, "message": "slow down"}},
                          {"text": "abc", "chunks": 3, "error": {"status": 500, "message": "boom", "after_chunks": 2}}) as (doubles, model, _):
            sdk = oai(model, "openai-chat")
            with pytest.raises(openai.RateLimitError):
                await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            texts = []
            with pytest.raises(openai.APIError) as mid:
                async for chunk in await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True):
                    texts += [c.delta.content for c in chunk.choices if c.delta.content]
            assert texts == ["a", "b"] and mid.value.body["code"] == 500
            assert [e["status"] for e in doubles.log.of("model_error")] == [429, 500]

    run(main)


def test_openai_responses_sdk_streams_and_answers_whole() -> None:
    async def main() -> None:
        async with served(TOOL_TURN, {"text": "done"}) as (doubles, model, _):
            sdk = oai(model, "openai-responses")
            tools = [{"type": "function", "name": "read", "description": "Read a file", "parameters": TOOLS[0]["input_schema"]}]
            async with sdk.responses.stream(model="m", instructions="You are a test.", input="Read a.txt", tools=tools) as stream:
                deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
                final = await stream.get_final_response()
            assert deltas == ["Let me", " look."]
            assert [o.type for o in final.output] == ["message", "function_call"]
            assert (final.output[1].call_id, final.output[1].arguments) == ("c0_0", '{"path": "a.txt"}')
            assert (final.usage.input_tokens, final.usage.output_tokens) == (7, 7)
            whole = await sdk.responses.create(model="m", input=[
                {"role": "user", "content": "Read a.txt"},
                {"type": "function_call", "call_id": "c0_0", "name": "read", "arguments": '{"path": "a.txt"}'},
                {"type": "function_call_output", "call_id": "c0_0", "output": "no such file"}])
            assert whole.output_text == "done"
            assert list(doubles.log.of("model_request")[1]["request"]["messages"]) == [
                {"role": "user", "text": "Read a.txt"},
                {"role": "assistant", "tool_calls": [{"id": "c0_0", "name": "read", "args": {"path": "a.txt"}}]},
                {"role": "tool_result", "call_id": "c0_0", "content": "no such file"},
            ]

    run(main)


def test_openai_responses_error_mid_stream_and_cancellation() -> None:
    async def main() -> None:
        async with served({"text": "abc", "chunks": 3, "error": {"status": 500, "message": "boom", "after_chunks": 2}},
                          {"text": "ab", "chunks": 2, "block_until_cancelled": True}) as (doubles, model, _):
            sdk = oai(model, "openai-responses")
            kinds_seen = [e.type async for e in await sdk.responses.create(model="m", input="hi", stream=True)]
            assert kinds_seen[-2:] == ["error", "response.failed"]
            stream = await sdk.responses.create(model="m", input="hi", stream=True)
            deltas = []
            async for event in stream:
                if event.type == "response.output_text.delta":
                    deltas.append(event.delta)
                    if len(deltas) == 2:
                        break
            await stream.close()
            with anyio.fail_after(5):
                while len(doubles.log.of("model_response")) < 2:
                    await anyio.sleep(0.01)
            assert doubles.log.of("model_response")[1]["complete"] is False

    run(main)


@pytest.mark.parametrize("dialect, route, body", [
    ("openai-chat", "/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
    ("openai-responses", "/responses", {"model": "m", "stream": True, "input": "hi"}),
])
def test_openai_dialects_through_a_raw_socket_client(dialect: str, route: str, body: dict[str, Any]) -> None:
    async def main() -> None:
        async with served({"text": "plain", "chunks": 2}) as (doubles, model, host):
            path = model.base_url(dialect).split(str(host.port), 1)[1] + route
            raw = await anyio.to_thread.run_sync(_raw_post, host.port, path, model.api_key, body)
            head, _, rest = raw.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
            assert b'"pla"' in rest and b'"in"' in rest
            assert doubles.log.of("model_response")[0]["complete"] is True

    run(main)


def test_timeouts_and_broken_streams_and_the_host_goes_on() -> None:
    """A timeout before any chunk is a 504, a broken stream after one cuts the connection; the
    host serves the next call all the same."""
    async def main() -> None:
        async with served({"error": {"kind": "timeout", "message": "slow"}},
                          {"text": "ab", "chunks": 2, "error": {"kind": "broken_stream", "message": "cut", "after_chunks": 1}},
                          {"text": "still here"}) as (doubles, model, host):
            sdk = oai(model, "openai-chat")
            with pytest.raises(openai.APIStatusError) as timeout:
                await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            assert timeout.value.status_code == 504
            texts = []
            with pytest.raises(openai.APIError):
                async for chunk in await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True):
                    texts += [c.delta.content for c in chunk.choices if c.delta.content]
            assert texts == ["a"]
            answer = await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            assert answer.choices[0].message.content == "still here" and host.errors == []

    run(main)
