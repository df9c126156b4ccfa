"""The layer under the official SDKs: the HTTP transport they get, and one call through them.

The ``openai`` and ``anthropic`` SDKs still build every request, read every reply and raise
their own typed errors; only the layer that moves bytes changes. Their default transport
(``httpx2`` over ``httpcore2``) spends about twice the CPU per call of their documented
``DefaultAioHttpClient`` (``aiohttp`` underneath), and at 32+ concurrent calls that CPU, not
the model's latency, is what limits an eval (``benchmarks/eval_throughput.py``).

Two further fixed costs go away here: each SDK client used to load the CA bundle into a new
SSL context (30-80 ms, paid per run and per worker process), and the connection pool is
sized to the run's concurrency so no call waits for a socket.

``UPSKILL_HUB_HTTP_TRANSPORT=httpx`` selects the SDKs' own default client, exactly as
upskill-hub used it before (the benchmark compares the two in one invocation).

One attempt goes through the SDK's generic ``post`` (:func:`post_json`), and what it raises
becomes a classified, one-line :class:`AttemptError` (:func:`classify`). Both SDKs share one
exception shape (``APIStatusError`` with a ``response``, ``APIConnectionError``,
``APITimeoutError``), so one function serves both. Anything else raised while reading a
reply (a body that is not JSON, JSON of the wrong shape) means the server sent garbage:
that is an attempt error too, never a crash.
"""

from __future__ import annotations

import functools
import json
import os
import ssl
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from upskill_hub.errors import UpskillError
from upskill_hub.models.base import ImplausibleUsage
from upskill_hub.models.retry import RETRYABLE_STATUSES, AttemptError, parse_retry_after

TRANSPORT_ENV = "UPSKILL_HUB_HTTP_TRANSPORT"
TRANSPORTS = ("aiohttp", "httpx")


