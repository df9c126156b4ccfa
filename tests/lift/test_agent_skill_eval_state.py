"""Issue 47 item 5: agent-skill-eval's git checks graded from the workspace's state, not the judge.

The workspace is a git repository as agent-skill-eval's runner makes it (``main``, an empty
"Initial commit", with or without ``stage_files``); "A new git branch was created" and its
kind compare the repository before and after the agent ran. The verdicts are checked against
the real agent-skill-eval 0.7.0 (its ``capture_git_state`` and ``DeterministicGrader``) on the
same workspaces.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from upskill_hub.cases import CasesError, parse_meta
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness.workspace import Workspace, state_check
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.rundir import read_results
from upskill_hub.testing.llm_server import running_llm_server

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
FIX = Path(__file__).parent.parent / "dialect_fixtures" / "agent_skill_eval"
SENTENCES = ["A new git branch was created", "A git commit was created", "Changes were pushed to remote"]


def _details(row) -> dict[str, dict]:
    return {d["type"]: d for d in json.loads(row.assertion_details)}


def test_commit_push_pr_baseline_fails_the_branch_and_the_agent_that_made_it_passes(
    tmp_path: Path, monkeypatch
):
    """A ``cmd:`` agent makes a branch and commits the staged file only when the skill is installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agent = bin_dir / "git-agent"
    agent.write_text(
        f"#!{sys.executable}\nimport os, subprocess, sys\nprompt = sys.argv[-1]\n"
        "if any('SKILL.md' in f and 'commit-push-pr' in d for d, _, f in os.walk('.')):\n"
        "    for a in (['checkout', '-q', '-b', 'feat/retry'], ['commit', '-q', '-m', 'Retry with backoff']):\n"
        "        subprocess.run(['git', *a], check=True)\n"
        "    print('Made feat/retry and committed; PR: https://example.invalid/pr/1')\n"
        "else:\n    print(prompt)\n"  # the baseline echoes the prompt and does nothing
    )
    agent.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    skill = tmp_path / "commit-push-pr"
    shutil.copytree(FIX / "skills" / "commit-push-pr", skill)
    src = json.loads((FIX / "examples" / "commit-push-pr" / "evals" / "evals.json").read_text())
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "sample_change.py").write_text("def retry():\n    pass\n")
    evals = tmp_path / "evals.json"
    evals.write_text(json.dumps({"skill_name": "commit-push-pr", "evals": [src["evals"][0]]}))
    # the judge passes everything: the state checks must not depend on it
    with running_llm_server(lambda s, m, p: json.dumps({"pass": True, "reason": "x"})) as srv:
        res = run_eval(skill, [], EvalOptions(
            agents=["cmd:git-agent {prompt}"], cases=evals, output_dir=tmp_path / "runs", cache_dir=tmp_path / "c",
            plots=False, judge=f"openai-compatible:judge@{srv.openai_base_url}"))  # fmt: skip
    rows = {r.condition: r for r in read_results(res.run_dir)}
    base, made = _details(rows["baseline"]), _details(rows["with_skill"])
    assert base["git-branch-created"]["passed"] is False
    assert "no new branch" in base["git-branch-created"]["evidence"]
    assert "branches before main, after main" in base["git-branch-created"]["evidence"]
    assert base["git-commit-created"]["passed"] is False
    assert made["git-branch-created"]["passed"] is True
    assert "new branch 'feat/retry' created" in made["git-branch-created"]["evidence"]
    assert made["git-commit-created"]["passed"] is True
    assert "on 'feat/retry'" in made["git-commit-created"]["evidence"]
    # the prompt went verbatim: the file is in the workspace, not pasted
    assert "File `sample_change.py`" not in rows["baseline"].output
    assert rows["baseline"].output.strip() == src["evals"][0]["prompt"]


def _git(ws: Workspace, *args: str) -> None:
    code, _, err = ws.git(list(args))
    assert code == 0, err


def _push_remote(ws: Workspace) -> None:
    remote = ws.root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    _git(ws, "remote", "add", "origin", str(remote))


