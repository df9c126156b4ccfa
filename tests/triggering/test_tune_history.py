"""Must-show of issue 36 for ``tune``: a teacher that learns from its earlier attempts.

The scripted model loads the skill when a query shares a word with its description. The
should-trigger queries fall into four themes (spreadsheet, ledger, invoice, payroll), one
theme word each. The scripted *exploring* teacher tries one theme word at a time, keeping
the words of its best-scoring earlier attempt: it can only do that when the request shows
it its earlier attempts and their train scores. Its first guess ("tabular") helps nothing;
a teacher shown only the last description (tune rewrites the last one, as run_loop does)
cannot tell, and drags the useless word along to the end. Shown its attempts, it drops it
and covers every theme with a shorter description.

Only the CLI's own files and output are read: the table, ``tune_result.json``,
``tune_report.md`` and the requests the teacher received.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_tune_run import KEY, MODEL, TEACHER

from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill, require_skill
from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering.trigger_queries import resolve_queries
from upskill_hub.triggering.tune import TEACHER_SYSTEM, split_queries

THEMES = {
    "spreadsheet": ["merge two spreadsheet tabs", "spreadsheet formula broke again", "sort this spreadsheet by date",
                    "chart from my spreadsheet totals"],
    "ledger": ["balance the ledger for march", "ledger entries look duplicated", "close the ledger before audit",
               "export the general ledger"],
    "invoice": ["send an invoice to acme", "invoice numbering restarted", "overdue invoice reminder email",
                "split one invoice into two"],
    "payroll": ["run payroll for contractors", "payroll tax withholding changed", "fix the payroll deduction",
                "payroll export for the bank"],
}  # fmt: skip
SHOULD_NOT = [
    "write a haiku about autumn", "fix this python stack trace", "summarise the meeting notes",
    "what is the capital of peru", "draft an email to my landlord", "review my pull request",
    "explain quantum tunnelling", "plan a trip to rome", "translate hello to french", "tune my guitar",
    "recommend a scifi novel", "water my tomato plants",
]  # fmt: skip
ORIGINAL = "Keeps accounts tidy."
#: The words the exploring teacher tries, in this order: the first one matches no query.
GUESSES = ["tabular", *THEMES]
#: The split seed: every theme has queries on both sides of it.
SEED = 4


def write_skill(root: Path) -> Path:
    should = [q for qs in THEMES.values() for q in qs]
    triggers = [{"id": f"p{i:02d}", "query": q, "should_trigger": True} for i, q in enumerate(should)]
    triggers += [{"id": f"n{i:02d}", "query": q, "should_trigger": False} for i, q in enumerate(SHOULD_NOT)]
    meta = parse_meta({"schema_version": 1, "triggers": triggers})
    return Skill.create("bookkeeping", ORIGINAL, "# Bookkeeping\n\nKeep the books balanced.\n",
                        meta=meta).write(root / "bookkeeping")  # fmt: skip


def proposal(words: list[str]) -> str:
    return ORIGINAL + (f" Use for {', '.join(words)} work." if words else "")


def guessed(text: str) -> list[str]:
    return [g for g in GUESSES if re.search(rf"\b{g}\b", text)]


class ExploringTeacher:
    """Keeps the words of its best earlier attempt (by train score) and tries one word it has not tried.

    ``shown_history=False`` reads the same request with the earlier attempts cut out: a
    teacher shown only the best description so far, as ``tune`` used to ask.
    """

    def __init__(self, *, shown_history: bool) -> None:
        self.shown_history = shown_history
        self.asked: list[str] = []

    def __call__(self, system: str, messages: list, params: dict) -> str:
        if system != TEACHER_SYSTEM:
            return "ok"
        request = messages[-1]["content"]
        self.asked.append(request)
        if not self.shown_history:
            request = re.sub(r"<attempt .*?</attempt>|<rejected .*?</rejected>", "", request, flags=re.S)
        current = re.search(r"<description>(.*?)</description>", request, re.S).group(1)
        scored = [(int(score), text) for text, score in
                  re.findall(r"<attempt [^>]*>\n<text>(.*?)</text>\ntrain score: (\d+)% right", request, re.S)]  # fmt: skip
        tried = {g for text in [current, *(t for _, t in scored)] for g in guessed(text)}
        tried |= {
            g
            for text in re.findall(r"<rejected [^>]*>(.*?)</rejected>", request, re.S)
            for g in guessed(text)
        }
        best = max(scored, key=lambda s: s[0])[1] if scored else current  # the first of the best
        keep = guessed(best)
        new = next((g for g in GUESSES if g not in tried), None)
        return f"<description>{proposal(keep + ([new] if new else []))}</description>"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("COLUMNS", "250")


def _tune(tmp_path: Path, name: str, teacher: ExploringTeacher, capsys, monkeypatch, *extra: str):
    from cli_runner import run_cli

    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / f"cache-{name}"))
    skill = write_skill(tmp_path / f"skills-{name}")
    with running_llm_server(teacher) as srv:
        code, out, err = run_cli(
            ["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", srv.openai_base_url, "--runs", "1",
             "--iterations", "5", "--distractors", "none", "-o", str(tmp_path / f"out-{name}"), "--seed", str(SEED),
             *extra],
            capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    (run_dir,) = (tmp_path / f"out-{name}").iterdir()
    return out, json.loads((run_dir / "tune_result.json").read_text()), run_dir


def test_a_teacher_shown_its_attempts_beats_one_that_is_not_and_every_candidate_is_in_the_table(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    learner, blind = ExploringTeacher(shown_history=True), ExploringTeacher(shown_history=False)
    out, res, run_dir = _tune(tmp_path, "history", learner, capsys, monkeypatch)
    _, blind_res, _ = _tune(tmp_path, "blind", blind, capsys, monkeypatch)

    def held_accuracy(r: dict) -> float:
        return r["candidates"][r["winner"]]["held_out"]["accuracy"]

    # The split is --seed's, and each theme has queries on both sides of it.
    queries, _ = resolve_queries(require_skill(write_skill(tmp_path / "again")), [], None)
    train_q, held_q = split_queries(queries, seed=SEED)
    assert (res["train_ids"], res["held_out_ids"]) == ([q.id for q in train_q], [q.id for q in held_q])
    by_id = {q.id: q.query for q in queries}
    for side in (res["train_ids"], res["held_out_ids"]):
        assert all(set(qs) & {by_id[i] for i in side} for qs in THEMES.values())

    # Shown its attempts, the teacher leaves "tabular" behind and covers every theme.
    assert [c["description"] for c in res["candidates"]] == [
        ORIGINAL, proposal(["tabular"]), proposal(["spreadsheet"]), proposal(["spreadsheet", "ledger"]),
        proposal(["spreadsheet", "ledger", "invoice"]), proposal(["spreadsheet", "ledger", "invoice", "payroll"]),
    ]  # fmt: skip
    assert res["rejected"] == [] and res["winner"] == 5 and held_accuracy(res) == 1.0
    # Not shown them, it sees only the last description (run_loop's rule: it rewrites the last one, so
    # it no longer stalls on rejected duplicates of the best) and cannot tell "tabular" helped nothing:
    # it keeps the useless word, and its winner, as right on held-out, is longer.
    assert [c["description"] for c in blind_res["candidates"]] == [
        ORIGINAL, proposal(["tabular"]), proposal(["tabular", "spreadsheet"]),
        proposal(["tabular", "spreadsheet", "ledger"]), proposal(["tabular", "spreadsheet", "ledger", "invoice"]),
        proposal(["tabular", "spreadsheet", "ledger", "invoice", "payroll"]),
    ]  # fmt: skip
    assert blind_res["rejected"] == [] and held_accuracy(blind_res) == held_accuracy(res)
    blind_win = blind_res["candidates"][blind_res["winner"]]["description"]
    assert "tabular" in blind_win and len(blind_win) > len(res["candidates"][res["winner"]]["description"])

    # Every request showed every earlier candidate with its train score, and nothing held out.
    held = [by_id[i] for i in res["held_out_ids"]]
    train_calls = len(res["train_ids"])
    assert len(learner.asked) == 5 and held
    for k, request in enumerate(learner.asked):
        for c in res["candidates"][: k + 1]:
            right = (
                c["train"]["triggered_should"]
                + c["train"]["n_should_not"]
                - c["train"]["triggered_should_not"]
            )
            assert f"<text>{c['description']}</text>\ntrain score: " in request
            assert f"({right}/{train_calls} decisions)" in request
    for request in learner.asked + blind.asked:
        assert not any(q in request for q in held) and "held" not in request.lower()
        assert "Keep the books balanced." in request  # the SKILL.md body

    # The table lists every candidate scored, losers included, the winner starred once.
    for c in res["candidates"]:
        label = "original" if c["index"] == 0 else f"candidate {c['index']} (iteration {c['iteration']})"
        assert label in out and c["description"] in out
    starred = [line for line in out.splitlines() if "★" in line and "Winner ★" not in line]
    assert len(starred) == 1 and "candidate 5 (iteration 5) ★" in starred[0]
    # The report beside tune_result.json has each iteration, its scores and the winner marked.
    report = (run_dir / "tune_report.md").read_text()
    for c in res["candidates"]:
        assert f"## Iteration {c['iteration']}:" in report and c["description"] in report
    assert report.count("★ winner") == 1 and "held-out: accuracy 100%" in report


def test_held_out_0_tunes_on_every_query_and_says_it_is_not_a_held_out_score(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    out, res, run_dir = _tune(tmp_path, "all", ExploringTeacher(shown_history=True), capsys, monkeypatch,
                              "--held-out", "0")  # fmt: skip
    assert res["held_out_ids"] == [] and len(res["train_ids"]) == 16 + 12
    assert (
        res["held_out_score"] is False
        and res["winner_chosen_on"] == "train"
        and "not a held-out score" in res["note"]
    )
    winner = res["candidates"][res["winner"]]
    assert winner["train"]["accuracy"] == 1.0 and winner["held_out"]["accuracy"] is None
    assert "no held-out queries" in out and "Not a held-out score" in out and "held-out recall" not in out
    report = (run_dir / "tune_report.md").read_text()
    assert "**Not a held-out score.**" in report and "chosen on train: most queries passed" in report
