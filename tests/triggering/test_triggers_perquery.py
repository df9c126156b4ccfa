"""Must-show of issue 36, item 1: per-query trigger rates and threshold verdicts, and ``--description``.

skill-creator's run_eval reports each query's trigger rate over its runs and passes it at a
threshold (0.5): a should-trigger query when its rate is at least the threshold, a should-not
query when it is below. Here the scripted server's model loads the catalog skill whose
description shares a word with the query (its usual rule), except that for the "flaky"
queries every third load is dropped: over ``--runs 3`` they trigger 2 runs of 3. Every figure
below is counted by hand from that rule.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill
from upskill_hub.testing import llm_server
from upskill_hub.testing.llm_server import running_llm_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
MODEL = "openai:gpt-4.1-mini"
DESCRIPTION = "Greet visitors warmly. Use when greeting someone."
# A candidate sharing no word with the original: it moves which queries load the skill.
CANDIDATE = "Write farewell poems and parking rules."

A = "greeting for the visitors"  # should; shares 'greeting', 'visitors'; loads 3 of 3
B = "greeting card for grandma"  # should; shares 'greeting'; flaky: 2 of 3
C = "compose a farewell poem"  # should; shares nothing; 0 of 3 (the candidate: 'farewell', 3 of 3)
D = "visitors parking rules"  # should not; shares 'visitors'; flaky: 2 of 3 (the candidate: 'parking', 2 of 3)
E = "sort these numbers"  # should not; shares nothing; 0 of 3
QUERIES = [(A, True), (B, True), (C, True), (D, False), (E, False)]
FLAKY = {B, D}


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson score interval, written out by hand."""
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


# By hand, --runs 3 at threshold 0.5: (triggered of 3, passes?) per query.
ORIGINAL = {A: (3, True), B: (2, True), C: (0, False), D: (2, False), E: (0, True)}
WITH_CANDIDATE = {A: (0, False), B: (0, False), C: (3, True), D: (2, False), E: (0, True)}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "220")


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """The scripted model's own tool use, with every third load of a flaky query dropped."""
    real = llm_server.tool_step
    loads: Counter = Counter()

    def step(system: str, messages: list, tools: list):
        got = real(system, messages, tools)
        user = " ".join(m["content"] for m in messages if m["role"] == "user")
        if got is not None and got[0] == "load_skill" and user in FLAKY:
            loads[user] += 1
            if loads[user] % 3 == 0:
                return None
        return got

    monkeypatch.setattr(llm_server, "tool_step", step)
    return loads


def _quiet(system: str, messages: list, params: dict) -> str:
    return "ok"


def _skill(root: Path) -> Path:
    meta = parse_meta({"schema_version": 1})
    return Skill.create("greeter", DESCRIPTION, "# Greeter\n\nSay hello.\n", meta=meta).write(root / "greeter")


def _queries(path: Path) -> Path:
    path.write_text(json.dumps([{"query": q, "should_trigger": s} for q, s in QUERIES]))
    return path


def _args(skill: Path, srv, tmp_path: Path, *more: str) -> list[str]:
    return ["triggers", str(skill), "-m", MODEL, "--base-url", srv.openai_base_url, "--distractors", "none",
            "--triggers", str(_queries(tmp_path / "q.json")), "--runs", "3", "-o", str(tmp_path / "out"), *more]  # fmt: skip


def _check_json(queries: list[dict], expected: dict[str, tuple[int, bool]]) -> None:
    assert [q["query"] for q in queries] == [q for q, _ in QUERIES]
    for q in queries:
        k, passed = expected[q["query"]]
        lo, hi = wilson(k, 3)
        assert (q["runs"], q["triggered"], q["errors"], q["passed"]) == (3, k, 0, passed), q
        assert q["rate"] == pytest.approx(k / 3)
        assert (q["ci_low"], q["ci_high"]) == pytest.approx((lo, hi), abs=1e-9)


