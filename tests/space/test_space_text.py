"""The Space shows user text as written and its figures in one voice (issue 48, items 6 and 10)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from markdown_it import MarkdownIt

from upskill_hub.errors import UpskillError
from upskill_hub.space import charts, views
from upskill_hub.space.aggregate import fmt_lift

REGEX = r"load_dataset\(\s*['\"]x"


def _shown(markdown: str) -> str:
    """What a visitor reads: the Markdown rendered (CommonMark + tables, as Gradio does), tags dropped."""
    import html
    import re

    out = MarkdownIt("commonmark").enable("table").render(markdown)
    return html.unescape(re.sub(r"<[^>]+>", "", out)).strip()


def test_markdown_text_shows_a_regex_and_markdown_syntax_as_written():
    from upskill_hub.space.render import markdown_text

    for text in (
        REGEX,
        "*not italic* _nor this_",
        "[a](b) `c` # d",
        "<b>x</b> & $$y$$",
        "a \\ b",
        "# h",
        "- x",
        "1. x",
        "~~x~~",
    ):
        assert _shown(markdown_text(text)) == text
    row = f"| a | b |\n|---|---|\n| {markdown_text('x | y')} | {markdown_text(REGEX)} |"
    assert _shown(row).splitlines()[-2:] == ["x | y", REGEX]  # one cell each, the pipe kept


def _runs(flags: list[dict], benchmark: list[dict] | None = None, runs_per_case: int = 2) -> pd.DataFrame:
    return pd.DataFrame([{
        "skill_name": "s", "run_id": "r1", "timestamp": "2024", "assertion_flags": flags, "assertions_checked": 1,
        "benchmark": benchmark, "runs_per_case": runs_per_case,
    }])  # fmt: skip


def test_flagged_assertion_keeps_its_backslashes():
    flag = {"kind": "always_pass", "model": "m", "mode": "inject", "agent": None, "case_id": "c", "index": 0,
            "assertion": f"regex: {REGEX}", "baseline_passed": 2, "baseline_calls": 2,
            "with_skill_passed": 2, "with_skill_calls": 2}  # fmt: skip
    shown = _shown("\n".join(views.flagged_assertions_markdown(_runs([flag]), "s")))
    assert f"regex: {REGEX}" in shown


def test_skill_header_shows_name_and_description_as_written():
    desc = r"Matches \(parens\) with *regexes*."
    lib = SimpleNamespace(
        skill_row=lambda name: {"description": desc, "version": "v1", "token_estimate": 5, "n_cases": 1},
        aggregates=SimpleNamespace(skills=pd.DataFrame([{"n_results": 0}]), skill_index={"s": 0}, triggers=None),
        runs=None, notes=(),
    )  # fmt: skip
    assert desc in _shown(views.skill_summary_markdown(lib, "s"))


def test_case_rows_show_assertions_as_readable_lines():
    cases = [{"id": "c", "input": "Say hi", "split": "test",
              "assert": [{"type": "regex", "value": REGEX}, {"type": "contains", "value": "hi"}]}]  # fmt: skip
    assert views.case_rows(cases) == [["c", "test", "Say hi", f"regex: {REGEX}\ncontains: hi"]]
    assert views.case_rows(cases, split=False)[0][2] == f"regex: {REGEX}\ncontains: hi"


def test_idle_evaluate_cases_are_a_hint_under_the_tables_headers():
    from upskill_hub.space.ui import EVAL_CASE_HEADERS, eval_case_rows

    idle = eval_case_rows(lambda: None)
    assert len(idle) == 1 and len(idle[0]) == len(EVAL_CASE_HEADERS) and "Pick a library skill" in idle[0][1]

    def bad():
        raise UpskillError("test cases: bad JSON")

    assert eval_case_rows(bad) == [["–", "Error: test cases: bad JSON", ""]]


def test_model_names_are_cut_in_the_middle():
    a, b = "local:HuggingFaceTB/SmolLM2-135M-Instruct.Q4_1", "local:HuggingFaceTB/SmolLM2-135M-Instruct.Q8_0"
    la, lb = charts._label(a, 20), charts._label(b, 20)
    assert len(la) == 20 and la.startswith("local") and la.endswith("Q4_1") and la != lb
    assert charts._label("short", 20) == "short"


def test_lift_unit_is_pts_everywhere_as_in_the_cli_report():
    from upskill_hub._util.percent import points

    assert fmt_lift(0.25, 0.05, 0.45) == points(0.25, 0.05, 0.45) == "+25 pts [+5, +45]"
    assert charts.lift_text(charts.Interval(0.25, 0.05, 0.45)) == "+25 pts [+5, +45]"
    assert " pp" not in charts.lift_chart([("m", charts.Interval(0.25, 0.05, 0.45))])


def test_no_spread_over_runs_for_a_single_run():
    stat = {
        "model": "m",
        "condition": "baseline",
        "runs": 1,
        "pass_rate_mean": 1.0,
        "pass_rate_stddev": 0.0,
        "pass_rate_min": 1.0,
        "pass_rate_max": 1.0,
    }
    assert views.benchmark_markdown(_runs([], [stat], runs_per_case=1), "s") == []
    two = dict(stat, runs=2)
    assert any("Spread over runs" in line for line in views.benchmark_markdown(_runs([], [two]), "s"))


def test_a_free_local_model_costs_free_not_zero_dollars():
    row = {"model": "local", "baseline": "x", "with_skill": "y", "lift": "z", "paired_cases": 1,
           "baseline_tokens": 10, "with_skill_tokens": 12}  # fmt: skip
    assert views.results_rows([dict(row, baseline_cost=0.0, with_skill_cost=0.0)])[0][-1] == "free"
    assert (
        views.results_rows([dict(row, baseline_cost=0.001, with_skill_cost=0.002)])[0][-1]
        == "0.00100 → 0.00200"
    )
    assert views.results_rows([dict(row, baseline_cost=None, with_skill_cost=None)])[0][-1] == "–"


def test_markdown_tables_do_not_break_words_mid_way():
    assert "overflow-wrap: break-word" in charts.CSS and "word-break: normal" in charts.CSS
