"""The description-tuning loop: stratified seeded split, rejected proposals, held-out winner, resume."""

from __future__ import annotations

import json
import re

import pytest

from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import UpskillError
from upskill_hub.lift.figures.intervals import wilson_interval
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.triggering.tune import (
    HISTORY_FILE,
    parse_proposal,
    split_queries,
    tune_description,
    tune_request,
)

SHOULD = [
    "convert this CSV file to JSON", "turn my spreadsheet into JSON records", "CSV to JSON please",
    "parse a CSV and give me JSON", "my spreadsheet needs to become JSON", "export CSV rows as JSON objects",
    "read the CSV columns into JSON", "CSV export to a JSON array", "spreadsheet rows to JSON", "JSON from this CSV",
]  # fmt: skip
SHOULD_NOT = [
    "write a haiku about autumn", "fix this python stack trace", "summarise the meeting notes",
    "what is the capital of peru", "draft an email to my landlord", "review my pull request",
    "explain quantum tunnelling", "plan a trip to rome", "translate hello to french", "tune my guitar",
]  # fmt: skip
QUERIES = [TriggerQuery(f"p{i}", q, True) for i, q in enumerate(SHOULD)] + [
    TriggerQuery(f"n{i}", q, False) for i, q in enumerate(SHOULD_NOT)
]
VAGUE = "Helps with data."


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3} - {
        "with",
        "when",
        "this",
        "that",
        "helps",
    }


