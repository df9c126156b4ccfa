"""Model calls over the shared retry loop: providers implement one attempt, we retry.

The SDKs can retry on their own, but then how long a run waits and how many requests it
sends are hidden. Every provider client builds its SDK with ``max_retries=0`` and
implements only ``_request`` and ``_attempt`` (one try, failures classified as
:class:`AttemptError`); :class:`RetryingClient` supplies ``complete`` and ``aclose``, and
:func:`call_with_retries` drives :class:`upskill_hub._util.retry.RetryLoop`, the loop Hub pushes
use too. Each attempt also gets a hard deadline (``asyncio.timeout``): an SDK's read
timeout is per socket read, so a server that trickles bytes could otherwise hold a call
forever.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from upskill_hub._util.redact import redact
from upskill_hub._util.retry import RetryLoop, RetryPolicy, Verdict, parse_retry_after
from upskill_hub.models.base import Completion, GenerationParams, Message, ModelCallError, ToolSpec

__all__ = ["AttemptError", "RetryPolicy", "RetryingClient", "call_with_retries", "parse_retry_after"]

T = TypeVar("T")

#: HTTP statuses worth another try: rate limits, timeouts, server errors, overload (529).
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class AttemptError(ModelCallError):
    """One failed attempt, classified: may it be retried, and after how long at least."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable, status=status)
        self.retry_after = retry_after


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    what: str,
    secrets: tuple[str, ...] = (),
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``attempt`` until it succeeds, retrying :class:`AttemptError`\\ s that allow it.

    ``attempt`` must raise :class:`AttemptError` for classified failures; anything else is
    a bug and propagates. The final error is a :class:`ModelCallError` whose one-line
    message starts with ``what`` (e.g. ``"openai gpt-4.1-mini"``), says how many attempts
    were made and has every secret masked.
    """
    loop = RetryLoop(policy, rng)
    while True:
        try:
            async with asyncio.timeout(policy.timeout + 1.0):
                return await attempt()
        except TimeoutError:
            last = AttemptError(f"timed out after {policy.timeout:g}s", retryable=True)
        except AttemptError as exc:
            last = exc
        wait = loop.wait_after(Verdict(last.retryable, last.retry_after))
        if wait is None:
            break
        await sleep(wait)
    n = loop.attempts
    detail = " ".join(str(last).split())
    message = f"{what}: {detail} (after {n} attempt{'s' if n != 1 else ''})"
    raise ModelCallError(redact(message, list(secrets)), retryable=last.retryable, status=last.status)


class RetryingClient:
    """The shared half of an SDK-backed :class:`~upskill_hub.models.base.ModelClient`.

    A provider sets ``model``, ``_label`` (how errors name it), ``_policy``, ``_secrets``
    and ``_client`` (the SDK client, closed by :meth:`aclose`), and implements one
    attempt: ``_request`` builds the body, ``_attempt`` sends it once and raises
    :class:`AttemptError` when it fails.
    """

    model: str
    _label: str
    _policy: RetryPolicy
    _secrets: tuple[str, ...]
    _client: Any

    def _request(
        self, system: str, messages: list[Message], params: GenerationParams, tools: list[ToolSpec] | None = None
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        raise NotImplementedError

    #: One jitter source per client: seeding a fresh ``random.Random`` from the OS per call
    #: was a visible share of the per-call CPU at hundreds of calls per second.
    _rng: random.Random | None = None

    async def complete(
        self, system: str, messages: list[Message], params: GenerationParams, tools: list[ToolSpec] | None = None
    ) -> Completion:
        body = self._request(system, messages, params, tools)
        if self._rng is None:
            self._rng = random.Random()
        return await call_with_retries(
            lambda: self._attempt(body),
            policy=self._policy,
            what=self._label,
            secrets=self._secrets,
            rng=self._rng,
        )

    async def aclose(self) -> None:
        await self._client.close()
