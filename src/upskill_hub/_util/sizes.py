"""Sizes in messages, one way everywhere (decimal units, as ``ls -h --si``).

A refusal that says "is 1.0 MB; files over 1 MB are not read" or "files over 0 MB" leaves
the reader guessing which number is wrong. :func:`size_and_limit` prints a size beside the
limit it broke with as many decimals as it takes for the two to differ, and the limit
exactly as set (``500 KB`` for ``UPSKILL_MAX_FILE_MB=0.5``, never ``0 MB``).
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal

_UNITS = (("GB", 10**9), ("MB", 10**6), ("KB", 10**3))
#: Most decimals a size is shown with (a byte in GB).
_MAX_PLACES = 9


def _unit(n: int) -> tuple[str, int]:
    for name, div in _UNITS:
        if n >= div:
            return name, div
    return "bytes", 1


def human_size(n: int) -> str:
    """``2.1 GB``, ``5.0 KB``, ``12 bytes``: a size on its own, to one decimal."""
    name, div = _unit(n)
    return f"{n} bytes" if div == 1 else f"{n / div:.1f} {name}"


def exact_size(n: int) -> str:
    """``64 KB``, ``0.5 MB`` → ``500 KB``, ``1.25 MB``: a limit, exactly, without trailing zeros."""
    name, div = _unit(n)
    if div == 1:
        return f"{n} bytes"
    text = format(Decimal(n) / Decimal(div), "f")  # exact: div is a power of ten
    return f"{text.rstrip('0').rstrip('.') if '.' in text else text} {name}"


def size_and_limit(size: int, limit: int) -> tuple[str, str]:
    """``size`` and ``limit`` as text that differs visibly when they differ.

    ``(1_050_000, 1_000_000)`` → ``("1.05 MB", "1 MB")``, not ``1.0 MB`` and ``1 MB``. The
    size is cut, never rounded, so it is never shown as more than it is.
    """
    shown_limit = exact_size(limit)
    name, div = _unit(size)
    if div == 1:
        return f"{size} bytes", shown_limit
    limit_name, limit_div = _unit(limit)
    exact = Decimal(size) / Decimal(div)
    for places in range(1, _MAX_PLACES + 1):
        cut = exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_DOWN)
        if name != limit_name or cut != Decimal(limit) / Decimal(limit_div):
            break
    return f"{cut} {name}", shown_limit
