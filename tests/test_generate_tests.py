"""``eval SKILL --generate-tests N`` (issue 36): a teacher writes cases for a skill without any, then they run.

The scripted OpenAI-compatible server is both the teacher (it answers generate's test-writing
system prompt with cases) and the model (it answers with the skill's fact only when the skill
is in its system prompt), so the lift of the generated cases is known: 0% -> 100%.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.generate.teacher import TESTS_SYSTEM_PROMPT
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" "test-0123456789abcdefghijklmnop"
FACT = "ZEBRA-7731"
N = 3


def cases_answer(n: int = N) -> str:
    cases = [{"id": f"fact-{i}", "input": f"Which build tag does release {i} of the widget use?",
              "assert": [{"type": "contains", "value": FACT}]} for i in range(n)]  # fmt: skip
    return "Here they are:\n```json\n" + json.dumps({"cases": cases}) + "\n```"


def script(system: str, messages: list, params: dict) -> str:
    if system == TESTS_SYSTEM_PROMPT:
        return cases_answer()
    return f"The tag is {FACT}." if FACT in system else "I do not know the tag."


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


def make_skill(root: Path, meta: dict | None = None) -> Path:
    dest = root / "widget-tags"
    Skill.create("widget-tags", "Look up the widget build tags. Use when a widget release tag is asked.",
                 f"# Widget tags\n\nEvery widget release is built with tag {FACT}.\n").write(dest)  # fmt: skip
    if meta is not None:
        (dest / "skill_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return dest


def _eval(skill: Path, srv, out: Path, *extra: str) -> list[str]:
    return ["eval", str(skill), "-m", f"openai-compatible:scripted@{srv.openai_base_url}", "--teacher",
            f"openai-compatible:teacher@{srv.openai_base_url}", "-o", str(out), "--no-plots", *extra]  # fmt: skip


def test_generate_tests_then_evaluate_skill_meta_untouched_without_write(tmp_path: Path, capsys, monkeypatch) -> None:
    meta = {"schema_version": 1, "owner": "widgets team", "cases": []}
    skill = make_skill(tmp_path / "skills", meta)
    before = (skill / "skill_meta.json").read_bytes()
    with running_llm_server(script) as srv:
        code, out, err = run_cli([*_eval(skill, srv, tmp_path / "runs", "--generate-tests", str(N), "--json")], capsys, monkeypatch)
        assert code == 0, err
        teacher_calls = [r for r in srv.completion_requests if r.system == TESTS_SYSTEM_PROMPT]
        assert len(teacher_calls) == 1
        assert FACT in teacher_calls[0].body["messages"][-1]["content"]  # the teacher saw the skill
        assert len(srv.completion_requests) == 1 + 2 * N  # the teacher, then N cases x 2 conditions
    summary = json.loads(out)
    rates = {c["condition"]: c["pass_rate"] for c in summary["conditions"]}
    assert rates == {"baseline": 0.0, "with_skill": 1.0}
    assert (skill / "skill_meta.json").read_bytes() == before  # untouched without --write
    (run_dir,) = (tmp_path / "runs").iterdir()
    saved = json.loads((run_dir / "generated-tests.json").read_text())
    assert [c["id"] for c in saved["cases"]] == [f"fact-{i}" for i in range(N)]
    assert saved["generated_by"]["teacher"].startswith("openai-compatible:teacher@")
    assert "generated test cases" in err and "skill_meta.json unchanged" in err


def test_with_write_the_cases_go_into_skill_meta_and_the_rest_is_kept(tmp_path: Path, capsys, monkeypatch) -> None:
    meta = {"schema_version": 1, "owner": "widgets team", "cases": []}
    skill = make_skill(tmp_path / "skills", meta)
    with running_llm_server(script) as srv:
        args = _eval(skill, srv, tmp_path / "runs", "--generate-tests", str(N), "--write")
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        written = json.loads((skill / "skill_meta.json").read_text())
        assert written["owner"] == "widgets team" and written["schema_version"] == 1
        assert [c["id"] for c in written["cases"]] == [f"fact-{i}" for i in range(N)]
        assert not [p for p in skill.iterdir() if p.name.startswith(".skill_meta")]  # no temp file left
        # The skill has cases now: a second --generate-tests uses them and asks no teacher.
        srv.clear()
        code, out, err = run_cli(_eval(skill, srv, tmp_path / "runs2", "--generate-tests", str(N)), capsys, monkeypatch)
        assert code == 0, err
        assert "3 test cases already" in err
        assert not [r for r in srv.completion_requests if r.system == TESTS_SYSTEM_PROMPT]


def test_a_skill_without_meta_gets_one_with_write(tmp_path: Path, capsys, monkeypatch) -> None:
    skill = make_skill(tmp_path / "skills")
    with running_llm_server(script) as srv:
        code, _out, err = run_cli(_eval(skill, srv, tmp_path / "runs", "--generate-tests", "2", "--write"), capsys, monkeypatch)
    assert code == 0, err
    data = json.loads((skill / "skill_meta.json").read_text())
    assert data["schema_version"] == 1 and len(data["cases"]) == 2  # the teacher wrote 3: the first 2 are kept


def test_generation_flags_that_cannot_work_are_one_line_before_any_call(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    skill = make_skill(tmp_path / "skills")
    with running_llm_server(script) as srv:
        base = _eval(skill, srv, tmp_path / "runs")
        cases = [
            (base, "--teacher go with --generate-tests N"),
            ([*base, "--generate-tests", "0"], "between 1 and 100"),
            ([*base, "--generate-tests", "2", "--resume"], "generated-tests.json --resume"),
            ([*base, "--generate-tests", "2", "--tests", str(tmp_path / "t.json")], "cannot be combined with --tests"),
        ]
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.calls == 0
    assert not (skill / "skill_meta.json").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("I cannot write tests today.", "no JSON found"),
        ('{"cases": [{"id": "a", "input": "x"}]}', "has no assertions"),
        ('{"cases": []}', "only 0 test case(s)"),
        ('{"cases": [{"id": "a", "input": "ls", "assert": [{"type": "command", "value": "rm -rf /tmp/x"}]},'
         ' {"id": "b", "input": "q", "assert": [{"type": "contains", "value": "y"}]}]}', "check type(s) command not allowed"),
        ('{"cases": [{"id": "a", "input": "same", "assert": [{"type": "contains", "value": "y"}]},'
         ' {"id": "b", "input": "Same ", "assert": [{"type": "contains", "value": "y"}]}]}', "repeats the request"),
        ('{"cases": [{"id": "a", "input": "' + "long " * 900 + '", "assert": [{"type": "contains", "value": "y"}]},'
         ' {"id": "b", "input": "q", "assert": [{"type": "contains", "value": "y"}]}]}', "at most 4000"),
    ],
)
def test_bad_teacher_cases_are_retried_then_one_line_and_nothing_written(
    bad: str, problem: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    skill = make_skill(tmp_path / "skills")
    asked: list[list] = []

    def teacher(system: str, messages: list, params: dict) -> str:
        asked.append(messages)
        return bad

    with running_llm_server(teacher) as srv:
        code, out, err = run_cli(_eval(skill, srv, tmp_path / "runs", "--generate-tests", "2", "--write"), capsys, monkeypatch)
    assert code == 1 and len(asked) == 3, err  # asked, then twice more with the problems
    lines = [ln for ln in err.splitlines() if ln.startswith("Error:")]
    assert len(lines) == 1 and "test cases for skill 'widget-tags'" in lines[0] and problem in lines[0], err
    assert problem in asked[1][-1]["content"]
    assert not (skill / "skill_meta.json").exists() and not (tmp_path / "runs").exists()
