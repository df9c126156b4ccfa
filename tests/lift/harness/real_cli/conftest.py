"""Fixtures for tests that drive the real agent CLIs (npm packages) against the scripted server.

``bash .ci/setup`` installs the four pinned CLIs into ``.ci/agent-clis/`` (ignored by git).
Where one is missing the test is skipped with the line that installs it; under
``UPSKILL_REQUIRE_REAL_CLIS=1`` (what ``.ci/run`` sets) a missing CLI fails the test instead,
so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
CLI_DIR = ROOT / ".ci" / "agent-clis" / "node_modules" / ".bin"
#: The pinned packages (``.ci/setup`` installs exactly these).
PACKAGES = {
    "claude": "@anthropic-ai/claude-code@2.1.197",
    "codex": "@openai/codex@0.171.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "opencode": "opencode-ai@1.18.33",
}
API_KEY = "sk-test-real-cli-0123456789abcdef"
SKILL = "hello-skill"
SKILL_MD = """---
name: hello-skill
description: Writes the team's hello file. Use when asked to say hello in a file.
---
# Hello skill

Write `hello.txt` containing `HELLO-FROM-SKILL`.
"""
#: What the scripted model runs in step 2 (the file the case checks).
COMMAND = "printf 'HELLO-FROM-SKILL\\n' > hello.txt"


def cli_bin(binary: str) -> Path:
    """The pinned CLI's executable; skipped (or failed, in CI) with its install line when absent."""
    exe = CLI_DIR / binary
    if exe.exists() and shutil.which("node"):
        return exe
    line = f"bash .ci/setup (or: npm install --prefix .ci/agent-clis {PACKAGES[binary]})"
    if os.environ.get("UPSKILL_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(f"the real `{binary}` CLI is not installed; {line}")
    pytest.skip(f"the real `{binary}` CLI is not installed; {line}")


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
    import json

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
