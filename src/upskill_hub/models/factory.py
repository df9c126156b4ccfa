"""Build a :class:`ModelClient` from a spec, and check everything a call needs beforehand.

``preflight`` runs before an eval or a generation makes its first call: a missing key or a
server that isn't running should be one clear line up front, not a run full of error rows.
"""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlparse

from upskill_hub._util.retry import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S
from upskill_hub.errors import UpskillError
from upskill_hub.models.base import ModelClient
from upskill_hub.models.endpoints import with_endpoint
from upskill_hub.models.retry import RetryPolicy
from upskill_hub.models.spec import ModelSpec, parse_model_spec

#: Placeholder sent to self-hosted servers that ignore keys (the SDK insists on one).
NO_KEY = "no-key-required"


def _as_spec(spec: ModelSpec | str, base_url: str | None = None) -> ModelSpec:
    # Flag and spec URLs are on the parsed spec; OPENAI_BASE_URL / ANTHROPIC_BASE_URL
    # come next, as in the SDKs (see upskill_hub.models.endpoints).
    if isinstance(spec, ModelSpec):
        if base_url and spec.base_url != base_url.rstrip("/"):
            return with_endpoint(parse_model_spec(spec.raw or spec.label, base_url))
        return with_endpoint(spec)
    return with_endpoint(parse_model_spec(spec, base_url))


def _hf_token() -> str | None:
    # huggingface_hub knows HF_TOKEN, the legacy variable and the token saved by `hf auth login`.
    try:
        from huggingface_hub import get_token
    except ImportError:  # pragma: no cover - it is a core dependency
        return os.environ.get("HF_TOKEN")
    return get_token()


def resolve_api_key(spec: ModelSpec, api_key: str | None = None) -> str | None:
    """The key for ``spec``: ``api_key`` if given, else its environment variable.

    Raises :class:`UpskillError` naming the variable to set when a hosted provider has none.
    """
    if spec.provider == "local":
        return None
    if api_key:
        return api_key
    env = spec.api_key_env
    key = _hf_token() if spec.provider == "hf" else (os.environ.get(env) if env else None)
    if key:
        return key
    if spec.key_required:
        extra = " (or run `hf auth login`)" if spec.provider == "hf" else ""
        raise UpskillError(f"model {spec.raw or spec.label!r} needs an API key: set {env}{extra}")
    return None


def endpoint_problem(url: str, timeout: float = 2.0) -> str | None:
    """``None`` when ``url``'s host accepts a TCP connection within ``timeout``, else why not.

    The name lookup has no timeout of its own, so the attempt runs in a daemon thread that is
    waited for ``timeout`` seconds at most: a stuck resolver cannot hold the caller.
    """
    parsed = urlparse(url)
    host = parsed.hostname or ""
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    result: list[str | None] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(None)
        except TimeoutError:
            result.append(f"no answer within {timeout:g}s")
        except OSError as exc:
            result.append(exc.strerror or str(exc) or type(exc).__name__)

    t = threading.Thread(target=attempt, daemon=True, name="endpoint-probe")
    t.start()
    t.join(timeout + 0.5)
    return result[0] if result else f"no answer within {timeout:g}s"


def probe_endpoint(url: str, timeout: float = 2.0) -> None:
    """Open (and close) a TCP connection to ``url``'s host; UpskillError naming it if that fails."""
    problem = endpoint_problem(url, timeout)
    if problem is not None:
        raise UpskillError(f"cannot reach model endpoint {url} ({problem}); is the server running?")


def preflight(
    spec: ModelSpec | str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    probe_timeout: float = 2.0,
) -> ModelSpec:
    """Check, without a model call, that ``spec`` can be called; return the parsed spec.

    * unknown spec -> UpskillError listing the forms;
    * hosted provider without a key -> UpskillError naming the env var to set;
    * a user-given base URL that refuses connections -> UpskillError naming the URL
      (the providers' public endpoints are not probed: offline that would only say what
      the call's error row will say anyway);
    * ``local`` without its extra installed -> UpskillError with the install command.
    """
    parsed = _as_spec(spec, base_url)
    if parsed.provider == "local":
        from upskill_hub.models.local import check_local_available

        check_local_available(parsed)
        return parsed
    resolve_api_key(parsed, api_key)
    if parsed.base_url:
        probe_endpoint(parsed.base_url, probe_timeout)
    return parsed


def create_client(
    spec: ModelSpec | str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
    policy: RetryPolicy | None = None,
    default_concurrency: int | None = None,
    connections: int | None = None,
) -> ModelClient:
    """A ready client for ``spec`` (a ModelSpec or a string such as ``"haiku"``).

    ``timeout`` is per attempt; ``max_retries`` retries follow a failed attempt that is
    worth retrying (429, 5xx, timeouts, dropped connections, malformed replies).
    ``connections`` sizes the HTTP connection pool (default: the client's default
    concurrency); a run passes its ``--concurrency``.
    """
    parsed = _as_spec(spec, base_url)
    policy = policy or RetryPolicy(max_retries=max_retries, timeout=timeout)
    if parsed.provider == "local":
        from upskill_hub.models.local import LocalModelClient

        return LocalModelClient(parsed)
    key = resolve_api_key(parsed, api_key) or NO_KEY
    common = {
        "model": parsed.model,
        "base_url": parsed.endpoint,
        "api_key": key,
        "policy": policy,
        "default_concurrency": default_concurrency,
        "connections": connections,
    }
    if parsed.provider == "anthropic":
        from upskill_hub.models.anthropic_client import AnthropicClient

        return AnthropicClient(**common)
    from upskill_hub.models.openai_client import OpenAIChatClient

    return OpenAIChatClient(provider=parsed.provider, **common)
