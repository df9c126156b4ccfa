"""Issue 47 item 9: an assertion that passes without the skill and fails with it is flagged.

3/3 in the baseline and 0/3 with the skill means the skill breaks what the model did right
alone; the analysis names it ("worse with the skill") in summary.json, the report and
benchmark.json's notes, like its other flags.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from _evalkit import make_skill
from rich.console import Console

from upskill_hub.lift.figures.assertion_audit import FLAKY, WORSE_WITH_SKILL, audit_rows
from upskill_hub.rundir.schema import ResultRow


def row(condition: str, repeat: int, outcomes: list[bool]) -> ResultRow:
    items = [
        {"type": "contains", "value": f"w{i}", "passed": ok, "evidence": ""} for i, ok in enumerate(outcomes)
    ]
    return ResultRow(
        run_id="r", timestamp="t", tool_version="t", skill_name="s", skill_version="v", model="m",
        provider="p", params="{}", condition=condition, case_id="c", repeat=repeat, passed=all(outcomes),
        assertions_passed=sum(outcomes), assertions_total=len(outcomes), assertion_details=json.dumps(items), output="",
    )  # fmt: skip


def kinds(base: list[bool], skill: list[bool]) -> set[str]:
    rows = [row("baseline", r, [ok]) for r, ok in enumerate(base)] + [
        row("with_skill", r, [ok]) for r, ok in enumerate(skill)
    ]
    return {f.kind for f in audit_rows(rows).flags}


def test_passing_without_the_skill_and_failing_with_it_is_flagged():
    assert kinds([True] * 3, [False] * 3) == {WORSE_WITH_SKILL}
    # 10 repeats: 9/10 without and 1/10 with is still the skill's doing (and flaky in both)
    assert kinds([r != 0 for r in range(10)], [r == 0 for r in range(10)]) == {WORSE_WITH_SKILL, FLAKY}
    # 2/3 without is no clear pass; 1/3 with is no clear failure; the other way round is a gain
    assert kinds([True, True, False], [False] * 3) == {FLAKY}
    assert kinds([True] * 3, [True, False, False]) == {FLAKY}
    assert kinds([False] * 3, [True] * 3) == set()
    # without a baseline there is nothing to be worse than
    assert {f.kind for f in audit_rows([row("with_skill", r, [False]) for r in range(3)]).flags} == set()


CASES = [
    # the baseline answers "hello there"; with the skill "hello BANANA": "there" is lost
    {"id": "polite", "input": "Greet me.", "assert": [{"type": "contains", "value": "there"}]},
    {"id": "fruit", "input": "Greet me with fruit.", "assert": [{"type": "contains", "value": "BANANA"}]},
]


def test_a_scripted_eval_shows_it_in_summary_report_and_notes(tmp_path: Path, monkeypatch):
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.lift.report import print_report
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skill = make_skill(tmp_path / "skills", cases=CASES)
    with running_llm_server(
        lambda system, messages, params: "hello BANANA" if "BANANA" in system else "hello there"
    ) as srv:
        res = run_eval(
            skill, ["openai:gpt-4.1-mini"],
            EvalOptions(base_url=srv.openai_base_url, output_dir=tmp_path / "out", plots=False, runs=3),
        )  # fmt: skip
    summary = json.loads((res.run_dir / "summary.json").read_text())
    (flag,) = summary["assertion_flags"]
    assert (flag["kind"], flag["case_id"], flag["index"]) == (WORSE_WITH_SKILL, "polite", 0)
    assert (
        flag["baseline_passed"],
        flag["baseline_calls"],
        flag["with_skill_passed"],
        flag["with_skill_calls"],
    ) == (3, 3, 0, 3)

    console = Console(width=250, record=True, file=io.StringIO())
    print_report(res.summary, console)
    report = console.export_text()
    assert (
        "1 of 2 assertions is worse with the skill (passes without the skill in ≥ 90% of calls and fails with it"
        in report
    )
    assert "case 'polite' assertion 1 (contains: there): baseline 3/3, with skill 0/3 passed" in report
    notes = json.loads((res.run_dir / "benchmark.json").read_text())["notes"]
    assert any(n.startswith("case 'polite' assertion 1 (contains: there): baseline 3/3, with skill 0/3 passed - ")
               and "the skill makes these answers worse" in n for n in notes)  # fmt: skip
