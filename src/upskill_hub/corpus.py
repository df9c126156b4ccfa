"""Check every skill and kernel project under a folder: one verdict per item.

People point upskill-hub at what already exists (a clone of a skill collection, a
kernels-community checkout, upskill's output). This walks such a tree, recognises skill
folders (``SKILL.md`` or ``skill.md``) and kernel projects (``build.toml`` with a
``[general]`` table), runs on each the same checks as ``skills validate`` and ``kernels
check``, and returns one :class:`Verdict` per item, so a whole corpus is judged in one
command and disagreements with other tools show up as a table rather than one at a time.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util import limits
from upskill_hub._util.fsutil import FileRefused, read_capped
from upskill_hub._util.problems import Problem
from upskill_hub.skill import META_FILE, WALK_SKIP_DIRS, load_skill, walk_tree

#: Folders never searched: VCS data, dependencies, caches, kernel build outputs.
SKIP_DIRS = WALK_SKIP_DIRS


@dataclass(frozen=True)
class Verdict:
    """What the checks say about one skill or kernel project."""

    kind: str  # "skill" | "kernel"
    path: str  # relative to the folder that was scanned
    name: str
    errors: int
    warnings: int
    #: The first error (else the first warning), as ``field: message``; "" when clean.
    first: str
    #: For skills: "N test cases from ... (format)"; None for kernels.
    tests: str | None = None

    @property
    def ok(self) -> bool:
        return self.errors == 0

    @property
    def status(self) -> str:
        return "error" if self.errors else ("warning" if self.warnings else "ok")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "status": self.status}


def _is_kernel_project(folder: Path) -> bool:
    path = folder / "build.toml"
    if not os.path.lexists(path):
        return False
    try:
        # Capped and never blocking: a FIFO or a 10 MB build.toml must not hang the search.
        head = read_capped(path, limits.MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except FileRefused:
        return True  # a build.toml we will not read: ``kernels check`` reports why, as a row
    return "[general" in head


def find_items(root: Path, max_depth: int = 8) -> list[tuple[str, Path]]:
    """``(kind, folder)`` for every skill and kernel project under ``root``, sorted by path.

    The same walker as ``skills list`` (:func:`upskill_hub.skill.walk_tree`), with kernel
    projects recognised too. An item's own subfolders are not searched (a kernel's tests,
    a skill's references); hidden folders are (collections keep skills in ``.curated/``).
    """
    return walk_tree(root, max_depth, lambda here: "kernel" if _is_kernel_project(here) else None)


def _summary(problems: list[Problem], *, with_path: bool) -> tuple[int, int, str]:
    """(errors, warnings, first problem); kernel problems name their file, skill ones do not."""
    errors = [p for p in problems if p.severity == "error"]
    warnings = [p for p in problems if p.severity != "error"]
    first = (errors or warnings or [None])[0]
    if first is None:
        return len(errors), len(warnings), ""
    text = str(first) if with_path else f"{first.field}: {first.message}"
    return len(errors), len(warnings), text


def check_skill(folder: Path, rel: str, *, strict: bool = False) -> Verdict:
    """``skills validate`` on one folder, as a verdict."""
    res = load_skill(folder, strict=strict)
    errors, warnings, first = _summary(res.problems, with_path=False)
    skill = res.skill
    tests = skill.meta.describe(META_FILE) if skill is not None and META_FILE in skill.files else None
    name = skill.name if skill is not None else folder.name
    return Verdict("skill", rel, name, errors, warnings, first, tests)


def check_kernel(folder: Path, rel: str) -> Verdict:
    """``kernels check`` on one project, as a verdict."""
    from upskill_hub.errors import UpskillError
    from upskill_hub.kernels.buildtoml import read_toml
    from upskill_hub.kernels.check import check_project

    problems = check_project(folder)
    errors, warnings, first = _summary(problems, with_path=True)
    try:
        name = str(read_toml(folder / "build.toml").get("general", {}).get("name", folder.name))
    except (UpskillError, AttributeError):
        name = folder.name
    return Verdict("kernel", rel, name, errors, warnings, first)


def check_corpus(roots: list[Path], *, strict: bool = False) -> list[Verdict]:
    """Verdicts for every skill and kernel project under each of ``roots``."""
    verdicts: list[Verdict] = []
    for root in roots:
        root = Path(root)
        for kind, folder in find_items(root):
            rel = folder.relative_to(root).as_posix() if folder != root else root.name
            if len(roots) > 1:
                rel = f"{root.name}/{rel}" if folder != root else rel
            if kind == "kernel":
                verdicts.append(check_kernel(folder, rel))
            else:
                verdicts.append(check_skill(folder, rel, strict=strict))
    return verdicts


def counts(verdicts: list[Verdict]) -> dict[str, dict[str, int]]:
    """``{"skill": {"ok": 3, "warning": 1, "error": 0}, "kernel": {...}}``."""
    out: dict[str, dict[str, int]] = {}
    for v in verdicts:
        per = out.setdefault(v.kind, {"ok": 0, "warning": 0, "error": 0})
        per[v.status] += 1
    return out
