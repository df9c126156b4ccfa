"""The throwaway workspace one agent call runs in, and the snapshot that grades it.

Layout of a workspace (a fresh temporary folder per call)::

    <ws>/project/   the agent's working directory: the case's input files, and for the
                    with-skill condition the skill, installed by the code of `skills install`
    <ws>/home/      HOME (and XDG folders): the user's own ~/.claude/skills etc. are not seen
    <ws>/tmp/       TMPDIR

The baseline and with-skill workspaces differ only by the installed skill folder.

A :class:`Snapshot` of ``project/`` is taken after the setup and again after the agent ran:
workspace checks pass only on files the agent created or changed, never on input files it
left as they were.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub._util.fsutil import check_relpath
from upskill_hub.agents import install_skill
from upskill_hub.errors import UpskillError
from upskill_hub.skill import Skill

#: Environment variables every CLI gets (besides HOME/TMPDIR pointing into the workspace).
BASE_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
)
#: A snapshot hashes at most this many files (an agent that writes a million files is graded on these).
MAX_SNAPSHOT_FILES = 20_000
#: Files larger than this are compared by size and mtime only.
MAX_HASH_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Snapshot:
    """``relative path -> content digest`` of every regular file under a folder (symlinks not followed)."""

    files: dict[str, str]

    @classmethod
    def take(cls, root: Path) -> Snapshot:
        files: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                if len(files) >= MAX_SNAPSHOT_FILES:
                    return cls(files)
                p = Path(dirpath) / name
                rel = p.relative_to(root).as_posix()
                try:
                    st = p.lstat()
                except OSError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    files[rel] = "symlink:" + os.readlink(p)
                elif stat.S_ISREG(st.st_mode):
                    files[rel] = _digest(p, st)
        return cls(files)

    def changed_since(self, before: Snapshot) -> set[str]:
        """Paths created or modified since ``before``."""
        return {p for p, d in self.files.items() if before.files.get(p) != d}


def _digest(p: Path, st: os.stat_result) -> str:
    if st.st_size > MAX_HASH_BYTES:
        return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
    h = hashlib.sha256()
    try:
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return f"unreadable:{st.st_mtime_ns}"
    return h.hexdigest()


@dataclass
class Workspace:
    """One call's folders; :meth:`remove` deletes them (unless kept)."""

    root: Path
    project: Path
    home: Path
    tmp: Path
    skill_dir: Path | None = None  # the installed skill (with-skill condition)
    before: Snapshot = field(default_factory=lambda: Snapshot({}))

    @classmethod
    def create(cls, parent: Path | None, prefix: str) -> Workspace:
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).resolve()
        ws = cls(root=root, project=root / "project", home=root / "home", tmp=root / "tmp")
        for d in (ws.project, ws.home, ws.tmp):
            d.mkdir()
        return ws

    def write_files(self, files: Iterable[tuple[str, str]]) -> None:
        """The case's input files, each checked to stay inside ``project/``."""
        for rel, text in files:
            check_relpath(rel)
            dest = self.project / rel
            if not dest.resolve().is_relative_to(self.project):
                raise UpskillError(f"input file {rel!r} escapes the workspace")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")

    def install(self, skill: Skill, skills_folder: str) -> Path:
        """Install ``skill`` where the agent looks (``skills_folder`` relative to ``project/``)."""
        self.skill_dir = install_skill(skill, self.project / skills_folder)
        return self.skill_dir

    def freeze(self) -> None:
        """Take the "before" snapshot: the workspace as the agent receives it."""
        self.before = Snapshot.take(self.project)

    def changed(self) -> set[str]:
        """Files of ``project/`` the agent created or modified."""
        return Snapshot.take(self.project).changed_since(self.before)

    def env(self, passed: Mapping[str, str]) -> dict[str, str]:
        """The CLI's whole environment: a few basics, HOME in the workspace, then ``passed``."""
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        env.update(
            HOME=str(self.home),
            USERPROFILE=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            TMPDIR=str(self.tmp),
            TERM="dumb",
            NO_COLOR="1",
            CI="1",
        )
        env.update(passed)
        return env

    def remove(self) -> None:
        """Delete the workspace; files an agent made read-only are made writable first."""

        def onexc(func, path, _exc):  # noqa: ANN001 - shutil's callback signature
            with contextlib.suppress(OSError):
                os.chmod(path, 0o700)
                func(path)

        shutil.rmtree(self.root, onerror=onexc)
