"""``runs`` over an output folder that holds tune and routing runs: one line each, never "No runs"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_routing_run import answer, write_library
from test_tune_run import GOOD, KEY, MODEL, TEACHER, ScriptedTeacher, write_skill

from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering.description_runs import description_runs
from upskill_hub.triggering.routing_run import run_routing
from upskill_hub.triggering.tune_run import RESULT_FILE, run_tune


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


def test_runs_lists_tune_and_routing_runs_finished_or_not(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    out = tmp_path / "out"
    with running_llm_server(ScriptedTeacher([GOOD])) as srv:
        tuned = run_tune(write_skill(tmp_path / "skills"), MODEL, teacher=TEACHER, base_url=srv.openai_base_url,
                         runs=1, distractors="none", output_dir=out)  # fmt: skip
    with running_llm_server(answer) as srv:
        routed = run_routing(write_library(tmp_path / "lib"), [MODEL], base_url=srv.openai_base_url, output_dir=out)
    killed = out / "20990101T000000Z-sheet-to-json-tune-000000"  # a tune run killed before its end
    killed.mkdir()
    shutil.copy(tuned.run_dir / "tune-plan.json", killed / "tune-plan.json")
    found = {d.run_id: d for d in description_runs(out)}
    assert found[tuned.run_dir.name].result == "held-out accuracy 50% -> 100%"
    assert found[routed.run_dir.name].result == "routing accuracy 67% [42%, 85%], 1 stealing pair(s)"
    assert (found[killed.name].kind, found[killed.name].result) == ("tune", "unfinished (--resume)")
    (tuned.run_dir / RESULT_FILE).write_text(json.dumps({"candidates": []}))
    assert {d.run_id: d for d in description_runs(out)}[tuned.run_dir.name].result == "unreadable tune_result.json"
    code, stdout, err = run_cli(["runs", str(out)], capsys, monkeypatch)
    assert code == 0, err
    assert "Description runs" in stdout and routed.run_dir.name in stdout and "No runs" not in err
