"""Issue 28 / 22: test files in the shapes other tools write, read as those tools read them.

The files are written the way their tools write them (upskill's ``verifiers`` tests as in
huggingface/skills ``evals/<skill>/smoke.json``; agentskills.io ``evals/evals.json`` as
skill-creator's references/schemas.md and agent-skills-eval's README show it), and each
test is named after the finding it guards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.cases import (
    FORMAT_AGENTSKILLS_EVALS,
    FORMAT_UPSKILL_VERIFIERS,
    CasesError,
    load_cases_file,
    parse_meta,
)
from upskill_hub.lift.grading.assertions import check_sync, evaluate_case

SMOKE = {
    "cases": [
        {
            "input": "How do I push a dataset to the Hub from Python?",
            "verifiers": [{"type": "contains", "values": ["push_to_hub", "datasets"]}],
        },
        {
            "input": "Which command logs me in to Hugging Face?",
            "verifiers": [{"type": "contains", "values": ["hf auth login"]}],
        },
        {
            "input": "Name the file format the Hub converts datasets to.",
            "verifiers": [{"type": "contains", "values": ["Parquet"]}],
        },
    ]
}

#: What a model answered for each smoke case (case differs from the expected strings).
ANSWERS = [
    "Load it with the Datasets library and call PUSH_TO_HUB('me/data').",  # all values, other case
    "Run `HF AUTH LOGIN` and paste a token.",
    "It converts them to JSON lines.",  # Parquet missing
]


def upskill_rule(values: list[str], output: str) -> bool:
    """upskill's check (upskill.evaluate): every value, compared lower-cased."""
    low = output.lower()
    return all(v.lower() in low for v in values)


def test_finding_1_upskill_verifiers_smoke_json_is_read(tmp_path: Path):
    p = tmp_path / "evals" / "hf-datasets" / "smoke.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(SMOKE, indent=2))
    meta = load_cases_file(p)
    assert [len(c.asserts) for c in meta.cases] == [1, 1, 1]
    a = meta.cases[0].asserts[0]
    assert a.type == "contains" and a.value == ["push_to_hub", "datasets"] and a.case_sensitive is False


def test_finding_4_upskill_format_is_named_not_upskill_hub_schema(tmp_path: Path):
    p = tmp_path / "smoke.json"
    p.write_text(json.dumps(SMOKE))
    line = load_cases_file(p).describe("smoke.json")
    assert line == f"3 test cases from smoke.json ({FORMAT_UPSKILL_VERIFIERS})"
    assert "upskill-hub schema" not in line
    # a bare list of upskill verifier cases is named the same way
    p.write_text(json.dumps(SMOKE["cases"]))
    assert load_cases_file(p).source_format == FORMAT_UPSKILL_VERIFIERS


def test_finding_2_upskill_tests_score_as_in_upskill_case_by_case():
    meta = parse_meta(SMOKE)
    for raw, case, answer in zip(SMOKE["cases"], meta.cases, ANSWERS, strict=True):
        got = check_sync(case.asserts[0], answer)
        assert got.passed == upskill_rule(raw["verifiers"][0]["values"], answer)
        assert got.extra["case_sensitive"] is False and got.evidence.startswith("(case-insensitive)")
    # upskill's older "expected" shape follows the same rule
    old = parse_meta({"cases": [{"input": "q", "expected": {"contains": ["Parquet"]}}]})
    assert check_sync(old.cases[0].asserts[0], "parquet files").passed


def test_finding_2_case_sensitive_is_explicit_per_assertion():
    meta = parse_meta({"schema_version": 1, "cases": [{"id": "a", "input": "q", "assert": [
        {"type": "contains", "value": "Parquet"},
        {"type": "contains", "value": "Parquet", "case_sensitive": False},
        {"type": "equals", "value": "YES", "case_sensitive": False},
    ]}, {"id": "b", "input": "q", "verifiers": [{"type": "contains", "values": ["X"], "case_sensitive": True}]}]})
    ours, relaxed, eq = meta.cases[0].asserts
    assert not check_sync(ours, "parquet").passed and check_sync(ours, "parquet").evidence.startswith("(case-sensitive)")
    assert check_sync(relaxed, "parquet").passed
    assert check_sync(eq, " yes\n").passed
    assert not check_sync(meta.cases[1].asserts[0], "x").passed
    assert meta.cases[0].asserts[1].to_dict()["case_sensitive"] is False
    with pytest.raises(CasesError, match="case_sensitive"):
        parse_meta({"cases": [{"input": "q", "assert": [{"type": "is-json", "case_sensitive": False}]}]})


