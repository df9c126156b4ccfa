"""Where ``hub serve`` takes its tokens from: environment variables or a file, not argv.

A token on the command line is visible to every user of the machine (``ps``, shell
history, process accounting). The server therefore reads them from
``UPSKILL_HUB_WRITE_TOKENS`` / ``UPSKILL_HUB_READ_TOKENS`` (separated by commas or
whitespace) or from a file with one ``write <token>`` or ``read <token>`` per line
(``#`` comments allowed; a bare token is a write token). ``--token`` still works for
quick local runs, with a warning.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from upskill_hub.errors import UpskillError

WRITE_ENV = "UPSKILL_HUB_WRITE_TOKENS"
READ_ENV = "UPSKILL_HUB_READ_TOKENS"
_TOKEN_RE = re.compile(r"^[\x21-\x7e]{8,512}$")


def _check(token: str, where: str) -> str:
    if not _TOKEN_RE.match(token):
        raise UpskillError(f"{where}: a token must be 8-512 printable characters without spaces")
    return token


def from_env(name: str, environ: dict[str, str] | None = None) -> list[str]:
    """Tokens listed in ``$name`` (commas or whitespace between them)."""
    raw = (environ if environ is not None else os.environ).get(name, "")
    return [_check(t, f"${name}") for t in re.split(r"[\s,]+", raw) if t]


def from_file(path: Path) -> tuple[list[str], list[str]]:
    """``(write, read)`` tokens from a token file; one-line error when it cannot be used."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UpskillError(f"cannot read token file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UpskillError(f"token file {path} is readable by other users: chmod 600 {path}")
    write: list[str] = []
    read: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, token = line.partition(" ")
        if not token:
            kind, token = "write", kind
        if kind not in ("write", "read"):
            raise UpskillError(f"token file {path}, line {n}: expected 'write <token>' or 'read <token>'")
        (write if kind == "write" else read).append(_check(token.strip(), f"token file {path}, line {n}"))
    return write, read


def collect(
    cli_write: list[str], cli_read: list[str], token_file: Path | None, environ: dict[str, str] | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """All write and read tokens from argv, the environment and the token file (deduplicated)."""
    write = [_check(t, "--token") for t in cli_write] + from_env(WRITE_ENV, environ)
    read = [_check(t, "--read-token") for t in cli_read] + from_env(READ_ENV, environ)
    if token_file is not None:
        w, r = from_file(token_file)
        write += w
        read += r
    both = set(write) & set(read)
    if both:
        raise UpskillError("the same token is given as both a write and a read-only token")
    return tuple(dict.fromkeys(write)), tuple(dict.fromkeys(read))
