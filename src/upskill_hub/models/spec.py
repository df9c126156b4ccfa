"""Model specs: the short strings users type after ``--model``.

A spec names a provider and a model in one token so a command line can list several
(``--model haiku --model openai:gpt-4.1-mini --model local``). Parsing is pure (no
network, no environment reads) so it can run first and fail fast: an
unknown spec is a one-line :class:`UpskillError` that lists the accepted forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlparse

from upskill_hub.errors import UpskillError

#: Where each hosted provider lives when no ``--base-url`` is given.
OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
HF_ROUTER_URL = "https://router.huggingface.co/v1"

#: Short names for the current Anthropic models (what people say out loud).
ALIASES: dict[str, tuple[str, str]] = {
    "haiku": ("anthropic", "claude-haiku-4-5"),
    "sonnet": ("anthropic", "claude-sonnet-4-5"),
    "opus": ("anthropic", "claude-opus-4-5"),
}

#: The environment variable that holds each provider's key. ``openai-compatible``
#: servers (llama.cpp, vLLM, Ollama, ...) usually need none; a key, when needed, is read
#: from ``UPSKILL_API_KEY`` so the user's real OpenAI key is never sent to a third party.
API_KEY_ENV: dict[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "hf": "HF_TOKEN",
    "openai-compatible": "UPSKILL_API_KEY",
}

#: The teacher model of ``generate`` and ``tune`` when none is named: a strong model writes
#: what cheaper ones then read.
DEFAULT_TEACHER = "sonnet"

PROVIDERS = ("anthropic", "openai", "openai-compatible", "hf", "local")

_PROVIDER_PREFIXES = {
    "anthropic": "anthropic",
    "claude": "anthropic",
    "openai": "openai",
    "hf": "hf",
    "huggingface": "hf",
    "openai-compatible": "openai-compatible",
    "compat": "openai-compatible",
    "local": "local",
}

# Bare model ids whose provider is unambiguous.
_BARE_OPENAI = re.compile(r"^(gpt-|o\d|chatgpt-)", re.IGNORECASE)
_BARE_ANTHROPIC = re.compile(r"^claude-", re.IGNORECASE)

FORMS_HINT = (
    "use one of: local | local:PATH.gguf | anthropic:MODEL | openai:MODEL | hf:ORG/MODEL | "
    "openai-compatible:MODEL@URL | NAME with --base-url URL | aliases " + "/".join(sorted(ALIASES))
)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: who serves the model, which model, and where."""

    provider: str  # one of PROVIDERS
    model: str  # the id sent to the provider (or the GGUF path for local)
    base_url: str | None = None  # None = the provider's default endpoint
    raw: str = ""  # what the user typed, for messages

    @property
    def api_key_env(self) -> str | None:
        """The environment variable that holds this provider's key (None for local)."""
        return API_KEY_ENV.get(self.provider)

    @property
    def key_required(self) -> bool:
        """Hosted providers refuse calls without a key; self-hosted endpoints usually don't."""
        return self.provider in ("anthropic", "openai", "hf")

    @property
    def endpoint(self) -> str:
        """Where calls go; recorded in results and part of the response-cache key."""
        if self.provider == "local":
            return "in-process"
        if self.base_url:
            return self.base_url
        return {"anthropic": ANTHROPIC_BASE_URL, "openai": OPENAI_BASE_URL, "hf": HF_ROUTER_URL}[
            self.provider
        ]

    @property
    def label(self) -> str:
        """A canonical, round-trippable spec string (``provider:model``)."""
        if self.provider == "local":
            return "local" if not self.model or self.model == "local" else f"local:{self.model}"
        return f"{self.provider}:{self.model}"


