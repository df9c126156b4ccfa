"""Managed installs: skills installed from the Hub that ``skills update`` may refresh.

``skills install OWNER/NAME`` leaves a marker file in each installed folder naming the
repo, the skill and the revision asked for; ``skills update`` refreshes only folders with
that marker, so a skill the user wrote or copied by hand is never overwritten. This is
the convention of ``hf skills add|update`` (which marks its installs with
``.hf-skill-manifest.json``); ours carries the source, because our skills come from any
dataset repo rather than one fixed marketplace. Both markers are excluded from a skill's
content (:data:`upskill_hub.skill.IGNORED_NAMES`), so marking changes no version hash.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util.boundedread import FileRefused, read_json_file
from upskill_hub.errors import UpskillError

MARKER = ".upskill-hub-install.json"


@dataclass(frozen=True)
class UpdateInfo:
    """What ``skills update`` did to one installed folder."""

    name: str
    path: Path
    status: str  # updated | up_to_date | unmanaged | source_unreachable
    repo: str | None = None
    version: str | None = None
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "status": self.status, "repo": self.repo,
                "version": self.version, "detail": self.detail}


def mark_managed(folder: Path, repo: str, skill: str, revision: str | None, commit: str | None) -> None:
    """Record that ``folder`` holds ``skill`` installed from ``repo`` (at ``revision``)."""
    data = {"repo": repo, "skill": skill, "revision": revision, "commit": commit, "installed_by": "upskill-hub"}
    (folder / MARKER).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a managed install, or None (unmanaged, or a marker we cannot trust)."""
    path = folder / MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        # Bounded like every file a stranger may have written: size, type, nesting.
        data = read_json_file(path)
    except FileRefused:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("repo"), str) or not isinstance(data.get("skill"), str):
        return None
    if data["skill"] != folder.name:
        return None  # renamed by hand: the user's folder now
    rev = data.get("revision")
    data["revision"] = rev if isinstance(rev, str) else None
    return data


def installed_folders(roots: list[Path]) -> list[Path]:
    """Skill folders directly under each root (no symlinks), deduplicated, sorted by path."""
    seen: set[Path] = set()
    out = []
    for root in roots:
        root = root.expanduser()
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if child.is_symlink() or not child.is_dir() or not (child / "SKILL.md").is_file():
                continue
            key = child.resolve()
            if key not in seen:
                seen.add(key)
                out.append(child)
    return out


def update_managed(roots: list[Path], names: list[str] | None = None) -> list[UpdateInfo]:
    """Refresh every managed install under ``roots`` (only ``names`` if given) from the Hub.

    Skills are fetched once per (repo, revision); a repo that cannot be read marks its
    installs ``source_unreachable`` and the others still update. Unmanaged folders are
    reported and left untouched.
    """
    from upskill_hub.agents import install_skill
    from upskill_hub.hub.pull import fetch_skills
    from upskill_hub.skill import load_skill

    folders = [f for f in installed_folders(roots) if not names or f.name in names]
    infos: dict[Path, UpdateInfo] = {}
    groups: dict[tuple[str, str | None], list[tuple[Path, dict[str, Any]]]] = defaultdict(list)
    for folder in folders:
        marker = read_marker(folder)
        if marker is None:
            infos[folder] = UpdateInfo(folder.name, folder, "unmanaged")
        else:
            groups[(marker["repo"], marker["revision"])].append((folder, marker))
    for (repo, revision), members in groups.items():
        wanted = sorted({m["skill"] for _, m in members})
        try:
            skills, commit = fetch_skills(repo, wanted, revision)
        except UpskillError as exc:
            for folder, _ in members:
                infos[folder] = UpdateInfo(folder.name, folder, "source_unreachable", repo, detail=str(exc))
            continue
        by_name = {s.name: s for s in skills}
        for folder, marker in members:
            skill = by_name[marker["skill"]]
            current = load_skill(folder).skill
            if current is not None and current.files == skill.files:
                status = "up_to_date"
            else:
                install_skill(skill, folder.parent, force=True)
                status = "updated"
            mark_managed(folder, repo, skill.name, revision, commit)
            infos[folder] = UpdateInfo(folder.name, folder, status, repo, skill.version)
    return [infos[f] for f in folders]
