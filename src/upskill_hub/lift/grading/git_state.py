"""agent-skill-eval's git checks: a branch, a commit, a push, graded from the repository's state.

agent-skill-eval (``agent_skill_eval.git_state`` and ``graders``, version 0.7.0) snapshots the
workspace's git state before and after the agent ran and grades "A new git branch was
created" and its kind on the difference, never on the answer: a baseline that changed
nothing fails them however its answer reads. This module is that rule, written out:

* **branch**: a local branch that did not exist before, and it (or the first new one) is the
  eval branch; when no new branch appeared but HEAD moved to a branch unknown before, that
  one is the eval branch. Passes when a new branch exists and there is an eval branch.
* **commit**: a commit reachable from any ref that was not before (of the 50 newest), and
  HEAD is one of them (a new commit left on another branch does not count).
* **push**: the eval branch exists on a remote, at the local HEAD.

With ``expect`` false (a negative control's assertion, agent-skill-eval's ``_invert``) each
passes only when nothing of the kind happened. Evidence names what git showed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: ``git(args) -> (exit status, stdout, stderr)``, on the workspace's repository
#: (:meth:`upskill_hub.lift.harness.workspace.Workspace.git`).
GitRunner = Callable[[list[str]], tuple[int, str, str]]
#: How many of the newest commit ids a snapshot keeps (agent-skill-eval keeps 50).
MAX_SHAS = 50
_SHORT = 12


@dataclass(frozen=True)
class GitState:
    """What agent-skill-eval's ``GitStateSnapshot`` holds that its branch/commit/push checks read."""

    local_branches: tuple[str, ...] = ()
    current_branch: str = ""
    head_sha: str = ""
    commit_shas: tuple[str, ...] = ()
    #: ``branch -> commit`` of the remote-tracking branches, the remote's name cut off.
    remote_branch_heads: dict[str, str] = field(default_factory=dict)
    #: Why the repository could not be read (then every check fails with it).
    error: str | None = None


def _refs(out: str) -> list[tuple[str, str]]:
    pairs = []
    for line in out.splitlines():
        name, _, sha = line.strip().rpartition(" ")
        if name and sha:
            pairs.append((name, sha))
    return pairs


def capture_git_state(git: GitRunner) -> GitState:
    """The repository's branches, HEAD and newest commits, read through ``git``."""
    code, heads, err = git(["for-each-ref", "refs/heads", "--format=%(refname:short) %(objectname)"])
    if code != 0:
        lines = err.strip().splitlines()
        return GitState(
            error=f"git cannot read the workspace repository: {lines[-1] if lines else code}"[:300]
        )
    local = sorted({name for name, _ in _refs(heads) if "HEAD" not in name})
    remote: dict[str, str] = {}
    _, remotes, _ = git(["for-each-ref", "refs/remotes", "--format=%(refname:short) %(objectname)"])
    for name, sha in _refs(remotes):
        if "/" in name and name.split("/", 1)[1] != "HEAD":
            remote[name.split("/", 1)[1]] = sha
    _, current, _ = git(["rev-parse", "--abbrev-ref", "HEAD"])
    code, head, _ = git(["rev-parse", "--verify", "-q", "HEAD"])
    _, log, _ = git(["log", "--all", f"--max-count={MAX_SHAS}", "--pretty=format:%H"])
    return GitState(
        local_branches=tuple(local), current_branch=current.strip(), head_sha=head.strip() if code == 0 else "",
        commit_shas=tuple(s for s in log.split() if s), remote_branch_heads=remote,
    )  # fmt: skip


def eval_branch(pre: GitState, post: GitState) -> str | None:
    """The branch the agent made for its work (agent-skill-eval's ``state_diff`` rule)."""
    new = sorted(set(post.local_branches) - set(pre.local_branches))
    if new:
        return post.current_branch if post.current_branch in new else new[0]
    known = set(pre.local_branches) | set(pre.remote_branch_heads)
    if post.current_branch and post.current_branch != pre.current_branch and post.current_branch not in known:
        return post.current_branch
    return None


