"""Full evals through the four agent CLIs (fakes on PATH that print each CLI's JSON)."""

from __future__ import annotations

import json

import pytest
from _harness_kit import API_KEY

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.rundir import read_results

AGENTS = ["claude-code", "codex", "gemini", "opencode"]


def _options(tmp_path, **kw) -> EvalOptions:
    harness = kw.pop("harness", HarnessOptions(timeout=60))
    return EvalOptions(
        agents=kw.pop("agents", AGENTS), output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
        plots=False, concurrency=kw.pop("concurrency", 2), harness=harness, **kw,
    )  # fmt: skip


def test_full_eval_through_every_agent_cli(agents_env, widget_skill, tmp_path, llm):
    result = run_eval(widget_skill, [], _options(tmp_path))
    rows = result.rows
    assert len(rows) == len(AGENTS) * 2 * 2  # agents x conditions x cases
    assert [r.error for r in rows] == [None] * len(rows)
    by = {(r.model, r.condition, r.case_id): r for r in rows}
    for agent in AGENTS:
        with_skill, baseline = by[(agent, "with_skill", "report")], by[(agent, "baseline", "report")]
        assert (with_skill.mode, with_skill.provider, with_skill.agent) == (
            "harness",
            f"agent:{agent}",
            agent,
        )
        # The skill was installed where this CLI looks, the CLI loaded it, and it made the difference.
        assert with_skill.triggered is True and json.loads(with_skill.loaded) == ["widget-report"]
        assert "widget-report/SKILL.md" in json.loads(with_skill.files_read)
        assert baseline.triggered is False and json.loads(baseline.loaded) == []
        assert with_skill.passed is True and baseline.passed is False
        # Two tool calls: loading the skill and writing the report.
        assert with_skill.tool_calls == 2 and baseline.tool_calls == 0
        # Tokens as the CLI reported them (the scripted server's counts): the skill text adds input.
        assert with_skill.tokens_unavailable is False
        assert with_skill.input_tokens > baseline.input_tokens > 0
        assert with_skill.output_tokens == 11  # words of the scripted answer
        assert json.loads(with_skill.params)["cli_version"]
        # Only Claude Code and OpenCode report a cost.
        assert (with_skill.cost_usd is not None) == (agent in ("claude-code", "opencode"))
    # Lift per agent: the report case flips, the already-there case fails in both conditions.
    lifts = {x.model: x for x in result.summary.lifts}
    assert set(lifts) == set(AGENTS)
    for agent in AGENTS:
        assert lifts[agent].lift == pytest.approx(0.5) and lifts[agent].mode == "harness"
    conds = {(c.model, c.condition): c for c in result.summary.conditions}
    assert conds[("codex", "with_skill")].pass_rate == 0.5 and conds[("codex", "baseline")].pass_rate == 0.0
    assert conds[("codex", "with_skill")].mean_input_tokens is not None
    # The rows on disk are the rows returned.
    assert len(read_results(result.run_dir)) == len(rows)


def test_workspace_check_passes_only_on_files_the_agent_wrote(agents_env, widget_skill, tmp_path):
    result = run_eval(widget_skill, [], _options(tmp_path, agents=["claude-code"]))
    by = {(r.condition, r.case_id): r for r in result.rows}
    # done.md contains WX-42 but was an input file the agent never touched: the check fails.
    details = json.loads(by[("with_skill", "already-there")].assertion_details)
    assert details[0]["passed"] is False
    assert "existed before the agent ran and was not changed by it" in details[0]["evidence"]
    # out/report.md also existed before, but the agent rewrote it: the check passes.
    report = json.loads(by[("with_skill", "report")].assertion_details)
    assert [d["type"] for d in report] == ["contains", "file-contains"]
    assert report[1]["passed"] is True and "WX-42" in report[1]["evidence"]
    baseline = json.loads(by[("baseline", "report")].assertion_details)
    assert baseline[1]["passed"] is False and "not changed" in baseline[1]["evidence"]


def test_artifacts_kept_and_workspaces_removed(agents_env, widget_skill, tmp_path):
    root = tmp_path / "ws"
    opts = _options(tmp_path, agents=["codex"], harness=HarnessOptions(timeout=60, workspace_root=root))
    result = run_eval(widget_skill, [], opts)
    art = result.run_dir / "agents" / "codex__with_skill__report__r0"
    command = (art / "command.txt").read_text()
    assert "exec --json" in command and "Produce the inventory report" in command
    assert "WX-42" in (art / "stdout.tail").read_text()
    meta = json.loads((art / "call.json").read_text())
    assert meta["exit_code"] == 0 and meta["cli_version"] == "codex-cli 0.58.0" and meta["workspace"] is None
    assert "OPENAI_API_KEY" in meta["env_passed"]
    assert (art / "rendered").is_dir() and json.loads((art / "changes.json").read_text())["files"]
    for f in art.rglob("*"):
        assert f.is_dir() or API_KEY not in f.read_text()
    assert list(root.iterdir()) == []  # every workspace was removed


