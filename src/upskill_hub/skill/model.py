"""The :class:`Skill` type: a skill in memory, the files it is made of, its version, its writing.

Every front end holds a skill as this type, whether it came from a folder, the Hub or a
teacher model, so it stands apart from reading a folder (:mod:`.loading`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from upskill_hub._util import fsutil
from upskill_hub._util.problems import Problem
from upskill_hub.cases import SkillMeta
from upskill_hub.skill.frontmatter import render_skill_md, split_frontmatter

SKILL_FILE = "SKILL.md"
#: Also accepted (the reference validator looks for it after SKILL.md), with a warning.
SKILL_FILE_LOWER = "skill.md"
META_FILE = "skill_meta.json"
#: Where the agentskills.io evaluation guide keeps a skill's evals (read when there is no META_FILE).
EVALS_DIR = "evals"
EVALS_FILE = f"{EVALS_DIR}/evals.json"
RESOURCE_DIRS = ("references", "scripts", "assets")

#: Names never part of a skill's content (editor/OS litter, caches, and the markers that
#: upskill-hub and ``hf skills`` leave in managed installs).
IGNORED_NAMES = {
    ".DS_Store",
    "__pycache__",
    ".git",
    ".ipynb_checkpoints",
    "Thumbs.db",
    ".upskill-hub-install.json",
    ".hf-skill-manifest.json",
}

#: Permission bits written when the source gives none (a Hub download, a generated skill).
DIR_MODE = 0o755
FILE_MODE = 0o644
EXEC_MODE = 0o755


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters per token for English prose and code)."""
    return (len(text) + 3) // 4


def is_test_material(rel: str) -> bool:
    """Whether the skill file ``rel`` holds tests (cases, expected answers), not instructions."""
    return rel in (META_FILE, EVALS_DIR) or rel.startswith(EVALS_DIR + "/")


def content_hash(files: dict[str, bytes]) -> str:
    """The version of a skill: sha256 over its sorted (relative path, bytes) pairs."""
    h = hashlib.sha256()
    for rel in sorted(files):
        data = files[rel]
        h.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


