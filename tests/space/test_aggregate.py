"""Precomputed aggregates: pass rates with Wilson intervals, paired lift, search and sort."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from upskill_hub.evals.stats import wilson_interval
from upskill_hub.space.aggregate import compute_aggregates
from upskill_hub.space.views import leaderboard, search_skills, skill_results_table


def _skills():
    return pd.DataFrame(
        {
            "name": ["alpha", "beta", "gamma"],
            "description": ["Writes JSON", "Greets people", "Parses CSV files"],
            "version": ["v-a", "v-b", "v-g"],
            "token_estimate": [100, 200, 300],
            "n_cases": [3, 1, 0],
        }
    )


def _row(skill, version, model, cond, case, passed, *, repeat=0, cached=False, error=None, tokens=10):
    return {
        "run_id": "r1", "timestamp": "2026-11-21T00:00:00Z", "skill_name": skill, "skill_version": version,
        "model": model, "provider": "openai-compatible", "condition": cond, "case_id": case, "repeat": repeat,
        "passed": passed, "error": error, "cached": cached, "input_tokens": tokens, "output_tokens": tokens,
    }  # fmt: skip


def _results():
    rows = []
    # alpha on m1: with skill passes all 3 cases, baseline passes 1 -> lift 2/3.
    for case, base in (("c1", True), ("c2", False), ("c3", False)):
        rows.append(_row("alpha", "v-a", "m1", "with_skill", case, True, tokens=20))
        rows.append(_row("alpha", "v-a", "m1", "baseline", case, base))
    # alpha on m2: no difference.
    for case in ("c1", "c2", "c3"):
        rows.append(_row("alpha", "v-a", "m2", "with_skill", case, True))
        rows.append(_row("alpha", "v-a", "m2", "baseline", case, True))
    # A cached duplicate and an old-version row must not count; an error row counts as error only.
    rows.append(_row("alpha", "v-a", "m1", "baseline", "c2", True, repeat=1, cached=True))
    rows.append(_row("alpha", "OLD", "m1", "baseline", "c3", True))
    rows.append(_row("alpha", "v-a", "m1", "baseline", "c3", None, repeat=1, error="timeout"))
    # beta only has results of an older version: shown rather than hidden.
    rows.append(_row("beta", "old-b", "m1", "with_skill", "c1", True))
    rows.append(_row("beta", "old-b", "m1", "baseline", "c1", False))
    return pd.DataFrame(rows)


def test_condition_stats_and_paired_lift():
    agg = compute_aggregates(_skills(), _results())
    c = agg.conditions.set_index(["skill_name", "model", "condition"])
    base = c.loc[("alpha", "m1", "baseline")]
    assert (base["n"], base["passed"], base["errors"]) == (3, 1, 1)
    lo, hi = wilson_interval(1, 3)
    assert base["ci_low"] == pytest.approx(lo) and base["ci_high"] == pytest.approx(hi)
    lifts = agg.lifts.set_index(["skill_name", "model"])
    a1 = lifts.loc[("alpha", "m1")]
    assert a1["lift"] == pytest.approx(2 / 3) and a1["n_cases"] == 3
    diffs = [0, 1, 1]
    sd = pd.Series(diffs).std(ddof=1)
    assert a1["ci_low"] == pytest.approx(2 / 3 - 1.959963984540054 * sd / math.sqrt(3))
    assert a1["token_savings"] == pytest.approx(20 - 40)  # the skill costs tokens here
    assert lifts.loc[("alpha", "m2")]["lift"] == 0
    # beta: one paired case -> a lift but no interval; older version marked.
    b = lifts.loc[("beta", "m1")]
    assert b["lift"] == 1 and math.isnan(b["ci_low"])
    assert not c.loc[("beta", "m1", "baseline")]["current_version"]


def test_browse_table_search_and_sort():
    agg = compute_aggregates(_skills(), _results())
    best = agg.skills.set_index("name")
    assert best.loc["alpha", "best_lift"] == pytest.approx(2 / 3) and best.loc["alpha", "best_model"] == "m1"
    assert math.isnan(best.loc["gamma", "best_lift"])
    assert list(search_skills(agg, "")["name"]) == ["beta", "alpha", "gamma"]  # best lift first, none last
    assert list(search_skills(agg, "CSV")["name"]) == ["gamma"]
    assert list(search_skills(agg, "e", min_tests=1, sort="name")["name"]) == ["alpha", "beta"]
    assert list(search_skills(agg, "", with_results=True, sort="tokens")["name"]) == ["alpha", "beta"]
    assert search_skills(agg, "no such thing").empty


def test_skill_results_and_leaderboard_sorting():
    agg = compute_aggregates(_skills(), _results())
    rows = {r["model"]: r for r in skill_results_table(agg, "alpha")}
    assert rows["m1"]["lift"].startswith("+67 pp [")
    assert rows["m1"]["baseline"].startswith("33% [")
    headers, table = leaderboard(agg, sort_by="m2")
    assert headers == ["skill", "best lift", "m1", "m2"]
    assert [r[0] for r in table] == ["alpha", "beta"]  # beta has no m2 value: last
    assert table[1][3] == "–"
    _, by_best = leaderboard(agg)
    assert [r[0] for r in by_best] == ["beta", "alpha"]
    from upskill_hub.errors import UpskillError

    with pytest.raises(UpskillError, match="no results for model"):
        leaderboard(agg, sort_by="nope")


def test_empty_results():
    agg = compute_aggregates(_skills(), _results().iloc[0:0])
    assert agg.lifts.empty and agg.models == []
    assert len(search_skills(agg, "")) == 3
    assert leaderboard(agg) == (["skill", "best lift"], [])
