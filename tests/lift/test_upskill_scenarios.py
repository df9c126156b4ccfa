"""Issue 28 finding 1: huggingface/skills' upskill files (``evals/<skill>/smoke.json`` with
``verifiers`` and the ``.upskill/evals.json`` scenarios file) evaluate end to end against
the scripted model server and judge, with the pass counts a hand count under upskill's
rules gives (every verifier value present, compared lower-cased; judge criteria graded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.errors import UpskillError
from upskill_hub.lift.grading.assertions import JUDGE_SYSTEM_PROMPT
from upskill_hub.lift.scenarios import load_scenarios
from upskill_hub.testing.llm_server import running_llm_server

FAKE_KEY = "sk-" + "test-0123456789abcdefghijklmnop"

SKILL_MD = """---
name: hf-datasets
description: Push and load datasets on the Hugging Face Hub. Use when the user works with Hub datasets.
---

# Hub datasets

Always name the library `datasets` and the method push_to_hub. Say PARQUET when asked about formats.
"""

SMOKE = {
    "cases": [
        {"input": "Q1: How do I share my dataset?", "verifiers": [{"type": "contains", "values": ["push_to_hub", "Datasets"]}]},
        {"input": "Q2: Which format does the Hub convert to?", "verifiers": [{"type": "contains", "values": ["parquet"]}]},
        {"input": "Q3: How do I log in?", "verifiers": [{"type": "contains", "values": ["hf auth login"]}]},
    ]
}

SCENARIOS = {
    "scenarios": [
        {
            "id": "datasets-smoke",
            "skills": ["skills/hf-datasets"],
            "tests": "evals/hf-datasets/smoke.json",
            "judge": {"enabled": True, "criteria": ["The answer is polite"]},
        }
    ]
}

#: What the scripted model answers, with and without the skill (upper/lower case differ
#: from the verifier values on purpose: upskill ignores case).
ANSWERS = {
    ("with", "Q1"): "Use the DATASETS library and call PUSH_TO_HUB, please.",
    ("with", "Q2"): "The Hub converts to PARQUET, please note.",
    ("with", "Q3"): "Please run huggingface-cli login.",
    ("base", "Q1"): "Upload it somewhere.",
    ("base", "Q2"): "Parquet, I think.",
    ("base", "Q3"): "Run hf auth login",
}


def script(system: str, messages: list[dict], params: dict) -> str:
    user = messages[-1]["content"]
    if system == JUDGE_SYSTEM_PROMPT:
        answer = user.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        return json.dumps({"pass": "please" in answer.lower(), "reason": "scripted"})
    cond = "with" if "push_to_hub" in system else "base"
    return ANSWERS[(cond, user.split(":", 1)[0])]


def hand_count(cond: str) -> list[bool]:
    """upskill's rule for each case, plus the judge criterion (answer is polite)."""
    out = []
    for case in SMOKE["cases"]:
        ans = ANSWERS[(cond, case["input"].split(":", 1)[0])]
        values = case["verifiers"][0]["values"]
        out.append(all(v.lower() in ans.lower() for v in values) and "please" in ans.lower())
    return out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "skills-repo"
    (root / "skills" / "hf-datasets").mkdir(parents=True)
    (root / "skills" / "hf-datasets" / "SKILL.md").write_text(SKILL_MD)
    (root / "evals" / "hf-datasets").mkdir(parents=True)
    (root / "evals" / "hf-datasets" / "smoke.json").write_text(json.dumps(SMOKE, indent=2))
    (root / ".upskill").mkdir()
    (root / ".upskill" / "evals.json").write_text(json.dumps(SCENARIOS, indent=2))
    return root


def test_finding_1_scenarios_file_is_read(repo: Path):
    (sc,) = load_scenarios(repo / ".upskill" / "evals.json")
    assert sc.id == "datasets-smoke" and sc.skills == (repo / "skills" / "hf-datasets",)
    assert [len(c.asserts) for c in sc.cases] == [2, 2, 2]
    assert all(c.asserts[-1].type == "llm-rubric" and c.asserts[-1].judge_required for c in sc.cases)
    assert sc.tests_source == 'evals/hf-datasets/smoke.json (upskill tests ("verifiers"))'