@dataclass
class Skill:
    """An Agent Skill in memory: what it says, the files it carries and its tests."""

    name: str
    description: str
    body: str
    frontmatter: dict[str, Any]
    #: Every file of the skill, by relative POSIX path, including SKILL.md itself.
    files: dict[str, bytes] = field(default_factory=dict)
    meta: SkillMeta = field(default_factory=SkillMeta)
    path: Path | None = None
    #: Permission bits found on disk, by relative path; folders under "dir/" keys ("" is the root).
    #: Empty for skills that did not come from a local folder.
    modes: dict[str, int] = field(default_factory=dict)

    # ----------------------------------------------------------------- derived facts
    @property
    def version(self) -> str:
        """Short content hash: what eval results are tied to."""
        return self.full_hash[:12]

    @property
    def full_hash(self) -> str:
        return content_hash(self.files)

    @property
    def token_estimate(self) -> int:
        """Tokens the skill adds to a prompt (the whole SKILL.md)."""
        return estimate_tokens(self.skill_md_text)

    @property
    def skill_md_text(self) -> str:
        data = self.files.get(SKILL_FILE, self.files.get(SKILL_FILE_LOWER))
        if data is None:
            return render_skill_md(self.frontmatter, self.body)
        return data.decode("utf-8-sig").replace("\r\n", "\n")

    @property
    def license(self) -> str | None:
        value = self.frontmatter.get("license")
        return value if isinstance(value, str) else None

    @property
    def metadata(self) -> dict[str, str]:
        value = self.frontmatter.get("metadata")
        return dict(value) if isinstance(value, dict) else {}

    def without_tests(self) -> Skill:
        """The skill as an agent under evaluation may see it: its test material left out.

        ``skill_meta.json`` and ``evals/`` hold the cases, their expected answers and trigger
        queries. An agent that could read them would be graded on answers it was handed, and
        only in the with-skill condition: catalog tools and harness installs serve this copy.
        """
        kept = {rel: data for rel, data in self.files.items() if not is_test_material(rel)}
        modes = {rel: m for rel, m in self.modes.items() if not is_test_material(rel.rstrip("/"))}
        return replace(self, files=kept, modes=modes)

    def resources(self) -> dict[str, list[str]]:
        """Files under references/, scripts/ and assets/ (relative paths)."""
        inv: dict[str, list[str]] = {d: [] for d in RESOURCE_DIRS}
        for rel in sorted(self.files):
            top = rel.split("/", 1)[0]
            if top in inv and "/" in rel:
                inv[top].append(rel)
        return inv

    def prompt_text(self) -> str:
        """The text injected into the system prompt for the with-skill condition."""
        return self.skill_md_text.strip() + "\n"

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly description (for ``--json``, tables and the Hub ``skills`` config)."""
        return {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "license": self.license,
            "token_estimate": self.token_estimate,
            "body_lines": self.body.count("\n") + 1,
            "n_cases": len(self.meta.cases),
            "resources": self.resources(),
            "files": sorted(self.files),
        }

    # ----------------------------------------------------------------- construction
    @classmethod
    def create(
        cls,
        name: str,
        description: str,
        body: str,
        *,
        extra_frontmatter: dict[str, Any] | None = None,
        meta: SkillMeta | None = None,
        files: dict[str, bytes] | None = None,
    ) -> Skill:
        """Build a skill in memory (e.g. from a teacher model) with its SKILL.md rendered."""
        fm: dict[str, Any] = {"name": name, "description": description}
        fm.update(extra_frontmatter or {})
        text = render_skill_md(fm, body)
        _, parsed_body = split_frontmatter(text)
        all_files = dict(files or {})
        all_files[SKILL_FILE] = text.encode("utf-8")
        meta = meta or SkillMeta()
        if meta.cases or meta.triggers or META_FILE in all_files:
            all_files[META_FILE] = meta.to_json().encode("utf-8")
        return cls(
            name=name, description=description, body=parsed_body, frontmatter=fm, files=all_files, meta=meta
        )

    def file_mode(self, rel: str) -> int:
        """Mode to write ``rel`` with: the source's, else executable when it starts with ``#!``.

        Always owner-readable and -writable (so a later ``--force`` can replace it), never
        setuid/setgid/sticky.
        """
        mode = self.modes.get(rel)
        if mode is None:
            mode = EXEC_MODE if self.files.get(rel, b"").startswith(b"#!") else FILE_MODE
        return (mode & 0o777) | 0o600

    def dir_mode(self, rel_dir: str) -> int:
        """Mode for folder ``rel_dir`` ("" for the skill folder): the source's, else 0755."""
        mode = self.modes.get(f"{rel_dir}/" if rel_dir else "")
        return ((DIR_MODE if mode is None else mode) & 0o777) | 0o700

    def write_files(self, into: Path) -> None:
        """Write every file under ``into`` (an empty folder) with its mode, then fix folder modes.

        Executables stay executable and folders get 0755 unless the source said otherwise;
        without this, files follow the umask and the top folder the 0700 of ``mkdtemp``.
        """
        folders = {""}
        for rel, data in sorted(self.files.items()):
            fsutil.check_relpath(rel)
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(self.file_mode(rel))
            folders.update(parent_dirs(rel))
        for rel_dir in sorted(folders, key=len, reverse=True):
            (into / rel_dir if rel_dir else into).chmod(self.dir_mode(rel_dir))

    def write(self, dest: str | Path, *, overwrite: bool = False) -> Path:
        """Write the skill to ``dest`` (the skill folder itself) atomically.

        Files go to a temporary sibling folder first, which is renamed into place, so a
        failure never leaves a half-written skill.
        """
        for rel in self.files:
            fsutil.check_relpath(rel)
        dest = Path(dest)
        if dest.exists() and not overwrite:
            raise FileExistsError(f"{dest} already exists")

        fsutil.atomic_replace_dir(dest, self.write_files)
        self.path = dest
        return dest


def parent_dirs(rel: str) -> list[str]:
    """``a/b/c.txt`` -> ``["a", "a/b"]``."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass
class LoadResult:
    """A skill (when it could be read) and the problems found on the way."""

    skill: Skill | None
    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return self.skill is not None and not self.errors
