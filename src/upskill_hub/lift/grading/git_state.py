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

from collections.abc import Callable
from dataclasses import dataclass, field

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