@pytest.mark.parametrize("bad", [{"skills": ["../elsewhere"]}, {"tests": "/etc/passwd"}, {"judge": {"criteria": 3}}])
def test_finding_1_bad_scenarios_are_one_line_errors(repo: Path, bad: dict):
    sc = dict(SCENARIOS["scenarios"][0], **bad)
    (repo / ".upskill" / "evals.json").write_text(json.dumps({"scenarios": [sc]}))
    with pytest.raises(UpskillError) as exc:
        load_scenarios(repo / ".upskill" / "evals.json")
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("extra", [["--agent", "codex"], ["--mode", "catalog"], ["--distractors", "none"], ["--tests", "t.json"]])
def test_scenarios_refuse_the_options_they_would_drop(repo: Path, tmp_path: Path, capsys, monkeypatch, extra):
    """A scenarios run evaluates models with the skill injected: --agent, --mode and
    --distractors would be silently ignored there, so they are one-line refusals instead
    (--compare and --against combine with scenarios since issue 36: test_scenarios_ci.py)."""
    args = ["eval", "--scenarios", str(repo / ".upskill" / "evals.json"), "-o", str(tmp_path / "out"), *extra]
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code != 0 and "drop --tests, --jobs, --agent, --mode and --distractors" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_finding_1_scenarios_end_to_end_match_hand_count(repo: Path, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with running_llm_server(script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        common = ["-m", "openai:gpt-4.1-mini", "-o", str(tmp_path / "out"), "--no-plots"]
        # judge criteria without --judge: one line, no call made
        code, out, err = run_cli(["eval", str(repo), *common], capsys, monkeypatch)
        assert code != 0 and "pass --judge MODEL" in err and "scenario datasets-smoke" not in err and srv.calls == 0
        # the repository root finds .upskill/evals.json by itself; --scenarios names it
        code, out, err = run_cli(
            ["eval", "--scenarios", str(repo / ".upskill" / "evals.json"), *common, "--judge", "openai:judge",
             "--format", "json"], capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    assert "scenarios: 1 from" in err and "(upskill scenarios (.upskill/evals.json))" in err
    (summary,) = json.loads(out)
    assert summary["scenario"] == "datasets-smoke"
    by = {c["condition"]: c for c in summary["conditions"]}
    assert by["with_skill"]["passed"] == sum(hand_count("with")) == 2
    assert by["baseline"]["passed"] == sum(hand_count("base")) == 0


def test_finding_1_scenarios_shaped_like_huggingface_skills_ci(tmp_path: Path):
    """huggingface/skills (commit a24e0bb) keeps one verifier per expected string and three
    judge criteria per scenario; several scenarios share the file. Written the same way here."""
    root = tmp_path / "skills-repo"
    scenarios = []
    for name, needles in {"hf-cli": ["hf download", "bert-base-uncased", "--local-dir ./models"],
                          "huggingface-datasets": ["/splits?dataset=", "/first-rows?dataset=", "/rows?dataset="]}.items():
        (root / "skills" / name).mkdir(parents=True)
        (root / "skills" / name / "SKILL.md").write_text(SKILL_MD.replace("hf-datasets", name))
        (root / "evals" / name).mkdir(parents=True)
        case = {"input": f"Give the exact commands for {name}.",
                "verifiers": [{"type": "contains", "values": [n]} for n in needles]}
        (root / "evals" / name / "smoke.json").write_text(json.dumps({"cases": [case]}, indent=2))
        scenarios.append({"id": f"{name}-smoke", "skills": [f"skills/{name}"], "tests": f"evals/{name}/smoke.json",
                          "judge": {"enabled": True, "criteria": ["Uses current commands.", "Is concrete.", "Stays on topic."]}})
    (root / ".upskill").mkdir()
    (root / ".upskill" / "evals.json").write_text(json.dumps({"scenarios": scenarios}, indent=2))
    found = load_scenarios(root / ".upskill" / "evals.json")
    assert [s.id for s in found] == ["hf-cli-smoke", "huggingface-datasets-smoke"]
    from upskill_hub.lift.grading.assertions import check_sync

    answer = "Run HF DOWNLOAD bert-base-uncased --local-dir ./models"
    (case,) = found[0].cases
    assert [a.type for a in case.asserts] == ["contains"] * 3 + ["llm-rubric"] * 3
    got = [check_sync(a, answer).passed for a in case.asserts[:3]]
    assert got == [all(v.lower() in answer.lower() for v in [n]) for n in ["hf download", "bert-base-uncased", "--local-dir ./models"]]
    assert got == [True, True, True]
