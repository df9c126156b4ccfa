"""What the scripted server's model does besides calling the script: its deterministic tool use.

Offered ``load_skill``, the model loads the catalog skill whose description shares a word
with the request, then reads a file the loaded body names; only then does the answer script
run, on :func:`_script_view`. Its own module because :mod:`.scripted_teacher` must name words
exactly as this model matches them, and :mod:`.llm_server` runs the teacher as its demo.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from upskill_hub.testing.wire import Reply

Script = Callable[[str, list[dict[str, str]], dict[str, Any]], "str | Reply"]


def echo_script(system: str, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """The default script: repeat the last user message back."""
    last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return f"You said: {last}"


#: Words too common to count as a match between a user request and a skill description.
_STOPWORDS = frozenset(
    ["about", "also", "after", "answer", "answers", "been", "before", "being", "does", "each", "from", "have", "into", "just", "like", "make", "more", "most", "much", "need", "only", "other", "over", "some", "such", "than", "that", "their", "them", "then", "there", "these", "they", "this", "those", "through", "using", "very", "what", "when", "where", "which", "while", "will", "with", "would", "your", "user", "users", "should", "could", "skill", "skills", "task", "tasks", "help", "write"]
)
_CATALOG_ENTRY = re.compile(r"<skill>\s*<name>(.*?)</name>\s*<description>(.*?)</description>", re.S)
#: A relative file path a skill body names (``references/x.md``); never absolute, never ``..``.
_BODY_PATH = re.compile(r"(?<![\w/.])((?:[\w-]+/)+[\w.-]+\.[A-Za-z0-9]+)\b")


def words(text: str) -> list[str]:
    """The model's words, in order: runs of 4+ lowercase letters that are not stopwords."""
    return [w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in _STOPWORDS]


def tool_step(system: str, messages: list[dict[str, Any]], tools: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The scripted model's deterministic tool use, or None to answer.

    With ``load_skill`` offered and no tool result yet: load the first catalog skill whose
    description shares a word (4+ letters, not a stopword) with the user's text. Right after
    a load: read the first relative file path the loaded body names, if any. Otherwise answer.
    """
    if "load_skill" not in tools:
        return None
    results = [m for m in messages if m["role"] == "tool"]
    if not results:
        user = " ".join(m["content"] for m in messages if m["role"] == "user")
        asked = set(words(user))
        for name, description in _CATALOG_ENTRY.findall(system):
            if asked.intersection(words(description)):
                return "load_skill", {"name": name.strip()}
        return None
    last_call = next((m["tool_calls"][-1] for m in reversed(messages) if m.get("tool_calls")), None)
    if last_call and last_call["name"] == "load_skill" and "read_skill_file" in tools:
        path = _BODY_PATH.search(results[-1]["content"])
        if path and ".." not in path.group(1):
            return "read_skill_file", {"name": last_call["arguments"].get("name", ""), "path": path.group(1)}
    return None


def _script_view(system: str, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """What the answer script sees after tool use: what the tools returned follows the system
    prompt (so a script keyed on the skill text answers as in inject mode), and only the
    user / assistant text turns remain."""
    read = [m["content"] for m in messages if m["role"] == "tool"]
    plain = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "tool" and not m.get("tool_calls")]
    return "\n".join([system, *read]) if read else system, plain
