"""Space plots at the edges: 0%, 100%, one case, only errors (issue 10: 10/10 crashed /open_skill)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from upskill_hub.space.aggregate import compute_aggregates
from upskill_hub.space.views import pass_rate_figure, tokens_figure


def _skills():
    return pd.DataFrame(
        {"name": ["s"], "description": ["d"], "version": ["v"], "token_estimate": [10], "n_cases": [10]}
    )


def _rows(outcomes: dict[str, list], model="m"):
    rows = []
    for cond, passes in outcomes.items():
        for i, passed in enumerate(passes):
            rows.append(
                {
                    "run_id": "r", "timestamp": "t", "skill_name": "s", "skill_version": "v", "model": model,
                    "provider": "test", "condition": cond, "case_id": f"c{i}", "repeat": 0,
                    "passed": None if passed == "error" else passed, "error": "boom" if passed == "error" else None,
                    "cached": False, "input_tokens": 10, "output_tokens": 5,
                }
            )  # fmt: skip
    return rows


def _draw(cond: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    pass_rate_figure(cond).savefig(buf, format="png")
    tokens_figure(cond).savefig(buf, format="png")
    return buf.getvalue()


def test_ten_of_ten_opens_without_a_negative_error_bar():
    # The regression: the Wilson upper bound of 10/10 came out as 1 - 1e-16 < 1, and
    # matplotlib raised "'yerr' must not contain negative values" when the page opened.
    agg = compute_aggregates(_skills(), pd.DataFrame(_rows({"baseline": [False] * 10, "with_skill": [True] * 10})))
    cond = agg.conditions
    assert (cond["ci_high"] >= cond["pass_rate"]).all() and (cond["ci_low"] <= cond["pass_rate"]).all()
    assert _draw(cond).startswith(b"\x89PNG")


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
def test_edge_cases_plot(outcomes):
    rows = _rows(outcomes) + _rows({"baseline": [True, False], "with_skill": [True, True]}, model="other")
    agg = compute_aggregates(_skills(), pd.DataFrame(rows))
    assert _draw(agg.conditions).startswith(b"\x89PNG")
