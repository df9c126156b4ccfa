"""Issue 45 (round 4): figures read back from a run folder or a Hub table are range-checked.

A tampered ``summary.json`` pass rate of 7.0 showed in ``runs`` as 700 %, a lift of -3.0 as
-300 points; a versus lift of 1e308 reached the Space as "+inf pts [+inf, +inf]". Shares lie
in [0, 1], lifts in [-1, 1], counts and amounts are not negative, every figure is finite.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from catalog_runs import write_catalog_run, write_skill
from cli_runner import run_cli

from upskill_hub import rundir
from upskill_hub._util.percent import pct, points, rate
from upskill_hub.errors import PathError
from upskill_hub.rundir import SUMMARY_FILE

VERSUS = {"model": "model-a", "mode": "inject", "lift": 0.25, "ci_low": 0.05, "ci_high": 0.45, "p_value": 0.04,
          "n_cases": 4, "method": "paired", "conclusive": True}  # fmt: skip

#: (edit of summary.json, the field the refusal names)
TAMPERED = [
    (lambda s: s["conditions"][0].update(pass_rate=7.0), "field 'conditions' item 0 field 'pass_rate' is 7.0, outside [0, 1]"),
    (lambda s: s["lifts"][0].update(lift=-3.0), "field 'lifts' item 0 field 'lift' is -3.0, outside [-1, 1]"),
    (lambda s: s.update(versus=[dict(VERSUS, lift=1e308)]), "field 'versus' item 0 field 'lift' is 1e+308, outside [-1, 1]"),
    (lambda s: s.update(versus=[dict(VERSUS, p_value=7)]), "field 'versus' item 0 field 'p_value' is 7, outside [0, 1]"),
    (lambda s: s.update(versus=[dict(VERSUS, n_cases=-4)]), "field 'versus' item 0 field 'n_cases' is -4, below 0"),
    (lambda s: s["conditions"][0].update(mean_total_tokens=-1.0), "field 'mean_total_tokens' is -1.0, below 0"),
    (lambda s: s["conditions"][0].update(pass_at_k={"3": 2.5}), "field 'pass_at_k' key '3' is 2.5, outside [0, 1]"),
]  # fmt: skip


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_catalog_run(tmp_path / "runs", "run-20261126-numbers", write_skill(tmp_path / "skills"))


def _tamper(run: Path, edit) -> None:  # noqa: ANN001 - a callable on the parsed summary
    summary = json.loads((run / SUMMARY_FILE).read_text())
    edit(summary)
    (run / SUMMARY_FILE).write_text(json.dumps(summary))


@pytest.mark.parametrize(("edit", "named"), TAMPERED)
def test_a_summary_figure_out_of_range_is_refused_naming_file_and_field(run: Path, edit, named: str) -> None:
    assert rundir.read_summary(run) is not None  # the untouched run reads
    _tamper(run, edit)
    with pytest.raises(PathError) as err:
        rundir.read_summary(run)
    assert f"{SUMMARY_FILE}: not a valid run summary (" in str(err.value) and named in str(err.value)
    assert "\n" not in str(err.value)


def test_runs_refuses_a_pass_rate_of_7_in_one_line(run: Path, capsys, monkeypatch) -> None:
    code, out, err = run_cli(["runs", str(run)], capsys, monkeypatch)
    assert code == 0 and "25%" in out, err
    _tamper(run, TAMPERED[0][0])
    code, out, err = run_cli(["runs", str(run)], capsys, monkeypatch)
    assert code == 1 and "700" not in out + err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and TAMPERED[0][1] in err, err
    # In a folder of runs it is a damaged run, never a row of the table.
    code, out, err = run_cli(["runs", str(run.parent)], capsys, monkeypatch)
    assert code == 1 and "700" not in out + err and "skipped a damaged run" in err and TAMPERED[0][1] in err


def test_a_hub_runs_row_out_of_range_is_refused(run: Path) -> None:
    """The ``runs`` table of a Hub repo is read back through the same check."""
    summary = rundir.read_summary(run)
    record = rundir.summary_record(summary)
    assert rundir.summary_from_record(record).run_id == summary.run_id
    record["lifts"][0]["lift"] = 1e308
    with pytest.raises(ValueError, match=r"field 'lifts' item 0 field 'lift' is 1e\+308, outside \[-1, 1\]"):
        rundir.summary_from_record(record)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, 1e308])
def test_percent_formatting_never_prints_inf_or_nan(bad: float) -> None:
    for text in (
        pct(bad),
        points(bad),
        points(0.25, bad, bad),
        rate(0.5, bad, bad),
        points(bad, 0.1, 0.2, unit="pts"),
    ):
        assert "inf" not in text and "nan" not in text, text
    assert pct(bad) == "–" and points(bad, bad, bad) == "–"
    assert points(0.25, bad, bad) == "+25 pts" and rate(0.5, bad, bad) == "50%"
