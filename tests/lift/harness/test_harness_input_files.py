"""Input files of any type: staged into the agent's workspace, refused by text-only calls.

skill-creator's schemas.md example lists ``"files": ["evals/files/sample1.pdf"]``, relative
to the skill folder; agent-skill-eval writes paths relative to the ``evals/`` folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _harness_kit import SKILL_MD

from upskill_hub.cases import CasesError, parse_meta
from upskill_hub.errors import UpskillError
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.skill import require_skill

#: A PDF as writers make them: the binary comment on line 2 makes it non-UTF-8.
PDF = (
    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    b"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
)


def _skill(tmp_path: Path, listed: str) -> Path:
    """A skill whose evals/evals.json is skill-creator's example, listing one PDF."""
    d = tmp_path / "skills" / "widget-report"
    (d / "evals" / "files").mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    (d / "evals" / "files" / "sample1.pdf").write_bytes(PDF)
    evals = {"skill_name": "widget-report", "evals": [{
        "id": 1, "prompt": "Summarise the attached inventory PDF.", "expected_output": "A summary naming WX-42",
        "files": [listed], "expectations": ["The output names the widget code"],
    }]}  # fmt: skip
    (d / "evals" / "evals.json").write_text(json.dumps(evals))
    return d


def _pdf_agent(tmp_path: Path) -> str:
    """A ``cmd:`` agent that opens the PDF in its working directory and says what it found."""
    script = tmp_path / "bin" / "pdf-agent"
    script.write_text(
        f"#!{sys.executable}\nimport sys, pathlib\n"
        "hits = [p for p in pathlib.Path('.').rglob('sample1.pdf') if p.read_bytes().startswith(b'%PDF-')]\n"
        "print(f'WX-42 opened {hits[0].as_posix()}' if hits else 'no pdf here', '|', sys.argv[-1])\n"
    )
    script.chmod(0o755)
    return "cmd:pdf-agent {prompt}"


@pytest.mark.parametrize("listed", ["evals/files/sample1.pdf", "files/sample1.pdf"])
def test_a_pdf_is_staged_in_the_agent_workspace(agents_env, tmp_path, llm, listed):
    skill = _skill(tmp_path, listed)
    opts = EvalOptions(agents=[_pdf_agent(tmp_path)], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                       plots=False, judge=f"openai-compatible:scripted-model@{llm.openai_base_url}")  # fmt: skip
    result = run_eval(skill, [], opts)
    assert {r.condition for r in result.rows} == {"with_skill", "baseline"}
    for row in result.rows:
        assert row.error is None, row.error
        assert f"WX-42 opened {listed}" in row.output  # the very bytes, at the listed path
        assert f"File `{listed}` ({len(PDF):,} bytes, not text) is in your working directory." in row.output
        assert row.passed is True


def test_a_text_only_call_refuses_a_pdf_and_names_agent(tmp_path, llm):
    skill = _skill(tmp_path, "evals/files/sample1.pdf")
    runs = tmp_path / "runs"
    spec = f"openai-compatible:scripted-model@{llm.openai_base_url}"
    opts = EvalOptions(output_dir=runs, cache_dir=tmp_path / "cache", plots=False, judge=spec)
    with pytest.raises(UpskillError) as caught:
        run_eval(skill, [spec], opts)
    message = str(caught.value)
    assert "'evals/files/sample1.pdf' is not text" in message and "--agent" in message
    assert "\n" not in message
    assert not runs.exists()  # refused before the run folder and before any call
    assert llm.calls == 0  # no model was asked anything


def test_cases_keep_the_bytes_and_show_only_their_digest(tmp_path):
    skill = require_skill(_skill(tmp_path, "evals/files/sample1.pdf"))
    (case,) = skill.meta.cases
    assert case.files == (("evals/files/sample1.pdf", PDF),) and case.binary_files == ["evals/files/sample1.pdf"]
    shown = case.to_dict()["files"]["evals/files/sample1.pdf"]
    assert shown["bytes"] == len(PDF) and len(shown["sha256"]) == 64
    # A case written out that way is not mistaken for a text file when read back.
    with pytest.raises(CasesError, match="must map relative file paths to their text"):
        parse_meta({"cases": [case.to_dict()]})


def test_text_files_are_staged_and_still_shown_in_full(tmp_path):
    d = _skill(tmp_path, "evals/files/notes.txt")
    (d / "evals" / "files" / "notes.txt").write_text("stock: 3\n")
    (case,) = require_skill(d).meta.cases
    assert case.files == (("evals/files/notes.txt", "stock: 3\n"),) and case.binary_files == []
    assert "File `evals/files/notes.txt`:\n```\nstock: 3\n```" in case.input


def test_upskill_context_files_are_staged_too(agents_env, tmp_path):
    """upskill's ``context.files`` (name -> text) reach an agent's workspace, not only its prompt."""
    d = tmp_path / "skills" / "widget-report"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    case = {"id": "ctx", "input": "Read the stock notes.", "expected": {"contains": "stock: 3"},
            "context": {"files": {"data/notes.txt": "stock: 3\n"}}}  # fmt: skip
    (d / "skill_meta.json").write_text(json.dumps({"schema_version": 1, "cases": [case]}))
    script = tmp_path / "bin" / "cat-agent"
    script.write_text(f"#!{sys.executable}\nimport pathlib\nprint(pathlib.Path('data/notes.txt').read_text())\n")
    script.chmod(0o755)
    opts = EvalOptions(agents=["cmd:cat-agent {prompt}"], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                       plots=False)  # fmt: skip
    rows = run_eval(d, [], opts).rows
    assert [r.passed for r in rows] == [True, True] and all(r.output.strip() == "stock: 3" for r in rows)
    (parsed,) = require_skill(d).meta.cases
    assert parsed.files == (("data/notes.txt", "stock: 3\n"),) and "File `data/notes.txt`:" in parsed.input
