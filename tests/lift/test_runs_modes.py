"""``runs`` and ``--compare`` with catalog-mode runs: one line per mode, trigger figures beside."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

from catalog_runs import catalog_rows, trigger_rows, trigger_stats, write_catalog_run, write_skill
from cli_runner import run_cli as run_main

from upskill_hub.cli._compare import Comparison, check_regressions, render
from upskill_hub.hub.published_runs import load_reference
from upskill_hub.lift.compare import compare_runs


def test_runs_lists_each_mode_and_the_trigger_figures(tmp_path, capsys, monkeypatch):
    skill = write_skill(tmp_path / "skills")
    out = tmp_path / "runs"
    write_catalog_run(out, "run-20261124-a", skill, models=("m1", "m2"))
    write_catalog_run(out, "trig-20261124-b", skill, models=("m1",), results=False, hits=3, false_hits=0)  # `triggers` alone

    code, text, err = run_main(["runs", str(out), "--csv"], capsys, monkeypatch)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(text)))
    evals = [r for r in rows if r["condition"] != "triggers"]
    assert {(r["model"], r["mode"], r["condition"]) for r in evals} == {
        (m, mode, c) for m in ("m1", "m2") for mode in ("inject", "catalog") for c in ("baseline", "with_skill")
    }
    # Each mode's lift sits on that mode's lines (inject 75 points, catalog 25 here).
    lifts = {(r["model"], r["mode"]): float(r["lift"]) for r in evals}
    assert lifts[("m1", "inject")] == 0.75 and lifts[("m1", "catalog")] == 0.25
    trig = {(r["run_id"], r["model"]): r for r in rows if r["condition"] == "triggers"}
    assert set(trig) == {("run-20261124-a", "m1"), ("run-20261124-a", "m2"), ("trig-20261124-b", "m1")}
    a = trig[("run-20261124-a", "m1")]
    expected = trigger_stats(trigger_rows("x", "tiny-skill", "m1"), "m1")
    assert float(a["trigger_recall"]) == 0.7 and float(a["recall_ci_low"]) == expected.recall_ci_low
    assert float(a["false_trigger_rate"]) == 0.2 and a["n"] == "20" and a["passed"] == "15"
    assert float(trig[("trig-20261124-b", "m1")]["trigger_recall"]) == 0.3

    code, text, err = run_main(["runs", str(out), "--format", "agent"], capsys, monkeypatch)
    assert code == 0, err
    assert "catalog" in text and "trigger_recall" in text.splitlines()[0]

    code, text, err = run_main(["runs", str(out)], capsys, monkeypatch)
    assert code == 0, err
    assert "catalog" in text and "inject" in text and "Triggering" in text
    assert "70% [40%–89%] 7/10" in text and "30% [11%–60%] 3/10" in text


def test_compare_pairs_modes_and_shows_trigger_figures(tmp_path, capsys):
    skill = write_skill(tmp_path / "skills")
    ref = write_catalog_run(tmp_path / "runs", "run-20261124-ref", skill)
    then = load_reference(str(ref), "tiny-skill", ["model-a"])
    assert then.triggers and then.triggers[0].recall == 0.7

    # Now the catalog lift collapses (the skill is never loaded); inject stays the same.
    now = []
    for r in catalog_rows("run-now", "tiny-skill", "v", "model-a"):
        if r.mode == "catalog" and r.condition == "with_skill":
            r = replace(r, triggered=False, passed=r.case_id == "case-0", loaded="[]")
        now.append(r)
    changes = compare_runs(then.rows, now)
    by_mode = {c.mode: c for c in changes}
    assert set(by_mode) == {"inject", "catalog"}
    assert by_mode["inject"].change == 0 and not by_mode["inject"].regression
    assert by_mode["catalog"].lift_then == 0.25 and by_mode["catalog"].lift_now == 0.0
    # An inject-only reference is never paired with catalog rows.
    assert {c.mode for c in compare_runs([r for r in then.rows if r.mode == "inject"], now)} == {"inject"}

    worse = replace(then.triggers[0], recall=0.1, recall_ci_low=0.02, recall_ci_high=0.4)
    comp = Comparison("run-now", then.run_id, then.source, 0.95, changes, then.triggers, [worse])
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200)
    render(comp, console)
    shown = console.file.getvalue()
    assert "catalog" in shown and "Triggering compared with run-20261124-ref" in shown
    assert "70% [40–89]" in shown and "10% [2–40]" in shown
    data = comp.to_dict()
    assert data["triggers_now"][0]["recall"] == 0.1 and json.dumps(data)
    check_regressions(comp)  # no regression beyond noise on 4 cases: nothing raised
