"""Assertion analysis: which assertions pass in both conditions, fail in both, or flip between repeats.

Unit tests pin the rules on hand-made rows (the 90% boundary, errors, unreadable details,
a run without baseline); the end-to-end test runs an eval through the real openai SDK
against a scripted model built to produce each kind, and finds each flagged in
summary.json, the report, benchmark.json's notes and ``runs --format json``.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import jsonschema
import pytest
from _evalkit import make_skill
from cli_runner import run_cli
from rich.console import Console

from upskill_hub.lift.figures.assertion_audit import (
    ALWAYS_FAILS,
    FLAKY,
    NON_DISCRIMINATING,
    assertion_text,
    audit_rows,
    summary_lines,
)
from upskill_hub.rundir.schema import ResultRow


def row(condition: str, case: str, repeat: int, outcomes: list[bool] | None, *, model: str = "m",
        details: str | None = None, error: str | None = None) -> ResultRow:  # fmt: skip
    """An answer whose assertions ``i`` passed as ``outcomes[i]`` (``None``: the call failed)."""
    items = [{"type": "contains", "value": f"w{i}", "passed": ok, "evidence": ""} for i, ok in enumerate(outcomes or [])]
    return ResultRow(
        run_id="r", timestamp="t", tool_version="t", skill_name="s", skill_version="v", model=model,
        provider="p", params="{}", condition=condition, case_id=case, repeat=repeat,
        passed=None if outcomes is None else all(outcomes), assertions_passed=sum(outcomes or []),
        assertions_total=len(outcomes or []), assertion_details=details or json.dumps(items), output="",
        error=error,
    )  # fmt: skip


def kinds(rows: list[ResultRow]) -> set[tuple[str, str, int]]:
    return {(f.kind, f.case_id, f.index) for f in audit_rows(rows).flags}


def test_passing_in_90_percent_of_each_conditions_calls_does_not_discriminate():
    # 10 repeats; assertion 0 passes 9/10 without and 10/10 with the skill: flagged (and flaky)
    nine = [row("baseline", "c", r, [r != 0]) for r in range(10)] + [row("with_skill", "c", r, [True]) for r in range(10)]
    assert kinds(nine) == {(NON_DISCRIMINATING, "c", 0), (FLAKY, "c", 0)}
    # 8/10 without: it does tell the conditions apart a little; only its flakiness is flagged
    eight = [row("baseline", "c", r, [r > 1]) for r in range(10)] + [row("with_skill", "c", r, [True]) for r in range(10)]
    assert kinds(eight) == {(FLAKY, "c", 0)}
    flag = next(f for f in audit_rows(nine).flags if f.kind == NON_DISCRIMINATING)
    assert (flag.baseline_passed, flag.baseline_calls, flag.with_skill_passed, flag.with_skill_calls) == (9, 10, 10, 10)


def test_always_failing_needs_every_call_of_both_conditions_to_fail():
    rows = [row(c, "hard", r, [False, r == 0 and c == "with_skill"]) for c in ("baseline", "with_skill") for r in range(3)]
    # assertion 0 never passes; assertion 1 passed once (with skill, repeat 0): not "always fails", but flaky there
    assert kinds(rows) == {(ALWAYS_FAILS, "hard", 0), (FLAKY, "hard", 1)}
    flaky = next(f for f in audit_rows(rows).flags if f.kind == FLAKY)
    assert flaky.flaky_conditions == ["with_skill"] and (flaky.with_skill_passed, flaky.with_skill_calls) == (1, 3)


def test_a_difference_between_conditions_is_not_flakiness():
    rows = [row("baseline", "c", r, [False]) for r in range(3)] + [row("with_skill", "c", r, [True]) for r in range(3)]
    result = audit_rows(rows)
    assert result.flags == [] and result.checked == 1
    assert summary_lines(result.flags, result.checked) == [
        "assertion analysis: none of 1 assertion is worse with the skill, non-discriminating, always failing or flaky"
    ]


def test_failed_calls_and_unreadable_details_are_left_out():
    rows = [row(c, "c", r, [True]) for c in ("baseline", "with_skill") for r in range(2)]
    rows.append(row("baseline", "c", 2, None, error="HTTP 500"))  # graded nothing: not a failure
    rows.append(row("with_skill", "c", 2, [False], details="{not json"))
    rows.append(row("with_skill", "c", 3, [False], details='{"type": "contains"}'))  # not a list
    result = audit_rows(rows)
    assert result.unreadable == 2
    (flag,) = result.flags
    assert (flag.kind, flag.baseline_calls, flag.with_skill_calls) == (NON_DISCRIMINATING, 2, 2)


def test_without_a_baseline_only_flakiness_can_be_judged():
    rows = [row("with_skill", "c", r, [True, False, r == 1]) for r in range(3)]
    assert kinds(rows) == {(FLAKY, "c", 2)}


def test_each_model_is_judged_apart():
    rows = [row(c, "c", 0, [c == "with_skill" or m == "strong"], model=m) for m in ("weak", "strong") for c in ("baseline", "with_skill")]
    (flag,) = audit_rows(rows).flags
    assert (flag.model, flag.kind) == ("strong", NON_DISCRIMINATING)


def test_assertions_are_named_by_their_rubric_or_type_and_value():
    assert assertion_text({"type": "llm-rubric", "value": "The answer\n  cites the docs"}) == "The answer cites the docs"
    assert assertion_text({"type": "contains", "value": ["a", "b"]}) == 'contains: ["a", "b"]'
    assert assertion_text({"type": "is-json", "value": None}) == "is-json"
    long = assertion_text({"type": "regex", "value": "x" * 500})
    assert len(long) == 120 and long.endswith("…")


# --------------------------------------------------------------------------- end to end
CASES = [
    # "hello" is in every answer (passes in both conditions); BANANA only with the skill
    {"id": "steady", "input": "Case STEADY: greet me.", "assert": [
        {"type": "contains", "value": "hello"}, {"type": "contains", "value": "BANANA"}]},
    # no answer ever says PINEAPPLE: fails in both conditions
    {"id": "hard", "input": "Case HARD: name a fruit.", "assert": [{"type": "contains", "value": "PINEAPPLE"}]},
    # HEADS on the 1st and 3rd repeat of each condition, TAILS on the 2nd: flips between repeats
    {"id": "coin", "input": "Case COIN: toss a coin.", "assert": [{"type": "contains", "value": "HEADS"}]},
]  # fmt: skip


def coin_script():
    """The scripted model: deterministic but for the coin case, which alternates per condition."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def script(system: str, messages: list[dict], params: dict) -> str:
        user = messages[-1]["content"]
        skill = "BANANA" in system
        if "COIN" in user:
            with lock:
                n = seen[str(skill)] = seen.get(str(skill), 0) + 1
            return "hello HEADS" if n % 2 else "hello TAILS"
        return "hello BANANA" if skill else "hello there"

    return script