def test_finding_1_unknown_verifier_type_is_one_line():
    with pytest.raises(CasesError) as exc:
        parse_meta({"cases": [{"input": "q", "verifiers": [{"type": "python", "values": ["x"]}]}]})
    assert "unknown upskill verifier type 'python'" in str(exc.value) and "\n" not in str(exc.value)


# ----- agentskills.io evals/evals.json ----------------------------------------------------

#: As skill-creator's references/schemas.md writes it: numeric ids, "expectations".
SKILL_CREATOR_EVALS = {
    "skill_name": "greeting",
    "evals": [
        {
            "id": 1,
            "prompt": "Greet the team about the attached notes.",
            "expected_output": "A greeting that uses the house word",
            "files": ["evals/files/notes.txt"],
            "expectations": ["The answer uses the word BANANA", "The answer is friendly"],
        },
        {"id": 2, "prompt": "What is the capital of France?", "should_trigger": False, "expectations": []},
    ],
}

#: As agent-skills-eval's README example: string ids, "name", "assertions".
AGENT_SKILLS_EVAL_EVALS = {
    "skill_name": "greeting",
    "evals": [
        {
            "id": "basic",
            "name": "basic behavior",
            "prompt": "Use the attached data to greet the team.",
            "files": ["evals/files/notes.txt"],
            "expected_output": "The response uses the house word.",
            "assertions": ["The answer uses the word BANANA"],
        },
        {"id": "promoted", "prompt": "Greet me.", "expected_output": "The answer uses the word BANANA"},
    ],
}


def _skill_with_evals(root: Path, evals: dict) -> Path:
    from _evalkit import make_skill

    folder = make_skill(root)
    (folder / "skill_meta.json").unlink()  # the skill's tests are its evals/evals.json
    (folder / "evals" / "files").mkdir(parents=True)
    (folder / "evals" / "files" / "notes.txt").write_text("Team offsite on Friday.\n")
    (folder / "evals" / "evals.json").write_text(json.dumps(evals, indent=2))
    return folder


def test_agentskills_evals_json_reads_prompts_files_rubrics_and_negative_controls(tmp_path: Path):
    from upskill_hub.skill import require_skill

    skill = require_skill(_skill_with_evals(tmp_path, SKILL_CREATOR_EVALS))
    meta = skill.meta
    assert meta.source_format == FORMAT_AGENTSKILLS_EVALS
    (case,) = meta.cases
    assert case.id == "eval-1" and "Team offsite on Friday." in case.input and "evals/files/notes.txt" in case.input
    assert [a.type for a in case.asserts] == ["llm-rubric", "llm-rubric"]
    assert all(a.judge_required for a in case.asserts)
    assert [(t.query, t.should_trigger) for t in meta.triggers] == [("What is the capital of France?", False)]
    assert meta.describe("evals/evals.json") == (
        "1 test case from evals/evals.json (agentskills.io evals.json), 1 trigger query (1 should not trigger)"
    )
    # agent-skills-eval: expected_output alone becomes the rubric
    meta2 = parse_meta(AGENT_SKILLS_EVAL_EVALS, skill.path)
    assert [c.id for c in meta2.cases] == ["basic", "promoted"] and meta2.cases[0].description == "basic behavior"
    assert meta2.cases[1].asserts[0].value == "The answer uses the word BANANA"


@pytest.mark.parametrize("rel", ["../outside.txt", "/etc/passwd", "evals/files/missing.txt"])
def test_agentskills_evals_json_input_files_are_path_safe(tmp_path: Path, rel: str):
    folder = _skill_with_evals(tmp_path, SKILL_CREATOR_EVALS)
    (tmp_path / "outside.txt").write_text("secret")
    bad = {"evals": [{"id": 1, "prompt": "p", "files": [rel], "assertions": ["ok"]}]}
    with pytest.raises(CasesError) as exc:  # a binary file is staged for agents: tests/lift/harness/test_harness_input_files.py
        parse_meta(bad, folder)
    assert "\n" not in str(exc.value) and "secret" not in str(exc.value)


