"""Where coding agents look for skills, and installing a skill there safely.

Install rules: never write outside the target folder, never follow a symlink out of the
skill, refuse any path with ``..``, never overwrite without ``force``, and replace
atomically (a failed install leaves no half folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from upskill_hub._util.fsutil import atomic_replace_dir, check_relpath
from upskill_hub.errors import UpskillError
from upskill_hub.skill import Skill, name_problem


@dataclass(frozen=True)
class AgentTarget:
    """One agent's skills folder, per project and per user."""

    key: str
    label: str
    project_dir: str
    user_dir: str


#: Current locations (older ones, e.g. ``.codex/skills`` or OpenCode's ``skill/``, are still
#: read by those agents but new installs go to these).
AGENTS: dict[str, AgentTarget] = {
    "claude": AgentTarget("claude", "Claude Code", ".claude/skills", "~/.claude/skills"),
    "codex": AgentTarget("codex", "Codex", ".agents/skills", "~/.agents/skills"),
    "opencode": AgentTarget("opencode", "OpenCode", ".opencode/skills", "~/.config/opencode/skills"),
    "cursor": AgentTarget("cursor", "Cursor", ".cursor/skills", "~/.cursor/skills"),
    "gemini": AgentTarget("gemini", "Gemini CLI", ".gemini/skills", "~/.gemini/skills"),
    "agents": AgentTarget("agents", "Agent Skills (shared)", ".agents/skills", "~/.agents/skills"),
}


def target_dirs(
    agents: list[str],
    *,
    dest: str | Path | None = None,
    global_: bool = False,
    project_root: str | Path = ".",
) -> list[Path]:
    """The skills folders to install into (deduplicated: Codex and ``agents`` share one)."""
    dirs: list[Path] = []
    if dest is not None:
        dirs.append(Path(dest).expanduser())
    for key in agents:
        if key not in AGENTS:
            raise UpskillError(f"unknown agent {key!r} (known: {', '.join(AGENTS)})")
        t = AGENTS[key]
        dirs.append(Path(t.user_dir).expanduser() if global_ else Path(project_root) / t.project_dir)
    if not dirs:
        raise UpskillError(
            "no install target: pass an agent flag (--claude, --codex, --opencode, --cursor, --gemini, "
            "--agents) or --dest DIR"
        )
    seen: set[Path] = set()
    out = []
    for d in dirs:
        key = d.resolve() if d.exists() else d.absolute()
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def install_skill(skill: Skill, target_dir: str | Path, *, force: bool = False) -> Path:
    """Install ``skill`` as ``<target_dir>/<skill.name>/``; return the installed folder."""
    why = name_problem(skill.name)
    if why:
        raise UpskillError(f"cannot install: name {why}")
    for rel in skill.files:
        check_relpath(rel)
    target_dir = Path(target_dir).expanduser()
    if target_dir.exists() and not target_dir.is_dir():
        raise UpskillError(f"install target {target_dir} exists and is not a folder")
    dest = target_dir / skill.name
    if dest.is_symlink():
        raise UpskillError(f"{dest} is a symlink; refusing to replace it")
    if dest.exists() and not force:
        raise UpskillError(f"{dest} already exists (use --force to replace it)")
    resolved_target = target_dir.resolve()

    def fill(tmp: Path) -> None:
        for rel in skill.files:
            if not (tmp / rel).resolve().is_relative_to(tmp.resolve()):
                raise UpskillError(f"unsafe path {rel!r} escapes the install folder")
        skill.write_files(tmp)  # keeps executable bits; folders 0755 unless the source differs

    try:
        atomic_replace_dir(dest, fill)
    except OSError as exc:
        raise UpskillError(f"cannot install into {target_dir}: {exc.strerror or exc}") from None
    assert dest.resolve().is_relative_to(resolved_target)
    return dest
