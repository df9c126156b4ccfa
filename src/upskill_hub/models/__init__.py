"""Model providers behind one small async interface, plus spec parsing, preflight and prices.

Typical use::

    spec = preflight("haiku")                      # fails fast: key, endpoint, install
    client = create_client(spec, timeout=60, max_retries=4)
    out = await client.complete(system, [Message("user", "hi")], GenerationParams())
"""

from upskill_hub.models.base import (
    Completion,
    GenerationParams,
    Message,
    ModelCallError,
    ModelClient,
    Usage,
)
from upskill_hub.models.factory import create_client, preflight, probe_endpoint, resolve_api_key
from upskill_hub.models.pricing import cost_usd, lookup_price
from upskill_hub.models.retry import RetryPolicy
from upskill_hub.models.spec import ALIASES, DEFAULT_MODEL_SPEC, ModelSpec, parse_model_spec

__all__ = [
    "ALIASES",
    "DEFAULT_MODEL_SPEC",
    "Completion",
    "GenerationParams",
    "Message",
    "ModelCallError",
    "ModelClient",
    "ModelSpec",
    "RetryPolicy",
    "Usage",
    "cost_usd",
    "create_client",
    "lookup_price",
    "parse_model_spec",
    "preflight",
    "probe_endpoint",
    "resolve_api_key",
]
