"""Run plots at the edges: 100%, 0%, one case, every call failed, no baseline."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskill_hub.lift.figures.stats import summarize_rows
from upskill_hub.lift.plots import PASS_RATE_PNG, REPORT_HTML, write_plots
from upskill_hub.rundir.schema import ResultRow, RunSummary


def _row(model, cond, case, passed):
    error = "HTTP 500" if passed == "error" else None
    return ResultRow(
        run_id="r", timestamp="t", tool_version="0", skill_name="s", skill_version="v", model=model,
        provider="test", params="{}", condition=cond, case_id=case, repeat=0,
        passed=None if error else passed, assertions_passed=int(passed is True), assertions_total=1,
        assertion_details="[]", output="", input_tokens=10, output_tokens=5, error=error,
    )  # fmt: skip


def _summary(outcomes: dict[str, dict[str, list]]) -> RunSummary:
    rows = [
        _row(m, cond, f"c{i}", p) for m, by in outcomes.items() for cond, ps in by.items() for i, p in enumerate(ps)
    ]
    conds, lifts = summarize_rows(rows, list(outcomes))
    return RunSummary(
        run_id="r", timestamp="t", tool_version="0", skill_name="s", skill_version="v", models=list(outcomes),
        runs_per_case=1, n_cases=10, conditions=conds, lifts=lifts,
    )  # fmt: skip


@pytest.mark.parametrize(
    "outcomes",
    [
        {"all": {"baseline": [False] * 10, "with_skill": [True] * 10}},  # 0% and 100%: the 10/10 crash
        {"one": {"baseline": [True], "with_skill": [True]}},
        {"failed": {"baseline": ["error"] * 3, "with_skill": ["error"] * 3}, "ok": {"baseline": [True], "with_skill": [False]}},
        {"skill-only": {"with_skill": [True, True]}},
    ],
)
def test_plots_and_report_at_the_edges(outcomes, tmp_path: Path):
    paths = write_plots(tmp_path, _summary(outcomes))
    assert (tmp_path / PASS_RATE_PNG).read_bytes().startswith(b"\x89PNG")
    html = (tmp_path / REPORT_HTML).read_text(encoding="utf-8")
    assert len(paths) == 3 and "<table>" in html


def test_report_names_the_lift_method(tmp_path: Path):
    summary = _summary({"m": {"baseline": [False] * 10, "with_skill": [True] * 10}})
    write_plots(tmp_path, summary)
    html = (tmp_path / REPORT_HTML).read_text(encoding="utf-8")
    assert "Tango score interval" in html and "+100 pts [+38, +100]" in html
