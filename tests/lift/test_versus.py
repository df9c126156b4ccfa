"""eval NEW --against OLD: two versions of one skill head to head on the same cases.

The two versions differ by one instruction ("end every answer with WX-42"); the scripted
model follows whatever instructions reach its system prompt. Eight cases check for the
code, so the new version passes all of them and the old one none: a lift of +100 points
over the old version whose paired interval excludes 0. Folder, ``git:HEAD~1`` and the Hub
must give the same figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from upskill_hub import rundir
from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server

sys.path.insert(0, str(Path(__file__).parents[1]))
from _evalkit import WIDGET_NEW_BODY, WIDGET_OLD_BODY, widget_cases, widget_script, write_widget_skill  # noqa: E402
from cli_runner import run_cli  # noqa: E402

OLD_BODY, NEW_BODY = WIDGET_OLD_BODY, WIDGET_NEW_BODY
CASES = widget_cases(8)


@pytest.fixture
def llm():
    with running_llm_server(widget_script) as server:
        yield server


def _write(folder: Path, body: str) -> Path:
    return write_widget_skill(folder, body, len(CASES))


def _eval(args: list[str], llm, tmp_path, capsys, monkeypatch) -> tuple[int, str, str]:
    spec = f"openai-compatible:scripted-model@{llm.openai_base_url}"
    return run_cli(["eval", *args, "-m", spec, "-o", str(tmp_path / "runs"), "--no-plots", "--format", "json"],
                   capsys, monkeypatch)  # fmt: skip


def _versus(out: str) -> dict:
    (v,) = json.loads(out)["versus"]
    return v


def _check_new_beats_old(v: dict) -> None:
    assert v["lift"] == pytest.approx(1.0) and v["n_cases"] == 8
    assert v["ci_low"] > 0 and v["p_value"] < 0.05 and v["conclusive"] is True
    assert v["new_lift"] == pytest.approx(1.0) and v["old_lift"] == pytest.approx(0.0)


def test_against_a_folder(tmp_path, llm, capsys, monkeypatch):
    new, old = _write(tmp_path / "new" / "widget-answers", NEW_BODY), _write(tmp_path / "old" / "widget-answers", OLD_BODY)
    code, out, err = _eval([str(new), "--against", str(old)], llm, tmp_path, capsys, monkeypatch)
    assert code == 0, err
    data = json.loads(out)
    _check_new_beats_old(_versus(out))
    assert data["against"] == str(old) and data["against_version"] not in (None, data["skill_version"])
    # Both versions answered the same 8 cases once per condition; the old one needs no baseline of its own.
    run_dir = tmp_path / "runs" / data["run_id"]
    old_rows = rundir.read_results(tmp_path / "runs" / data["against_run_id"])
    assert {r.condition for r in old_rows} == {"with_skill"} and len(old_rows) == 8
    assert {r.case_id for r in old_rows} == {r.case_id for r in rundir.read_results(run_dir)}
    record = json.loads((run_dir / "versus.json").read_text())
    assert record["old"]["skill_version"] == data["against_version"] and record["versus"][0]["regression"] is False
    assert rundir.read_summary(run_dir).versus[0].lift == pytest.approx(1.0)  # summary.json keeps it


def test_fail_on_regression_when_the_new_version_is_worse(tmp_path, llm, capsys, monkeypatch):
    worse, better = _write(tmp_path / "a" / "widget-answers", OLD_BODY), _write(tmp_path / "b" / "widget-answers", NEW_BODY)
    code, out, err = _eval([str(worse), "--against", str(better)], llm, tmp_path, capsys, monkeypatch)
    assert code == 0, err  # without the flag a regression is reported, not an error
    assert _versus(out)["lift"] == pytest.approx(-1.0) and _versus(out)["ci_high"] < 0
    code, out, err = _eval([str(worse), "--against", str(better), "--fail-on-regression"], llm, tmp_path, capsys,
                           monkeypatch)  # fmt: skip
    assert code == 1 and "regression: this version is worse than" in err and "Traceback" not in err


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_against_git_head_1_gives_the_same_figures(tmp_path, llm, capsys, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    skill = _write(repo / "skills" / "widget-answers", OLD_BODY)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "old")
    md = skill / "SKILL.md"
    md.write_text(md.read_text().replace(OLD_BODY, NEW_BODY))  # the new version: one more instruction
    _git(repo, "commit", "-qam", "new: one more instruction")
    code, out, err = _eval([str(skill), "--against", "git:HEAD~1"], llm, tmp_path, capsys, monkeypatch)
    assert code == 0, err
    _check_new_beats_old(_versus(out))
    assert _git(repo, "status", "--porcelain") == ""  # read from git's objects, never checked out


@pytest.mark.parametrize(("ref", "said"), [
    ("git:no-such-ref", "--against git:no-such-ref:"),
    ("git:", "name a git revision after git:"),
    ("git:--output=/tmp/x", "name a git revision after git:"),
])  # fmt: skip
def test_bad_git_refs_are_one_line_before_any_call(tmp_path, llm, capsys, monkeypatch, ref, said):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    skill = _write(repo / "widget-answers", NEW_BODY)
    code, _, err = _eval([str(skill), "--against", ref], llm, tmp_path, capsys, monkeypatch)
    assert code != 0 and said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert llm.calls == 0 and not (tmp_path / "runs").exists()


def test_against_another_skill_or_with_compare_is_refused(tmp_path, llm, capsys, monkeypatch):
    new = _write(tmp_path / "new" / "widget-answers", NEW_BODY)
    meta = parse_meta({"schema_version": 1, "cases": CASES})
    other = Skill.create("other-skill", "Something else. Use for others.", OLD_BODY, meta=meta).write(
        tmp_path / "o" / "other-skill"
    )
    code, _, err = _eval([str(new), "--against", str(other)], llm, tmp_path, capsys, monkeypatch)
    assert code != 0 and "that is skill 'other-skill', not 'widget-answers'" in err
    code, _, err = _eval([str(new), "--against", str(other), "--compare", "a/b"], llm, tmp_path, capsys, monkeypatch)
    assert code != 0 and "give one of them" in err
    assert llm.calls == 0 and not (tmp_path / "runs").exists()


def test_against_a_hub_repo_gives_the_same_figures(tmp_path, llm, capsys, monkeypatch, hub_server, hub_repo_id):
    from upskill_hub.hub.push import push

    push([_write(tmp_path / "old" / "widget-answers", OLD_BODY)], hub_repo_id)
    new = _write(tmp_path / "new" / "widget-answers", NEW_BODY)
    code, out, err = _eval([str(new), "--against", hub_repo_id], llm, tmp_path, capsys, monkeypatch)
    assert code == 0, err
    _check_new_beats_old(_versus(out))
    code, _, err = _eval([str(new), "--against", "user/no-such-repo-xyz"], llm, tmp_path, capsys, monkeypatch)
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_versus_stats_without_a_baseline(tmp_path):
    from upskill_hub.lift.versus import versus_stats
    from upskill_hub.rundir.schema import ResultRow

    def rows(passed: list[bool]) -> list[ResultRow]:
        return [ResultRow(run_id="r", timestamp="t", tool_version="0", skill_name="s", skill_version="v", model="m",
                          provider="test", params="{}", condition="with_skill", case_id=f"c{i}", repeat=0, passed=p,
                          assertions_passed=int(p), assertions_total=1, assertion_details="[]", output="")
                for i, p in enumerate(passed)]  # fmt: skip

    (v,) = versus_stats(rows([True, True, False, True]), rows([True, False, False, False]))
    assert v.lift == pytest.approx(0.5) and v.n_cases == 4 and v.new_lift is None and v.old_lift is None
    assert v.regression is False and not v.conclusive  # 2 discordant cases cannot conclude


def test_against_runs_agents_with_each_version_installed(tmp_path, capsys, monkeypatch):
    """Under --agent each version is installed in its own workspaces: the agent sees the
    instruction only in the new version's SKILL.md."""
    new, old = _write(tmp_path / "new" / "widget-answers", NEW_BODY), _write(tmp_path / "old" / "widget-answers", OLD_BODY)
    agent = tmp_path / "bin" / "skill-reader"
    agent.parent.mkdir()
    agent.write_text(
        f"#!{sys.executable}\nimport pathlib\n"
        "p = pathlib.Path('.agents/skills/widget-answers/SKILL.md')\n"
        "print('answer WX-42' if p.exists() and 'WX-42' in p.read_text() else 'answer')\n"
    )
    agent.chmod(0o755)
    monkeypatch.setenv("PATH", f"{agent.parent}{os.pathsep}{os.environ['PATH']}")
    code, out, err = run_cli(["eval", str(new), "--against", str(old), "--agent", "cmd:skill-reader {prompt}",
                              "-o", str(tmp_path / "runs"), "--no-plots", "--format", "json"], capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    (v,) = json.loads(out)["versus"]
    assert (v["model"], v["mode"]) == ("cmd:skill-reader", "harness")
    _check_new_beats_old(v)
