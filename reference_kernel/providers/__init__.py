"""Model providers that speak a real model API (the loop only needs ``stream(request)``)."""

from reference_kernel.errors import ProviderError
from reference_kernel.providers.openai_compat import OpenAICompatProvider, to_chat_request

__all__ = ["OpenAICompatProvider", "ProviderError", "to_chat_request"]
