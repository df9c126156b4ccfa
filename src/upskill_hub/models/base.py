"""The one small async interface every model provider implements.

A call is: a system prompt + messages + generation parameters -> text, token usage,
latency and the provider's raw finish reason. The eval runner, the judge (``llm-rubric``)
and the skill generator only ever talk to :class:`ModelClient`.

Failures are exceptions of type :class:`ModelCallError` (after the provider's own retries);
the runner turns them into result rows with ``error`` set, never into failed answers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from upskill_hub import limits


@dataclass(frozen=True)
class Message:
    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True)
class GenerationParams:
    """Parameters sent with every call; identical for baseline and with-skill calls."""

    temperature: float = 0.0
    max_tokens: int = 1024
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return {k: v for k, v in d.items() if v is not None and v != []}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


class ImplausibleUsage(ValueError):
    """A server reported a token count no single call can have (``10**30``).

    Kept, it would overflow the int64 parquet columns and every sum built on them, and the
    run could never finish (``--resume`` would meet it again). The call becomes an error row
    whose message keeps the raw value as text.
    """


def token_count(value: object, field: str = "tokens") -> int | None:
    """A token count as a provider reports it (a non-negative int); anything else is unknown.

    A count above ``UPSKILL_MAX_TOKENS_PER_CALL`` raises :class:`ImplausibleUsage`.
    """
    if type(value) is not int or value < 0:
        return None
    if value > limits.MAX_TOKENS_PER_CALL:
        shown = str(value) if value < 10**60 else f"{str(value)[:40]}… ({len(str(value))} digits)"
        raise ImplausibleUsage(
            f"implausible token count in the reply: usage.{field} = {shown} "
            f"(more than {limits.MAX_TOKENS_PER_CALL:,}; UPSKILL_MAX_TOKENS_PER_CALL)"
        )
    return value


@dataclass(frozen=True)
class Completion:
    """What one successful call returned."""

    text: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    model: str | None = None  # the model id the provider reports, when it does


class ModelCallError(Exception):
    """A call that failed after retries (HTTP error, timeout, malformed reply, ...).

    ``message`` is one line with no secrets in it; ``retryable`` tells whether the last
    failure was of a kind that retrying could fix.
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@runtime_checkable
class ModelClient(Protocol):
    """A model behind one provider. Implementations are safe to call concurrently."""

    #: Provider name recorded in results ("anthropic", "openai", "openai-compatible", "hf", "local", ...).
    provider: str
    #: Model id sent to the provider.
    model: str
    #: Where calls go (base URL or "in-process"); part of the cache key.
    endpoint: str
    #: A sensible default concurrency for this provider.
    default_concurrency: int

    async def complete(self, system: str, messages: list[Message], params: GenerationParams) -> Completion:
        """Send one request; raise :class:`ModelCallError` on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections / model memory."""
        ...
