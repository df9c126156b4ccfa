"""Rates, lifts and counts as text: one formatter for the CLI, the report, the card and the Space.

The same run must read the same everywhere: a pass rate rounds to a whole percent, an
interval is ``[low, high]``, a lift is signed whole points, and a value that was not
measured is ``–`` (never ``n/a`` in one place and ``0%`` in another). A count agrees with
its noun (``1 skill``, ``2 skills``): "1 skills · 1 models" reads as a slip.
"""

from __future__ import annotations

import math
import numbers

#: Shown for a value that was not measured (no answered calls, no baseline...).
MISSING = "–"


def _missing(x: object) -> bool:
    """None, NaN, an infinity, or a figure too large to show in points (1e308 x 100 overflows).

    Figures come from run folders and Hub tables anyone may edit; their readers refuse what is
    out of range, and this is the last guard: a figure that cannot be a number on screen is
    shown as :data:`MISSING`, never as ``+inf pts`` or ``nan%``.
    """
    if not isinstance(x, numbers.Real):  # None (numpy scalars are Real too)
        return True
    return not math.isfinite(float(x) * 100)


def pct(x: float | None) -> str:
    """``0.625`` -> ``62%``."""
    return MISSING if _missing(x) else f"{x * 100:.0f}%"


def interval(lo: float | None, hi: float | None) -> str:
    """``[41%, 80%]``; empty when either bound is missing."""
    return "" if _missing(lo) or _missing(hi) else f"[{pct(lo)}, {pct(hi)}]"


def rate(p: float | None, lo: float | None = None, hi: float | None = None) -> str:
    """A pass rate with its interval: ``62% [41%, 80%]`` (``62%`` without one)."""
    if _missing(p):
        return MISSING
    ci = interval(lo, hi)
    return f"{pct(p)} {ci}" if ci else pct(p)


def points(
    lift: float | None,
    lo: float | None = None,
    hi: float | None = None,
    *,
    unit: str = "pts",
    sep: str = " ",
    compact: bool = False,
) -> str:
    """A lift in signed percentage points with its interval: ``+25 pts [+5, +45]``.

    The one lift formatter; the variants are layout only: ``unit`` (``"points"``, ``""``,
    or ``"%"`` which attaches like upskill prints it, ``+25%``), ``sep`` between the value
    and the interval (a newline in a table cell), ``compact`` for ``[+5,+45]``.
    """
    if _missing(lift):
        return MISSING
    value = f"{lift * 100:+.0f}"
    text = value + unit if unit in ("", "%") else f"{value} {unit}"
    if not _missing(lo) and not _missing(hi):
        comma = "," if compact else ", "
        text += f"{sep}[{lo * 100:+.0f}{comma}{hi * 100:+.0f}]"
    return text


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it, thousands separated (``plural`` for odd forms)."""
    noun = singular if n == 1 else (plural if plural is not None else singular + "s")
    return f"{n:,} {noun}"
