"""End to end on the real local model (SmolLM2-135M in the local worker), offline, with no key.

``upskill-hub eval`` with no --model must run the default ``local`` model. The model is
weak, so this asserts loosely: every planned row is there, no call failed, the numbers are
sane. It is the "does the offline default actually work" check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from upskill_hub.cli.app import main

SKILL = Path(__file__).resolve().parents[2] / "skills" / "hf-dataset-card"

pytestmark = pytest.mark.slow


def test_eval_default_local_model_two_cases_one_run(tmp_path: Path, capsys, monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    meta = json.loads((SKILL / "skill_meta.json").read_text())
    tests = tmp_path / "two.json"
    tests.write_text(json.dumps({"schema_version": 1, "cases": meta["cases"][:2]}))
    out = tmp_path / "runs"
    monkeypatch.setattr(
        sys, "argv",
        ["upskill-hub", "eval", str(SKILL), "--tests", str(tests), "--runs", "1", "--max-tokens", "96",
         "--output", str(out), "--json"],
    )
    try:
        main()
    except SystemExit as exc:
        assert exc.code in (0, None)
    stdout, stderr = capsys.readouterr()
    summary = json.loads(stdout)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 4  # 2 cases x 2 conditions x 1 run
    assert {(r["condition"], r["case_id"]) for r in rows} == {
        (c, k["id"]) for c in ("baseline", "with_skill") for k in meta["cases"][:2]
    }
    for r in rows:
        assert r["error"] is None, r["error"]
        assert r["provider"] == "local" and r["passed"] in (True, False)
        assert r["output"].strip()
        assert 0 < r["output_tokens"] <= 96 and r["input_tokens"] > 10
        assert r["latency_s"] > 0 and r["cost_usd"] == 0.0
        assert r["assertions_total"] >= 1 and 0 <= r["assertions_passed"] <= r["assertions_total"]
    with_skill = [r for r in rows if r["condition"] == "with_skill"]
    baseline = [r for r in rows if r["condition"] == "baseline"]
    # the skill text is in the prompt: the with-skill prompts are much longer
    assert min(r["input_tokens"] for r in with_skill) > max(r["input_tokens"] for r in baseline) + 200
    conds = {c["condition"]: c for c in summary["conditions"]}
    assert conds["baseline"]["n"] == conds["with_skill"]["n"] == 2
    (lift,) = summary["lifts"]
    # 2 cases cannot conclude: either none differs, or too few do (the small model varies)
    assert lift["conclusive"] is False and ("too few" in lift["note"] or "no case differs" in lift["note"])
