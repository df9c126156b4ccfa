"""Issue 36 must-show: the evals.json dialects evaluate end to end, with the results a hand count gives.

The 5 agent-skill-eval examples (``tests/dialect_fixtures/agent_skill_eval``, in the shapes of
tardigrde/skill-evals' ``examples/*/evals/evals.json``) run through ``upskill-hub eval`` in
inject mode, and agent-skills-eval's example (``params`` and ``tool_assertions``) in catalog
mode, against the scripted OpenAI-compatible server, with a scripted judge.

The scripted model starts its answer with SKILLED only when the skill body reached it (the
skills' bodies say so). The scripted judge passes a rubric when the answer says SKILLED,
and a negative control's turned-around git assertion ("must NOT have happened") when it
does not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.grading.assertions import JUDGE_SYSTEM_PROMPT
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.rundir import read_results
from upskill_hub.testing.llm_server import running_llm_server

FIX = Path(__file__).parent.parent / "dialect_fixtures"
KEY = "sk-" + "test-0123456789abcdefghijklmnop"

#: Hand count per agent-skill-eval example: (assertions, passed with the skill, passed in the
#: baseline, cases passed with the skill, cases passed in the baseline). Every rubric holds
#: with the skill and none without, except the negative controls' git assertions, which hold
#: only without it (commit-push-pr: 4 of 5, write-release-notes: 2 of 4).
#: commit-push-pr's and write-release-notes' git checks grade an agent's repository: a --model run is refused
#: (tests/lift/test_agent_skill_eval_state.py runs it with an agent).
HAND = {
    "fix-failing-tests": (4 + 4 + 4 + 3, 15, 0, 4, 0),
    # their 5 and 4 'The output contains "X"' sentences are graded on the answer, as
    # agent-skill-eval grades them (issue 47 item 5), and the scripted answer holds none of them
    "review-diff": (6 + 5 + 3, 14 - 5, 0, 0, 0),
    "validate-config": (7 + 5 + 3 + 3, 18 - 4, 0, 0, 0),
}


def script(system: str, messages: list[dict], params: dict) -> str:
    user = messages[-1]["content"]
    if system == JUDGE_SYSTEM_PROMPT:
        answer = user.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        rubric = user.split("<rubric>\n", 1)[1].split("\n</rubric>", 1)[0]
        ok = ("SKILLED" in answer) != ("must NOT have happened" in rubric)
        return json.dumps({"pass": ok, "reason": "scripted"})
    return "SKILLED: done as the skill says" if "begin every answer with SKILLED" in system else "plain: done"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


def test_agent_skill_eval_examples_through_the_cli(tmp_path: Path, capsys, monkeypatch):
    with running_llm_server(script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        for name, (total, with_ok, base_ok, with_cases, base_cases) in HAND.items():
            out = tmp_path / "runs" / name
            code, stdout, err = run_cli(
                ["eval", str(FIX / "agent_skill_eval" / "skills" / name),
                 "--tests", str(FIX / "agent_skill_eval" / "examples" / name / "evals" / "evals.json"),
                 "--model", "openai:gpt-4.1-mini", "--judge", "openai:judge-model", "--no-plots", "-o", str(out)],
                capsys, monkeypatch,
            )  # fmt: skip
            assert code == 0, err
            assert "unknown eval keys" not in err + stdout and "warning" not in err
            (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
            rows = read_results(run_dir)
            assert not any(r.error for r in rows)
            by_cond: dict[str, list] = {"with_skill": [], "baseline": []}
            for r in rows:
                by_cond[r.condition].append(r)
            assert sum(r.assertions_total for r in by_cond["with_skill"]) == total, name
            got = tuple(sum(r.assertions_passed for r in by_cond[c]) for c in ("with_skill", "baseline"))
            cases = tuple(sum(bool(r.passed) for r in by_cond[c]) for c in ("with_skill", "baseline"))
            assert (got, cases) == ((with_ok, base_ok), (with_cases, base_cases)), name
    for name in ("commit-push-pr", "write-release-notes"):
        code, stdout, err = run_cli(
            ["eval", str(FIX / "agent_skill_eval" / "skills" / name),
             "--tests", str(FIX / "agent_skill_eval" / "examples" / name / "evals" / "evals.json"),
             "--model", "openai:gpt-4.1-mini", "--judge", "openai:judge-model", "--no-plots", "-o", str(tmp_path / "x")],
            capsys, monkeypatch,
        )  # fmt: skip
        assert code != 0 and "'git-branch-created' grades an agent's workspace" in err


def test_agent_skills_eval_example_in_catalog_mode(tmp_path: Path, capsys, monkeypatch):
    folder = FIX / "agent_skills_eval" / "best-month"
    with running_llm_server(script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)  # the judge's endpoint
        res = run_eval(
            folder, ["openai:gpt-4.1-mini"],
            EvalOptions(base_url=srv.openai_base_url, judge="openai:judge-model", output_dir=tmp_path / "o",
                        plots=False, modes=("catalog",), distractors="none"),
        )  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "'params.reasoning_effort', 'runtime_checks'" in err
    rows = {(r.condition, r.case_id): r for r in read_results(res.run_dir)}
    assert set(rows) == {(c, i) for c in ("with_skill", "baseline") for i in ("top-month", "loads-skill")}
    assert not any(r.error for r in rows.values()), [r.error for r in rows.values()]
    # Hand count: with the skill it is loaded (load_skill {"name": "best-month"}), no file is
    # read and both rubrics hold; without it nothing is loaded, only tool-not-called holds.
    assert (
        rows[("with_skill", "top-month")].assertions_passed,
        rows[("baseline", "top-month")].assertions_passed,
    ) == (2, 0)
    assert (
        rows[("with_skill", "loads-skill")].assertions_passed,
        rows[("baseline", "loads-skill")].assertions_passed,
    ) == (3, 1)
    details = json.loads(rows[("baseline", "loads-skill")].assertion_details)
    assert [d["passed"] for d in details] == [False, False, True]
