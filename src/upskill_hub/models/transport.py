"""The HTTP transport under the official SDKs: aiohttp by default, the SDKs' httpx as before.

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
"""

from __future__ import annotations

import functools
import os
import ssl
from types import ModuleType
from typing import Any

from upskill_hub.errors import UpskillError

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
