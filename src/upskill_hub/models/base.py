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

from upskill_hub._util import limits


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, what it is for, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for; ``arguments`` is the decoded JSON object ({} if unreadable)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Message:
    """One conversation turn.

    Plain turns are ``user`` / ``assistant`` text. Tool use adds two shapes, which each
    client maps to its wire format: an ``assistant`` turn carrying ``tool_calls``, and a
    ``tool`` turn carrying one call's result (``tool_call_id``; ``is_error`` for a refusal).
    """

    role: str  # "user" | "assistant" | "tool"
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False

    def key_parts(self) -> list[Any]:
        """A canonical JSON-able form (cache keys); plain turns keep their historical ``[role, content]``."""
        if not self.tool_calls and self.tool_call_id is None:
            return [self.role, self.content]
        return [
            self.role,
            self.content,
            [c.to_dict() for c in self.tool_calls],
            self.tool_call_id,
            self.is_error,
        ]


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
    #: Tools the model asked to call (empty for a plain answer).
    tool_calls: tuple[ToolCall, ...] = ()


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

    async def complete(
        self,
        system: str,
        messages: list[Message],
        params: GenerationParams,
        tools: list[ToolSpec] | None = None,
    ) -> Completion:
        """Send one request; raise :class:`ModelCallError` on failure.

        ``tools`` (optional; clients without tool support may only take three arguments):
        tools the model may call; calls come back in :attr:`Completion.tool_calls`.
        """
        ...

    async def aclose(self) -> None:
        """Release connections / model memory."""
        ...
