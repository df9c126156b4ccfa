"""Counts in words: ``1 skill``, ``2 skills``, ``1,000 result rows``.

Status lines that glue a number to a fixed plural ("1 skills · 1 models") read as a slip;
every count a person reads goes through :func:`count`.
"""

from __future__ import annotations


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it, thousands separated (``plural`` for odd forms)."""
    noun = singular if n == 1 else (plural if plural is not None else singular + "s")
    return f"{n:,} {noun}"