def test_a_scripted_eval_flags_each_kind_everywhere_it_is_shown(tmp_path: Path, monkeypatch, capsys):
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.lift.report import print_report
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
    skill = make_skill(tmp_path / "skills", cases=CASES)
    with running_llm_server(coin_script()) as srv:
        res = run_eval(
            skill, ["openai:gpt-4.1-mini"],
            EvalOptions(base_url=srv.openai_base_url, output_dir=tmp_path / "out", plots=False, runs=3, concurrency=1),
        )  # fmt: skip
    summary = json.loads((res.run_dir / "summary.json").read_text())
    found = {(f["kind"], f["case_id"], f["index"]): f for f in summary["assertion_flags"]}
    assert set(found) == {(NON_DISCRIMINATING, "steady", 0), (ALWAYS_FAILS, "hard", 0), (FLAKY, "coin", 0)}
    assert summary["assertions_checked"] == 4  # steady's BANANA check tells the conditions apart: not flagged
    both = found[(NON_DISCRIMINATING, "steady", 0)]
    assert (both["baseline_passed"], both["baseline_calls"], both["with_skill_passed"], both["with_skill_calls"]) == (3, 3, 3, 3)
    coin = found[(FLAKY, "coin", 0)]
    assert coin["flaky_conditions"] == ["baseline", "with_skill"] and (coin["baseline_passed"], coin["with_skill_passed"]) == (2, 2)
    assert (found[(ALWAYS_FAILS, "hard", 0)]["baseline_passed"], found[(ALWAYS_FAILS, "hard", 0)]["with_skill_passed"]) == (0, 0)

    console = Console(width=250, record=True, file=io.StringIO())
    print_report(res.summary, console)
    report = console.export_text()
    assert "1 of 4 assertions is non-discriminating (passes in both conditions in ≥ 90% of calls: does not tell them apart); cases: steady" in report
    assert "1 of 4 assertions is always failing (fails in every call of both conditions: too hard, or broken); cases: hard" in report
    assert "1 of 4 assertions is flaky (differs between repeats of the same case and condition: measures noise); cases: coin" in report
    assert "case 'coin' assertion 1 (contains: HEADS): baseline 2/3, with skill 2/3 passed (repeats differ: baseline, with skill)" in report

    bench = json.loads((res.run_dir / "benchmark.json").read_text())
    jsonschema.validate(bench, json.loads((Path(__file__).parent / "fixtures" / "skill_creator_benchmark.schema.json").read_text()))
    # skill-creator's pass rate: each answer's share of expectations, stats over all 9 answers (issue 47).
    # with skill: steady 1 x3, hard 0 x3, coin 1, 0, 1 -> five 1s, four 0s: mean 5/9, sample variance
    # (5 (4/9)^2 + 4 (5/9)^2) / 8 = 5/18 -> stddev 0.527; baseline: steady 1/2 x3, hard 0 x3, coin 1, 0, 1
    # -> mean 3.5/9 = 0.3889, stddev 0.4167
    assert bench["run_summary"]["with_skill"]["pass_rate"] == {"mean": 0.5556, "stddev": 0.527, "min": 0.0, "max": 1.0}
    assert bench["run_summary"]["without_skill"]["pass_rate"] == {"mean": 0.3889, "stddev": 0.4167, "min": 0.0, "max": 1.0}
    assert bench["run_summary"]["delta"]["pass_rate"] == "+0.17"
    notes = bench["notes"]
    assert any(n.startswith("case 'hard' assertion 1 (contains: PINEAPPLE): baseline 0/3, with skill 0/3 passed") for n in notes)
    assert sum("case 'steady' assertion 1 (contains: hello)" in n for n in notes) == 1

    code, out, _err = run_cli(["runs", str(tmp_path / "out"), "--format", "json"], capsys, monkeypatch)
    assert code == 0
    listed = json.loads(out)
    with_skill = next(r for r in listed if r["condition"] == "with_skill")
    assert {f["kind"] for f in with_skill["assertion_flags"]} == {NON_DISCRIMINATING, ALWAYS_FAILS, FLAKY}
    assert with_skill["benchmark"]["runs"] == 3 and with_skill["benchmark"]["pass_rate_mean"] == pytest.approx(1 / 3 + 2 / 9)

    # the same run as an older version left it (no figures, no benchmark files): listed, with nulls
    old = {k: v for k, v in summary.items() if k not in ("benchmark", "assertion_flags", "assertions_checked")}
    (res.run_dir / "summary.json").write_text(json.dumps(old))
    for name in ("benchmark.json", "benchmark.md"):
        (res.run_dir / name).unlink()
    code, out, _err = run_cli(["runs", str(tmp_path / "out"), "--format", "json"], capsys, monkeypatch)
    assert code == 0
    listed_old = json.loads(out)
    assert [r["pass_rate"] for r in listed_old] == [r["pass_rate"] for r in listed]
    assert all(r["benchmark"] is None and r["assertion_flags"] is None for r in listed_old)
