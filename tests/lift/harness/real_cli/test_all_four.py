"""The four real agent CLIs in one ``upskill-hub eval`` and one ``triggers``, as a user types them.

One scripted server speaks every CLI's wire protocol (``testing.agent_wire.PROTOCOLS``), and
each CLI gets only its provider's documented variables: the command lines of the recipes in
docs/agent-harnesses.md, run through the real entry point.
"""

from __future__ import annotations

import json

import pytest
from _real_cli_kit import API_KEY, COMMAND, SKILL, cli_bin

from upskill_hub.rundir import read_results
from upskill_hub.testing.agent_server import AgentScript, running_agent_server

AGENTS = ["claude-code", "codex:scripted-model", "gemini", "opencode:openai-compatible/scripted-model"]


@pytest.fixture
def four_clis(clean_env):
    for binary in ("claude", "codex", "gemini", "opencode"):
        cli_bin(binary)
    # Codex has no skill tool: it opens the SKILL.md where it installs skills.
    script = AgentScript(skill=SKILL, skill_file=f".agents/skills/{SKILL}/SKILL.md", command=COMMAND)
    with running_agent_server(script) as server:
        clean_env.setenv("ANTHROPIC_API_KEY", API_KEY)
        clean_env.setenv("ANTHROPIC_BASE_URL", server.url)
        clean_env.setenv("OPENAI_API_KEY", API_KEY)
        clean_env.setenv("OPENAI_BASE_URL", server.openai_base_url)
        clean_env.setenv("GEMINI_API_KEY", API_KEY)
        clean_env.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        yield server


@pytest.mark.slow
def test_one_eval_through_the_four_real_clis(four_clis, hello_skill, tmp_path, capsys, monkeypatch):
    from cli_runner import run_cli

    args = ["eval", str(hello_skill), "--output", str(tmp_path / "runs"), "--cache-dir", str(tmp_path / "cache"),
            "--agent-timeout", "120", "--format", "json"]  # fmt: skip
    for a in AGENTS:
        args += ["--agent", a]
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    run_dir = next((tmp_path / "runs").iterdir())
    rows = read_results(run_dir)
    assert len(rows) == 2 * len(AGENTS) and [r.error for r in rows] == [None] * len(rows)
    by = {(r.model, r.condition): r for r in rows}
    for agent in AGENTS:
        with_skill, baseline = by[(agent, "with_skill")], by[(agent, "baseline")]
        assert (with_skill.passed, with_skill.triggered) == (True, True), agent
        assert (baseline.passed, baseline.triggered) == (False, False), agent
        # The baseline tried to load the absent skill; the attempt is in its transcript, failed.
        failed = [e for e in json.loads(baseline.transcript)["calls"] if e.get("error")]
        assert any(SKILL in json.dumps(e) for e in failed), (agent, baseline.transcript)
        changes = json.loads(with_skill.changes)["files"]
        created = [f["path"] for f in changes if f["status"] == "created"]
        assert created == ["hello.txt"] and len(changes) == 1, (agent, changes)
    summary = json.loads((run_dir / "summary.json").read_text())
    lifts = {x["model"]: x["lift"] for x in summary["lifts"]}
    assert lifts == dict.fromkeys(AGENTS, 1.0)
    # The same run again: every row from the cache, no CLI started, no request made.
    before = four_clis.calls
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    assert before > 0 and four_clis.calls == before
