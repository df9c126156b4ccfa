"""``push --results upskill-runs`` says which runs it leaves out and why (issue 48 item 13:
"left out 1 run" for a folder of 3, a tune run skipped silently), and a piped push prints
no library progress bar (item 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from catalog_runs import write_catalog_run, write_skill

from upskill_hub.hub.push import runs_in_folder

CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]
BAR_MARKS = ("|█", "it/s]")


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    skills = tmp_path / "skills"
    mine, other = write_skill(skills, "tiny-skill"), write_skill(skills, "other-skill")
    runs = tmp_path / "upskill-runs"
    write_catalog_run(runs, "20261126T100000Z-tiny-skill-aaaaaa", mine)
    write_catalog_run(runs, "20261126T120000Z-other-skill-cccccc", other)
    tune = runs / "20261126T140000Z-tiny-skill-tune-eeeeee"
    tune.mkdir()
    (tune / "tune-plan.json").write_text(json.dumps({"skill_name": "tiny-skill"}))
    (tune / "tune.jsonl").write_text("")
    return mine, runs


def test_each_run_left_out_is_named_with_its_reason(tmp_path: Path) -> None:
    _mine, runs = _runs(tmp_path)
    picked, notes = runs_in_folder(runs, {"tiny-skill"})
    assert [b.path.name for b in picked] == ["20261126T100000Z-tiny-skill-aaaaaa"]
    assert notes == [
        f"{runs}: publishing 1 run",
        f"{runs}: left out 1 run of other skills and 1 tune run",
        "  20261126T120000Z-other-skill-cccccc: a run of other-skill, which is not pushed",
        "  20261126T140000Z-tiny-skill-tune-eeeeee: a tune run: push the tuned skill instead",
    ]


def test_a_long_list_of_left_out_runs_is_cut(tmp_path: Path) -> None:
    mine, runs = _runs(tmp_path)
    for i in range(12):
        (runs / f"20261127T0000{i:02d}Z-tiny-skill-{i:06d}").mkdir()
        (runs / f"20261127T0000{i:02d}Z-tiny-skill-{i:06d}" / "results.jsonl").write_text("")
    _picked, notes = runs_in_folder(runs, {"tiny-skill"})
    assert notes[1] == f"{runs}: left out 12 runs without results, 1 run of other skills and 1 tune run"
    assert len(notes) == 2 + 10 + 1 and notes[-1] == "  ... and 4 more"


def test_cli_push_of_a_folder_names_what_it_left_out_and_draws_no_bar(
    hub_server, hub_repo_id, tmp_path
) -> None:
    mine, runs = _runs(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_DISABLE_PROGRESS_BARS")}
    proc = subprocess.run([*CLI, "push", str(mine), "--repo", hub_repo_id, "--results", str(runs)],
                          capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"{runs}: left out 1 run of other skills and 1 tune run" in proc.stderr
    assert "20261126T140000Z-tiny-skill-tune-eeeeee: a tune run" in proc.stderr
    assert not [m for m in BAR_MARKS if m in proc.stderr], proc.stderr
