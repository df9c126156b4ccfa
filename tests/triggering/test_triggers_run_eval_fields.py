"""Issue 47 item 7: ``triggers --format json`` and ``trigger-queries.json`` carry skill-creator's
run_eval fields, so its ``improve_description.py`` reads them as it reads run_eval's output.

The anchor is anthropics/skills at 9d2f1ae1: ``run_eval.py`` returns ``{skill_name, description,
results: [{query, should_trigger, trigger_rate, triggers, runs, pass}], summary: {total, passed,
failed}}``; ``improve_description.py`` reads ``description`` (the text being improved),
``summary.passed/total/failed`` (the score and the history entry) and per result
``should_trigger``, ``pass``, ``query``, ``triggers`` and ``runs`` (the failed and false
triggers it shows the teacher as "triggered K/N times"). :func:`improve_reads` below writes
those reads out. The scripted model's rule (as in test_triggers_perquery): it loads the skill
whose description shares a word with the query, and the flaky queries lose every third load.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli

from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill
from upskill_hub.testing import llm_server
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
DESCRIPTION = "Greet visitors warmly. Use when greeting someone."
CANDIDATE = "Write farewell poems and parking rules."
A = "greeting for the visitors"  # should; 3 of 3
B = "greeting card for grandma"  # should; flaky: 2 of 3, passes at 0.5
C = "compose a farewell poem"  # should; 0 of 3: fails to trigger
D = "visitors parking rules"  # should not; flaky: 2 of 3: a false trigger
E = "sort these numbers"  # should not; 0 of 3
QUERIES = [(A, True), (B, True), (C, True), (D, False), (E, False)]
FLAKY = {B, D}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    real, loads = llm_server.tool_step, Counter()

    def step(system: str, messages: list, tools: list):
        got = real(system, messages, tools)
        user = " ".join(m["content"] for m in messages if m["role"] == "user")
        if got is not None and got[0] == "load_skill" and user in FLAKY:
            loads[user] += 1
            if loads[user] % 3 == 0:
                return None
        return got

    monkeypatch.setattr(llm_server, "tool_step", step)


def improve_reads(doc: dict[str, Any]) -> dict[str, Any]:
    """What improve_description.py takes from run_eval's output, read the way it reads it."""
    results = doc["results"]
    return {
        "current": doc["description"],
        "score": f"{doc['summary']['passed']}/{doc['summary']['total']}",
        "failed": doc["summary"]["failed"],
        "failed_to_trigger": [
            (r["query"], f"{r['triggers']}/{r['runs']}")
            for r in results
            if r["should_trigger"] and not r["pass"]
        ],  # fmt: skip
        "false_triggers": [
            (r["query"], f"{r['triggers']}/{r['runs']}")
            for r in results
            if not r["should_trigger"] and not r["pass"]
        ],  # fmt: skip
        "statuses": ["PASS" if r["pass"] else "FAIL" for r in results],
    }


def check_run_eval_shape(doc: dict[str, Any], skill_name: str, threshold: float = 0.5) -> None:
    """run_eval's own fields, with its meaning: the rate over the runs, the verdict at the threshold."""
    assert doc["skill_name"] == skill_name
    for r in doc["results"]:
        assert r["trigger_rate"] == pytest.approx(r["triggers"] / r["runs"])
        rule = r["trigger_rate"] >= threshold if r["should_trigger"] else r["trigger_rate"] < threshold
        assert r["pass"] is rule
    s = doc["summary"]
    assert (s["total"], s["passed"]) == (len(doc["results"]), sum(r["pass"] for r in doc["results"]))
    assert s["failed"] == s["total"] - s["passed"]


def _run(tmp_path: Path, srv, capsys, monkeypatch, *more: str) -> list[dict[str, Any]]:
    skill = Skill.create(
        "greeter", DESCRIPTION, "# Greeter\n\nSay hello.\n", meta=parse_meta({"schema_version": 1})
    )
    folder = skill.write(tmp_path / "skills" / "greeter")
    (tmp_path / "q.json").write_text(json.dumps([{"query": q, "should_trigger": s} for q, s in QUERIES]))
    code, out, err = run_cli(
        ["triggers", str(folder), "-m", "openai:gpt-4.1-mini", "--base-url", srv.openai_base_url,
         "--distractors", "none", "--triggers", str(tmp_path / "q.json"), "--runs", "3",
         "-o", str(tmp_path / "out"), "--format", "json", *more], capsys, monkeypatch,
    )  # fmt: skip
    assert code == 0, err
    return json.loads(out)


def test_improve_description_reads_our_json_and_run_folder(tmp_path: Path, capsys, monkeypatch) -> None:
    with running_llm_server(lambda *a: "ok") as srv:
        (row,) = _run(tmp_path, srv, capsys, monkeypatch)
    (run_dir,) = (tmp_path / "out").iterdir()
    on_disk = json.loads((run_dir / "trigger-queries.json").read_text())
    expected = {
        "current": DESCRIPTION, "score": "3/5", "failed": 2,
        "failed_to_trigger": [(C, "0/3")], "false_triggers": [(D, "2/3")],
        "statuses": ["PASS", "PASS", "FAIL", "FAIL", "PASS"],
    }  # fmt: skip
    for doc in (row, on_disk):  # the stdout object and the run folder's file, each read as --eval-results
        assert improve_reads(doc) == expected
        check_run_eval_shape(doc, "greeter")
        assert [r["query"] for r in doc["results"]] == [q for q, _ in QUERIES]
    # Our own names stay beside them.
    assert (row["queries_passed"], row["queries_failed"]) == (3, 2)
    assert [q["triggered"] for q in row["queries"]] == [r["triggers"] for r in row["results"]]


def test_a_candidate_is_the_description_improve_description_sees(tmp_path: Path, capsys, monkeypatch) -> None:
    with running_llm_server(lambda *a: "ok") as srv:
        (row,) = _run(tmp_path, srv, capsys, monkeypatch, "--description", CANDIDATE)
    (run_dir,) = (tmp_path / "out").iterdir()
    on_disk = json.loads((run_dir / "trigger-queries.json").read_text())
    for doc in (row, on_disk):
        reads = improve_reads(doc)
        # With the candidate, C loads ('farewell') and A, B no longer do; D still loads 2 of 3 ('parking').
        assert (reads["current"], reads["score"]) == (CANDIDATE, "2/5")
        assert reads["failed_to_trigger"] == [(A, "0/3"), (B, "0/3")] and reads["false_triggers"] == [
            (D, "2/3")
        ]
        check_run_eval_shape(doc, "greeter")
