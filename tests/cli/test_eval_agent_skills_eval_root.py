"""Issue 47 item 6: an agent-skills-eval project (``agent-skills-eval.yaml`` + a folder of skills).

``upskill-hub eval ROOT`` runs each skill the config selects on its ``evals/evals.json``, as
darkrishabh/agent-skills-eval (commit b60eebe) runs them: skills found under ``root``, those
without evals skipped, ``include``/``exclude`` globs on the skill's path, ``target`` and
``judge`` served at ``baseUrl``, ``baseline: true`` adding the no-skill run, ``targetParams``
sent with every call, ``workspace`` receiving the results. A key or value that cannot be
honoured is one line, and nothing is written.

The scripted model answers SKILLED only when the skill's body reached it; the scripted judge
passes a rubric when the answer says SKILLED.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.lift.grading.assertions import JUDGE_SYSTEM_PROMPT
from upskill_hub.rundir import read_results, read_summary
from upskill_hub.testing.llm_server import running_llm_server

FIX = Path(__file__).parent.parent / "dialect_fixtures" / "agent_skills_eval_root"


def script(system: str, messages: list[dict], params: dict) -> str:
    user = messages[-1]["content"]
    if system == JUDGE_SYSTEM_PROMPT:
        answer = user.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        return json.dumps({"pass": "SKILLED" in answer, "reason": "scripted"})
    return "SKILLED: May, 11; hello Ada" if "begin every answer with SKILLED" in system else "plain: done"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("UPSKILL_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


def project(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIX, root)
    cfg = root / "agent-skills-eval.yaml"
    cfg.write_text(cfg.read_text() + f"baseUrl: {base_url}\n" + extra)
    return root


def test_the_project_runs_each_skill_on_its_evals(tmp_path: Path, capsys, monkeypatch):
    with running_llm_server(script) as srv:
        root = project(tmp_path, srv.openai_base_url)
        code, out, err = run_cli(["eval", str(root), "--no-plots"], capsys, monkeypatch)
    assert code == 0, err
    # workspace: the run folders land in the project's workspace, one per skill
    runs = sorted((root / "agent-skills-workspace").iterdir())
    assert not (tmp_path / "upskill-runs").exists()
    by_skill = {read_summary(r).skill_name: r for r in runs if r.is_dir()}
    # draft-notes is excluded by "**/draft-*", no-evals has no evals: neither runs
    assert set(by_skill) == {"best-month", "greeting"}
    expected_cases = {"best-month": {"top-month", "expected-only"}, "greeting": {"hello"}}
    for name, run in by_skill.items():
        rows = read_results(run)
        assert not any(r.error for r in rows), [r.error for r in rows]
        # baseline: true -> with and without the skill; target at baseUrl; targetParams sent
        assert {(r.condition, r.case_id) for r in rows} == {
            (c, i) for c in ("with_skill", "baseline") for i in expected_cases[name]
        }
        assert {(r.model, r.provider) for r in rows} == {("gpt-4o-mini", "openai-compatible")}
        assert all(json.loads(r.params)["max_tokens"] == 200 for r in rows)
        assert all(r.passed for r in rows if r.condition == "with_skill")
        assert not any(r.passed for r in rows if r.condition == "baseline")
        assert "judge-model" in (read_summary(run).judge_model or "")
    assert "layout, report, logging" in err  # read, not used: said once


def test_command_line_flags_win_over_the_config(tmp_path: Path, capsys, monkeypatch):
    with running_llm_server(script) as srv:
        root = project(tmp_path, srv.openai_base_url)
        code, _out, err = run_cli(
            ["eval", str(root), "--no-plots", "--no-baseline", "--max-tokens", "99", "-o", str(tmp_path / "mine")],
            capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    assert not (root / "agent-skills-workspace").exists()
    rows = [r for run in (tmp_path / "mine").iterdir() for r in read_results(run)]
    assert len(rows) == 3 and {r.condition for r in rows} == {"with_skill"}
    assert {json.loads(r.params)["max_tokens"] for r in rows} == {99}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("concurency: 4\n", "'concurency': not an option upskill-hub can honour"),
        ("judgeParams:\n  temperature: 0.7\n", "judgeParams: the judge always runs at temperature 0"),
        ("apiKeyEnv: OPENAI_API_KEY\n", "apiKeyEnv: 'OPENAI_API_KEY' cannot be honoured"),
        ("targetParams:\n  frequency_penalty: 1\n", "targetParams.frequency_penalty: is not a parameter"),
        ("workspace: ../../elsewhere\n", "workspace: '../../elsewhere' leaves the folder"),
        ("layout: nested\n", 'layout: must be "flat" or "iteration"'),
        ("baseline: [yes\n", "not valid YAML"),
    ],
)
def test_a_key_that_cannot_be_honoured_is_one_line_and_nothing_is_written(
    tmp_path: Path, capsys, monkeypatch, extra: str, expected: str
):
    root = tmp_path / "project"
    shutil.copytree(FIX, root)
    cfg = root / "agent-skills-eval.yaml"
    # a later key replaces the fixture's (YAML keeps the last); the URL is never reached
    cfg.write_text(cfg.read_text().replace("targetParams:\n  temperature: 0\n  max_tokens: 200\n", "").replace(
        "judgeParams:\n  temperature: 0\n", "").replace("layout: iteration\n", "").replace(
        "workspace: ./agent-skills-workspace\n", "") + "baseUrl: http://127.0.0.1:9/v1\n" + extra)  # fmt: skip
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, out, err = run_cli(["eval", str(root), "--no-plots"], capsys, monkeypatch)
    assert code != 0 and expected in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
