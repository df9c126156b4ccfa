"""Where a model call goes and with which key, resolved the way the official SDKs do.

The ``openai`` and ``anthropic`` SDKs read ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` when
no ``base_url`` is passed, and that is what people set for a proxy, LiteLLM, vLLM or a
company gateway. Passing the public URL explicitly (as we used to) silently overrode
them, so every call of a gateway user went to the public endpoint and failed. The order
here is the SDKs' own, with our flags in front:

``--base-url`` flag > URL in the model spec > ``*_BASE_URL`` variable > public default.

The Hugging Face router has no such variable in ``huggingface_hub`` (its inference proxy
URL is a constant there), so ``hf:`` specs always use the public router unless a flag
says otherwise; :func:`resolve_endpoint` reports that honestly instead of inventing one.
Parsing stays pure (:mod:`upskill_hub.models.spec`); the environment is read only here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from upskill_hub.errors import UpskillError
from upskill_hub.models.spec import ANTHROPIC_BASE_URL, HF_ROUTER_URL, OPENAI_BASE_URL, ModelSpec

#: The variable each SDK reads for its base URL (None: the SDK/library has none).
BASE_URL_ENV: dict[str, str | None] = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "hf": None,
    "openai-compatible": None,
}

_DEFAULTS = {"openai": OPENAI_BASE_URL, "anthropic": ANTHROPIC_BASE_URL, "hf": HF_ROUTER_URL}


@dataclass(frozen=True)
class Endpoint:
    """A resolved endpoint: the URL and where it came from (shown by ``upskill-hub models``)."""

    url: str
    source: str  # "--base-url", "spec", "env OPENAI_BASE_URL", "default" or "in-process"


def _spec_source(spec: ModelSpec) -> str:
    # An openai-compatible spec carries its URL inline (MODEL@URL); any other URL on a
    # parsed spec came from --base-url.
    return "spec" if spec.provider == "openai-compatible" and "@" in spec.raw else "--base-url"


def _env_url(name: str, value: str) -> str:
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UpskillError(f"{name}={value!r} is not an http(s) URL (e.g. http://localhost:4000/v1)")
    return value.rstrip("/")


def resolve_endpoint(spec: ModelSpec, environ: Mapping[str, str] | None = None) -> Endpoint:
    """The URL calls for ``spec`` go to, in the SDKs' order (see the module docstring)."""
    env = os.environ if environ is None else environ
    if spec.provider == "local":
        return Endpoint("in-process", "in-process")
    if spec.base_url:
        return Endpoint(spec.base_url, _spec_source(spec))
    var = BASE_URL_ENV.get(spec.provider)
    value = (env.get(var) or "").strip() if var else ""
    if var and value:
        return Endpoint(_env_url(var, value), f"env {var}")
    return Endpoint(_DEFAULTS[spec.provider], "default")


def with_endpoint(spec: ModelSpec, environ: Mapping[str, str] | None = None) -> ModelSpec:
    """``spec`` with its base URL filled in from the environment when a variable names one.

    Flags and spec URLs are already on ``spec`` and win; without a variable the spec is
    returned unchanged so its ``endpoint`` stays the public default.
    """
    ep = resolve_endpoint(spec, environ)
    if ep.source.startswith("env "):
        return ModelSpec(spec.provider, spec.model, ep.url, spec.raw)
    return spec


def mask_key(key: str | None) -> str:
    """A key as it may be printed: its first 4 and last 2 characters at most, never whole.

    Short keys show nothing but their length, so a 6-character test token is not revealed.
    """
    if not key:
        return "-"
    if len(key) < 12:
        return f"*** ({len(key)} chars)"
    return f"{key[:4]}…{key[-2:]}"
