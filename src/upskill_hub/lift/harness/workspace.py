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

import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from upskill_hub._util import limits
from upskill_hub._util.fsutil import check_relpath
from upskill_hub.agents import install_skill
from upskill_hub.cases.schema import Assertion, input_file_problem
from upskill_hub.errors import UpskillError
from upskill_hub.lift.grading import git_state
from upskill_hub.lift.grading.assertions import AssertionResult
from upskill_hub.lift.grading.git_state import GitState, capture_git_state
from upskill_hub.lift.harness.tree import Budget, NotAFolder, open_folder, remove_tree, walk_files
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
#: Variables the workspace sets itself (isolation, output format): ``--agent-env`` may not
#: override them (``--agent-env HOME=/`` would silently undo the workspace HOME).
CONTROLLED_ENV = (
    "HOME",
    "USERPROFILE",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "TMPDIR",
    "TERM",
    "NO_COLOR",
    "CI",
)
#: A snapshot looks at most at this many entries (files, folders, links) of ``project/``.
MAX_SNAPSHOT_FILES = limits.env_int("UPSKILL_AGENT_SNAPSHOT_MAX_FILES", 20_000)
#: Folders nested deeper than this under ``project/`` are not read.
MAX_SNAPSHOT_DEPTH = limits.env_int("UPSKILL_AGENT_SNAPSHOT_MAX_DEPTH", 64)
#: Files larger than this are compared by size and mtime only.
MAX_HASH_BYTES = 16 * 1024 * 1024
#: A snapshot hashes at most this many bytes in all; later files are compared by size and mtime.
MAX_SNAPSHOT_BYTES = int(limits.env_number("UPSKILL_AGENT_SNAPSHOT_MAX_MB", 512) * 1_000_000)
#: Seconds one snapshot may take (an agent's workspace must not stall the grading).
SNAPSHOT_TIMEOUT_S = limits.env_number("UPSKILL_AGENT_SNAPSHOT_TIMEOUT_S", 30.0)


@dataclass(frozen=True)
class Snapshot:
    """``relative path -> content digest`` of every regular file under a folder (symlinks not followed).

    ``cut`` says what the walk left out to stay within its budgets (depth, entries, bytes,
    time); ``broken`` is set when the folder itself could not be walked safely (the agent
    replaced ``project/`` with a symlink): then nothing in it may be graded.
    """

    files: dict[str, str]
    cut: tuple[str, ...] = ()
    broken: str | None = None

    @classmethod
    def take(cls, root: Path, identity: tuple[int, int] | None = None) -> Snapshot:
        budget = Budget(
            max_depth=MAX_SNAPSHOT_DEPTH,
            max_entries=MAX_SNAPSHOT_FILES,
            max_hash_bytes=MAX_SNAPSHOT_BYTES,
            max_file_hash_bytes=MAX_HASH_BYTES,
            deadline=time.monotonic() + SNAPSHOT_TIMEOUT_S,
        )
        try:
            fd = open_folder(root, identity)
        except NotAFolder as exc:
            return cls({}, broken=str(exc))
        try:
            files = walk_files(fd, budget)
        finally:
            os.close(fd)
        if time.monotonic() > budget.deadline:
            budget.note(f"time budget of {SNAPSHOT_TIMEOUT_S:g} s ran out: the rest was not read")
        return cls(files, tuple(budget.cut))

    def without(self, paths: Iterable[str], before: Snapshot) -> Snapshot:
        """This snapshot with ``paths`` as they were in ``before`` (gone if they were absent):
        files a CLI writes for itself (its adapter's ``bookkeeping``) are not the agent's work.
        A path ending in ``/`` stands for everything under that folder."""
        paths = list(paths)
        folders = tuple(p for p in paths if p.endswith("/"))
        files = dict(self.files)
        for p in [*paths, *(f for f in {*self.files, *before.files} if folders and f.startswith(folders))]:
            if p.endswith("/"):
                continue
            if p in before.files:
                files[p] = before.files[p]
            else:
                files.pop(p, None)
        return replace(self, files=files)

    def changed_since(self, before: Snapshot) -> set[str]:
        """Paths created or modified since ``before``."""
        return {p for p, d in self.files.items() if before.files.get(p) != d}


