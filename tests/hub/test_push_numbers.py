"""Issue 45 (round 4): ``push --results`` refuses figures out of range before any commit.

``push --results`` published a summary's ``pass_rate_mean`` of 7.0, a versus lift of 1e308,
a p-value of 7 and ``n_cases`` -4. Each is now one line naming ``summary.json`` and the
field, and the Hub repo is not even created.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_runs import write_catalog_run, write_skill
from cli_runner import run_cli
from huggingface_hub import HfApi

from upskill_hub.errors import UpskillError
from upskill_hub.hub.push import push
from upskill_hub.rundir import SUMMARY_FILE

VERSUS = {"model": "model-a", "mode": "inject", "lift": 0.25, "ci_low": 0.05, "ci_high": 0.45, "p_value": 0.04,
          "n_cases": 4, "method": "paired", "conclusive": True}  # fmt: skip
BENCH = {"model": "model-a", "condition": "with_skill", "runs": 1, "pass_rate_mean": 0.5}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_catalog_run(tmp_path / "runs", "run-20261126-numbers", write_skill(tmp_path / "skills"))


def _tamper(run: Path, **fields: object) -> None:
    summary = json.loads((run / SUMMARY_FILE).read_text())
    summary.update(fields)
    (run / SUMMARY_FILE).write_text(json.dumps(summary))


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (
            {"benchmark": [dict(BENCH, pass_rate_mean=7.0)]},
            "field 'benchmark' item 0 field 'pass_rate_mean' is 7.0",
        ),
        ({"versus": [dict(VERSUS, lift=1e308)]}, "field 'versus' item 0 field 'lift' is 1e+308"),
        ({"versus": [dict(VERSUS, p_value=7)]}, "field 'versus' item 0 field 'p_value' is 7"),
        ({"versus": [dict(VERSUS, n_cases=-4)]}, "field 'versus' item 0 field 'n_cases' is -4"),
    ],
)
def test_figures_out_of_range_are_not_published(hub_server, hub_repo_id, run, fields, named):
    _tamper(run, **fields)
    with pytest.raises(UpskillError) as err:
        push([], hub_repo_id, results=[run])
    assert f"{SUMMARY_FILE}: not a valid run summary (" in str(err.value) and named in str(err.value)
    assert "\n" not in str(err.value)
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")


def test_push_results_cli_says_it_in_one_line(hub_server, hub_repo_id, run, capsys, monkeypatch):
    _tamper(run, versus=[dict(VERSUS, lift=1e308)])
    code, out, err = run_cli(["push", "--repo", hub_repo_id, "--results", str(run)], capsys, monkeypatch)
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "field 'versus' item 0 field 'lift' is 1e+308, outside [-1, 1]" in err
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")
