"""One finding of a validator, shared by skills, tests files and kernel projects.

``skills validate``, ``kernels check`` and the corpus report all list findings the same
way (path, field, message, error or warning), so they share this type instead of kernels
borrowing it from the skill module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or worth a warning) in a skill or a kernel project."""

    path: str
    field: str
    message: str
    severity: str = "error"  # "error" | "warning"

    def __str__(self) -> str:
        # A problem with the whole file names the file once ("build.toml: ...", not twice).
        if not self.field or self.field == self.path or self.path.endswith("/" + self.field):
            return f"{self.path}: {self.message}"
        return f"{self.path}: {self.field}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "field": self.field, "message": self.message, "severity": self.severity}
