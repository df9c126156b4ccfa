"""Helpers for the agent-harness tests: fake agent CLIs on PATH, a scripted model, a skill.

The fake executables (``claude``, ``codex``, ``gemini``, ``opencode``) are written into a
temporary ``bin/`` put first on PATH; each runs ``fakes/fake_agent.py`` with this test's
Python, so they need nothing installed. The scripted model answers with the skill's code
and a file to write only when the skill's text reached its system prompt.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

FAKES = Path(__file__).parent / "fakes"
CLIS = ("claude", "codex", "gemini", "opencode")
API_KEY = "sk-test-harness-0123456789abcdef"
SKILL_MD = """---
name: widget-report
description: Writes widget inventory reports in the house format.
---
# Widget reports

SKILL-MARKER: the widget code is WX-42. Always write the report to out/report.md.
"""
CASES = {
    "schema_version": 1,
    "cases": [
        {
            "id": "report",
            "input": "Produce the inventory report for the widget.",
            "files": {"out/report.md": "old report\n", "notes.txt": "stock: 3\n"},
            "assert": [
                {"type": "contains", "value": "WX-42"},
                {"type": "file-contains", "path": "out/report.md", "value": "WX-42"},
            ],
        },
        {
            "id": "already-there",
            "input": "Check the widget inventory notes.",
            "files": {"done.md": "WX-42 was reported\n"},
            "assert": [{"type": "file-contains", "path": "done.md", "value": "WX-42"}],
        },
    ],
}


def script(system: str, messages: list[dict[str, str]], params: dict) -> str:
    if "impartial grader" in system:  # llm-rubric: the judge passes answers that name the code
        return '{"pass": %s, "reason": "checked"}' % (
            "true" if "WX-42" in messages[-1]["content"] else "false"
        )
    if "SKILL-MARKER" in system:
        return "The widget code is WX-42.\nWRITE out/report.md: widget WX-42 in stock"
    return "I do not know the widget code."


def write_fake_clis(bin_dir: Path, names: tuple[str, ...] = CLIS) -> Path:
    """Executables named like the CLIs, each a tiny Python script calling the shared fake."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        exe = bin_dir / name
        exe.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(FAKES)!r})\n"
            f"from fake_agent import main\nmain({name!r})\n"
        )
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir
