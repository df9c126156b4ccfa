"""Keep secrets out of anything we print, log, store or push.

Tokens and API keys must never reach a message, a results file, a dataset or a commit.
Every such sink passes text through :func:`redact`, which masks the values of the secret
environment variables we know about and anything shaped like a Hugging Face token or a
provider API key.
"""

from __future__ import annotations

import hashlib
import os
import re

#: Environment variables whose values are secrets wherever they show up.
SECRET_ENV_VARS = (
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "UPSKILL_API_KEY",
    "HF_API_KEY",
)

#: Parts of a variable's name that mark its value as a secret (``ANTHROPIC_AUTH_TOKEN``,
#: ``OPENAI_API_KEY``, ``DB_PASSWORD``, ``GOOGLE_APPLICATION_CREDENTIALS``...).
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:(?:API|ACCESS|PRIVATE|SECRET)?KEYS?|TOKENS?|PAT|SECRETS?|PASSWORDS?|PASSWD|PASS|AUTH|CREDENTIALS?|COOKIES?|"
    r"PRIVATE|SESSION)(?:_|$)",
    re.IGNORECASE,
)


def secret_name(name: str) -> bool:
    """Whether an environment variable's name says its value is a secret (its value is then masked)."""
    return name in SECRET_ENV_VARS or _SECRET_NAME.search(name) is not None


_PATTERNS = [
    re.compile(r"hf_[A-Za-z0-9]{16,}"),
    # The password of a URL's user part (between the user's colon and the at-sign before the host).
    re.compile(r"(://[^/\s:@]{1,256}:)[^@\s/]{1,256}(?=@)"),
    re.compile(r"sk-(?:ant-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-\.=]{8,}"),
]

MASK = "***"


def secret_values(extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The secret strings currently known: env values plus ``extra`` (e.g. a key typed in a UI)."""
    values = [os.environ.get(name, "") for name in SECRET_ENV_VARS]
    values.extend(extra)
    # Very short values would mask ordinary words; real keys are long.
    return sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True)


def redact(text: str, extra: list[str] | tuple[str, ...] = ()) -> str:
    """Return ``text`` with every known secret and token-shaped string replaced by ``***``."""
    if not text:
        return text
    for value in secret_values(extra):
        text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text


def rules_fingerprint() -> str:
    """A digest of the token patterns and the mask: it changes when a new version masks differently.

    Text masked once and stored (the run folder's ``results.parquet``) is trusted later
    only under the same rules; after an upgrade that adds a pattern it is checked again.
    """
    spec = "\n".join([MASK, *(p.pattern for p in _PATTERNS)])
    return hashlib.sha256(spec.encode("utf-8")).hexdigest()
