"""Who may read and write on the local Hub.

Rules (documented in ``upskill-hub hub serve --help``):

* ``write_tokens`` set: those bearer tokens may write; ``read_tokens`` may only read;
  any other token is refused with 401 ("Invalid credentials").
* ``write_tokens`` empty: any bearer token that is not a read token may write (local
  development; the server says so when it starts).
* No token: anonymous. Public repos are readable; private repos are invisible (404, not
  listed); writes get 401.

Tokens never reach a log line: the server logs method, path (without query) and status.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from enum import Enum


class Access(Enum):
    ANONYMOUS = "anonymous"
    READ = "read"
    WRITE = "write"
    INVALID = "invalid"


@dataclass(frozen=True)
class AuthPolicy:
    """Maps a request's bearer token to an :class:`Access` level."""

    write_tokens: tuple[str, ...] = ()
    read_tokens: tuple[str, ...] = ()

    @property
    def open_writes(self) -> bool:
        """True when any bearer token may write (no --token given)."""
        return not self.write_tokens

    def access(self, authorization: str | None) -> Access:
        token = bearer_token(authorization)
        if token is None:
            return Access.ANONYMOUS
        if _member(token, self.read_tokens):
            return Access.READ
        if self.open_writes or _member(token, self.write_tokens):
            return Access.WRITE
        return Access.INVALID


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def _member(token: str, allowed: tuple[str, ...]) -> bool:
    # Constant-time comparison: the server may be reachable by others on a LAN.
    return any(hmac.compare_digest(token.encode(), t.encode()) for t in allowed)