def _check_url(url: str, raw: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UpskillError(
            f"base URL {url!r} for model {raw!r} is not an http(s) URL (e.g. http://localhost:8080/v1)"
        )
    return url.rstrip("/")


def parse_model_spec(spec: str, base_url: str | None = None) -> ModelSpec:
    """Parse ``spec`` (plus an optional ``--base-url``) into a :class:`ModelSpec`.

    ``base_url`` redirects a hosted provider to a compatible proxy, and turns a bare model
    name into an ``openai-compatible`` endpoint (llama.cpp, vLLM, LM Studio, Ollama).
    """
    raw = (spec or "").strip()
    if not raw:
        raise UpskillError(f"empty model spec; {FORMS_HINT}")
    if any(c.isspace() for c in raw):
        raise UpskillError(f"model spec {raw!r} contains whitespace; {FORMS_HINT}")
    url = _check_url(base_url, raw) if base_url else None

    lowered = raw.lower()
    if lowered == "local":
        return ModelSpec("local", "local", None, raw)
    if lowered in ALIASES:
        provider, model = ALIASES[lowered]
        return ModelSpec(provider, model, url, raw)

    prefix, sep, rest = raw.partition(":")
    # "http://..." is not a provider prefix; neither is "name:tag" (Ollama) unless known.
    if sep and prefix.lower() in _PROVIDER_PREFIXES:
        provider = _PROVIDER_PREFIXES[prefix.lower()]
        if not rest:
            raise UpskillError(f"model spec {raw!r} names no model after '{prefix}:'; {FORMS_HINT}")
        if provider == "local":
            return ModelSpec("local", rest, None, raw)
        if rest.lower() in ALIASES and ALIASES[rest.lower()][0] == provider:
            rest = ALIASES[rest.lower()][1]
        if provider == "openai-compatible":
            model, at, inline_url = rest.rpartition("@")
            if at:
                if url and url != inline_url.rstrip("/"):
                    raise UpskillError(f"model spec {raw!r} and --base-url {base_url!r} disagree")
                url = _check_url(inline_url, raw)
                rest = model
            if not url:
                raise UpskillError(
                    f"model spec {raw!r} needs an endpoint: write openai-compatible:MODEL@URL "
                    "or pass --base-url URL"
                )
            if not rest:
                raise UpskillError(f"model spec {raw!r} names no model; {FORMS_HINT}")
        if provider == "hf" and "/" not in rest.split(":")[0]:
            raise UpskillError(
                f"model spec {raw!r}: Hugging Face models are ORG/NAME (e.g. hf:moonshotai/Kimi-K2-Thinking)"
            )
        return ModelSpec(provider, rest, url, raw)

    if url:
        # A bare name with an endpoint: any OpenAI-compatible server.
        return ModelSpec("openai-compatible", raw, url, raw)
    if _BARE_OPENAI.match(raw):
        return ModelSpec("openai", raw, None, raw)
    if _BARE_ANTHROPIC.match(raw):
        return ModelSpec("anthropic", raw, None, raw)
    if "/" in raw and ":" not in raw:
        raise UpskillError(
            f"unknown model spec {raw!r}; for a Hugging Face model write hf:{raw}, "
            f"for a self-hosted one pass --base-url URL"
        )
    raise UpskillError(f"unknown model spec {raw!r}; {FORMS_HINT}")


def parse_judge_spec(spec: str, base_url: str | None = None) -> ModelSpec:
    """Parse a judge's spec: ``--base-url`` serves it as it serves ``--model``, unless it names its own.

    ``-m NAME --judge NAME --base-url URL`` must grade through URL (a local endpoint's user
    has no other judge, and evals.json rubrics refuse self-grading by default), so a bare
    name and ``openai-compatible:NAME`` take ``base_url`` exactly as :func:`parse_model_spec`
    gives it to a model. A judge that names its provider (``openai:``, ``anthropic:``, ``hf:``,
    an alias, ``local``) or its endpoint (``openai-compatible:NAME@URL``) keeps it: that is how
    a hosted judge grades a model served at ``--base-url``.
    """
    raw = (spec or "").strip()
    prefix, sep, rest = raw.partition(":")
    provider = _PROVIDER_PREFIXES.get(prefix.lower()) if sep else None
    own = (
        raw.lower() in ALIASES
        or raw.lower() == "local"
        or (provider is not None and provider != "openai-compatible")
    )
    if provider == "openai-compatible" and "@" in rest:
        own = True
    return parse_model_spec(spec, None if own else base_url)


#: The model used when nothing is configured: a real small model that runs offline.
DEFAULT_MODEL_SPEC = "local"