def test_keep_workspaces(agents_env, widget_skill, tmp_path):
    root = tmp_path / "ws"
    opts = _options(
        tmp_path, agents=["gemini"], include_baseline=False,
        harness=HarnessOptions(timeout=60, workspace_root=root, keep_workspaces=True),
    )  # fmt: skip
    result = run_eval(widget_skill, [], opts)
    kept = sorted(root.iterdir())
    assert len(kept) == 2  # one per call
    meta = json.loads(
        (result.run_dir / "agents" / "gemini__with_skill__report__r0" / "call.json").read_text()
    )
    ws = root / meta["workspace"].rsplit("/", 1)[-1]
    # The skill sits where Gemini CLI looks, installed like `skills install` does; the agent's file is there.
    assert (
        (ws / "project" / ".gemini" / "skills" / "widget-report" / "SKILL.md").read_text().startswith("---")
    )
    assert "WX-42" in (ws / "project" / "out" / "report.md").read_text()
    assert (ws / "project" / "notes.txt").read_text() == "stock: 3\n"


def test_cache_serves_identical_calls_and_the_cli_version_is_in_the_key(
    agents_env, widget_skill, tmp_path, llm
):
    first = run_eval(widget_skill, [], _options(tmp_path, agents=["opencode"]))
    calls = llm.calls
    again = run_eval(widget_skill, [], _options(tmp_path, agents=["opencode"]))
    assert llm.calls == calls  # no agent ran
    assert all(r.cached for r in again.rows)
    assert [(r.passed, r.triggered, r.input_tokens) for r in again.rows] == [
        (r.passed, r.triggered, r.input_tokens) for r in first.rows
    ]
    # A new CLI version is a new agent: nothing is served from the cache.
    updated = _options(
        tmp_path,
        agents=["opencode"],
        harness=HarnessOptions(timeout=60, agent_env=["FAKE_AGENT_VERSION=1.0.71"]),
    )
    third = run_eval(widget_skill, [], updated)
    assert not any(r.cached for r in third.rows) and llm.calls > calls


def test_resume_runs_only_missing_agent_calls(agents_env, widget_skill, tmp_path, llm):
    first = run_eval(widget_skill, [], _options(tmp_path, agents=["claude-code"], use_cache=False))
    results = first.run_dir / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:-1]) + "\n")  # lose the last call
    calls = llm.calls
    resumed = run_eval(
        widget_skill, [], _options(tmp_path, agents=["claude-code"], use_cache=False, resume=True)
    )
    assert resumed.run_dir == first.run_dir
    assert resumed.stats.skipped == len(lines) - 1 and resumed.stats.fresh_calls == 1
    assert llm.calls == calls + 1
    assert len(resumed.rows) == len(lines)


def test_models_and_agents_in_one_run(agents_env, widget_skill, tmp_path, llm):
    """--model rows (inject) and --agent rows (harness) share the run; workspace checks need agents."""
    from upskill_hub.errors import UpskillError

    with pytest.raises(UpskillError, match="grades an agent's workspace"):
        run_eval(widget_skill, ["openai:scripted-model"], _options(tmp_path, agents=["codex"]))


def test_an_installed_skill_the_agent_does_not_load_is_not_triggered(agents_env, widget_skill, tmp_path):
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"cases": [{"id": "hello", "input": "Say hello to Bob.",
                                            "assert": [{"type": "contains", "value": "hello"}]}]}))  # fmt: skip
    result = run_eval(widget_skill, [], _options(tmp_path, agents=["claude-code", "opencode"], cases=tests))
    for r in result.rows:
        assert r.error is None and r.triggered is False and json.loads(r.loaded) == [] and r.tool_calls == 0
    by = {(r.model, r.condition): r for r in result.rows}
    # Not loaded, so the skill cost nothing: the same tokens with and without it.
    assert by[("claude-code", "with_skill")].input_tokens == by[("claude-code", "baseline")].input_tokens


def test_concurrency_bounds_the_agent_processes(agents_env, widget_skill, tmp_path, llm):
    run_eval(widget_skill, [], _options(tmp_path, agents=["codex"], concurrency=1, use_cache=False, runs=2))
    assert llm.calls == 8 and llm.max_in_flight == 1  # one agent process at a time
