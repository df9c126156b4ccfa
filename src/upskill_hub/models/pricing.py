"""What a call cost: USD per million tokens for common models, extendable by the user.

Prices change; the built-in table is a convenience, not a source of truth. Users add or
override entries in a TOML or JSON file: ``$UPSKILL_HUB_PRICES`` if set, else
``prices.toml`` / ``prices.json`` in the user config dir (``upskill-hub``). Either holds a
table per model id::

    [models."my-org/my-model"]
    input = 0.6      # USD per 1M input tokens
    output = 2.4     # USD per 1M output tokens
    cached = 0.15    # USD per 1M cached input tokens (optional; defaults to input)

:func:`cost_usd` returns ``None`` for models it doesn't know, so an unknown price is never
reported as free; the ``local`` provider costs 0.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from upskill_hub.errors import UpskillError
from upskill_hub.models.base import Usage


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens."""

    input: float
    output: float
    cached: float | None = None  # None: cached input costs the same as input

    def cost(self, usage: Usage) -> float | None:
        """USD for one call's ``usage``; cached input at the cached rate, the rest at the input rate."""
        if usage.input_tokens is None and usage.output_tokens is None:
            return None
        cached = min(usage.cached_tokens or 0, usage.input_tokens or 0)
        uncached = (usage.input_tokens or 0) - cached
        cached_rate = self.input if self.cached is None else self.cached
        return (uncached * self.input + cached * cached_rate + (usage.output_tokens or 0) * self.output) / 1_000_000


#: What the in-process local model costs.
FREE = Price(0.0, 0.0, 0.0)

#: Public list prices, USD per 1M tokens (input, output, cached input), November 2026.
BUILTIN_PRICES: dict[str, Price] = {
    # Anthropic (cached = cache read)
    "claude-opus-4-5": Price(5.0, 25.0, 0.5),
    "claude-opus-4-1": Price(15.0, 75.0, 1.5),
    "claude-opus-4": Price(15.0, 75.0, 1.5),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.3),
    "claude-sonnet-4": Price(3.0, 15.0, 0.3),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.3),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.1),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08),
    # OpenAI
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "gpt-5-nano": Price(0.05, 0.4, 0.005),
    "gpt-4.1": Price(2.0, 8.0, 0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025),
    "gpt-4o": Price(2.5, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "o3": Price(2.0, 8.0, 0.5),
    "o3-mini": Price(1.1, 4.4, 0.55),
    "o4-mini": Price(1.1, 4.4, 0.275),
}

PRICES_ENV = "UPSKILL_HUB_PRICES"

# Dated snapshots map to their family: claude-sonnet-4-5-20250929, gpt-4.1-mini-2025-04-14.
_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def user_prices_path() -> Path | None:
    """The user's price file, if there is one."""
    env = os.environ.get(PRICES_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise UpskillError(f"{PRICES_ENV} points to {str(path)!r}, which does not exist")
        return path
    from platformdirs import user_config_dir

    base = Path(user_config_dir("upskill-hub"))
    for name in ("prices.toml", "prices.json"):
        if (base / name).is_file():
            return base / name
    return None


def _parse_price(model: str, entry: object, path: Path) -> Price:
    if not isinstance(entry, dict):
        raise UpskillError(f"{path}: price for {model!r} must be a table with input/output")
    try:
        cached = entry.get("cached")
        return Price(float(entry["input"]), float(entry["output"]), None if cached is None else float(cached))
    except (KeyError, TypeError, ValueError):
        raise UpskillError(
            f"{path}: price for {model!r} needs numeric 'input' and 'output' (USD per 1M tokens)"
        ) from None


def load_price_file(path: Path) -> dict[str, Price]:
    """Read a user price file (TOML or JSON); UpskillError with the file name if it is bad."""
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import tomlkit

            data = tomlkit.parse(text).unwrap()
    except Exception as exc:
        raise UpskillError(f"cannot read price file {path}: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise UpskillError(f"price file {path} must hold a table of models")
    table = data.get("models", data)
    if not isinstance(table, dict):
        raise UpskillError(f"price file {path}: 'models' must be a table")
    return {str(model): _parse_price(str(model), entry, path) for model, entry in table.items()}


@lru_cache(maxsize=8)
def _price_table(path_key: str | None, mtime_ns: int = 0) -> dict[str, Price]:
    table = dict(BUILTIN_PRICES)
    if path_key:
        table.update(load_price_file(Path(path_key)))
    return table


def price_table() -> dict[str, Price]:
    """Built-in prices overlaid with the user's file (re-read when it changes)."""
    path = user_prices_path()
    if path is None:
        return _price_table(None)
    return _price_table(str(path), path.stat().st_mtime_ns)


def _model_id(model: str) -> str:
    prefix, sep, rest = model.partition(":")
    if sep and prefix in ("anthropic", "openai", "hf", "openai-compatible", "local"):
        return rest
    return model


def lookup_price(model: str) -> Price | None:
    """The price for ``model`` (an id or a ``provider:id`` spec), trying its family too."""
    table = price_table()
    name = _model_id(model)
    for candidate in (model, name, name.lower(), _DATE_SUFFIX.sub("", name.lower())):
        if candidate in table:
            return table[candidate]
    return None


def price_for(model: str, *, provider: str | None = None) -> Price | None:
    """The price of ``model`` as called through ``provider`` (``local`` is free), or ``None``."""
    if provider == "local" or model == "local" or model.startswith("local:"):
        return FREE
    return lookup_price(model)


def cost_usd(model: str, usage: Usage, *, provider: str | None = None) -> float | None:
    """USD for one call, or ``None`` when the model's price (or the usage) is unknown.

    Cached input tokens are billed at the cached rate; the rest of the input at the input
    rate. The ``local`` provider is free.
    """
    price = price_for(model, provider=provider)
    if price is FREE:
        return 0.0
    return None if price is None else price.cost(usage)
