"""Benchmark figures: spread over runs, and benchmark.json in skill-creator's schema.

The figures of a 3-run eval are checked against numbers worked out by hand below; the file
against a JSON Schema written from skill-creator's references/schemas.md, so its viewer
(which reads those field names exactly) can open what we write.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from upskill_hub import rundir
from upskill_hub.lift.figures.assertion_audit import audit_rows
from upskill_hub.lift.figures.benchmark import (
    add_figures,
    benchmark_document,
    benchmark_files,
    benchmark_stats,
    eval_ids,
    spread,
)
from upskill_hub.lift.report import print_report
from upskill_hub.rundir.schema import ResultRow, RunSummary, record_problem

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "skill_creator_benchmark.schema.json").read_text())
CASES = ["alpha", "beta", "gamma"]


def row(condition: str, case: str, repeat: int, passed: bool | None, *, hits: int | None = None,
        latency: float | None = 1.0, tokens: tuple[int, int] | None = (10, 5), model: str = "m",
        mode: str = "inject", error: str | None = None, **kw) -> ResultRow:  # fmt: skip
    """One answer with two assertions: ``hits`` of them passed (both when it passed, else 0)."""
    hits = (2 if passed else 0) if hits is None else hits
    details = [{"type": "contains", "value": f"word{i}", "passed": i < hits, "evidence": f"e{i}"} for i in range(2)]
    return ResultRow(
        run_id="r1", timestamp="2026-11-26T00:00:00Z", tool_version="t", skill_name="s", skill_version="v",
        model=model, provider="test", params="{}", condition=condition, case_id=case, repeat=repeat,
        passed=passed, assertions_passed=hits if passed is not None else 0, assertions_total=2,
        assertion_details=json.dumps(details) if passed is not None else "[]", output="o",
        input_tokens=tokens[0] if tokens else None, output_tokens=tokens[1] if tokens else None,
        latency_s=latency, error=error, mode=mode, **kw,
    )  # fmt: skip


# A 3-run eval, worked by hand. Which cases pass, per run (repeat 0, 1, 2):
#   with skill: 3/3, 2/3, 1/3 -> pass rates 1, 2/3, 1/3
#   baseline:   0/3, 1/3, 0/3 -> pass rates 0, 1/3, 0
# Latency per answer, every answer of run i alike: with skill 2, 4, 6 s; baseline 1, 1, 4 s.
# Tokens per answer: with skill 100, 200, 300; baseline 50 each run.
# A failed answer passes 1 of its 2 assertions in the with-skill runs, 0 in the baseline.
WITH_PASSES = {0: {"alpha", "beta", "gamma"}, 1: {"alpha", "beta"}, 2: {"alpha"}}
BASE_PASSES = {0: set(), 1: {"alpha"}, 2: set()}


def three_run_rows() -> list[ResultRow]:
    rows = []
    for rep in range(3):
        for case in CASES:
            ok = case in WITH_PASSES[rep]
            rows.append(row("with_skill", case, rep, ok, hits=2 if ok else 1, latency=2.0 * (rep + 1),
                            tokens=(80 * (rep + 1), 20 * (rep + 1))))  # fmt: skip
            rows.append(row("baseline", case, rep, case in BASE_PASSES[rep], latency=(1.0, 1.0, 4.0)[rep], tokens=(40, 10)))
    return rows


def summary_for(rows: list[ResultRow], models: tuple[str, ...] = ("m",)) -> RunSummary:
    summary = RunSummary(run_id="r1", timestamp="2026-11-26T00:00:00Z", tool_version="t", skill_name="s",
                         skill_version="v", models=list(models), runs_per_case=3, n_cases=3)  # fmt: skip
    add_figures(summary, rows, audit_rows(rows))
    return summary


def test_three_run_figures_equal_the_hand_computed_ones():
    base, skill = benchmark_stats(three_run_rows(), ["m"])
    assert (base.condition, skill.condition, base.runs, skill.runs) == ("baseline", "with_skill", 3, 3)
    # pass rate with skill: mean (1 + 2/3 + 1/3) / 3 = 2/3; deviations +1/3, 0, -1/3;
    # sample variance (1/9 + 0 + 1/9) / (3 - 1) = 1/9 -> stddev 1/3 (population would be 0.2722)
    assert skill.pass_rate_mean == pytest.approx(2 / 3)
    assert skill.pass_rate_stddev == pytest.approx(1 / 3)
    assert (skill.pass_rate_min, skill.pass_rate_max) == pytest.approx((1 / 3, 1.0))
    # baseline: mean 1/9; deviations -1/9, 2/9, -1/9; variance (6/81) / 2 = 1/27 -> 0.19245
    assert base.pass_rate_mean == pytest.approx(1 / 9)
    assert base.pass_rate_stddev == pytest.approx(math.sqrt(1 / 27)) == pytest.approx(0.19245, abs=1e-5)
    # assertion rate with skill: run means (2/2*3)/3 = 1, (1 + 1 + 0.5)/3 = 5/6, (1 + .5 + .5)/3 = 2/3
    # -> mean 5/6, deviations 1/6, 0, -1/6 -> variance (2/36)/2 = 1/36 -> stddev 1/6
    assert (skill.assertion_rate_mean, skill.assertion_rate_stddev) == pytest.approx((5 / 6, 1 / 6))
    # time: with skill 2, 4, 6 -> mean 4, stddev 2; baseline 1, 1, 4 -> mean 2, stddev sqrt(3)
    assert (skill.latency_s_mean, skill.latency_s_stddev, skill.latency_s_min, skill.latency_s_max) == (4, 2, 2, 6)
    assert (base.latency_s_mean, base.latency_s_stddev) == pytest.approx((2.0, math.sqrt(3)))
    # tokens: with skill 100, 200, 300 -> mean 200, stddev 100; baseline 50 each -> stddev 0
    assert (skill.tokens_mean, skill.tokens_stddev, base.tokens_mean, base.tokens_stddev) == (200, 100, 50, 0)
    # deltas: with skill minus baseline means
    assert skill.delta_pass_rate == pytest.approx(2 / 3 - 1 / 9)
    assert (skill.delta_latency_s, skill.delta_tokens) == (2.0, 150.0)
    assert base.delta_pass_rate is None


def test_benchmark_json_of_a_three_run_eval_validates_against_skill_creators_schema(tmp_path: Path):
    rows = three_run_rows()
    summary = summary_for(rows)
    json_path, md_path = rundir.write_benchmark(tmp_path, *benchmark_files(summary, rows, CASES, audit_rows(rows)))
    assert (json_path.name, md_path.name) == (rundir.BENCHMARK_JSON, rundir.BENCHMARK_MD)
    doc = json.loads(json_path.read_text())
    jsonschema.validate(doc, SCHEMA)
    rs = doc["run_summary"]
    # skill-creator's aggregate_benchmark.py: stats over every eval x run entry of a configuration,
    # each entry's pass rate = its expectations passed / its expectations, rounded to 4 decimals.
    # with skill: six answers pass 2/2 (1.0), three pass 1/2 (0.5) -> mean 7.5/9 = 0.8333;
    # squared deviations 6 x (1/6)^2 + 3 x (1/3)^2 = 1/2 -> variance 1/2 / 8 -> stddev 0.25
    assert list(rs) == ["with_skill", "without_skill", "delta"]  # with_skill first, as the viewer colours it
    assert rs["with_skill"]["pass_rate"] == {"mean": 0.8333, "stddev": 0.25, "min": 0.5, "max": 1.0}
    # baseline: one answer 1.0, eight 0.0 -> mean 1/9; (64/81 + 8/81) / 8 = 1/9 -> stddev 1/3
    assert rs["without_skill"]["pass_rate"] == {"mean": 0.1111, "stddev": 0.3333, "min": 0.0, "max": 1.0}
    # time per entry: with skill 2,2,2,4,4,4,6,6,6 -> stddev sqrt(24/8); baseline 1 x6, 4 x3 -> sqrt(18/8)
    assert rs["with_skill"]["time_seconds"] == {"mean": 4.0, "stddev": 1.7321, "min": 2.0, "max": 6.0}
    assert rs["without_skill"]["time_seconds"]["stddev"] == 1.5
    assert rs["with_skill"]["tokens"] == {"mean": 200.0, "stddev": 86.6025, "min": 100.0, "max": 300.0}
    # deltas: first configuration's mean minus the second's: 0.8333 - 0.1111
    assert rs["delta"] == {"pass_rate": "+0.72", "time_seconds": "+2.0", "tokens": "+150"}
    # one runs[] entry per answer; its pass rate is the share of its assertions, as skill-creator grades
    assert len(doc["runs"]) == 18
    entry = next(r for r in doc["runs"] if r["configuration"] == "with_skill" and r["eval_name"] == "beta" and r["run_number"] == 3)
    assert entry["eval_id"] == 2 and entry["result"]["pass_rate"] == 0.5
    assert (entry["result"]["passed"], entry["result"]["failed"], entry["result"]["total"]) == (1, 1, 2)
    assert entry["expectations"][1] == {"text": "contains: word1", "passed": False, "evidence": "e1"}
    assert doc["metadata"]["evals_run"] == [1, 2, 3] and doc["metadata"]["runs_per_configuration"] == 3
    assert [r["configuration"] for r in doc["runs"]] == ["with_skill"] * 9 + ["without_skill"] * 9
    md = md_path.read_text()
    assert "| with_skill | 83% ± 25% (50–100%) | 4.0s ± 1.7s (2.0–6.0s) | 200 ± 87 (100–300) |" in md
    # upskill-hub's own figure, named apart: the share of cases fully passed per repeat
    assert "| Cases fully passed | 67% ± 33% (33–100%) | 11% ± 19% (0–33%) | +56 pts |" in md
    assert "| Time per answer | 4.0s ± 2.0s (2.0–6.0s) | 2.0s ± 1.7s (1.0–4.0s) | +2.0s |" in md


def test_failed_calls_are_no_zero_runs_and_unreported_tokens_are_said(tmp_path: Path):
    rows = [row("with_skill", c, 0, True, tokens=None, tokens_unavailable=True) for c in CASES]
    rows += [row("with_skill", c, 1, None, error="HTTP 500") for c in CASES]  # the whole repeat failed
    rows += [row("baseline", c, r, False) for c in CASES for r in (0, 1)]
    summary = summary_for(rows)
    base, skill = summary.benchmark
    assert skill.runs == 1 and skill.pass_rate_mean == 1.0 and skill.pass_rate_stddev == 0.0
    assert skill.tokens_mean is None and skill.delta_tokens is None
    doc = benchmark_document(summary, rows, CASES, audit_rows(rows))
    jsonschema.validate(doc, SCHEMA)
    assert doc["run_summary"]["with_skill"]["tokens"]["mean"] == 0.0 and doc["run_summary"]["delta"]["tokens"] == "-15"
    assert doc["run_summary"]["with_skill"]["pass_rate"]["mean"] == 1.0  # the failed calls are no 0% answers
    assert "with_skill: tokens not reported by some answers; counted as 0" in doc["notes"]
    assert "3 calls failed and are left out of the figures (errors: 1 in runs[])" in doc["notes"]
    failed = [r for r in doc["runs"] if r["result"]["errors"]]
    assert len(failed) == 3 and failed[0]["notes"] == ["the call failed: HTTP 500"] and failed[0]["expectations"] == []


def test_models_and_modes_are_measured_apart():
    rows = three_run_rows()
    rows += [replace(r, model="other") for r in three_run_rows()]
    rows += [replace(r, mode="catalog", passed=True, assertions_passed=2) for r in three_run_rows()]
    summary = summary_for(rows, models=("other", "m"))
    keys = [(b.model, b.mode, b.condition) for b in summary.benchmark]
    assert keys == [
        ("other", "inject", "baseline"), ("other", "inject", "with_skill"),
        ("m", "inject", "baseline"), ("m", "inject", "with_skill"),
        ("m", "catalog", "baseline"), ("m", "catalog", "with_skill"),
    ]  # fmt: skip
    catalog = summary.benchmark[-1]
    assert catalog.pass_rate_mean == 1.0 and catalog.delta_pass_rate == 0.0  # not pooled with the injected answers
    doc = benchmark_document(summary, rows, CASES, audit_rows(rows))
    jsonschema.validate(doc, SCHEMA)
    # one configuration per model x mode, never pooled; sorted by name, each with_skill before its without_skill
    assert list(doc["run_summary"]) == [
        "m-with_skill", "m-without_skill", "m_catalog-with_skill", "m_catalog-without_skill",
        "other-with_skill", "other-without_skill", "delta",
    ]  # fmt: skip
    assert doc["run_summary"]["m_catalog-with_skill"]["pass_rate"]["mean"] == 1.0
    assert doc["run_summary"]["m-with_skill"] == doc["run_summary"]["other-with_skill"]
    assert {r["eval_name"] for r in doc["runs"]} >= {"alpha · m (catalog)", "alpha · other"}


def test_integer_case_ids_are_skill_creators_eval_ids():
    assert eval_ids(["3", "7"]) == {"3": 3, "7": 7}  # an evals.json read back keeps its ids
    assert eval_ids(["a", "7"]) == {"a": 1, "7": 2}
    assert eval_ids(["1", "01"]) == {"1": 1, "01": 2}  # two ids that are the same number: positions


def test_spread_uses_the_sample_standard_deviation_like_skill_creator():
    s = spread([0.5, 1.0])
    assert s is not None and s.stddev == pytest.approx(math.sqrt(0.125))  # (0.25^2 * 2) / (2 - 1)
    assert spread([0.7]) == spread([0.7, 0.7]) == type(s)(0.7, 0.0, 0.7, 0.7) and spread([]) is None


def test_summaries_with_and_without_the_figures_read_back(tmp_path: Path):
    rows = three_run_rows()
    summary = summary_for(rows)
    assert summary.assertion_flags and summary.assertion_flags[0].flaky_conditions  # nested lists round-trip too
    rundir.write_summary(tmp_path, summary)
    assert rundir.read_summary(tmp_path) == summary
    # pushed as a runs-table row and pulled back: the same summary
    assert rundir.summary_from_record(rundir.summary_record(summary)) == summary
    # a summary written before the figures existed: no fields, read as "not measured"
    old = {k: v for k, v in summary.to_dict().items() if k not in ("benchmark", "assertion_flags", "assertions_checked")}
    assert record_problem(RunSummary, old) is None
    (tmp_path / rundir.SUMMARY_FILE).write_text(json.dumps(old))
    back = rundir.read_summary(tmp_path)
    assert back is not None and (back.benchmark, back.assertion_flags, back.assertions_checked) == (None, None, None)
    console = Console(width=200, record=True, file=io.StringIO())
    print_report(back, console)
    assert "cases fully passed per run" not in console.export_text() and "assertion" not in console.export_text()
    # a figure of the wrong type is one clear line
    bad = dict(summary.to_dict(), benchmark=[{"model": "m", "condition": "baseline", "pass_rate_mean": "high"}])
    assert record_problem(RunSummary, bad) == "field 'benchmark' item 0 field 'pass_rate_mean' is text, not a number"


def test_the_report_shows_the_spread_over_runs():
    summary = summary_for(three_run_rows())
    console = Console(width=250, record=True, file=io.StringIO())
    print_report(summary, console)
    text = console.export_text()
    assert "m: cases fully passed per run (mean ± stddev, min–max over 3 runs): baseline 11% ± 19% (0%–33%); with skill 67% ± 33% (33%–100%)" in text