def check(kind: str, expect: bool, pre: GitState | None, post: GitState) -> tuple[bool, str]:
    """``(passed, evidence)`` of one git check (``branch``, ``commit`` or ``push``)."""
    if pre is None:
        return False, "the workspace was not made as a git repository, so there is no state before to compare"
    for state in (pre, post):
        if state.error:
            return False, state.error
    if kind == "branch":
        return _branch(expect, pre, post)
    if kind == "commit":
        return _commit(expect, pre, post)
    if kind == "push":
        return _push(expect, pre, post)
    raise ValueError(kind)


def _branch(expect: bool, pre: GitState, post: GitState) -> tuple[bool, str]:
    new = sorted(set(post.local_branches) - set(pre.local_branches))
    branch = eval_branch(pre, post)
    if not expect:
        if new:
            return False, f"the skill should not have run, but new branch(es) appeared: {', '.join(new)}"
        if branch and post.current_branch != pre.current_branch:
            return False, f"the skill should not have run, but HEAD moved to the new branch {branch!r}"
        return True, f"no new branch (branches: {', '.join(post.local_branches) or 'none'})"
    if not new:
        return False, (
            f"no new branch: branches before {', '.join(pre.local_branches) or 'none'}, after "
            f"{', '.join(post.local_branches) or 'none'}; current branch {post.current_branch!r}"
        )
    if branch is None:  # pragma: no cover - a new branch always names one
        return False, f"new branch(es) {', '.join(new)}, none of them checked out"
    return (
        True,
        f"new branch {branch!r} created (current branch {post.current_branch!r}; before: {pre.current_branch!r})",
    )


def _commit(expect: bool, pre: GitState, post: GitState) -> tuple[bool, str]:
    before = set(pre.commit_shas)
    new = [s for s in post.commit_shas if s not in before]
    if not expect:
        if new:
            return (
                False,
                f"the skill should not have run, but {len(new)} new commit(s) appeared: {new[0][:_SHORT]}",
            )
        return True, f"no new commit (HEAD {post.head_sha[:_SHORT] or 'none'})"
    if not new:
        return (
            False,
            f"no new commit: HEAD {post.head_sha[:_SHORT] or 'none'} (before: {pre.head_sha[:_SHORT] or 'none'})",
        )
    if post.head_sha and post.head_sha not in new:
        return False, (
            f"{len(new)} new commit(s), but HEAD {post.head_sha[:_SHORT] or 'none'} is not one of them: "
            "the new commit is not on the current branch"
        )
    return True, f"new commit {post.head_sha[:_SHORT]} on {post.current_branch!r} ({len(new)} new in all)"


def _push(expect: bool, pre: GitState, post: GitState) -> tuple[bool, str]:
    new_remote = sorted(set(post.remote_branch_heads) - set(pre.remote_branch_heads))
    branch = eval_branch(pre, post)
    pushed = branch is not None and branch in post.remote_branch_heads
    if not expect:
        if new_remote:
            return (
                False,
                f"the skill should not have run, but new remote branch(es) appeared: {', '.join(new_remote)}",
            )
        if pushed:
            return False, f"the skill should not have run, but the branch {branch!r} was pushed"
        return True, "no new remote branch"
    if branch is None:
        return False, "no branch was made in this run, so none was pushed"
    if not pushed:
        return (
            False,
            f"branch {branch!r} was not pushed (remote branches: {', '.join(post.remote_branch_heads) or 'none'})",
        )
    if post.remote_branch_heads[branch] != post.head_sha:
        return False, f"branch {branch!r} was pushed, but the remote is not at HEAD {post.head_sha[:_SHORT]}"
    return True, f"branch {branch!r} pushed at HEAD {post.head_sha[:_SHORT]}"