@functools.cache
def _aiohttp_installed() -> bool:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def transport_name() -> str:
    """The transport new SDK clients get: ``$UPSKILL_HUB_HTTP_TRANSPORT``, else aiohttp if installed."""
    raw = os.environ.get(TRANSPORT_ENV, "").strip().lower()
    if not raw:
        return "aiohttp" if _aiohttp_installed() else "httpx"
    if raw not in TRANSPORTS:
        raise UpskillError(f"{TRANSPORT_ENV} must be one of {', '.join(TRANSPORTS)}, got {raw!r}")
    if raw == "aiohttp" and not _aiohttp_installed():
        raise UpskillError(f"{TRANSPORT_ENV}=aiohttp needs the aiohttp package: pip install aiohttp")
    return raw


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying SSL context per process, built the way the SDKs build theirs.

    Loading the CA bundle is the bulk of an SDK client's construction; a context is safe to
    share between connections and clients.
    """
    import httpx2

    return httpx2.create_ssl_context()


def sdk_http_client(sdk: ModuleType, *, connections: int) -> Any | None:
    """The ``http_client`` to hand ``sdk``'s async client, or ``None`` for the SDK's default.

    ``sdk`` is the ``openai`` or ``anthropic`` module (both ship ``DefaultAioHttpClient``);
    ``connections`` is the most calls the client will have in flight, so the pool keeps
    that many connections alive instead of opening and closing the excess per call.
    """
    if transport_name() == "httpx":
        return None
    import httpx2

    n = max(1, connections)
    limits = httpx2.Limits(max_connections=max(n, 100), max_keepalive_connections=max(n, 20))
    return sdk.DefaultAioHttpClient(limits=limits, verify=_ssl_context())


def bind_sdk(client: Any, sdk: ModuleType, make: Callable[..., Any], *, model: str, base_url: str, api_key: str,
             policy: Any, concurrency: int, connections: int | None) -> None:
    """Set the fields every SDK-backed client has, and its SDK client (``make``: the SDK's async class).

    The SDK's own retries are off (``max_retries=0``): :mod:`.retry` retries, with one policy
    for every provider. ``connections``: the most calls a run will have in flight on it.
    """
    client.model, client.endpoint, client.default_concurrency = model, base_url, concurrency
    client._policy, client._label, client._secrets, client._sdk = policy, f"{client.provider} {model}", (api_key,), sdk
    http = sdk_http_client(sdk, connections=connections or concurrency)
    client._client = make(api_key=api_key, base_url=base_url, timeout=policy.timeout, max_retries=0, http_client=http)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_detail(body: Any) -> str:
    """The human part of an error body: OpenAI ``{"error": {"message"}}``, Anthropic the same."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("type") or ""
            return _short(msg)
        if isinstance(err, str):
            return _short(err)
    if isinstance(body, str):
        return _short(body)
    return ""


def _dropped_connection(exc: BaseException) -> BaseException | None:
    """The aiohttp connection failure behind an SDK "timeout", if that is what it really was.

    The SDKs' aiohttp transport maps every ``aiohttp.ClientConnectionError`` (a server that
    closed the connection without answering, say) to an httpx *timeout*, so the SDK raises
    its timeout error for it. The error message should name what happened: the cause chain
    still holds the aiohttp exception.
    """
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is None:
        return None
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 16:
        if isinstance(cur, aiohttp.ClientConnectionError) and not isinstance(cur, TimeoutError):
            return cur
        cur, seen = cur.__cause__ or cur.__context__, seen + 1
    return None


def classify(exc: BaseException, sdk: ModuleType) -> AttemptError:
    """Map an exception raised by ``sdk`` (``openai`` or ``anthropic``) to an AttemptError."""
    if isinstance(exc, AttemptError):
        return exc
    if isinstance(exc, ImplausibleUsage):  # the same reply would come back: not retried
        return AttemptError(str(exc), retryable=False)
    if isinstance(exc, sdk.APITimeoutError):
        dropped = _dropped_connection(exc)
        if dropped is not None:
            return AttemptError(f"connection error: {type(dropped).__name__}", retryable=True)
        return AttemptError("request timed out", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        reason = f": {type(cause).__name__}" if cause is not None else ""
        return AttemptError(f"connection error{reason}", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        headers = dict(exc.response.headers) if getattr(exc, "response", None) is not None else {}
        detail = _error_detail(getattr(exc, "body", None))
        # An explicit x-should-retry from the server wins over our status table.
        should = headers.get("x-should-retry", "").lower()
        retryable = should == "true" or (should != "false" and status in RETRYABLE_STATUSES)
        return AttemptError(
            f"HTTP {status}" + (f": {detail}" if detail else ""),
            retryable=retryable,
            status=status,
            retry_after=parse_retry_after(headers),
        )
    if isinstance(
        exc, json.JSONDecodeError | ValueError | TypeError | KeyError | AttributeError | IndexError
    ):
        return malformed(f"{type(exc).__name__}")
    if isinstance(exc, getattr(sdk, "APIResponseValidationError", ())):
        return malformed("response failed validation")
    if isinstance(exc, sdk.APIError):
        return AttemptError(_short(str(exc)) or type(exc).__name__, retryable=False)
    raise exc


def malformed(detail: str) -> AttemptError:
    """A reply we could not read. Retried: proxies return HTML error pages with status 200."""
    return AttemptError(f"malformed response from server ({detail})", retryable=True)


async def post_json(client: Any, sdk: ModuleType, path: str, body: dict[str, Any], read: Callable[[object, float], Any]) -> Any:
    """One attempt through an SDK's generic ``post`` (``cast_to=object``), read by ``read(data, latency)``.

    The SDK still builds and sends the request, decodes the JSON and raises its typed errors
    (timeouts, dropped connections, status errors), but skips walking the request through
    its typed ``create`` signature (~40% of the client's CPU per call,
    benchmarks/llm_server_throughput.py) and building pydantic models of the reply that it
    would not validate anyway (~0.3 ms per call, benchmarks/eval_throughput.py); ``read``
    checks the few fields we use instead. Every failure is classified by :func:`classify`.
    """
    start = time.perf_counter()
    try:
        data = await client.post(path, cast_to=object, body=body)
        return read(data, time.perf_counter() - start)
    except Exception as exc:  # classified into retryable / final; unknown errors re-raise
        raise classify(exc, sdk) from None
