"""Runner logic with an in-process client: plan, fairness, concurrency, errors, resume, cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _evalkit import InProcessClient

from upskill_hub.errors import UpskillError
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.lift.runner import BASE_SYSTEM_PROMPT
from upskill_hub.rundir import (
    RESULTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    compact_results,
    read_results,
    read_summary,
)
from upskill_hub.skill import require_skill


def test_one_row_per_planned_call_and_fair_prompts(skill_dir: Path, tmp_path: Path):
    a, b = InProcessClient("toy-a"), InProcessClient("toy-b")
    seen = []
    res = run_eval(skill_dir, [a, b], EvalOptions(runs=2, output_dir=tmp_path / "out", on_row=seen.append, plots=False))
    assert len(res.rows) == 2 * 2 * 3 * 2 == len(seen)
    assert len({r.key for r in res.rows}) == len(res.rows)
    on_disk = read_results(res.run_dir)
    assert sorted(r.key for r in on_disk) == sorted(r.key for r in res.rows)
    skill = require_skill(skill_dir)
    systems = {s for s, _, _ in a.calls}
    assert systems == {BASE_SYSTEM_PROMPT, BASE_SYSTEM_PROMPT + "\n" + skill.prompt_text()}
    # same messages and parameters in both conditions
    by_cond = {}
    for s, msgs, p in a.calls:
        by_cond.setdefault(s == BASE_SYSTEM_PROMPT, set()).add((tuple(msgs), p))
    assert by_cond[True] == by_cond[False]
    assert res.summary.models == ["toy-a", "toy-b"]
    assert (res.run_dir / SUMMARY_FILE).is_file() and (res.run_dir / RUN_FILE).is_file()
    r0 = next(r for r in res.rows if r.condition == "with_skill" and r.case_id == "greet")
    assert r0.passed and r0.skill_version == skill.version and r0.provider == "test"
    assert json.loads(r0.assertion_details)[0]["type"] == "contains"


def test_lift_from_skill_text(skill_dir: Path, tmp_path: Path):
    c = InProcessClient(answer=lambda s, u, n: '{"greeting": "BANANA"}' if "BANANA" in s else "hello")
    res = run_eval(skill_dir, [c], EvalOptions(output_dir=tmp_path, plots=False))
    by = {(x.condition): x for x in res.summary.conditions}
    assert by["baseline"].passed == 1 and by["with_skill"].passed == 3  # "plain" passes in both
    (lift,) = res.summary.lifts
    assert lift.lift == pytest.approx(2 / 3) and not lift.conclusive and "too few" in lift.note


def test_concurrency_limit_is_respected(skill_dir: Path, tmp_path: Path):
    c = InProcessClient(latency=0.02, default_concurrency=3)
    run_eval(skill_dir, [c], EvalOptions(runs=4, output_dir=tmp_path, plots=False, use_cache=False))
    assert c.max_active == 3
    c2 = InProcessClient(latency=0.02)
    run_eval(skill_dir, [c2], EvalOptions(runs=4, output_dir=tmp_path, plots=False, use_cache=False, concurrency=7))
    assert c2.max_active == 7


def test_errors_are_rows_not_failed_answers(skill_dir: Path, tmp_path: Path):
    c = InProcessClient(answer=lambda s, u, n: "!error" if "JSON" in u else "BANANA")
    res = run_eval(skill_dir, [c], EvalOptions(output_dir=tmp_path, plots=False))
    errs = [r for r in res.rows if r.error]
    assert len(errs) == 2 and all(r.passed is None and "HTTP 500" in r.error for r in errs)
    base = next(x for x in res.summary.conditions if x.condition == "baseline")
    assert base.errors == 1 and base.n == 2


def test_cache_serves_identical_rerun_and_keys_on_repeat(skill_dir: Path, tmp_path: Path):
    c = InProcessClient(answer=lambda s, u, n: f"BANANA {n}")
    first = run_eval(skill_dir, [c], EvalOptions(runs=2, output_dir=tmp_path / "o1", plots=False))
    assert len(c.calls) == 12 and first.stats.fresh_calls == 12
    # each repeat got its own answer: repeats are never served the same cached response
    outs = {(r.condition, r.case_id): set() for r in first.rows}
    for r in first.rows:
        outs[(r.condition, r.case_id)].add(r.output)
    assert all(len(v) == 2 for v in outs.values())
    second = run_eval(skill_dir, [c], EvalOptions(runs=2, output_dir=tmp_path / "o2", plots=False))
    assert len(c.calls) == 12 and second.stats.cached == 12
    assert all(r.cached for r in second.rows)
    assert sorted((r.key, r.output) for r in second.rows) == sorted((r.key, r.output) for r in first.rows)
    assert sum(x.cached_calls for x in second.summary.conditions) == 12
    third = run_eval(skill_dir, [c], EvalOptions(runs=3, output_dir=tmp_path / "o3", plots=False))
    assert len(c.calls) == 18 and third.stats.cached == 12  # only repeat 2 is new
    run_eval(skill_dir, [c], EvalOptions(runs=1, output_dir=tmp_path / "o4", plots=False, use_cache=False))
    assert len(c.calls) == 24


def test_errors_are_never_cached(skill_dir: Path, tmp_path: Path):
    flaky = InProcessClient(answer=lambda s, u, n: "!error" if n <= 6 else "BANANA")
    run_eval(skill_dir, [flaky], EvalOptions(output_dir=tmp_path, plots=False))
    res = run_eval(skill_dir, [flaky], EvalOptions(output_dir=tmp_path, plots=False))
    assert len(flaky.calls) == 12 and not any(r.error for r in res.rows)


def test_resume_after_torn_line_and_duplicates(skill_dir: Path, tmp_path: Path):
    c = InProcessClient(answer=lambda s, u, n: "!error" if n == 1 else "BANANA")
    res = run_eval(skill_dir, [c], EvalOptions(runs=2, output_dir=tmp_path, plots=False, use_cache=False))
    path = res.run_dir / RESULTS_FILE
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 12
    # simulate a killed run: lose 3 rows, duplicate one, tear the last line
    path.write_text("".join(lines[:8]) + lines[0] + lines[8][: len(lines[8]) // 2])
    (res.run_dir / SUMMARY_FILE).unlink()
    calls_before = len(c.calls)
    again = run_eval(skill_dir, [c], EvalOptions(runs=2, output_dir=tmp_path, plots=False, use_cache=False, resume=True))
    assert again.run_dir == res.run_dir
    rows = read_results(res.run_dir)
    assert len(rows) == 12 and len({r.key for r in rows}) == 12
    assert not any(r.error for r in rows)  # the failed call was retried
    # 4 lost rows + 1 error row re-run; nothing else
    assert len(c.calls) - calls_before == 5
    assert read_summary(res.run_dir) is not None


def test_resume_without_matching_run_is_a_clean_error(skill_dir: Path, tmp_path: Path):
    with pytest.raises(UpskillError, match="no run in .* matches this eval"):
        run_eval(skill_dir, [InProcessClient()], EvalOptions(output_dir=tmp_path, resume=True, plots=False))
    run_eval(skill_dir, [InProcessClient()], EvalOptions(output_dir=tmp_path, plots=False))
    with pytest.raises(UpskillError, match="matches this eval"):
        run_eval(skill_dir, [InProcessClient()], EvalOptions(runs=2, output_dir=tmp_path, resume=True, plots=False))


def test_compact_ignores_rows_outside_plan(tmp_path: Path):
    (tmp_path / RESULTS_FILE).write_text('{"not": "a row"}\n')
    assert compact_results(tmp_path, set()) == []


def test_bad_input_fails_before_any_call_or_folder(skill_dir: Path, tmp_path: Path):
    out = tmp_path / "never"
    c = InProcessClient()
    with pytest.raises(UpskillError, match="runs"):
        run_eval(skill_dir, [c], EvalOptions(runs=0, output_dir=out))
    empty = tmp_path / "empty.json"
    empty.write_text('{"cases": []}')
    with pytest.raises(UpskillError, match="no test cases"):
        run_eval(skill_dir, [c], EvalOptions(cases=empty, output_dir=out))
    bad = tmp_path / "bad.json"
    bad.write_text('{"cases": [{"input": "x", "assert": [{"type": "regex", "value": "(unclosed"}]}]}')
    with pytest.raises(UpskillError, match="does not compile"):
        run_eval(skill_dir, [c], EvalOptions(cases=bad, output_dir=out))
    with pytest.raises(UpskillError, match="given twice"):
        run_eval(skill_dir, [c, InProcessClient()], EvalOptions(output_dir=out))
    assert not c.calls and not out.exists()


def test_no_baseline_and_tests_file(skill_dir: Path, tmp_path: Path):
    tests = tmp_path / "t.json"
    tests.write_text(json.dumps([{"id": "x", "input": "Say hi", "expected": {"contains": "BANANA"}}]))
    res = run_eval(skill_dir, [InProcessClient()], EvalOptions(cases=tests, include_baseline=False, output_dir=tmp_path / "o"))
    assert [(r.condition, r.case_id) for r in res.rows] == [("with_skill", "x")]
    assert res.summary.lifts == []
    assert {p.name for p in res.plots} == {"pass_rate.png", "tokens.png", "report.html"}
    assert (res.run_dir / "pass_rate.png").read_bytes()[:4] == b"\x89PNG"


def test_run_eval_from_inside_a_running_loop(skill_dir: Path, tmp_path: Path):
    import asyncio

    async def main():
        return run_eval(skill_dir, [InProcessClient()], EvalOptions(output_dir=tmp_path, plots=False))

    assert len(asyncio.run(main()).rows) == 6


def test_llm_rubric_judge_is_recorded_and_cached(tmp_path: Path):
    from _evalkit import make_skill

    skill = make_skill(tmp_path / "s", cases=[
        {"id": "r1", "input": "Greet me.", "assert": [{"type": "llm-rubric", "value": "uses the word BANANA"}]},
        {"id": "r2", "input": "Greet again.", "assert": [{"type": "llm-rubric", "value": "is friendly"},
                                                         {"type": "contains", "value": "BANANA"}]},
    ])
    judge = InProcessClient("judge-m", answer=lambda s, u, n: (
        '{"pass": true, "reason": "ok"}' if "<answer>\nBANANA" in u else '{"pass": false, "reason": "no banana"}'))
    model = InProcessClient(answer=lambda s, u, n: "BANANA hi" if "BANANA" in s else "hi")
    res = run_eval(skill, [model], EvalOptions(judge=judge, output_dir=tmp_path / "o", plots=False))
    assert res.summary.judge_model == "test:judge-m"
    by = {(r.condition, r.case_id): r for r in res.rows}
    assert by[("with_skill", "r1")].passed and not by[("baseline", "r1")].passed
    detail = json.loads(by[("baseline", "r2")].assertion_details)[0]
    assert detail["judge_model"] == "test:judge-m" and "is friendly" in detail["judge_prompt"]
    assert detail["evidence"].startswith("judge: FAIL")
    assert len(judge.calls) == 4 and res.stats.judge_calls == 4
    again = run_eval(skill, [model], EvalOptions(judge=judge, output_dir=tmp_path / "o", plots=False))
    assert len(judge.calls) == 4 and again.stats.judge_calls == 0  # judge answers cached too


def test_failing_judge_makes_error_rows(tmp_path: Path):
    from _evalkit import make_skill

    skill = make_skill(tmp_path / "s", cases=[
        {"id": "r1", "input": "Greet me.", "assert": [{"type": "llm-rubric", "value": "friendly"}]}])
    judge = InProcessClient("judge-m", answer=lambda s, u, n: "!error")
    res = run_eval(skill, [InProcessClient()], EvalOptions(judge=judge, output_dir=tmp_path, plots=False))
    assert all(r.error and "judge" in r.error and r.passed is None for r in res.rows)


def test_a_run_folder_is_locked_while_written(skill_dir: Path, tmp_path: Path):
    import fcntl

    from upskill_hub.rundir import LOCK_FILE, run_lock

    res = run_eval(skill_dir, [InProcessClient()], EvalOptions(output_dir=tmp_path, plots=False))
    with run_lock(res.run_dir), pytest.raises(UpskillError, match="another upskill-hub process"):
        run_eval(skill_dir, [InProcessClient()], EvalOptions(output_dir=tmp_path, plots=False, resume=True))
    with (res.run_dir / LOCK_FILE).open() as fh:  # released afterwards
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_long_outputs_are_truncated_after_grading_and_secrets_redacted(skill_dir: Path, tmp_path: Path, monkeypatch):
    from upskill_hub.lift.runner import MAX_OUTPUT_CHARS

    monkeypatch.setenv("OPENAI_API_KEY", "sk-" "live-abcdefghijklmnopqrstuvwxyz")
    long = "x" * (MAX_OUTPUT_CHARS + 50) + " BANANA"
    c = InProcessClient(answer=lambda s, u, n: long if "hello" in u else "key sk-" "live-abcdefghijklmnopqrstuvwxyz")
    res = run_eval(skill_dir, [c], EvalOptions(output_dir=tmp_path, plots=False))
    greet = next(r for r in res.rows if r.case_id == "greet")
    assert greet.passed and len(greet.output) == MAX_OUTPUT_CHARS  # graded on the full text
    text = (res.run_dir / RESULTS_FILE).read_text()
    assert "sk-" "live-abcdefghijklmnopqrstuvwxyz" not in text and "***" in text
