"""A deterministic teacher for ``upskill-hub tune``, so the loop can be shown and tested offline.

The scripted server's model loads a catalog skill when the query shares a word with its
description (:func:`upskill_hub.testing.scripted_model.tool_step`). This teacher answers
``tune``'s requests the way a careful human would against such a model: it reads the
queries the description missed and the ones it wrongly caught (both listed in the
request), drops the description's words that the wrongly caught queries use, and appends
a "Use when ..." clause naming the words the missed queries share and the caught ones do
not. It never sees held-out queries (the request holds
none), so held-out recall rises only when the words generalise, as with a real teacher.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from upskill_hub.testing.scripted_model import words
from upskill_hub.triggering.tune import TEACHER_SYSTEM

#: The most words one proposal adds (the description stays short and spec-valid).
MAX_WORDS = 8
_ITEM = re.compile(r"^- (.*) \(loaded \d+/\d+ times\)$")
_CURRENT = re.compile(r"<description>(.*?)</description>", re.S)


def _section(lines: list[str], heading: str) -> list[str]:
    """The queries listed under the line that starts with ``heading``."""
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith(heading):
            inside = True
            continue
        if inside:
            m = _ITEM.match(line)
            if not m:
                break
            out.append(m.group(1))
    return out


def keyword_teacher(request: str) -> str:
    """The proposal for one ``tune`` request.

    Words of the current description that the wrongly caught queries use are dropped (they
    are what made the model load the skill), and a "Use when" clause names the words the
    missed queries share that the caught ones do not.
    """
    lines = request.splitlines()
    current = _CURRENT.search(request)
    description = " ".join((current.group(1) if current else "").split())
    missed = _section(lines, "The agent did NOT load it")
    caught = _section(lines, "The agent loaded it for these requests")
    banned = {w for q in caught for w in words(q)}
    kept = re.sub(r"[A-Za-z]{4,}", lambda m: "" if m.group(0).lower() in banned else m.group(0), description)
    kept = re.sub(r"\s+([,.;:)])", r"\1", " ".join(kept.split()))
    have = set(words(kept))
    counts = Counter(w for q in missed for w in dict.fromkeys(words(q)) if w not in banned and w not in have)
    picked = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_WORDS]]
    clause = f"Use when a request mentions {', '.join(picked)}." if picked else ""
    proposal = " ".join(f"{kept} {clause}".split())[:1024]
    return f"<description>{proposal or description}</description>"


def demo_script(system: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """The standalone server's script: the keyword teacher for ``tune`` requests, else an echo."""
    last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    if system == TEACHER_SYSTEM:
        return keyword_teacher(last)
    return f"You said: {last}"
