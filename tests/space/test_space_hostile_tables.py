"""Issue 45: a visitor's library whose tables hold text where figures belong still opens.

The Space reads anyone's dataset repo. A ``runs`` shard whose benchmark figures are strings
(``"0.5"``) used to reach the formatters and end in ``ValueError: Unknown format code 'f'``
on the skill page; a second, well-typed shard beside it made arrow refuse to merge the
two (``ArrowTypeError``) before any page; a ``skills`` shard with a token count ``"lots"``
failed in ``astype``. Each value is now type-checked where the table is read: one of the
wrong type is missing (shown as ``–``), and the page says how many were left out.
The same holds for figures out of the range their RunSummary field declares: a benchmark
pass rate of 7.0 showed as 700 %, a trigger recall of 3.0 as 300 %, a lift of 9.0 as +900 pts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from upskill_hub._util.percent import count
from upskill_hub.skill import estimate_tokens
from upskill_hub.space import data, views

SKILL = {"name": "s", "description": "Does s. Use for s.", "body": "# S\n", "token_estimate": 5, "n_cases": 2}
RUN = {
    "skill_name": "s",
    "skill_version": "v1",
    "run_id": "r1",
    "timestamp": "2026-11-26T00:00:00Z",
    "runs_per_case": 3,
}


def _bench(figure: Any) -> dict[str, Any]:
    return {"model": "m", "condition": "with_skill", "mode": "inject", "agent": None, "runs": 3,
            "pass_rate_mean": figure, "pass_rate_stddev": 0.1, "pass_rate_min": 0.4, "pass_rate_max": 0.6}  # fmt: skip


def _library(root: Path, skills: list[dict[str, Any]], runs: list[list[dict[str, Any]]]) -> data.Library:
    """A local library folder: one skills shard, one runs shard per list in ``runs``."""
    (root / "data" / "skills").mkdir(parents=True)
    (root / "data" / "runs").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(skills), root / "data" / "skills" / "s.parquet")
    for i, rows in enumerate(runs):
        pq.write_table(pa.Table.from_pylist(rows), root / "data" / "runs" / f"r{i}.parquet")
    return data.load_library_dir(root, source="visitor/strings")


def test_benchmark_figures_as_strings_read_as_missing_with_a_note(tmp_path: Path):
    run = {**RUN, "benchmark": [{**_bench("0.5"), "pass_rate_stddev": "n/a"}], "assertions_checked": "5",
           "assertion_flags": [{"model": "m", "case_id": "c", "index": "1", "assertion": "a", "kind": "flaky",
                                "baseline_passed": "2", "baseline_calls": 3, "with_skill_passed": 1, "with_skill_calls": 3}]}  # fmt: skip
    lib = _library(tmp_path, [SKILL], [[run]])
    page = views.skill_summary_markdown(lib, "s")
    assert "| m | with skill | – | – | – | – |" in page  # the texts "0.5" and "n/a" are no figures
    assert "| flaky | m | c | – | a | –/3 | 1/3 |" in page
    assert (
        "values of the wrong type read as missing" in page
        and "benchmark.pass_rate_mean (1)" in page.replace("\\_", "_")
    )  # Markdown-escaped
    assert "values of the wrong type read as missing" in views.library_status(lib, "")


def test_a_string_shard_beside_a_well_typed_one_loads_and_keeps_the_good_figures(tmp_path: Path):
    good = {**RUN, "run_id": "r0", "timestamp": "2026-11-25T00:00:00Z", "benchmark": [_bench(0.5)]}
    bad = {**RUN, "benchmark": [_bench("lots")], "lifts": [{"model": "m", "mode": "inject", "lift": "1"}]}
    lib = _library(tmp_path, [SKILL], [[good], [bad]])
    runs = lib.runs.set_index("run_id")
    assert runs.loc["r0", "benchmark"][0]["pass_rate_mean"] == 0.5
    assert runs.loc["r1", "benchmark"][0]["pass_rate_mean"] is None
    page = views.skill_summary_markdown(lib, "s")
    assert "### Spread over runs (run `r1`, 3 runs per case)" in page and "| m | with skill | – |" in page


def test_skill_counts_as_strings_do_not_stop_the_library(tmp_path: Path):
    lib = _library(tmp_path, [{**SKILL, "token_estimate": "lots", "n_cases": "2"}], [[RUN]])
    page = views.skill_summary_markdown(lib, "s")
    tokens = count(estimate_tokens(SKILL["body"]), "token")
    assert f"~{tokens} · 0 test cases" in page  # estimated from the body; an unreadable count is none
    assert "skills table: 2 values of the wrong type read as missing" in page


# Issue 45, figures out of range: a runs row is anyone's to edit, and a share of 7.0 showed as 700 %.
def _trigger(recall: float) -> dict[str, Any]:
    return {"model": "m", "n_should": 4, "triggered_should": 3, "recall": recall, "recall_ci_low": 0.3,
            "recall_ci_high": 0.9, "n_should_not": 4, "triggered_should_not": 1, "false_trigger_rate": 0.25,
            "fpr_ci_low": 0.05, "fpr_ci_high": 0.7, "precision": 0.75, "f1": 0.75, "errors": 0}  # fmt: skip


def _lift(lift: float) -> dict[str, Any]:
    return {"model": "m", "mode": "inject", "lift": lift, "ci_low": 0.1, "ci_high": 0.4, "p_value": 0.01,
            "n_cases": 2, "method": "paired", "conclusive": True}  # fmt: skip


def _tampered_run() -> dict[str, Any]:
    return {**RUN, "benchmark": [_bench(7.0)], "triggers": [_trigger(3.0)], "lifts": [_lift(9.0)],
            "versus": [{**_lift(-9.0), "new_lift": 0.2, "old_lift": 0.1}], "against_version": "v0"}  # fmt: skip


def test_out_of_range_figures_in_the_runs_table_read_as_missing_with_a_note(tmp_path: Path):
    lib = _library(tmp_path, [SKILL], [[_tampered_run()]])
    page = views.skill_summary_markdown(lib, "s")
    for shown in ("700%", "700 %", "300%", "300 %", "+900", "-900", "−900"):
        assert shown not in page
    assert "| m | with skill | – | – | – | – |" in page  # the pass rate 7.0 is no figure
    assert "runs table: 4 values out of range read as missing:" in page
    for field in ("benchmark.pass_rate_mean (1)", "triggers.recall (1)", "lifts.lift (1)", "versus.lift (1)"):
        assert field in page.replace("\\_", "_")  # notes are Markdown-escaped: shown as written
    assert "values out of range read as missing" in views.library_status(lib, "")
    bench = lib.runs.iloc[0]["benchmark"][0]
    assert bench["pass_rate_mean"] is None and bench["pass_rate_stddev"] == 0.1  # the rest of the row stays


def test_out_of_range_figures_are_caught_on_the_file_by_file_path_too(tmp_path: Path):
    # A second shard with text in it makes the table take the checked path (conform): ranges still hold.
    other = {**RUN, "run_id": "r0", "timestamp": "2026-11-25T00:00:00Z", "benchmark": [_bench("lots")]}
    lib = _library(tmp_path, [SKILL], [[other], [{**_tampered_run(), "runs_per_case": -3}]])
    page = views.skill_summary_markdown(lib, "s")
    assert "700%" not in page and "300%" not in page and "+900" not in page
    assert "-3 runs" not in page and "(run `r1`)" in page  # a count below 0 reads as missing too
    assert "runs table: 5 values out of range read as missing" in page


def test_figures_in_range_and_at_the_ends_are_kept_with_no_note(tmp_path: Path):
    run = {**RUN, "benchmark": [{**_bench(1.0), "pass_rate_min": 0.0}], "triggers": [_trigger(1.0)],
           "lifts": [_lift(-1.0)]}  # fmt: skip
    lib = _library(tmp_path, [SKILL], [[run]])
    page = views.skill_summary_markdown(lib, "s")
    assert "out of range" not in page and not lib.notes
    assert lib.runs.iloc[0]["benchmark"][0]["pass_rate_mean"] == 1.0
    assert lib.runs.iloc[0]["lifts"][0]["lift"] == -1.0
    assert "100%" in page or "100 %" in page