def test_per_query_rates_and_verdicts_equal_a_hand_count(tmp_path: Path, flaky: Counter, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    skill = _skill(tmp_path / "skills")
    with running_llm_server(_quiet) as srv:
        code, out, err = run_cli([*_args(skill, srv, tmp_path), "--format", "human"], capsys, monkeypatch)
        assert code == 0, err
        assert len(srv.completion_requests) == 15
        code_j, out_j, err_j = run_cli([*_args(skill, srv, tmp_path), "--resume", "--json"], capsys, monkeypatch)
        assert code_j == 0, err_j
        assert len(srv.completion_requests) == 15  # the resumed run only read the run folder
    # The table: pooled figures (recall 5/9, false triggers 2/6), then each failing query once, with its rate.
    assert "56% (5/9)" in out and "33% (2/6)" in out
    lines = out.splitlines()
    assert [ln.count(C) + ln.count(D) for ln in lines if C in ln or D in ln] == [1, 1], out  # once each
    (c_line,) = [ln for ln in lines if C in ln]
    (d_line,) = [ln for ln in lines if D in ln]
    assert f"{MODEL.split(':')[1]}: 3 of 5 queries pass at threshold 0.5" in out
    assert "should trigger" in c_line and "0/3 (0%)" in c_line
    assert "should not" in d_line and "2/3 (67%)" in d_line
    assert A not in out and B not in out and E not in out  # they pass (B at 2 of 3)
    lo, hi = wilson(2, 3)
    assert f"[{lo * 100:.0f}%, {hi * 100:.0f}%]" == "[21%, 94%]" and "[21%, 94%]" in out
    # --format json: every query with its rate, interval and verdict.
    (row,) = json.loads(out_j)
    assert (row["threshold"], row["queries_passed"], row["queries_failed"]) == (0.5, 3, 2)
    assert (row["recall"], row["false_trigger_rate"]) == pytest.approx((5 / 9, 2 / 6))
    _check_json(row["queries"], ORIGINAL)
    # The run folder: trigger-queries.json holds the same figures.
    from upskill_hub.rundir.trigger_rows import read_query_rates

    (run_dir,) = (tmp_path / "out").iterdir()
    doc, rates = read_query_rates(run_dir)
    assert doc["threshold"] == 0.5 and doc["candidate_description"] is None
    _check_json([r.to_dict() for r in rates], ORIGINAL)


def test_the_threshold_moves_the_verdicts(tmp_path: Path, flaky: Counter, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    skill = _skill(tmp_path / "skills")
    with running_llm_server(_quiet) as srv:
        code, out, err = run_cli([*_args(skill, srv, tmp_path), "--json"], capsys, monkeypatch)
        assert code == 0, err
        # The threshold is not part of the plan: a resume judges the same answers again, without a call.
        code, out, err = run_cli([*_args(skill, srv, tmp_path), "--threshold", "0.7", "--resume", "--json"],
                                 capsys, monkeypatch)  # fmt: skip
        assert code == 0, err
        assert len(srv.completion_requests) == 15
    (row,) = json.loads(out)
    verdicts = {q["query"]: q["passed"] for q in row["queries"]}
    # At 0.7, 2 of 3 (67%) is too few for B, and no longer too many for D.
    assert verdicts == {A: True, B: False, C: False, D: True, E: True}
    assert (row["threshold"], row["queries_passed"], row["queries_failed"]) == (0.7, 3, 2)


def test_a_candidate_description_changes_the_verdicts_not_skill_md(tmp_path: Path, flaky: Counter, capsys,
                                                                  monkeypatch) -> None:  # fmt: skip
    from cli_runner import run_cli

    skill = _skill(tmp_path / "skills")
    before = {p.name: p.read_bytes() for p in skill.iterdir()}
    (tmp_path / "candidate.txt").write_text(CANDIDATE + "\n")
    with running_llm_server(_quiet) as srv:
        code, out, err = run_cli([*_args(skill, srv, tmp_path), "--json"], capsys, monkeypatch)
        assert code == 0, err
        flaky.clear()
        code_c, out_c, err_c = run_cli([*_args(skill, srv, tmp_path), "--description", CANDIDATE, "--json"],
                                       capsys, monkeypatch)  # fmt: skip
        assert code_c == 0, err_c
        # Every call of the candidate run saw the candidate in the catalog, never SKILL.md's text.
        assert all(CANDIDATE in r.system and DESCRIPTION not in r.system for r in srv.completion_requests[15:])
        sent = len(srv.completion_requests)
        code_f, out_f, err_f = run_cli([*_args(skill, srv, tmp_path), "--description", f"@{tmp_path / 'candidate.txt'}",
                                        "--resume", "--format", "human"], capsys, monkeypatch)  # fmt: skip
        assert code_f == 0, err_f
        assert len(srv.completion_requests) == sent  # the same text from @FILE is the same plan: resumed, no call
    assert {p.name: p.read_bytes() for p in skill.iterdir()} == before  # SKILL.md byte for byte
    _check_json(json.loads(out)[0]["queries"], ORIGINAL)
    (row,) = json.loads(out_c)
    _check_json(row["queries"], WITH_CANDIDATE)
    assert (row["queries_passed"], row["queries_failed"], row["candidate_description"]) == (2, 3, CANDIDATE)
    # The run folder says a candidate was scored, which one, and where it came from.
    runs = sorted((tmp_path / "out").iterdir())
    assert len(runs) == 2  # the original's and the candidate's
    plans = {p.name: json.loads((p / "triggers-plan.json").read_text()) for p in runs}
    (cand_dir,) = [p for p in runs if plans[p.name]["candidate_description"]]
    assert plans[cand_dir.name]["candidate_description"]["text"] == CANDIDATE
    assert plans[cand_dir.name]["candidate_description"]["skill_md_description"] == DESCRIPTION
    from upskill_hub.rundir.trigger_rows import read_query_rates

    doc, _ = read_query_rates(cand_dir)
    assert doc["candidate_description"]["text"] == CANDIDATE
    assert "candidate description" in out_f and "SKILL.md unchanged" in out_f and CANDIDATE in out_f
    # The rows carry the version the skill would have with the candidate, not SKILL.md's.
    rows = [json.loads(ln) for ln in (cand_dir / "triggers.jsonl").read_text().splitlines()]
    original_version = Skill.create("greeter", DESCRIPTION, "# Greeter\n\nSay hello.\n").version
    assert {r["skill_version"] for r in rows} != {original_version}


def test_bad_description_or_threshold_is_one_line_and_writes_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    skill = _skill(tmp_path / "skills")
    other = _skill(tmp_path / "more")
    (tmp_path / "long.txt").write_text("word " * 300)
    (tmp_path / "big.txt").write_text("x" * 100_000)
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "blank.txt").write_text("\n\n")
    before = (skill / "SKILL.md").read_bytes()
    with running_llm_server(_quiet) as srv:
        cases = [
            (_args(skill, srv, tmp_path, "--description", ""), "the description is empty"),
            (_args(skill, srv, tmp_path, "--description", "x" * 1100), "1100 characters"),
            (_args(skill, srv, tmp_path, "--description", "bad \x1b[31m red"), "control character"),
            (_args(skill, srv, tmp_path, "--description", "flip \u202e this"), "U+202E"),
            (_args(skill, srv, tmp_path, "--description", f"@{tmp_path / 'missing.txt'}"), "missing.txt"),
            (_args(skill, srv, tmp_path, "--description", f"@{tmp_path / 'long.txt'}"), "1499 characters"),
            (_args(skill, srv, tmp_path, "--description", f"@{tmp_path / 'big.txt'}"), "description files over 64 KB"),
            (_args(skill, srv, tmp_path, "--description", f"@{tmp_path / 'binary.txt'}"), "not UTF-8"),
            (_args(skill, srv, tmp_path, "--description", f"@{tmp_path / 'blank.txt'}"), "empty"),
            (_args(skill, srv, tmp_path, "--description", "@/dev/zero"), "character device"),
            (_args(skill, srv, tmp_path, "--description", "@"), "names no file"),
            ([*_args(skill, srv, tmp_path, "--description", "Greets."), str(other)], "one skill's candidate"),
            (["triggers", str(tmp_path / "skills"), "--library", "-m", MODEL, "--base-url", srv.openai_base_url,
              "--description", "Greets."], "--description cannot be used with --library"),  # fmt: skip
            (_args(skill, srv, tmp_path, "--threshold", "0"), "--threshold must be above 0"),
            (_args(skill, srv, tmp_path, "--threshold", "1.5"), "--threshold must be above 0 and at most 1"),
            (_args(skill, srv, tmp_path, "--threshold", "nan"), "--threshold must be a number"),
        ]
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.completion_requests == []
    assert not (tmp_path / "out").exists()
    assert (skill / "SKILL.md").read_bytes() == before


def test_query_rates_from_rows_match_the_run(tmp_path: Path, flaky: Counter) -> None:
    """The library function (:func:`query_rates`) judges a run's rows as the run itself did."""
    from upskill_hub.rundir.trigger_rows import QUERIES_FILE
    from upskill_hub.triggering.query_verdicts import failing_queries, query_rates
    from upskill_hub.triggering.triggers import run_triggers

    skill = _skill(tmp_path / "skills")
    with running_llm_server(_quiet) as srv:
        res = run_triggers(skill, [MODEL], base_url=srv.openai_base_url, runs=3, distractors="none",
                           triggers_file=_queries(tmp_path / "q.json"), output_dir=tmp_path / "out")  # fmt: skip
    assert query_rates(res.rows) == res.queries
    assert [r.query for r in failing_queries(res.queries)] == [C, D] == [r.query for r in res.failing]
    assert [r.share for r in res.failing] == ["0/3", "2/3"]
    assert (res.run_dir / QUERIES_FILE).is_file()
