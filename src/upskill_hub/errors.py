"""User-facing errors.

Anything a user or a Hub repo can hand us that is wrong becomes an ``UpskillError``: the CLI
prints its message as one line and exits 1, without a traceback. Library callers (the Space,
tests) catch the same type.
"""

from __future__ import annotations


class UpskillError(Exception):
    """A problem the user can fix; its message is a single readable line."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