# --------------------------------------------------------------------------- git_clean, file_unchanged
def dirty(git: GitRunner, project: Path, pathspec: str | None = None) -> tuple[list[str] | None, str]:
    """What ``git status --porcelain [-- pathspec]`` would list, read without running ``status``.

    ``status`` hashes changed files through the repository's clean filters, and the agent may
    have written both ``.gitattributes`` and a ``filter.X.clean`` command into ``.git/config``:
    grading would run its command. Here git only lists (``ls-tree`` HEAD, ``ls-files -s`` the
    index, ``ls-files --others`` the untracked, none of which converts a file) and the
    working-tree files are hashed raw, as blobs, in this process. A file whose only difference
    is what a filter or ``core.autocrlf`` would undo reads as changed here: the raw bytes
    are what the agent left. Returns ``(entries, "")`` (``"M path"``, ``"?? path"``, ...) or
    ``(None, why)`` when git cannot read the repository.
    """
    code, out, err = git(["ls-files", "-s", "-z"])
    if code != 0:
        lines = err.strip().splitlines()
        return None, f"git cannot read the workspace repository: {lines[-1] if lines else code}"[:300]
    index: dict[str, tuple[str, str, str]] = {}
    for rec in out.split("\0"):
        meta, _, rel = rec.partition("\t")
        if rel:
            mode, sha, stage = meta.split(" ")
            index[rel] = (mode, sha, stage)
    head: dict[str, tuple[str, str]] = {}
    if git(["rev-parse", "--verify", "-q", "HEAD^{tree}"])[0] == 0:
        _, out, _ = git(["ls-tree", "-r", "-z", "--full-tree", "HEAD"])
        for rec in out.split("\0"):
            meta, _, rel = rec.partition("\t")
            if rel:
                mode, _kind, sha = meta.split(" ")
                head[rel] = (mode, sha)
    # a whole untracked folder is one entry, as status shows it; not when one path is asked about
    folded = ["--directory", "--no-empty-directory"] if pathspec is None else []
    _, out, _ = git(["ls-files", "-z", "--others", "--exclude-standard", *folded])
    untracked = [rel for rel in out.split("\0") if rel]

    def wanted(rel: str) -> bool:
        if pathspec is None:
            return True
        spec = pathspec.rstrip("/")
        return rel.rstrip("/") == spec or rel.startswith(spec + "/") or spec.startswith(rel.rstrip("/") + "/")

    entries: list[str] = []
    for rel in sorted(set(index) | set(head)):
        if not wanted(rel):
            continue
        staged = " "
        if rel not in index:
            staged = "D"
        elif index[rel][2] != "0":
            entries.append(f"UU {rel}")
            continue
        elif rel not in head:
            staged = "A"
        elif head[rel] != index[rel][:2]:
            staged = "M"
        work = " "
        if rel in index and index[rel][0] != "160000":
            now = _worktree_blob(project, rel)
            if now is None:
                work = "D"
            elif now != index[rel][:2]:
                work = "M"
        if staged != " " or work != " ":
            entries.append(f"{staged}{work} {rel}")
    entries += [f"?? {rel}" for rel in untracked if wanted(rel)]
    return entries, ""


def _worktree_blob(project: Path, rel: str) -> tuple[str, str] | None:
    """``(mode, blob id)`` of the working-tree file ``rel`` as git would store it unfiltered,
    or ``None`` when it is gone (or behind a symlinked folder, where git sees it gone)."""
    path = project / rel
    try:
        if path.parent.resolve() != project.resolve() / Path(rel).parent:
            return None
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return "120000", _blob_id(os.fsencode(os.readlink(path)))
        if not stat.S_ISREG(st.st_mode):
            return None
        h = hashlib.sha1(f"blob {st.st_size}\0".encode(), usedforsecurity=False)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except (OSError, RuntimeError):
        return None
    return ("100755" if st.st_mode & 0o100 else "100644"), h.hexdigest()


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def committed_changes(git: GitRunner, pre: GitState | None, post: GitState, path: str) -> list[str]:
    """Paths under ``path`` that differ between HEAD before and HEAD after (agent-skill-eval's
    ``git diff --name-only PRE POST -- path``; ``diff-tree`` compares trees, runs no filter)."""
    if pre is None or not pre.head_sha or not post.head_sha:
        return []
    code, out, _ = git(["diff-tree", "-r", "-z", "--name-only", "--no-renames", pre.head_sha, post.head_sha,
                        "--", path])  # fmt: skip
    return [rel for rel in out.split("\0") if rel] if code == 0 else []
