"""An HTTP kernel certified through the official ``openai`` Python SDK (Chat Completions).

The reference kernel, but its model is an API it calls: every model call goes through
``openai.AsyncOpenAI`` pointed at the scenario's served model (``doubles.http_model``), streamed,
with the usage chunk asked for. Nothing else changes, so it claims both profiles; what Chat
Completions cannot carry (a tool result's error flag, separate usage events) is judged on what it
can say (docs/http-kernels.md).

    PYTHONPATH=examples/http-kernels akc run --adapter openai_sdk:adapter --timeout-scale 4 --expect examples/http-kernels/openai_sdk.expect.toml
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai

from conformance.httpmodel.host import TURN_HEADER
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.errors import ProviderError
from reference_kernel.providers import to_chat_request


class OpenAISDKModel:
    """The kernel's model provider: our request out as a chat-completions call, chunks back."""

    def __init__(self, base_url: str, api_key: str, model: str) -> None:
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
        self.model = model

    async def stream(self, request: dict[str, Any], turn: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        calls: dict[int, dict[str, Any]] = {}
        usage = None
        try:
            stream = await self.client.chat.completions.create(
                **to_chat_request(self.model, request), extra_headers={TURN_HEADER: json.dumps(turn)})
            async with stream:
                async for chunk in stream:
                    usage = chunk.usage or usage
                    for choice in chunk.choices:
                        if choice.delta.content:
                            yield {"type": "text", "text": choice.delta.content}
                        for part in choice.delta.tool_calls or []:
                            call = calls.setdefault(part.index, {"id": "", "name": "", "args": ""})
                            call["id"] = part.id or call["id"]
                            call["name"] = (part.function and part.function.name) or call["name"]
                            call["args"] += (part.function and part.function.arguments) or ""
        except openai.APIStatusError as exc:
            raise ProviderError(exc.status_code, _message(exc.body, exc.message)) from None
        except openai.APIError as exc:  # an error event after the stream started: its code is the status
            body = exc.body if isinstance(exc.body, dict) else {}
            raise ProviderError(int(body.get("code") or 0), _message(body, exc.message)) from None
        for _, call in sorted(calls.items()):
            yield {"type": "tool_use", "id": call["id"], "name": call["name"], "input_json": call["args"]}
        if usage is not None:
            cached = (usage.prompt_tokens_details and usage.prompt_tokens_details.cached_tokens) or 0
            yield {"type": "usage", "input_tokens": usage.prompt_tokens - cached, "output_tokens": usage.completion_tokens,
                   "cached_input_tokens": cached}


def _message(body: Any, default: str) -> str:
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        if isinstance(inner.get("message"), str):
            return inner["message"]
    return default if isinstance(default, str) else json.dumps(body)


def adapter() -> ReferenceAdapter:
    return ReferenceAdapter(
        name="reference-kernel/openai-sdk",
        dialects=["openai-chat"],
        model=lambda doubles: OpenAISDKModel(
            doubles.http_model.base_url("openai-chat"), doubles.http_model.api_key, doubles.scenario.model.name
        ),
    )
