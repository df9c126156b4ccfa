"""Precomputed aggregates: pass rates with Wilson intervals, paired lift, search and sort."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from upskill_hub.lift.figures.intervals import paired_lift
from upskill_hub.lift.figures.stats import summarize_rows, wilson_interval
from upskill_hub.rundir.schema import ResultRow
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
    ref = paired_lift(2, 0, 3)  # two of three cases pass only with the skill
    assert (a1["ci_low"], a1["ci_high"], a1["p_value"]) == pytest.approx(
        (float(ref.ci_low), float(ref.ci_high), float(ref.p_value))
    )
    assert not a1["conclusive"] and a1["ci_low"] < 0
    assert a1["token_savings"] == pytest.approx(20 - 40)  # the skill costs tokens here
    m2 = lifts.loc[("alpha", "m2")]
    assert m2["lift"] == 0 and m2["ci_low"] < -0.5 and m2["ci_high"] > 0.5  # ties: wide, not [0, 0]
    # beta: one paired case -> a lift with a wide interval; older version marked.
    b = lifts.loc[("beta", "m1")]
    assert b["lift"] == 1 and b["ci_low"] < 0 and b["ci_high"] == 1
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
    assert rows["m1"]["lift"].startswith("+67 pts [")
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


@pytest.mark.parametrize("query", ["a", "ALPHA", "zzz", " "])
def test_leaderboard_query_on_a_library_without_results_is_empty_not_a_crash(query):
    """Issue 29 class 5: any query on a library without results raised AttributeError (.str on no strings)."""
    from upskill_hub.rundir import result_arrow_schema
    from upskill_hub.space import data
    from upskill_hub.space.views import leaderboard_heatmap

    # Read the way the Space reads a library without results shards: no files, typed columns.
    no_results = data._read_parquets(
        [], data.RESULT_COLUMNS, result_arrow_schema(), budget=data.ReadBudget("t"), table="results"
    )
    agg = compute_aggregates(_skills(), no_results)
    assert leaderboard(agg, query=query) == (["skill", "best lift"], [])
    assert "No lifts to compare yet" in leaderboard_heatmap(agg, query=query)


def _result_rows(pattern):
    """ResultRows for one model: ``pattern`` maps case id to (baseline, with-skill) passes per repeat."""
    rows = []
    for case, (base, skill) in pattern.items():
        for cond, outcomes in (("baseline", base), ("with_skill", skill)):
            for rep, passed in enumerate(outcomes):
                rows.append(
                    ResultRow(
                        run_id="r1", timestamp="2026-11-21T00:00:00Z", tool_version="0", skill_name="alpha",
                        skill_version="v-a", model="m1", provider="test", params="{}", condition=cond,
                        case_id=case, repeat=rep, passed=passed, assertions_passed=int(passed),
                        assertions_total=1, assertion_details="[]", output="", input_tokens=10, output_tokens=10,
                    )
                )  # fmt: skip
    return rows


@pytest.mark.parametrize(
    "pattern",
    [
        {f"c{i}": ([False], [True]) for i in range(10)},  # 0/10 -> 10/10
        {"c0": ([True], [True]), "c1": ([True], [True])},  # the demo: 2 tied cases
        {f"c{i}": ([i % 2 == 0] * 2 + [i % 3 == 0], [True, i % 4 != 0, True]) for i in range(9)},  # 3 repeats
    ],
)
def test_cli_and_space_give_the_same_numbers_for_the_same_rows(pattern):
    rows = _result_rows(pattern)
    conds, (cli,) = summarize_rows(rows, ["m1"])
    agg = compute_aggregates(_skills(), pd.DataFrame([r.to_dict() for r in rows]))
    space = agg.lifts.set_index(["skill_name", "model"]).loc[("alpha", "m1")]
    assert (space["lift"], space["ci_low"], space["ci_high"], space["p_value"]) == pytest.approx(
        (cli.lift, cli.ci_low, cli.ci_high, cli.p_value), abs=1e-12
    )
    assert bool(space["conclusive"]) == cli.conclusive and space["n_cases"] == cli.n_cases
    sc = agg.conditions.set_index("condition")
    for c in conds:
        assert (sc.loc[c.condition, "ci_low"], sc.loc[c.condition, "ci_high"]) == (c.ci_low, c.ci_high)


@pytest.mark.parametrize("n", [1, 4, 10])
def test_cli_summary_and_space_show_the_same_interval_at_0_and_100_percent(n):
    """Baseline fails every case (0%), the skill passes every case (100%): the edges of Wilson."""
    from rich.console import Console

    from upskill_hub._util.percent import interval
    from upskill_hub.lift.report import summary_table
    from upskill_hub.rundir.schema import RunSummary

    rows = _result_rows({f"c{i}": ([False], [True]) for i in range(n)})
    conds, lifts = summarize_rows(rows, ["m1"])
    summary = RunSummary(
        run_id="r1", timestamp="t", tool_version="0", skill_name="alpha", skill_version="v-a", models=["m1"],
        runs_per_case=1, n_cases=n, conditions=conds, lifts=lifts,
    )  # fmt: skip
    console = Console(width=200, record=True)
    console.print(summary_table(summary))
    cli_text = console.export_text()
    space = {
        r["model"]: r
        for r in skill_results_table(
            compute_aggregates(_skills(), pd.DataFrame([r.to_dict() for r in rows])), "alpha"
        )
    }
    for c in conds:
        shown = interval(c.ci_low, c.ci_high)
        rate_text = "0%" if c.condition == "baseline" else "100%"
        assert c.pass_rate == (0.0 if c.condition == "baseline" else 1.0)
        assert f"{rate_text} ({c.passed}/{c.n})" in cli_text and shown in cli_text
        assert space["m1"][c.condition] == f"{rate_text} {shown}"
    assert interval(*wilson_interval(n, n)).endswith(", 100%]") and interval(
        *wilson_interval(0, n)
    ).startswith("[0%, ")