SCENARIOS: dict[str, Callable[[Workspace], None]] = {
    "nothing": lambda ws: None,
    "branch and commit": lambda ws: (
        _git(ws, "checkout", "-q", "-b", "feat"),
        _git(ws, "commit", "-qm", "x"),
    ),
    "commit on main": lambda ws: _git(ws, "commit", "-qm", "x"),
    "branch, no commit": lambda ws: _git(ws, "checkout", "-q", "-b", "feat"),
    "branch left behind": lambda ws: (
        _git(ws, "checkout", "-q", "-b", "feat"),
        _git(ws, "commit", "-qm", "x"),
        _git(ws, "checkout", "-q", "main"),
    ),
    "branch pushed": lambda ws: (
        _git(ws, "checkout", "-q", "-b", "feat"),
        _git(ws, "commit", "-qm", "x"),
        _git(ws, "push", "-q", "origin", "feat"),
    ),
    "pushed, then another commit": lambda ws: (
        _git(ws, "checkout", "-q", "-b", "feat"),
        _git(ws, "commit", "-qm", "x"),
        _git(ws, "push", "-q", "origin", "feat"),
        _git(ws, "commit", "-q", "--allow-empty", "-m", "y"),
    ),  # fmt: skip
}


@pytest.mark.parametrize("should_trigger", [True, False])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_verdicts_as_agent_skill_eval_on_the_same_workspace(
    tmp_path: Path, scenario: str, should_trigger: bool
):
    ase_git = pytest.importorskip("agent_skill_eval.git_state")
    from agent_skill_eval.graders import DeterministicGrader

    ws = Workspace.create(tmp_path, "ws-")
    ws.write_files([("sample_change.py", "x = 1\n")], git_stage=True, git_repo=True)
    if "push" in scenario:
        _push_remote(ws)
    ws.freeze()
    theirs_pre = ase_git.capture_git_state(ws.project)
    SCENARIOS[scenario](ws)
    theirs_post = ase_git.capture_git_state(ws.project)
    grader = DeterministicGrader(pre_state=theirs_pre, post_state=theirs_post)
    out = tmp_path / "outputs"
    out.mkdir()
    theirs = [
        r.passed
        for r in grader.grade(SENTENCES, out, "", workspace=ws.project, should_trigger=should_trigger)
    ]
    case = parse_meta({"evals": [{"id": "c", "prompt": "p", "stage_files": True, "should_trigger": should_trigger,
                                  "assertions": SENTENCES}]}).cases[0]  # fmt: skip
    assert [a.type for a in case.asserts] == ["git-branch-created", "git-commit-created", "git-pushed"]
    ours = [state_check(ws, a).passed for a in case.asserts]
    assert ours == theirs


def test_the_workspace_is_a_git_repository_as_agent_skill_eval_makes_it(tmp_path: Path):
    ws = Workspace.create(tmp_path, "ws-")
    ws.write_files([("a.py", "x\n")], git_repo=True)  # no stage_files: a repository all the same
    ws.freeze()
    assert ws.git(["rev-parse", "--abbrev-ref", "HEAD"])[1].strip() == "main"
    assert ws.git(["log", "--pretty=%s"])[1].strip() == "Initial commit"
    assert ws.git(["status", "--porcelain"])[1].strip() == "?? a.py"  # input files untracked
    assert ws.before.files.keys() == {"a.py"}  # .git/ is not the agent's work
    _git(ws, "commit", "-q", "--allow-empty", "-m", "agent")
    assert ws.changed() == set()  # a commit changes .git/ only: graded by the git checks, not listed


def test_structured_file_checks_are_read_and_graded_on_the_workspace(tmp_path: Path):
    meta = parse_meta({"evals": [{"id": "c", "prompt": "p", "assertions": [
        {"type": "file_exists", "path": "out/report.md", "text": "the report is written"},
        {"type": "file_not_exists", "path": "secrets.txt"}, "The answer is short"]}]})  # fmt: skip
    (case,) = meta.cases
    assert [(a.type, a.path) for a in case.asserts] == [
        ("file-present", "out/report.md"), ("file-absent", "secrets.txt"), ("llm-rubric", None)]  # fmt: skip
    assert case.git_repo and case.verbatim  # an agent-skill-eval file
    ws = Workspace.create(tmp_path, "ws-")
    ws.write_files([("secrets.txt", "k\n")], git_repo=True)
    present, absent = (state_check(ws, a) for a in case.asserts[:2])
    assert (present.passed, present.evidence) == (False, "out/report.md: absent in the workspace")
    assert (absent.passed, absent.evidence) == (False, "secrets.txt: present in the workspace")
    with pytest.raises(CasesError, match="'tests_pass' has no upskill-hub equivalent yet"):
        parse_meta({"evals": [{"id": "c", "prompt": "p", "assertions": [{"type": "tests_pass"}]}]})