def test_agentskills_evals_json_symlinked_input_out_of_skill_is_refused(tmp_path: Path):
    folder = _skill_with_evals(tmp_path, SKILL_CREATOR_EVALS)
    (tmp_path / "outside.txt").write_text("secret")
    (folder / "evals" / "files" / "link.txt").symlink_to(tmp_path / "outside.txt")
    bad = {"evals": [{"id": 1, "prompt": "p", "files": ["evals/files/link.txt"], "assertions": ["ok"]}]}
    with pytest.raises(CasesError, match="outside the skill folder"):
        parse_meta(bad, folder)


def test_imported_rubric_without_judge_is_an_error_not_a_skip():
    import asyncio

    from upskill_hub.lift.grading.assertions import JudgeError, requires_explicit_judge

    meta = parse_meta(AGENT_SKILLS_EVAL_EVALS | {"evals": AGENT_SKILLS_EVAL_EVALS["evals"][1:]})
    assert requires_explicit_judge(meta.cases)
    with pytest.raises(JudgeError):
        asyncio.run(evaluate_case(meta.cases[0], "BANANA", judges={}))


# ----- end to end through the real SDKs, a scripted model and a scripted judge ----------

FAKE_KEY = "sk-" + "test-0123456789abcdefghijklmnop"


def _script(system: str, messages: list[dict], params: dict) -> str:
    """Model: BANANA with the skill, plain words without. Judge: PASS iff the rubric's word is there."""
    from upskill_hub.lift.grading.assertions import JUDGE_SYSTEM_PROMPT

    user = messages[-1]["content"]
    if system == JUDGE_SYSTEM_PROMPT:
        answer = user.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        rubric = user.split("<rubric>\n", 1)[1].split("\n</rubric>", 1)[0]
        ok = "BANANA" in answer if "BANANA" in rubric else "hello" in answer.lower()
        return json.dumps({"pass": ok, "reason": "scripted"})
    return "BANANA hello team" if "BANANA" in system else "hello team"


@pytest.mark.slow
@pytest.mark.parametrize("evals", [SKILL_CREATOR_EVALS, AGENT_SKILLS_EVAL_EVALS], ids=["skill-creator", "agent-skills-eval"])
def test_agentskills_evals_json_end_to_end_with_scripted_judge(tmp_path: Path, monkeypatch, evals: dict):
    from upskill_hub.errors import UpskillError
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    folder = _skill_with_evals(tmp_path, evals)
    with running_llm_server(_script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        with pytest.raises(UpskillError, match="pass --judge MODEL"):
            run_eval(folder, ["openai:gpt-4.1-mini"], EvalOptions(output_dir=tmp_path / "o", plots=False))
        assert srv.calls == 0  # refused before any call
        res = run_eval(
            folder,
            ["openai:gpt-4.1-mini"],
            EvalOptions(judge="openai:judge-model", output_dir=tmp_path / "o", plots=False),
        )
    n_cases = len([e for e in evals["evals"] if e.get("should_trigger", True)])
    assert len(res.rows) == 2 * n_cases and all(r.error is None for r in res.rows)
    by = {(r.condition, r.case_id): r for r in res.rows}
    # Hand count: with the skill every rubric holds; the baseline never says BANANA.
    for case_id in {r.case_id for r in res.rows}:
        assert by[("with_skill", case_id)].passed is True
        assert by[("baseline", case_id)].passed is False
    assert res.summary.judge_model == "openai:judge-model"


def test_agentskills_evals_json_input_fifo_or_giant_is_refused_not_read(tmp_path: Path, monkeypatch):
    import os

    from upskill_hub.cases import budgets

    folder = _skill_with_evals(tmp_path, SKILL_CREATOR_EVALS)
    os.mkfifo(folder / "evals" / "files" / "pipe")
    bad = {"evals": [{"id": 1, "prompt": "p", "files": ["evals/files/pipe"], "assertions": ["ok"]}]}
    with pytest.raises(CasesError, match="evals/files/pipe"):
        parse_meta(bad, folder)  # returns at once: a FIFO is never opened
    monkeypatch.setattr(budgets, "EVAL_FILE_MAX_BYTES", 10)
    big = {"evals": [{"id": 1, "prompt": "p", "files": ["evals/files/notes.txt"], "assertions": ["ok"]}]}
    with pytest.raises(CasesError, match="notes.txt"):
        parse_meta(big, folder)
