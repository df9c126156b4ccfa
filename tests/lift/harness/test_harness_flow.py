"""Harness rows flow like every eval's: pass@k, push to the Hub, read back, --compare."""

from __future__ import annotations

import sys
from pathlib import Path

from upskill_hub.hub.push import push
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.prepare import EvalOptions

sys.path.insert(0, str(Path(__file__).parents[2]))
from cli_runner import run_cli  # noqa: E402


def test_push_read_back_and_compare_harness_runs(agents_env, widget_skill, hub_server, hub_repo_id, tmp_path, capsys, monkeypatch):  # fmt: skip
    opts = EvalOptions(
        agents=["claude-code", "codex"], runs=2, output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
        plots=False, harness=HarnessOptions(timeout=60),
    )  # fmt: skip
    result = run_eval(widget_skill, [], opts)
    conds = {(c.model, c.condition): c for c in result.summary.conditions}
    assert conds[("codex", "with_skill")].pass_at_k == {"pass@1": 0.5, "pass@2": 0.5}
    assert conds[("codex", "with_skill")].mode == "harness"
    lift = {x.model: x for x in result.summary.lifts}["claude-code"]
    assert lift.lift == 0.5 and lift.n_cases == 2 and lift.method

    push([widget_skill], hub_repo_id, results=[result.run_dir])
    from datasets import load_dataset

    rows = load_dataset(hub_repo_id, "results", split="train", cache_dir=str(tmp_path / "ds")).to_list()
    assert len(rows) == len(result.rows) == 2 * 2 * 2 * 2
    assert {(r["mode"], r["agent"]) for r in rows} == {("harness", "claude-code"), ("harness", "codex")}
    triggered = {(r["model"], r["condition"], r["triggered"]) for r in rows if r["case_id"] == "report"}
    assert ("codex", "with_skill", True) in triggered and ("codex", "baseline", False) in triggered
    assert all(r["tokens_unavailable"] is False and r["input_tokens"] > 0 for r in rows)

    # A later eval compares its lift with the published run (served from the cache: same CLI versions).
    code, out, err = run_cli(
        ["eval", str(widget_skill), "--agent", "claude-code", "--agent", "codex", "--runs", "2",
         "-o", str(tmp_path / "runs2"), "--cache-dir", str(tmp_path / "cache"), "--no-plots",
         "--compare", hub_repo_id, "--format", "agent"],
        capsys, monkeypatch,
    )  # fmt: skip
    assert code == 0, err
    assert result.summary.run_id in out and "claude-code" in out and "codex" in out