@dataclass
class Workspace:
    """One call's folders; :meth:`remove` deletes them (unless kept)."""

    root: Path
    project: Path
    home: Path
    tmp: Path
    skill_dir: Path | None = None  # the installed skill (with-skill condition)
    before: Snapshot = field(default_factory=lambda: Snapshot({}))
    #: ``(st_dev, st_ino)`` of the root and of ``project/`` when made: a folder the agent swapped
    #: (for a symlink or another folder) is never walked, graded in or deleted through.
    root_id: tuple[int, int] | None = None
    project_id: tuple[int, int] | None = None
    #: Whether ``project/`` is a git repository made here (:meth:`write_files`); then its
    #: ``.git/`` is git's business, not the agent's work: snapshots leave it out, and
    #: :attr:`git_before` is its state as the agent received it (taken by :meth:`freeze`).
    git_made: bool = False
    git_before: GitState | None = None

    @classmethod
    def create(cls, parent: Path | None, prefix: str) -> Workspace:
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).resolve()
        ws = cls(root=root, project=root / "project", home=root / "home", tmp=root / "tmp")
        for d in (ws.project, ws.home, ws.tmp):
            d.mkdir()
        ws.root_id, ws.project_id = _identity(root), _identity(ws.project)
        return ws

    def write_files(
        self, files: Iterable[tuple[str, str | bytes]], git_stage: bool = False, git_repo: bool = False
    ) -> None:
        """The case's input files (text or bytes), each checked to stay inside ``project/``.

        Each must also pass :func:`~upskill_hub.cases.schema.input_file_problem`, the rule the
        case parsers apply (no ``.git``/``.gitattributes``, nothing in a skills folder), so
        files that did not come through a parser are held to it too.

        ``git_repo`` (an agent-skill-eval case): ``project/`` becomes a git repository as that
        tool's runner makes it (``git init -b main``, a committer, an empty "Initial commit");
        the input files stay untracked. ``git_stage`` (its ``stage_files``) also adds them to
        the index (``git add``), so the agent finds them as staged changes.
        """
        written: list[str] = []
        for rel, content in files:
            check_relpath(rel)
            problem = input_file_problem(rel)
            if problem is not None:
                raise UpskillError(f"input file {rel!r} refused: {problem}")
            dest = self.project / rel
            if not dest.resolve().is_relative_to(self.project):
                raise UpskillError(f"input file {rel!r} escapes the workspace")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
            written.append(rel)
        if git_repo or (git_stage and written):
            self._git_init(commit=git_repo)
        if git_stage and written:
            self._git_checked(["add", "--", *written], "stage_files")

    def _git_env(self) -> dict[str, str]:
        """The environment of the workspace's own git: no config but the new repository's.

        Built from :data:`BASE_ENV` (no ``GIT_*`` of ours leaks in), with no system or global
        config (the user's filters and hooks stay out), and the repository named outright
        (``GIT_DIR``/``GIT_WORK_TREE``) so git never looks for one: not through a ``.git``
        gitfile, not in a folder above the workspace.
        """
        return self.env({}) | {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_DIR": str(self.project / ".git"),
            "GIT_WORK_TREE": str(self.project),
            "GIT_CEILING_DIRECTORIES": str(self.root),
            "GIT_TERMINAL_PROMPT": "0",
        }

    def git(self, args: list[str], timeout: float = 60) -> tuple[int, str, str]:
        """Run ``git ARGS`` on ``project/``'s repository: ``(exit status, stdout, stderr)``.

        The ``-c`` overrides switch off what the repository's config (the agent may have
        written it) could still run: hooks, fsmonitor, an attributes file. A git that cannot
        start or runs past ``timeout`` reads as exit status -1 with the reason on stderr.
        """
        import shutil
        import subprocess

        git = shutil.which("git")
        if git is None:
            return -1, "", "git is not on PATH"
        safe = ["-c", f"core.hooksPath={os.devnull}", "-c", "core.fsmonitor=false",
                "-c", f"core.attributesFile={os.devnull}", "-c", "gc.auto=0"]  # fmt: skip
        try:
            res = subprocess.run(
                [git, *safe, *args], cwd=self.project, env=self._git_env(), capture_output=True,
                timeout=timeout, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            return -1, "", str(exc)
        return res.returncode, res.stdout.decode("utf-8", "replace"), res.stderr.decode("utf-8", "replace")

    def _git_checked(self, args: list[str], what: str) -> None:
        code, _, err = self.git(args)
        if code != 0:
            lines = err.strip().splitlines()
            raise UpskillError(f"{what}: `git {args[0]}` failed: {lines[-1] if lines else code}")

    def _git_init(self, commit: bool) -> None:
        """``git init`` a new repository in ``project/`` on ``main`` (a committer name set), and
        with ``commit`` its empty "Initial commit", running nothing the files or any config
        could name.

        ``project/.git`` must not exist before: git would take it (a gitfile) for the way to
        another repository and write that one's config and index, running its filters.
        ``--template=`` copies no hooks in.
        """
        import shutil

        what = "the git workspace" if commit else "stage_files"
        if shutil.which("git") is None:
            raise UpskillError(f"{what} needs git on PATH (agent-skill-eval's cases run in a git repository)")
        if os.path.lexists(self.project / ".git"):
            raise UpskillError(f"{what}: project/.git exists before `git init`; refusing to use it")
        self._git_checked(["init", "-q", "--template=", "-b", "main"], what)
        self._git_checked(["config", "user.name", "upskill-hub eval"], what)
        self._git_checked(["config", "user.email", "eval@upskill-hub.invalid"], what)
        if commit:
            self._git_checked(["commit", "-q", "--allow-empty", "--no-verify", "-m", "Initial commit"], what)
        self.git_made = True

    def install(self, skill: Skill, skills_folder: str) -> Path:
        """Install ``skill`` where the agent looks (``skills_folder`` relative to ``project/``)."""
        self.skill_dir = install_skill(skill.without_tests(), self.project / skills_folder)
        return self.skill_dir

    def freeze(self) -> None:
        """Take the "before" snapshot: the workspace as the agent receives it (and the state
        of the git repository made here)."""
        self.before = self.snapshot()
        if self.git_made:
            self.git_before = capture_git_state(self.git)

    def snapshot(self) -> Snapshot:
        """The "after" snapshot of ``project/`` (bounded; see :class:`Snapshot`), without the
        ``.git/`` of a repository made here: its state is graded by the git checks."""
        snap = Snapshot.take(self.project, self.project_id)
        if self.git_made:
            snap = replace(snap, files={p: d for p, d in snap.files.items() if not p.startswith(".git/")})
        return snap

    def git_after(self) -> GitState:
        """The git repository's state now (after the agent ran)."""
        return capture_git_state(self.git)

    def changed(self) -> set[str]:
        """Files of ``project/`` the agent created or modified."""
        return self.snapshot().changed_since(self.before)

    def env(self, passed: Mapping[str, str]) -> dict[str, str]:
        """The CLI's whole environment: a few basics, ``passed``, then HOME etc. in the workspace.

        The workspace's own variables (:data:`CONTROLLED_ENV`) come last: nothing passed
        can undo them (``--agent-env`` refuses them with a reason before any call).
        """
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        env.update(passed)
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
        return env

    def remove(self) -> bool:
        """Delete the workspace, whatever the agent left in it; ``True`` when it is gone.

        Any depth, read-only folders and planted symlinks included (see
        :func:`~upskill_hub.lift.harness.tree.remove_tree`); never follows a link out.
        """
        return remove_tree(self.root, self.root_id)


def _identity(path: Path) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_dev, st.st_ino


#: Workspace assertions graded on the workspace's state, whoever made it (agent-skill-eval's
#: checks): its git repository's branches and commits, and which files are there.
STATE_CHECKS = frozenset(
    {"git-branch-created", "git-commit-created", "git-pushed", "file-present", "file-absent",
     "file-present-contains", "file-present-not-contains", "file-unchanged", "git-clean", "json-path",
     "json-path-absent"}
)  # fmt: skip
_GIT_KIND = {"git-branch-created": "branch", "git-commit-created": "commit", "git-pushed": "push"}


def state_check(ws: Workspace, a: Assertion) -> AssertionResult:
    """Grade one of :data:`STATE_CHECKS` on ``ws`` after the agent ran (blocking: git runs).

    A git check compares the repository with :attr:`Workspace.git_before` (see
    :mod:`upskill_hub.lift.grading.git_state`); ``value: false`` means it must not have
    happened. ``file-present`` / ``file-absent`` are agent-skill-eval's ``file_exists`` /
    ``file_not_exists``: whether the path is there now, input files included; a path that
    leads outside ``project/`` fails either way.
    """
    if a.type in _GIT_KIND:
        expect = a.value is not False
        passed, evidence = git_state.check(_GIT_KIND[a.type], expect, ws.git_before, ws.git_after())
        return AssertionResult(a.type, passed, f"git: {evidence}", a.value)
    if a.type == "git-clean":
        entries, why = git_state.dirty(ws.git, ws.project)
        if entries is None:
            return AssertionResult(a.type, False, f"git: {why}", a.value)
        shown = _listed(entries)
        return AssertionResult(
            a.type, not entries, f"git: {'dirty: ' + shown if entries else 'clean'}", a.value
        )
    assert a.path is not None  # the parser requires it
    if a.type == "file-unchanged":
        return _unchanged(ws, a)
    p = ws.project / a.path
    try:
        inside = p.resolve().is_relative_to(ws.project)
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        return AssertionResult(
            a.type, False, f"{a.path}: points outside the workspace", a.value, {"path": a.path}
        )
    if a.type in ("file-present-contains", "file-present-not-contains", "json-path", "json-path-absent"):
        return _present_text(ws, a, p)
    there = p.exists()
    want = a.type == "file-present"
    shown = f"{a.path}: {'present' if there else 'absent'} in the workspace"
    return AssertionResult(a.type, there == want, shown, a.value, {"path": a.path})


def _listed(entries: list[str]) -> str:
    shown = "; ".join(entries[:10])
    return shown + (f"; +{len(entries) - 10} more" if len(entries) > 10 else "")


def _unchanged(ws: Workspace, a: Assertion) -> AssertionResult:
    """agent-skill-eval's ``file_unchanged``: no uncommitted change under the path (as ``git
    status --porcelain -- PATH`` lists them, untracked files included) and none committed since
    the agent started. Without a repository made here, the snapshots before and after."""
    extra = {"path": a.path}
    assert a.path is not None
    if not ws.git_made:
        before = ws.before.files if ws.before is not None else {}
        now = ws.snapshot().files
        under = lambda rel: rel == a.path or rel.startswith(a.path.rstrip("/") + "/")  # noqa: E731
        moved = sorted(r for r in set(before) | set(now) if under(r) and before.get(r) != now.get(r))
        if moved:
            return AssertionResult(a.type, False, f"{a.path}: changed: {_listed(moved)}", a.value, extra)
        return AssertionResult(a.type, True, f"{a.path}: no change", a.value, extra)
    entries, why = git_state.dirty(ws.git, ws.project, a.path)
    if entries is None:
        return AssertionResult(a.type, False, f"git: {why}", a.value, extra)
    if entries:
        return AssertionResult(
            a.type, False, f"{a.path}: uncommitted change: {_listed(entries)}", a.value, extra
        )
    committed = git_state.committed_changes(ws.git, ws.git_before, ws.git_after(), a.path)
    if committed:
        return AssertionResult(
            a.type, False, f"{a.path}: committed change: {_listed(committed)}", a.value, extra
        )
    return AssertionResult(a.type, True, f"{a.path}: no change", a.value, extra)


def _present_text(ws: Workspace, a: Assertion, p: Path) -> AssertionResult:
    """Text in a file present now (``file-present-[not-]contains``: agent-skill-eval's
    ``file_[not_]contains``, either case) or a value at a dot path of its JSON
    (``json-path[-absent]``), whoever wrote it. A missing or unreadable file fails both ways."""
    from upskill_hub._util.fsutil import FileRefused, read_capped

    extra = {"path": a.path}
    if not p.exists():
        return AssertionResult(a.type, False, f"{a.path}: not found in the workspace", a.value, extra)
    try:
        text = read_capped(p.resolve()).decode("utf-8", "replace")
    except FileRefused as exc:
        return AssertionResult(a.type, False, f"{a.path}: {exc.problem}", a.value, extra)
    except OSError as exc:
        return AssertionResult(a.type, False, f"{a.path}: cannot be read: {exc.strerror}", a.value, extra)
    if a.type.startswith("file-present"):
        wanted = [a.value] if isinstance(a.value, str) else list(a.value)
        found = [w for w in wanted if w.lower() in text.lower()]
        if a.type == "file-present-contains":
            missing = [w for w in wanted if w not in found]
            ok, shown = (
                not missing,
                ("missing " + ", ".join(map(repr, missing)) if missing else "contains it"),
            )
        else:
            ok, shown = (
                not found,
                ("contains " + ", ".join(map(repr, found)) if found else "does not contain it"),
            )
        return AssertionResult(a.type, ok, f"{a.path}: {shown}", a.value, extra)
    from upskill_hub._util import safejson

    try:
        data = safejson.loads(text)
    except ValueError as exc:
        return AssertionResult(a.type, False, f"{a.path}: not JSON: {str(exc)[:160]}", a.value, extra)
    found, value, where = _json_at(data, a.value["at"])
    if a.type == "json-path-absent":
        shown = f"absent at {where!r}" if not found else f"present: {_short(value)}"
        return AssertionResult(a.type, not found, f"{a.path}: {a.value['at']} {shown}", a.value, extra)
    if not found:
        return AssertionResult(
            a.type, False, f"{a.path}: {a.value['at']} missing at {where!r}", a.value, extra
        )
    if "equals" in a.value and a.value["equals"] is not None and value != a.value["equals"]:
        shown = f"is {_short(value)}, not {_short(a.value['equals'])}"
        return AssertionResult(a.type, False, f"{a.path}: {a.value['at']} {shown}", a.value, extra)
    return AssertionResult(a.type, True, f"{a.path}: {a.value['at']} is {_short(value)}", a.value, extra)


def _json_at(data: object, at: str) -> tuple[bool, object, str]:
    """agent-skill-eval's walk of a ``json_path``: ``.``-separated keys, a number (negative
    too, as Python indexes) picks from a list. ``(found, value, the step that missed)``."""
    cur = data
    for part in at.split("."):
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return False, None, part
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return False, None, part
    return True, cur, ""


def _short(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 120 else shown[:119] + "…"
