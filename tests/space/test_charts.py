"""The Space's charts at the edges: 0%, 100%, one case, only errors, hostile names, empty states."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from upskill_hub.space import charts
from upskill_hub.space.aggregate import compute_aggregates
from upskill_hub.space.views import leaderboard, leaderboard_heatmap, skill_charts


def _skills(names=("s",)):
    n = len(names)
    return pd.DataFrame(
        {"name": list(names), "description": ["d"] * n, "version": ["v"] * n, "token_estimate": [10] * n,
         "n_cases": [10] * n}
    )  # fmt: skip


def _rows(outcomes: dict[str, list], model="m", skill="s"):
    rows = []
    for cond, passes in outcomes.items():
        for i, passed in enumerate(passes):
            rows.append(
                {
                    "run_id": "r", "timestamp": "t", "skill_name": skill, "skill_version": "v", "model": model,
                    "provider": "test", "condition": cond, "case_id": f"c{i}", "repeat": 0,
                    "passed": None if passed == "error" else passed, "error": "boom" if passed == "error" else None,
                    "cached": False, "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001,
                }
            )  # fmt: skip
    return rows


def _whiskers(svg: str) -> list[tuple[float, float]]:
    return [
        (float(a), float(b))
        for a, b in re.findall(
            r'<line x1="([\d.]+)" y1="[\d.]+" x2="([\d.]+)" y2="[\d.]+" stroke="#333"', svg
        )
    ]


def test_ten_of_ten_draws_whiskers_inside_the_axis():
    # Issue 10's regression was a Wilson upper bound of 10/10 a hair under 1 crashing the plot.
    agg = compute_aggregates(
        _skills(), pd.DataFrame(_rows({"baseline": [False] * 10, "with_skill": [True] * 10}))
    )
    lift_svg, pass_svg = skill_charts(agg, "s")
    assert "m with skill: 100% [" in pass_svg and "m baseline: 0% [0%, " in pass_svg
    whiskers = _whiskers(pass_svg)
    assert len(whiskers) == 2
    for lo, hi in whiskers:
        assert (
            charts.LEFT <= lo <= hi <= charts.LEFT + charts.WIDTH
        )  # inside the 0..100% axis, never reversed
    lift = agg.lifts.iloc[0]
    assert (
        f"m: {lift['lift'] * 100:+.0f} pts [{lift['ci_low'] * 100:+.0f}, {lift['ci_high'] * 100:+.0f}]"
        in lift_svg
    )
    assert "#1a9850" in lift_svg  # interval above zero: drawn as a clear gain


@pytest.mark.parametrize(
    "outcomes",
    [
        {"baseline": [True], "with_skill": [True]},  # one case
        {"baseline": [False] * 3, "with_skill": [False] * 3},  # 0% everywhere
        {"baseline": ["error"] * 2, "with_skill": ["error"] * 2},  # every call failed: no rate at all
        {"baseline": ["error", True], "with_skill": [True, True]},
        {"with_skill": [True] * 4},  # no baseline
    ],
)
def test_edge_cases_draw_or_say_why_not(outcomes):
    rows = _rows(outcomes) + _rows({"baseline": [True, False], "with_skill": [True, True]}, model="other")
    agg = compute_aggregates(_skills(), pd.DataFrame(rows))
    lift_svg, pass_svg = skill_charts(agg, "s")
    for out in (lift_svg, pass_svg):
        assert out.startswith("<svg") and out.endswith("</svg>") and "nan" not in out.lower()
    assert "other with skill: 100%" in pass_svg  # the model with data is always drawn


def test_nothing_measured_is_a_sentence_not_an_empty_frame():
    agg = compute_aggregates(_skills(), pd.DataFrame(_rows({"baseline": ["error"], "with_skill": ["error"]})))
    lift_svg, pass_svg = skill_charts(agg, "s")
    assert lift_svg.startswith('<p class="uh-empty">No lift yet') and pass_svg.startswith(
        '<p class="uh-empty">No pass'
    )
    assert charts.heatmap([], []).startswith('<p class="uh-empty">')


def test_names_from_a_dataset_are_escaped():
    evil = '<img src=x onerror="alert(1)">'
    rows = _rows({"baseline": [False, True], "with_skill": [True, True]}, model=evil)
    agg = compute_aggregates(_skills(), pd.DataFrame(rows))
    for out in (*skill_charts(agg, "s"), leaderboard_heatmap(agg)):
        assert "<img" not in out and "&lt;img" in out


def test_heatmap_follows_the_leaderboard_order_and_marks_unclear_cells():
    rows = (
        _rows({"baseline": [False] * 30, "with_skill": [True] * 30}, skill="big")  # clear gain
        + _rows(
            {"baseline": [True, False], "with_skill": [True, True]}, skill="small"
        )  # +50, interval crosses 0
        + _rows({"baseline": [True] * 30, "with_skill": [False] * 30}, skill="bad")  # clear loss
    )
    agg = compute_aggregates(_skills(("big", "small", "bad")), pd.DataFrame(rows))
    html = leaderboard_heatmap(agg)
    order = re.findall(r'<th scope="row" title="([^"]+)"', html)
    assert order == [r[0] for r in leaderboard(agg)[1]] == ["big", "small", "bad"]
    cells = re.findall(r'<td class="([^"]+)" style="background-color:(#[0-9a-f]{6})', html)
    assert [c[0] for c in cells] == ["uh-cell", "uh-cell uh-unsure", "uh-cell"]
    assert cells[0][1] == charts.lift_colour(1.0) and cells[2][1] == charts.lift_colour(-1.0)
    assert leaderboard_heatmap(agg, limit=2).count(
        '<th scope="row"'
    ) == 2 and "first 2 of 3" in leaderboard_heatmap(agg, limit=2)


def test_lift_colour_scale():
    assert charts.lift_colour(0.0) == "#ffffff"
    assert charts.lift_colour(charts.SATURATION) == "#1a9850" == charts.lift_colour(5.0)
    assert charts.lift_colour(-charts.SATURATION) == "#d73027"
    assert charts.lift_colour(math.nan) == "#f4f4f4"


def test_progress_bar():
    assert "Starting" in charts.progress_bar(0, 0)
    bar = charts.progress_bar(3, 12)
    assert (
        'aria-valuenow="3"' in bar
        and 'aria-valuemax="12"' in bar
        and "width:25.0%" in bar
        and "3 / 12 calls" in bar
    )
