"""``tune`` as skill-creator's run_loop where it is better (issue 47, item 8).

Followed: anthropics/skills ``skills/skill-creator/scripts/run_loop.py``, ``improve_description.py``
and ``run_eval.py`` at commit 9d2f1ae187231d8199c64b5b762e1bdf2244733d: the teacher rewrites the
*last* description, a query's verdict is run_eval's rule at ``--threshold``, the winner is the
candidate with the most queries passed (pooled accuracy breaks ties), and ``--agent`` scores the
candidates inside an agent CLI.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from upskill_hub.cases import TriggerQuery
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.triggering.tune import Candidate, Figures, TuneResult, tune_description, tune_request

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_tune import GOOD, QUERIES, VAGUE, WordOverlapModel  # noqa: E402

#: Loads the skill for every should-not query and no should-trigger one: worse than VAGUE on train.
WORSE = "Haiku python meeting capital email review quantum trip translate guitar."


def _row(q: TriggerQuery, k: int, hit: bool) -> TriggerRow:
    return TriggerRow(
        "tune", "t", "v", "s", "x", "m", "p", "{}", q.id, q.query, q.should_trigger, k, hit, "[]"
    )


def test_a_deterministic_teacher_rewrites_the_last_description_and_does_not_stall(tmp_path: Path) -> None:
    """A teacher whose answer depends only on the text it is given: VAGUE -> WORSE -> GOOD.

    Asked to rewrite the best so far, it got VAGUE again after WORSE scored lower, answered
    WORSE again (a rejected duplicate) and never reached GOOD.
    """
    script = {VAGUE: WORSE, WORSE: GOOD}
    given: list[str] = []

    def teacher(description: str, wrong: list, iteration: int) -> str:
        given.append(description)
        return script.get(description, description)

    res = tune_description(
        VAGUE, QUERIES, WordOverlapModel(), teacher, run_dir=tmp_path / "run", iterations=4, runs=1
    )
    assert given == [VAGUE, WORSE]  # each time the last candidate, then GOOD passes every train query: stop
    assert [c.description for c in res.candidates] == [VAGUE, WORSE, GOOD]
    assert res.rejected == [] and res.winner.description == GOOD


def test_a_query_loaded_3_of_4_times_passes_at_0_5_and_is_a_miss_only_at_a_higher_threshold(
    tmp_path: Path,
) -> None:
    should = [TriggerQuery(f"p{i}", f"should query {i}", True) for i in range(2)]
    should_not = [TriggerQuery(f"n{i}", f"other query {i}", False) for i in range(2)]

    def scorer(description: str, queries: list[TriggerQuery], runs: int) -> list[TriggerRow]:
        # p0 loads 3 times of 4, p1 never: only p1 fails at 0.5; both fail at 0.8.
        return [_row(q, k, q.id == "p0" and k < 3) for q in queries for k in range(runs)]

    for threshold, missed in ((0.5, ["should query 1"]), (0.8, ["should query 0", "should query 1"])):
        seen: list[tuple[list[str], str]] = []

        def teacher(
            description: str, wrong: list, iteration: int, *, history: list, seen: list = seen
        ) -> str:
            seen.append(([f.query for f in wrong], tune_request("s", description, wrong, history=history)))
            return f"Candidate {iteration}."

        res = tune_description(
            "Start.", should + should_not, scorer, teacher, run_dir=tmp_path / f"run-{threshold}", iterations=1,
            runs=4, held_out=0, threshold=threshold,
        )  # fmt: skip
        ((shown, request),) = seen
        assert sorted(shown) == missed
        assert ("should query 0 (loaded 3/4 times)" in request) is (threshold == 0.8)
        assert res.threshold == threshold and res.original.train.queries_passed == 4 - len(missed)


def test_the_winner_has_the_most_queries_passed_and_pooled_accuracy_breaks_ties() -> None:
    qs = [TriggerQuery(f"p{i}", f"q{i}", True) for i in range(4)]

    def figures(loads: list[int]) -> Figures:  # loads of 4 runs per query
        return Figures.of([_row(q, k, k < n) for q, n in zip(qs, loads, strict=True) for k in range(4)])

    a = figures([2, 2, 2, 0])  # 3 queries passed at 0.5, 6/16 right
    b = figures([4, 4, 1, 1])  # 2 queries passed, 10/16 right: the better pooled accuracy
    c = figures([3, 3, 3, 0])  # 3 queries passed, 9/16 right: ties with a, better accuracy
    assert (a.queries_passed, b.queries_passed, c.queries_passed) == (3, 2, 3)
    assert b.accuracy > c.accuracy > a.accuracy
    empty = Figures.of([])
    res = TuneResult(["p"], ["h"], [Candidate(0, 0, "b text", empty, b), Candidate(1, 1, "a text", empty, a)])
    assert res.winner.description == "a text"  # pooled accuracy alone would pick b
    res.candidates.append(Candidate(2, 2, "c text, longer", empty, c))
    assert res.winner.description == "c text, longer"  # same queries passed as a: accuracy decides


# --------------------------------------------------------------------------- the CLI
@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from test_tune_run import KEY

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "220")


def test_threshold_is_taken_used_and_recorded_and_a_bad_one_is_one_line(
    tmp_path: Path, capsys, monkeypatch, env
) -> None:
    from cli_runner import run_cli
    from test_tune_run import GOOD as SHEET_GOOD
    from test_tune_run import MODEL, TEACHER, ScriptedTeacher, write_skill

    from upskill_hub.testing.llm_server import running_llm_server

    skill = write_skill(tmp_path / "skills")
    code, _out, err = run_cli(["tune", str(skill), "-m", MODEL, "--threshold", "0", "-o", str(tmp_path / "bad")],
                              capsys, monkeypatch)  # fmt: skip
    assert code != 0 and "threshold" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "bad").exists()
    with running_llm_server(ScriptedTeacher([SHEET_GOOD])) as srv:
        code, out, err = run_cli(
            ["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", srv.openai_base_url, "--runs", "1",
             "--distractors", "none", "-o", str(tmp_path / "out"), "--threshold", "0.8", "--json"],
            capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["threshold"] == 0.8 and "queries passed" in data["winner_rule"]
    (run_dir,) = (tmp_path / "out").iterdir()
    assert json.loads((run_dir / "tune_result.json").read_text())["threshold"] == 0.8
    assert json.loads((run_dir / "tune-plan.json").read_text())["threshold"] == 0.8


def test_agent_scores_each_candidate_inside_the_agent_cli(tmp_path: Path, capsys, monkeypatch, env) -> None:
    from cli_runner import run_cli
    from test_agent_triggers import DESCRIPTION, _skills, calls_made, write_fake_claude
    from test_tune_run import TEACHER, ScriptedTeacher

    from upskill_hub.testing.llm_server import running_llm_server

    state = tmp_path / "state"
    exe = write_fake_claude(tmp_path / "bin", state)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    skill, others = _skills(tmp_path)
    qfile = tmp_path / "q.json"
    queries = [
        ("greeting for the visitors", True),
        ("compose a farewell poem", True),
        ("sort these numbers", False),
    ]
    qfile.write_text(json.dumps([{"query": q, "should_trigger": s} for q, s in queries]))
    better = DESCRIPTION + " Also compose farewell notes."  # the fake loads on a shared 5+ letter word
    with running_llm_server(ScriptedTeacher([better])) as srv:
        code, out, err = run_cli(
            ["tune", str(skill), "--agent", "claude-code", "--teacher", TEACHER, "--base-url", srv.openai_base_url,
             "--triggers", str(qfile), "--distractors", str(others), "--held-out", "0", "--runs", "1",
             "-o", str(tmp_path / "out"), "--json"],
            capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["model"] == "claude-code" and data["agent"] is True
    assert [c["description"] for c in data["candidates"]] == [DESCRIPTION, better]
    assert data["candidates"][data["winner"]]["description"] == better
    assert sorted(calls_made(state)) == sorted(
        [q for q, _ in queries] * 2
    )  # one CLI run per query and candidate
    code, _out, err = run_cli(["tune", str(skill), "--agent", "claude-code", "-m", "openai:gpt-4.1-mini"],
                              capsys, monkeypatch)  # fmt: skip
    assert code != 0 and "--agent cannot be used with --model" in err
