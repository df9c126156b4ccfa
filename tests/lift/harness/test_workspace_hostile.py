"""Issue 45, the agent workspace: staged case files that carry git metadata, plant a skill,
or name a file in a way that leaks a key or breaks the grading.

Each test plays the attack through the real code path (the case parser, ``skills validate``,
``Workspace.write_files`` / ``_git_stage``, ``run_eval`` with ``cmd:`` agents) and checks the
safe outcome: nothing runs, nothing outside the workspace changes, the refusal is one line,
and a call whose agent left an odd file is still graded with its secrets masked.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _harness_kit import API_KEY, SKILL_MD

from upskill_hub.agents import AGENTS
from upskill_hub.cases import CasesError, parse_meta
from upskill_hub.errors import UpskillError
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.claude_code import ADAPTER as CLAUDE
from upskill_hub.lift.harness.codex import ADAPTER as CODEX
from upskill_hub.lift.harness.gemini import ADAPTER as GEMINI
from upskill_hub.lift.harness.opencode import ADAPTER as OPENCODE
from upskill_hub.lift.harness.workspace import Workspace
from upskill_hub.lift.prepare import EvalOptions

sys.path.insert(0, str(Path(__file__).parents[2]))
from cli_runner import run_cli  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _attacker_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose config runs ``touch MARKER`` as the clean filter ``x``; (repo, marker)."""
    repo = tmp_path / "attacker"
    marker = tmp_path / "filter-ran"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    with (repo / ".git" / "config").open("a") as f:
        f.write(f'[filter "x"]\n\tclean = "touch {marker}"\n')
    return repo, marker


