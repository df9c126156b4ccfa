"""``report.html`` shows each case's answers and verdicts, escaped and bounded, and the eval's
``Results:`` line names it (issue 48, item 11)."""

from __future__ import annotations

import html
from pathlib import Path

from _evalkit import make_skill
from cli_runner import run_cli

from upskill_hub.lift import plots
from upskill_hub.testing.llm_server import running_llm_server

HOSTILE = "<script>alert('x')</script> no fruit here"
CASES = [
    {"id": "greet-case", "input": "Say hello.", "assert": [{"type": "contains", "value": "BANANA<b>"}]},
    {"id": "long-case", "input": "Talk a lot.", "assert": [{"type": "not-contains", "value": "ERROR"}]},
]


def script(system, messages, params):
    text = (
        messages[-1]["content"] if isinstance(messages[-1]["content"], str) else str(messages[-1]["content"])
    )
    if "Talk a lot" in text:
        return "word " * 3000 + "THE-END"
    return "BANANA<b> yes" if "BANANA" in system else HOSTILE


def _eval(tmp_path: Path, capsys, monkeypatch, *extra: str) -> tuple[str, Path]:
    skill = tmp_path / "skills" / "greeting"
    if not skill.exists():
        make_skill(tmp_path / "skills", cases=CASES)
    out_dir = tmp_path / ("runs-no-plots" if extra else "runs")
    with running_llm_server(script) as srv:
        model = f"openai-compatible:toy@{srv.openai_base_url}"
        code, out, err = run_cli(
            ["eval", str(skill), "--model", model, "--output", str(out_dir), *extra], capsys, monkeypatch
        )
    assert code == 0, err
    (run_dir,) = [p for p in out_dir.iterdir() if p.is_dir()]
    return out, run_dir


def test_report_shows_a_failing_answer_and_its_evidence_escaped(tmp_path: Path, capsys, monkeypatch):
    out, run_dir = _eval(tmp_path, capsys, monkeypatch)
    page = (run_dir / plots.REPORT_HTML).read_text(encoding="utf-8")
    section = page[page.index("Answers per case") :]
    # the baseline's failing answer, as text: no live <script> anywhere on the page
    assert html.escape(HOSTILE) in section and "<script>" not in page
    assert "greet-case" in section and "FAIL" in section and "PASS" in section
    # the failed assertion: what it checks and its evidence, escaped too
    assert "✗ fail" in section and html.escape("contains: BANANA<b>") in section and "<b>BANANA" not in page
    # a long answer is cut, and says so; its end is not on the page
    assert "more characters (in results.jsonl)" in section and "THE-END" not in page
    # the Results line points to the page
    results = [line for line in out.splitlines() if line.startswith("Results:")]
    assert results and str(run_dir / plots.REPORT_HTML) in results[0], out
    # --no-plots writes no page: the line names none
    out, run_dir = _eval(tmp_path, capsys, monkeypatch, "--no-plots")
    assert not (run_dir / plots.REPORT_HTML).exists()
    results = [line for line in out.splitlines() if line.startswith("Results:")]
    assert results and plots.REPORT_HTML not in results[0], out


def test_a_big_run_lists_a_bounded_number_of_answers(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setattr(plots, "MAX_ANSWERS", 3)
    _out, run_dir = _eval(tmp_path, capsys, monkeypatch)
    section = (run_dir / plots.REPORT_HTML).read_text(encoding="utf-8").split("Answers per case")[1]
    assert section.count("<details") == 3 and "Showing 3 of 4 answers" in section
