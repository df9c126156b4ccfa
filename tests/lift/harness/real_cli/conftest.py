"""Fixtures for tests that drive the real agent CLIs (npm packages) against the scripted server.

``bash .ci/setup`` installs the four pinned CLIs into ``.ci/agent-clis/`` (ignored by git).
Where one is missing the test is skipped with the line that installs it; under
``UPSKILL_REQUIRE_REAL_CLIS=1`` (what ``.ci/run`` sets) a missing CLI fails the test instead,
so CI can never pass by skipping them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _real_cli_kit import CLI_DIR, SKILL, SKILL_MD


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No provider variable of the machine reaches the CLI; a user HOME of the test's own."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "OPENCODE", "CLAUDE_")):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{CLI_DIR}{os.pathsep}{os.environ['PATH']}")
    return monkeypatch


@pytest.fixture
def hello_skill(tmp_path) -> Path:
    """A skill whose one case asks for the hello file: passes only when the skill loaded and the file is there."""
    d = tmp_path / "skills" / SKILL
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    cases = {
        "schema_version": 1,
        "cases": [
            {
                "id": "hello",
                "input": "Use the hello-skill skill to say hello in a file.",
                "assert": [
                    {"type": "skill-loaded"},
                    {"type": "file-contains", "path": "hello.txt", "value": "HELLO-FROM-SKILL"},
                ],
            }
        ],
    }
    (d / "skill_meta.json").write_text(json.dumps({"name": SKILL, **cases}), encoding="utf-8")
    return d
