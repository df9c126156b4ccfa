"""Generated trigger queries (issue 36): near-miss negatives, the leak check, bad teacher output.

The scripted OpenAI-compatible server plays the teacher; each test scripts what it writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.errors import UpskillError
from upskill_hub.generate.queries import (
    QUERIES_SYSTEM_PROMPT,
    generate_query_sets,
    names_skill,
    queries_for_triggers,
    quotes_description,
)
from upskill_hub.skill import Skill, require_skill
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" "test-0123456789abcdefghijklmnop"
DESCRIPTION = "Hugging Face Hub command line: download, upload, repos, cache and auth with hf. Use when managing Hub repositories."


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    return Skill.create("hf-cli", DESCRIPTION, "# hf\n\nUse `hf download REPO`.\n").write(tmp_path / "hf-cli")


def _answer(queries: list[tuple[str, bool]]) -> str:
    return "```json\n" + json.dumps({"queries": [{"query": q, "should_trigger": s} for q, s in queries]}) + "\n```"


def teacher_of(*answers: str):
    """A scripted teacher answering its requests with ``answers`` in turn (the last one repeated)."""
    seen: list[list[dict]] = []

    def script(system: str, messages: list, params: dict) -> str:
        assert system == QUERIES_SYSTEM_PROMPT
        seen.append(messages)
        return answers[min(len(seen), len(answers)) - 1]

    return script, seen


LEAKY = _answer([
    ("Run the hf-cli skill to fetch gpt2", True),  # names the skill
    ("Pull the gpt2 weights to my laptop", True),
    ("I need download, upload, repos, cache and auth with hf sorted", True),  # quotes the description
    ("Push my checkpoint folder to a new model repo", True),
    ("How do I download a file with curl from GitHub?", False),  # near miss: download, not the Hub
    ("Which cache eviction policy suits a CPU?", False),  # near miss: cache
    ("Bake a loaf of sourdough bread", False),  # unrelated
])  # fmt: skip


def test_leaking_queries_are_dropped_and_counted_and_near_misses_marked(skill: Path, tmp_path: Path) -> None:
    script, seen = teacher_of(LEAKY)
    lines: list[str] = []
    with running_llm_server(script) as srv:
        sets, label = generate_query_sets([require_skill(skill)], 4, teacher=f"openai-compatible:t@{srv.openai_base_url}",
                                          say=lines.append)  # fmt: skip
    assert len(seen) == 1  # usable at once: no retry
    qs = sets["hf-cli"]
    assert [(q.query, q.should_trigger) for q in qs.queries] == [
        ("Pull the gpt2 weights to my laptop", True),
        ("Push my checkpoint folder to a new model repo", True),
        ("How do I download a file with curl from GitHub?", False),
        ("Which cache eviction policy suits a CPU?", False),
    ]
    assert [d["why"] for d in qs.dropped] == ["names the skill", "quotes the description"]
    assert len(qs.near_misses) == 2
    assert "2 leaking should-trigger queries dropped (names the skill, quotes the description)" in lines[-1]
    assert "2 of them near misses" in lines[-1]
    request = seen[0][-1]["content"]
    assert DESCRIPTION in request and "2 that should trigger this skill and 2 near misses" in request


def test_negatives_that_are_not_near_misses_are_sent_back(skill: Path) -> None:
    unrelated = _answer([("Pull the gpt2 weights", True), ("Push my checkpoint to a model repo", True),
                         ("Bake sourdough bread", False), ("Tune a guitar", False)])  # fmt: skip
    script, seen = teacher_of(unrelated, LEAKY)
    with running_llm_server(script) as srv:
        sets, _ = generate_query_sets([require_skill(skill)], 4, teacher=f"openai-compatible:t@{srv.openai_base_url}")
    assert len(seen) == 2
    assert "share a word with the skill's name or description" in seen[1][-1]["content"]
    assert len(sets["hf-cli"].near_misses) == 2


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("Sure! Here are some great queries.", "no JSON found"),
        ('{"queries": {"query": "x"}}', 'reply with {"queries"'),
        ('{"queries": []}', "the list of queries is empty"),
        ('{"queries": [{"query": "pull gpt2", "should_trigger": "yes"}]}', "should_trigger: must be true or false"),
        ('{"queries": [{"query": "' + "pull gpt2 " * 80 + '", "should_trigger": true}]}', "one request, at most 600"),
        (_answer([("Pull the gpt2 weights", True)] * 3 + [("Download a file with curl", False)] * 3), "1 usable should-trigger"),
        (_answer([("Pull the gpt2 weights", True), ("pull the GPT2 weights", False)]), "both as should-trigger and as should-not"),
        (_answer([("Use the hf-cli skill", True), ("Download a file with curl", False)]), "they named the skill"),
    ],
)
def test_bad_teacher_output_is_retried_then_one_line_naming_the_skill(skill: Path, bad: str, problem: str) -> None:
    script, seen = teacher_of(bad)
    with running_llm_server(script) as srv, pytest.raises(UpskillError) as err:
        queries_for_triggers(skill, 8, teacher=f"openai-compatible:t@{srv.openai_base_url}", write=True)
    message = str(err.value)
    assert len(seen) == 3 and "\n" not in message  # asked 3 times, then one line
    assert "trigger queries for skill 'hf-cli'" in message and problem in message, message
    assert problem in seen[1][-1]["content"]  # the problem went back to the teacher
    assert not (skill / "skill_meta.json").exists()  # nothing half-written


def test_a_bad_answer_then_a_good_one_is_used(skill: Path) -> None:
    script, seen = teacher_of("not json at all", LEAKY)
    with running_llm_server(script) as srv:
        gen = queries_for_triggers(skill, 4, teacher=f"openai-compatible:t@{srv.openai_base_url}")
    assert len(seen) == 2 and gen is not None
    assert [q.should_trigger for q in gen.skill.meta.triggers] == [True, True, False, False]
    assert not (skill / "skill_meta.json").exists()  # the run gets them in memory only


def test_write_keeps_the_rest_of_skill_meta(skill: Path, tmp_path: Path) -> None:
    (skill / "skill_meta.json").write_text(json.dumps({"schema_version": 1, "owner": "hub team", "cases": []}))
    script, _ = teacher_of(LEAKY)
    with running_llm_server(script) as srv:
        gen = queries_for_triggers(skill, 4, teacher=f"openai-compatible:t@{srv.openai_base_url}", write=True)
    data = json.loads((skill / "skill_meta.json").read_text())
    assert data["owner"] == "hub team" and data["cases"] == [] and len(data["triggers"]) == 4
    assert gen is not None and gen.written == skill / "skill_meta.json"
    saved = gen.save(tmp_path / "run")
    assert [q["query"] for q in json.loads(saved.read_text())] == [t["query"] for t in data["triggers"]]
    # the skill has queries now: nothing is generated for it again
    assert queries_for_triggers(skill, 4, teacher="openai-compatible:t@http://127.0.0.1:9/v1") is None


def test_the_leak_rules() -> None:
    assert names_skill("run hf-cli on it", "hf-cli") and not names_skill("use the hf cli", "hf-cli")
    assert names_skill("use the pdf skill here", "pdf") and not names_skill("merge two PDF files", "pdf")
    assert not names_skill("the hf-cli-extra tool", "hf-cli")
    assert quotes_description("please: Download, UPLOAD repos cache and auth!", DESCRIPTION)  # 6 words, any case
    assert not quotes_description("download upload repos with hf", DESCRIPTION)
    assert quotes_description("the tiny thing", "Tiny thing") and not quotes_description("a tiny", "Tiny thing")
