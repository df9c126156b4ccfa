"""Why an agent CLI call failed, and what fixes it: one classifier for eval rows and ``doctor --agent``.

A CLI that cannot work says so in its own words (stderr, an error event, its last stdout
line): a refused key, an untrusted folder, root, an endpoint that does not answer. Read
against :data:`KINDS`, those words become a cause and a fix naming the variable to check, so
an error row says what to do rather than only what the CLI printed. The first kind that
matches wins; text that matches none gets no guess.
"""

from __future__ import annotations

import re

from upskill_hub._util.redact import secret_name
from upskill_hub.lift.harness.base import Adapter
from upskill_hub.lift.harness.process import ProcessResult

#: Provider -> (the base-URL variable that moves it, its public endpoint).
PROVIDERS: dict[str, tuple[str | None, str]] = {
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "openai-compatible": ("OPENAI_BASE_URL", ""),
    "google": ("GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
    "openrouter": (None, "https://openrouter.ai/api/v1"),
}
#: The provider each fixed-provider CLI calls (OpenCode's follows its model's prefix).
ADAPTER_PROVIDER = {"claude-code": "anthropic", "codex": "openai", "gemini": "google"}

#: (kind, pattern over the CLI's words, the fix), first match wins. ``{keys}`` and ``{base}``
#: are the adapter's key variables and its provider's base-URL variable.
KINDS: list[tuple[str, re.Pattern[str], str]] = [
    ("root", re.compile(r"cannot be used with root|root/sudo", re.I),
     "run as another user or pass --agent-env IS_SANDBOX=1"),
    ("trust", re.compile(r"trusted (?:directory|folder)|skip-trust|TRUST_WORKSPACE", re.I),
     "the CLI does not trust the workspace folder (Gemini CLI: --agent-env GEMINI_CLI_TRUST_WORKSPACE=true)"),
    ("auth", re.compile(r"\b40[13]\b|unauthori[sz]ed|forbidden|invalid[ _-]api[ _-]key|authenticat|"
                        r"invalid auth method|api key not valid|not logged in|please log ?in", re.I),
     "the provider refused the credentials: check {keys} (or use --agent-real-home for a subscription login)"),
    ("connection", re.compile(r"ECONNREFUSED|connection refused|reconnecting|connection failed|ENOTFOUND|"
                              r"fetch failed|getaddrinfo|could not resolve|network is unreachable|"
                              r"waiting for network|unable to connect", re.I),
     "the CLI could not reach its endpoint: check {base} and that the server is up"),
]  # fmt: skip


def base_variable(adapter: Adapter, model: str | None) -> str:
    """The variable that moves this CLI's provider endpoint (for OpenCode, its model's provider)."""
    provider = ADAPTER_PROVIDER.get(adapter.name) or (model or "").split("/", 1)[0]
    return PROVIDERS.get(provider, (None, ""))[0] or "the provider's base URL"


def cause(text: str, adapter: Adapter, model: str | None) -> tuple[str, str] | None:
    """``(kind, fix)`` for the first kind whose pattern the CLI's words match, else ``None``."""
    keys = ", ".join(k for k in adapter.env_keys if secret_name(k)) or "the key variables"
    for kind, pattern, fix in KINDS:
        if pattern.search(text):
            return kind, fix.format(keys=keys, base=base_variable(adapter, model))
    return None


def last_line(data: bytes, limit: int = 200) -> str:
    """The last non-empty line of a CLI's output, one line, at most ``limit`` characters."""
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        line = " ".join(line.split())
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def failure_line(msg: str, res: ProcessResult, adapter: Adapter, model: str | None) -> str:
    """A failed call's error: ``msg``, the CLI's last stderr line when ``msg`` lacks it (a CLI
    often prints its cause there while stdout holds only a generic error, or nothing), and
    the cause and fix where its words tell (a timeout included: a CLI retrying a refused key
    or a dead endpoint says so on stderr until it is killed)."""
    last = last_line(res.stderr_tail)
    if last and last not in msg:
        msg = f"{msg} (stderr: {last})"
    words = "\n".join([msg, res.stderr_tail.decode("utf-8", "replace"),
                       res.stdout_tail[-4096:].decode("utf-8", "replace")])  # fmt: skip
    found = cause(words, adapter, model)
    if found is not None and found[1] not in msg:
        msg = f"{msg}; {found[0]}: {found[1]}"
    return msg
