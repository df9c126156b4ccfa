"""Issue 36: the dialect flags reach the calls (agent-skill-eval's ``stage_files`` and
``force_skill_invocation`` in an agent's run, agent-skills-eval's ``params`` on the wire).

The runner and the harness read :class:`Case`'s ``stage_files``, ``prompt_for`` and
``params``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.rundir import read_results
from upskill_hub.testing.llm_server import running_llm_server

FIX = Path(__file__).parent.parent / "dialect_fixtures"
KEY = "sk-" + "test-0123456789abcdefghijklmnop"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_stage_files_and_force_reach_a_cmd_agent(tmp_path: Path, monkeypatch):
    """A ``cmd:`` agent that prints what git has staged and how its prompt starts."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    agent = bin_dir / "git-agent"
    agent.write_text(
        f"#!{sys.executable}\nimport subprocess, sys\n"
        "r = subprocess.run(['git', 'diff', '--cached', '--name-only'], capture_output=True, text=True)\n"
        "print('STAGED=' + (','.join(r.stdout.split()) or 'none'), 'FIRST=' + ' '.join(sys.argv[-1].split()[:4]))\n"
    )
    agent.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    skill = tmp_path / "commit-push-pr"
    shutil.copytree(FIX / "agent_skill_eval" / "skills" / "commit-push-pr", skill)
    src = json.loads(
        (FIX / "agent_skill_eval" / "examples" / "commit-push-pr" / "evals" / "evals.json").read_text()
    )
    entry = src["evals"][0]
    # its first entry (stage_files, force_skill_invocation), its input file beside it
    evals = tmp_path / "evals.json"
    files = tmp_path / "files"
    files.mkdir()
    (files / "sample_change.py").write_text("x = 1\n")
    evals.write_text(json.dumps({"skill_name": "commit-push-pr", "evals": [
        {k: entry[k] for k in ("id", "prompt", "expected_output", "files", "stage_files", "force_skill_invocation")}
        | {"assertions": ["The answer says what was staged"]}]}))  # fmt: skip
    with running_llm_server(
        lambda s, m, p: json.dumps({"pass": "STAGED=sample_change.py" in m[-1]["content"], "reason": "x"})
    ) as srv:
        res = run_eval(skill, [], EvalOptions(
            agents=["cmd:git-agent {prompt}"], cases=evals, output_dir=tmp_path / "runs", cache_dir=tmp_path / "c",
            plots=False, judge=f"openai-compatible:judge@{srv.openai_base_url}"))  # fmt: skip
    rows = {r.condition: r for r in read_results(res.run_dir)}
    assert "STAGED=sample_change.py" in rows["with_skill"].output
    assert "FIRST=Use the $commit-push-pr skill." in rows["with_skill"].output
    assert "FIRST=Use the $commit-push-pr skill." in rows["baseline"].output  # the prompt, untouched


def test_params_of_a_case_reach_the_model(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skill = tmp_path / "best-month"
    shutil.copytree(FIX / "agent_skills_eval" / "best-month", skill)
    evals = {"evals": [
        {"id": "plain", "prompt": "Name a month.", "assertions": ["ok"]},
        {"id": "tuned", "prompt": "Name a month.", "assertions": ["ok"], "params": {"max_tokens": 77, "seed": 5}},
    ]}  # fmt: skip
    (skill / "evals" / "evals.json").write_text(json.dumps(evals))
    with running_llm_server(lambda s, m, p: json.dumps({"pass": True, "reason": "x"})) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        run_eval(skill, ["openai:gpt-4.1-mini"], EvalOptions(
            base_url=srv.openai_base_url, judge="openai:judge", output_dir=tmp_path / "o", plots=False))  # fmt: skip
        bodies = [r.body for r in srv.completion_requests if r.body.get("model") == "gpt-4.1-mini"]
    sent = sorted((b.get("max_tokens") or b.get("max_completion_tokens"), b.get("seed")) for b in bodies)
    assert sent == [(77, 5), (77, 5), (1024, None), (1024, None)]
