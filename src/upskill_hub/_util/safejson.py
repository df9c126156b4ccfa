"""JSON from strangers, parsed only when it nests no deeper than a limit.

``json.loads`` recurses once per nesting level, so ``[[[[...]]]]`` 100,000 deep ends in a
``RecursionError`` (a traceback, and in a server a 500). Everything we then do with the
data (validate it, dump it, walk it) recurses too. Measuring the depth first, with a
linear scan that never recurses, makes every later step safe.
"""

from __future__ import annotations

import json
import re
from typing import Any

from upskill_hub._util import limits

#: What the depth scan looks at: an escape pair, a quote or a bracket (one pass, no backtracking).
_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


class JSONTooDeep(ValueError):
    """The text nests arrays/objects deeper than allowed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"JSON nests deeper than {limit} levels")
        self.limit = limit


def nesting_depth(text: str, stop_after: int | None = None) -> int:
    """Deepest array/object nesting in ``text`` (0 for a scalar); stops counting past ``stop_after``."""
    depth = peak = 0
    in_string = False
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok[0] == "\\":
            if in_string:
                continue
            tok = tok[1]  # invalid JSON outside a string; still count what it hides
        if tok == '"':
            in_string = not in_string
            continue
        if in_string or tok not in "[]{}":
            continue
        if tok in "[{":
            depth += 1
            if depth > peak:
                peak = depth
                if stop_after is not None and peak > stop_after:
                    return peak
        else:
            depth -= 1
    return peak


def loads(text: str | bytes, max_depth: int | None = None) -> Any:
    """``json.loads`` that raises :class:`JSONTooDeep` instead of recursing without bound."""
    limit = limits.JSON_MAX_DEPTH if max_depth is None else max_depth
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")
    if nesting_depth(text, stop_after=limit) > limit:
        raise JSONTooDeep(limit)
    return json.loads(text)
