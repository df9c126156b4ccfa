"""What the real-CLI tests share: where the pinned CLIs are, the skill and the scripted command.

``bash .ci/setup`` installs the four pinned CLIs into ``.ci/agent-clis/`` (ignored by git).
Where one is missing a test is skipped with the line that installs it; under
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
