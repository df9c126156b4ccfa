"""User-facing errors, typed: the fields say what went wrong, one place says it in words.

Anything a user or a Hub repo can hand us that is wrong becomes an ``UpskillError``: the CLI
prints ``str(exc)`` as one line and exits 1, without a traceback; the Space shows the same
line. Subclasses carry the facts as fields (the repo id, the path, the HTTP status) so
callers branch on those, never on message text, and :meth:`UpskillError.describe` turns
them into the sentence, here and nowhere else.
"""

from __future__ import annotations

from pathlib import Path


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


class UpskillError(Exception):
    """A problem the user can fix; ``str()`` is a single readable line."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        self.message = _one_line(message)
        super().__init__(self.message)

    def describe(self) -> str:
        """The line shown to the user (subclasses build it from their fields)."""
        return self.message

    def __str__(self) -> str:
        return _one_line(self.describe())


class PathError(UpskillError):
    """A file or folder we were given cannot be used: which one, where in it, and why.

    ``kind`` names what the path was meant to be (``"tests file"``, ``"run folder"``);
    ``field`` locates the problem inside the file (``"cases[2].input"``).
    """

    def __init__(self, path: str | Path, problem: str, *, kind: str | None = None, field: str | None = None) -> None:
        self.path = str(path)
        self.problem = _one_line(problem)
        self.kind = kind
        self.field = field
        super().__init__(self.describe())

    def describe(self) -> str:
        what = f"{self.kind} {self.path}" if self.kind else self.path
        where = f"{self.field}: " if self.field else ""
        return f"{what}: {where}{self.problem}"


class OptionError(UpskillError):
    """An option's value cannot be used: the option's field ``name``, the ``value`` and the ``reason``.

    The library names an option by its field (``max_tokens``, as in ``EvalOptions`` and
    ``GenerationParams``), because the CLI, the Space and Python callers all reach the same
    check; each front end says the name its own way: the CLI as its flag
    (``--max-tokens``; ``upskill_hub.cli.app.flag``), the Space as its own field.
    ``str()`` reads ``max_tokens must be at least 1, got 0``.
    """

    def __init__(self, name: str, value: object, reason: str) -> None:
        self.name = name
        self.value = value
        self.reason = _one_line(reason)
        super().__init__(self.describe())

    def describe(self, label: str | None = None) -> str:
        """The line, with the option called ``label`` (default: its field name)."""
        return f"{label or self.name} {self.reason}"


class HubError(UpskillError):
    """A Hub request failed: ``action`` on ``repo_id`` (HTTP ``status`` when there was one)."""

    def __init__(self, repo_id: str, problem: str, *, action: str, status: int | None = None) -> None:
        self.repo_id = repo_id
        self.problem = _one_line(problem)
        self.action = action
        self.status = status
        super().__init__(self.describe())

    def describe(self) -> str:
        return f"cannot {self.action} {self.repo_id}: {self.problem}"