class WordOverlapModel:
    """Loads the skill when the query shares a word with its description (a scripted model)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, description: str, queries: list[TriggerQuery], runs: int) -> list[TriggerRow]:
        out = []
        for q in queries:
            for k in range(runs):
                self.calls += 1
                hit = bool(_words(q.query) & _words(description))
                out.append(TriggerRow("tune", "t", "v", "csv-json", "x", "m", "p", "{}", q.id, q.query,
                                      q.should_trigger, k, hit, json.dumps(["csv-json"] if hit else [])))  # fmt: skip
        return out


def teacher(proposals: list[str]):
    seen = []

    def propose(description, wrong, iteration):
        seen.append((description, [f.query for f in wrong]))
        return proposals[iteration - 1]

    propose.seen = seen  # type: ignore[attr-defined]
    return propose


GOOD = "Convert CSV files and spreadsheet rows to JSON. Use when the user has CSV or spreadsheet data to turn into JSON."


def test_split_is_stratified_seeded_and_order_free():
    train, held = split_queries(QUERIES, seed=7)
    assert len(held) == 8 and sum(q.should_trigger for q in held) == 4
    assert {q.id for q in train} | {q.id for q in held} == {q.id for q in QUERIES}
    assert split_queries(list(reversed(QUERIES)), seed=7) == (train, held)
    assert split_queries(QUERIES, seed=8)[1] != held
    with pytest.raises(UpskillError, match="held-out share"):
        split_queries(QUERIES, held_out=1.5)


def test_vague_description_tunes_up_on_held_out_with_intervals(tmp_path):
    model = WordOverlapModel()
    teach = teacher(["x" * 1025, "", VAGUE, GOOD, GOOD + " Also YAML."])
    result = tune_description(
        VAGUE, QUERIES, model, teach, run_dir=tmp_path / "run", iterations=5, runs=2, seed=1
    )
    before, after = result.original, result.winner
    assert before.held_out.recall == 0.0 and after.held_out.recall == 1.0
    assert after.description == GOOD and len(result.candidates) == 2  # no train failure left: it stopped
    assert (before.held_out.recall_ci_low, before.held_out.recall_ci_high) == wilson_interval(0, 8)
    assert (after.held_out.recall_ci_low, after.held_out.recall_ci_high) == wilson_interval(8, 8)
    assert [r["reason"] for r in result.rejected] == [
        "the description is 1025 characters; the spec allows 1024",
        "the description is empty",
        "the same as an earlier candidate",
    ]
    # The teacher saw train failures only: never a held-out query.
    held_queries = {q.query for q in QUERIES if q.id in result.held_ids}
    assert all(not (set(qs) & held_queries) for _, qs in teach.seen)
    history = (tmp_path / "run" / HISTORY_FILE).read_text().splitlines()
    assert [json.loads(x)["kind"] for x in history] == ["split", "candidate"] + ["rejected"] * 3 + [
        "candidate"
    ]
    assert (tmp_path / "run" / "tune_result.json").is_file()


def test_the_winner_is_best_on_held_out_and_ties_go_to_the_shorter():
    from dataclasses import replace

    from upskill_hub.triggering.tune import Candidate, Figures, TuneResult

    def cand(i, desc, acc_train, acc_held):
        f = Figures(1, 1, 1.0, 0, 1, 1, 0, 0.0, 0, 1, acc_train)
        return Candidate(i, i, desc, f, replace(f, accuracy=acc_held))

    res = TuneResult(
        [], [], [cand(0, "orig", 0.2, 0.5), cand(1, "long text here", 1.0, 0.9), cand(2, "short", 0.5, 0.9)]
    )
    assert res.winner.description == "short"
    res.candidates.append(cand(3, "best train", 1.0, 0.6))
    assert res.winner.description == "short"  # train accuracy never picks the winner


def test_resume_reuses_every_recorded_proposal(tmp_path):
    run = tmp_path / "run"
    tune_description(
        VAGUE, QUERIES, WordOverlapModel(), teacher(["", GOOD]), run_dir=run, iterations=2, runs=1
    )
    # A kill during iteration 3 left half a line: resuming drops it and asks the teacher only for iteration 3.
    with (run / HISTORY_FILE).open("a") as fh:
        fh.write('{"kind": "candid')
    teach = teacher(["unused", "unused", GOOD + " More."])
    again = tune_description(VAGUE, QUERIES, WordOverlapModel(), teach, run_dir=run, iterations=3, runs=1)
    assert again.resumed and len(teach.seen) == 0  # GOOD has no train failures left: no new proposal needed
    assert [c.description for c in again.candidates] == [VAGUE, GOOD]
    with pytest.raises(UpskillError, match="other queries, --runs"):
        tune_description(VAGUE, QUERIES, WordOverlapModel(), teach, run_dir=run, iterations=1, runs=2)


def test_teacher_request_and_answer_parsing():
    text = tune_request("csv-json", VAGUE, [])
    assert "<description>Helps with data.</description>" in text and "1024" in text
    assert parse_proposal("Sure!\n<description>\n  New  text.\n</description>") == "New text."
    assert parse_proposal("just this") == "just this"


def test_the_teacher_model_proposes_through_the_sdk_and_its_answers_are_cached(tmp_path):
    from upskill_hub.models import create_client, preflight
    from upskill_hub.session.cache import ResponseCache
    from upskill_hub.testing.llm_server import running_llm_server
    from upskill_hub.triggering.tune import Failure, ModelTeacher

    def script(system, messages, params):
        text = messages[-1]["content"] if isinstance(messages[-1], dict) else str(messages[-1])
        assert "should have" in text and "held" not in text
        return f"Here you go:\n<description>{GOOD}</description>"

    with running_llm_server(script) as srv:
        client = create_client(preflight(f"openai-compatible:scripted-model@{srv.openai_base_url}"))
        cache = ResponseCache(tmp_path / "cache")
        teach = ModelTeacher(client, "csv-json", cache=cache)
        wrong = [Failure("convert this CSV file to JSON", True, 0, 2)]
        assert teach(VAGUE, wrong, 1) == GOOD
        assert teach(VAGUE, wrong, 1) == GOOD and srv.calls == 1  # the second ask came from the cache
        result = tune_description(
            VAGUE, QUERIES, WordOverlapModel(), teach, run_dir=tmp_path / "run", iterations=3, runs=1
        )
        assert result.winner.description == GOOD and result.winner.held_out.recall == 1.0
        teach.close()
