"""OpenAI chat completions through the official ``openai`` SDK.

One class serves three providers that speak the same wire format: OpenAI itself, any
OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama: ``--base-url``) and the
Hugging Face Inference Providers router (``hf:ORG/MODEL``, authenticated with ``HF_TOKEN``).
The SDK's own retries are off; :func:`call_with_retries` does them so they are explicit.
"""

from __future__ import annotations

import time
from typing import Any

from upskill_hub.models._sdk_errors import classify, malformed
from upskill_hub.models.base import Completion, GenerationParams, Message, Usage
from upskill_hub.models.retry import RetryingClient, RetryPolicy

#: Concurrency that stays clear of typical rate limits (hosted) or saturates a local box.
DEFAULT_CONCURRENCY = {"openai": 16, "hf": 8, "openai-compatible": 8}


class OpenAIChatClient(RetryingClient):
    """A :class:`~upskill_hub.models.base.ModelClient` over ``/v1/chat/completions``."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        base_url: str,
        api_key: str,
        policy: RetryPolicy,
        default_concurrency: int | None = None,
    ) -> None:
        import openai

        self.provider = provider
        self.model = model
        self.endpoint = base_url
        self.default_concurrency = default_concurrency or DEFAULT_CONCURRENCY.get(provider, 8)
        self._policy = policy
        self._label = f"{self.provider} {self.model}"
        self._secrets = (api_key,)
        self._sdk = openai
        self._response_type = openai.types.chat.ChatCompletion
        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=policy.timeout, max_retries=0
        )

    def _request(self, system: str, messages: list[Message], params: GenerationParams) -> dict[str, Any]:
        wire: list[dict[str, str]] = []
        if system:
            wire.append({"role": "system", "content": system})
        wire.extend({"role": m.role, "content": m.content} for m in messages)
        body: dict[str, Any] = {"model": self.model, "messages": wire, "temperature": params.temperature}
        # OpenAI's newer models only take max_completion_tokens; self-hosted servers
        # (llama.cpp, older vLLM) only know max_tokens.
        if self.provider == "openai":
            body["max_completion_tokens"] = params.max_tokens
        else:
            body["max_tokens"] = params.max_tokens
        if params.top_p is not None:
            body["top_p"] = params.top_p
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        return body

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        start = time.perf_counter()
        try:
            # The SDK's generic (documented) ``post`` with the typed response model: the
            # typed ``chat.completions.create`` re-walks the request through its TypedDict
            # annotations, which measured ~40% of the client's CPU per call and caps eval
            # throughput at high concurrency (benchmarks/llm_server_throughput.py).
            resp = await self._client.post("/chat/completions", cast_to=self._response_type, body=body)
            latency = time.perf_counter() - start
            if isinstance(resp, str | bytes) or not getattr(resp, "choices", None):
                raise malformed("no choices")
            choice = resp.choices[0]
            text = choice.message.content if choice.message is not None else None
            usage = resp.usage
            cached = None
            if usage is not None and getattr(usage, "prompt_tokens_details", None) is not None:
                cached = usage.prompt_tokens_details.cached_tokens
            return Completion(
                text=text or "",
                usage=Usage(
                    input_tokens=usage.prompt_tokens if usage is not None else None,
                    output_tokens=usage.completion_tokens if usage is not None else None,
                    cached_tokens=cached,
                ),
                latency_s=latency,
                finish_reason=choice.finish_reason,
                model=getattr(resp, "model", None),
            )
        except Exception as exc:  # classified into retryable / final; unknown errors re-raise
            raise classify(exc, self._sdk) from None
