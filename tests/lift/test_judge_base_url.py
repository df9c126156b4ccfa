"""Issue 47 item 4: ``--judge NAME`` is served by ``--base-url`` exactly as ``--model NAME`` is.

A local endpoint's user has no other judge (evals.json rubrics refuse self-grading by
default), so ``eval -m scripted --judge scripted --base-url URL`` must grade through URL;
a judge that names its own provider or endpoint keeps it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import run_cli

from upskill_hub.lift.grading.assertions import JUDGE_SYSTEM_PROMPT
from upskill_hub.models.spec import parse_judge_spec, parse_model_spec
from upskill_hub.rundir import read_results
from upskill_hub.testing.llm_server import running_llm_server

RUBRIC = [
    {"id": "greet", "input": "Say hello.", "assert": [{"type": "llm-rubric", "value": "greets warmly"}]}
]


def script(system: str, messages: list[dict], params: dict) -> str:
    """The judge passes an answer that says BANANA; the model says it only with the skill."""
    if system == JUDGE_SYSTEM_PROMPT:
        return json.dumps({"pass": "BANANA" in messages[-1]["content"], "reason": "scripted"})
    return "BANANA hello" if "BANANA" in system else "hello"


def test_judge_name_grades_through_base_url(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skill = make_skill(tmp_path / "skills", cases=RUBRIC)
    with running_llm_server(script) as srv:
        code, out, err = run_cli(
            ["eval", str(skill), "-m", "scripted", "--judge", "scripted", "--base-url", srv.openai_base_url,
             "--no-plots", "-o", str(tmp_path / "runs")],
            capsys, monkeypatch,
        )  # fmt: skip
        judged = [r for r in srv.completion_requests if r.system == JUDGE_SYSTEM_PROMPT]
    assert code == 0, err
    # One judge call per answer (with the skill and the baseline), each for the model named.
    assert len(judged) == 2 and {r.body["model"] for r in judged} == {"scripted"}
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    verdicts = {r.condition: r.assertions_passed for r in read_results(run_dir)}
    assert verdicts == {"with_skill": 1, "baseline": 0}


URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("spec", "provider", "base_url"),
    [
        ("scripted", "openai-compatible", URL),  # a bare name: served by --base-url, like --model
        ("gpt-4.1-mini", "openai-compatible", URL),
        ("openai-compatible:judge", "openai-compatible", URL),
        ("openai:gpt-4.1", "openai", None),  # a named provider keeps its own endpoint
        ("anthropic:claude-sonnet-4-5", "anthropic", None),
        ("sonnet", "anthropic", None),
        ("openai-compatible:judge@http://10.0.0.2:8000/v1", "openai-compatible", "http://10.0.0.2:8000/v1"),
    ],
)
def test_judge_spec_takes_base_url_unless_it_names_its_own(spec: str, provider: str, base_url: str | None):
    got = parse_judge_spec(spec, URL)
    assert (got.provider, got.base_url) == (provider, base_url)


@pytest.mark.parametrize(
    "spec", ["gpt-4.1-mini", "openai:gpt-4.1", "sonnet", "local", f"openai-compatible:j@{URL}"]
)
def test_judge_spec_without_base_url_is_a_model_spec(spec: str):
    assert parse_judge_spec(spec, None) == parse_model_spec(spec)