def _state(repo: Path) -> dict[str, str]:
    """Digest of every file of the repository's git folder (config, index, objects, ...)."""
    git = repo / ".git"
    return {
        str(p.relative_to(git)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in git.rglob("*")
        if p.is_file()
    }


def _evals_skill(tmp_path: Path, gitdir: Path) -> Path:
    """agent-skill-eval's shape: ``stage_files`` with a gitfile, a ``.gitattributes`` and a note."""
    d = tmp_path / "skills" / "widget-report"
    files = d / "evals" / "files"
    files.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    (files / ".git").write_text(f"gitdir: {gitdir / '.git'}\n")
    (files / ".gitattributes").write_text("* filter=x\n")
    (files / "notes.txt").write_text("stock: 3\n")
    evals = {"skill_name": "widget-report", "evals": [{
        "id": 1, "prompt": "Review the staged change.", "expected_output": "A review", "stage_files": True,
        "files": ["files/.git", "files/.gitattributes", "files/notes.txt"],
    }]}  # fmt: skip
    (d / "evals" / "evals.json").write_text(json.dumps(evals))
    return d


# ----- .git, .gitattributes and company: refused when the case is read ----------------------


def test_the_gitfile_attack_is_refused_by_validate_and_eval(agents_env, tmp_path, capsys, monkeypatch):
    repo, marker = _attacker_repo(tmp_path)
    before = _state(repo)
    skill = _evals_skill(tmp_path, repo)
    with pytest.raises(CasesError, match=r"'\.git'.*git reads it as repository metadata"):
        parse_meta(
            json.loads((skill / "evals" / "evals.json").read_text()),
            base_dir=skill,
            evals_dir=skill / "evals",
        )
    for args in (
        ["skills", "validate", str(skill)],
        ["eval", str(skill), "--agent", "claude-code", "--no-plots", "--no-baseline", "-o", str(tmp_path / "runs"),
         "--cache-dir", str(tmp_path / "cache")],
    ):  # fmt: skip
        code, _out, err = run_cli(args, capsys, monkeypatch)
        assert code != 0 and "'.git'" in err and "Traceback" not in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
    assert not marker.exists()
    assert _state(repo) == before  # neither its config (no [user]) nor its index was written


@pytest.mark.parametrize(
    "name", [".git", ".GIT", ".git.", ".git ", "sub/.git", ".gitattributes", "a/.GitModules", ".gitconfig",
             ".git/hooks/pre-commit", "GIT~1", ".g\u200cit"],
)  # fmt: skip
def test_git_metadata_names_are_refused_in_every_dialect(name):
    def cases(files: dict[str, str], where: str) -> dict:
        assert_ = [{"type": "contains", "value": "x"}]
        case = {"id": "c", "input": "hi", "assert": assert_, **({"files": files} if where == "files" else
                {"context": {"files": files}})}  # fmt: skip
        return {"cases": [case]}

    for where in ("files", "context"):
        with pytest.raises(CasesError, match="git reads it as repository metadata") as exc:
            parse_meta(cases({name: "x"}, where))
        assert len(str(exc.value).splitlines()) == 1
    # what only looks like them stays allowed
    ordinary = [
        ".gitignore",
        ".github/workflows/ci.yml",
        ".gitkeep",
        "git/notes.txt",
        ".claude/settings.json",
    ]
    (case,) = parse_meta(cases(dict.fromkeys(ordinary, "x"), "files")).cases
    assert [rel for rel, _ in case.files] == ordinary


# ----- the workspace: refuses them itself, and its git follows nothing ----------------------


def test_write_files_refuses_the_gitfile_attack_and_touches_nothing(tmp_path):
    repo, marker = _attacker_repo(tmp_path)
    before = _state(repo)
    ws = Workspace.create(tmp_path / "ws", "w-")
    files = [(".git", f"gitdir: {repo / '.git'}\n"), (".gitattributes", "* filter=x\n"), ("notes.txt", "x\n")]
    with pytest.raises(UpskillError, match=r"input file '\.git' refused") as exc:
        ws.write_files(files, git_stage=True)
    assert len(str(exc.value).splitlines()) == 1
    assert not marker.exists() and _state(repo) == before


def test_git_staging_alone_never_follows_a_planted_gitfile(tmp_path):
    """Defence in depth: a ``.git`` that got into ``project/`` past the name check (here planted
    directly) is never followed: staging refuses to run over it, in one line."""
    repo, marker = _attacker_repo(tmp_path)
    before = _state(repo)
    ws = Workspace.create(tmp_path / "ws", "w-")
    (ws.project / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    (ws.project / ".gitattributes").write_text("* filter=x\n")
    with pytest.raises(UpskillError, match=r"project/\.git exists before `git init`") as exc:
        ws.write_files([("notes.txt", "x\n")], git_stage=True)
    assert len(str(exc.value).splitlines()) == 1
    assert not marker.exists() and _state(repo) == before


def test_git_staging_reads_no_user_config_and_makes_a_bare_fresh_repository(tmp_path, monkeypatch):
    """The user's ~/.gitconfig (a filter for every file) and a GIT_DIR in our own environment
    are not used: the workspace's repository is new, has no hooks, and holds the input file."""
    repo, marker = _attacker_repo(tmp_path)
    before = _state(repo)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[filter "x"]\n\tclean = "touch {marker}"\n[core]\n\tattributesFile = {home}/attrs\n'
    )
    (home / "attrs").write_text("* filter=x\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    ws = Workspace.create(tmp_path / "ws", "w-")
    ws.home = home  # even a workspace whose HOME held that config
    ws.write_files([("notes.txt", "x\n")], git_stage=True)
    assert not marker.exists() and _state(repo) == before
    staged = subprocess.run(
        ["git", "--git-dir", str(ws.project / ".git"), "--work-tree", str(ws.project), "diff", "--cached",
         "--name-only"], capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin", "HOME": str(ws.tmp)},
    )  # fmt: skip
    assert staged.stdout.split() == ["notes.txt"]
    hooks = ws.project / ".git" / "hooks"
    assert not hooks.exists() or not any(hooks.iterdir())


# ----- a case file inside a skills folder ----------------------------------------------------


#: Every skills folder an agent reads: the install targets, the harness's, and older ones.
_SKILL_DIRS = sorted(
    {t.project_dir for t in AGENTS.values()}
    | {a.skills_folder for a in (CLAUDE, CODEX, GEMINI, OPENCODE)}
    | {".codex/skills", ".opencode/skill"}
)


@pytest.mark.parametrize(
    "name", [f"{d}/victim/SKILL.md" for d in _SKILL_DIRS] + [".Claude/Skills/v/SKILL.md", ".claude"]
)
def test_a_case_file_inside_a_skills_folder_is_refused(tmp_path, name):
    d = tmp_path / "skills" / "widget-report"
    (d / "evals" / Path(name).parent).mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    (d / "evals" / name).write_text("---\nname: victim\ndescription: planted\n---\n")
    evals = {"evals": [{"id": 1, "prompt": "go", "expected_output": "ok", "files": [name]}]}
    with pytest.raises(CasesError, match="where agents look for skills") as exc:
        parse_meta(evals, base_dir=d, evals_dir=d / "evals")
    assert len(str(exc.value).splitlines()) == 1
    ws = Workspace.create(tmp_path / "ws", "w-")
    with pytest.raises(UpskillError, match="where agents look for skills"):
        ws.write_files([(name, "x")])


# ----- what the agent leaves: a key in a file name, a name that is not UTF-8 -----------------


def _agent(tmp_path: Path, body: str) -> str:
    path = tmp_path / "bin" / "odd-agent"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!{sys.executable}\nimport os, sys\nif sys.argv[1:] == ['--version']:\n    print('1.0')\n    sys.exit(0)\n"
        f"os.makedirs('out', exist_ok=True)\nopen('out/report.md', 'w').write('WX-42')\n{body}print('done')\n"
    )
    path.chmod(0o755)
    return "cmd:odd-agent"


def _run(tmp_path: Path, skill: Path, agent: str):
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"cases": [{"id": "c", "input": "go", "assert": [
        {"type": "file-contains", "path": "out/report.md", "value": "WX-42"}]}]}))  # fmt: skip
    opts = EvalOptions(agents=[agent], cases=tests, output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                       plots=False, include_baseline=False, harness=HarnessOptions(timeout=60))  # fmt: skip
    (row,) = run_eval(skill, [], opts).rows
    return row


