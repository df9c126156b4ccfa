"""Anthropic Messages API through the official ``anthropic`` SDK.

Token usage is normalised to OpenAI's convention so results compare across providers:
``input_tokens`` is the whole prompt (Anthropic reports uncached input, cache reads and
cache writes separately; we add them up) and ``cached_tokens`` is the cache-read part.
"""

from __future__ import annotations

import time
from typing import Any

from upskill_hub.models._sdk_errors import classify, malformed
from upskill_hub.models.base import Completion, GenerationParams, Message, Usage
from upskill_hub.models.retry import RetryingClient, RetryPolicy


class AnthropicClient(RetryingClient):
    """A :class:`~upskill_hub.models.base.ModelClient` over ``/v1/messages``."""

    provider = "anthropic"

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str,
        policy: RetryPolicy,
        default_concurrency: int = 8,
        connections: int | None = None,
    ) -> None:
        import anthropic

        from upskill_hub.models.transport import sdk_http_client

        self.model = model
        self.endpoint = base_url
        self.default_concurrency = default_concurrency
        self._policy = policy
        self._label = f"anthropic {self.model}"
        self._secrets = (api_key,)
        self._sdk = anthropic
        http = sdk_http_client(anthropic, connections=connections or default_concurrency)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=policy.timeout, max_retries=0, http_client=http
        )

    def _request(self, system: str, messages: list[Message], params: GenerationParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        if system:  # the API rejects an empty system text block
            body["system"] = system
        if params.stop:
            body["stop_sequences"] = list(params.stop)
        # The current Messages API (SDK 2.x) takes no temperature / top_p / seed: the
        # parameters are still recorded with each result row, but not sent.
        return body

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        start = time.perf_counter()
        try:
            resp = await self._client.messages.create(**body)
            latency = time.perf_counter() - start
            if isinstance(resp, str | bytes) or getattr(resp, "content", None) is None:
                raise malformed("no content")
            text = "".join(getattr(block, "text", "") or "" for block in resp.content)
            u = resp.usage
            cache_read = (getattr(u, "cache_read_input_tokens", None) or 0) if u is not None else 0
            cache_write = (getattr(u, "cache_creation_input_tokens", None) or 0) if u is not None else 0
            return Completion(
                text=text,
                usage=Usage(
                    input_tokens=(u.input_tokens + cache_read + cache_write) if u is not None else None,
                    output_tokens=u.output_tokens if u is not None else None,
                    cached_tokens=cache_read if u is not None else None,
                ),
                latency_s=latency,
                finish_reason=resp.stop_reason,
                model=getattr(resp, "model", None),
            )
        except Exception as exc:  # classified into retryable / final; unknown errors re-raise
            raise classify(exc, self._sdk) from None