def test_a_key_in_a_file_name_never_reaches_the_run_folder(agents_env, widget_skill, tmp_path):
    agent = _agent(tmp_path, f"open('leak-{API_KEY}.txt', 'w').write('x')\n")
    row = _run(tmp_path, widget_skill, agent)
    assert row.error is None and row.passed is True
    (changed,) = (tmp_path / "runs").rglob("changed.json")
    assert "leak-***.txt" in json.loads(changed.read_text())
    for p in (tmp_path / "runs").rglob("*"):
        if p.is_file():
            assert API_KEY.encode() not in p.read_bytes(), p


def test_a_file_name_that_is_not_utf8_is_noted_escaped_and_the_call_graded(
    agents_env, widget_skill, tmp_path
):
    agent = _agent(tmp_path, "open(b'bad-\\xff.txt', 'wb').write(b'x')\nos.makedirs(b'dir-\\xfe', exist_ok=True)\n"
                   "open(b'dir-\\xfe/in.txt', 'wb').write(b'y')\n")  # fmt: skip
    row = _run(tmp_path, widget_skill, agent)
    assert row.error is None and row.passed is True, row.error
    changes = json.loads(row.changes)
    assert [f["path"] for f in changes["files"]] == ["out/report.md"]
    assert "names that are not UTF-8 not read (first: bad-\\xff.txt)" in changes["cut"]
    (changed,) = (tmp_path / "runs").rglob("changed.json")
    assert json.loads(changed.read_text()) == ["out/report.md"]
