"""Fixtures for the agent-harness tests (helpers in ``_harness_kit``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _harness_kit import API_KEY, CASES, SKILL_MD, script, write_fake_clis

from upskill_hub.testing.llm_server import running_llm_server


@pytest.fixture
def llm():
    with running_llm_server(script) as server:
        yield server


@pytest.fixture
def agents_env(tmp_path, monkeypatch, llm):
    """Fake CLIs first on PATH, provider endpoints and keys pointing at the scripted server."""
    bin_dir = write_fake_clis(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", llm.url)
    monkeypatch.setenv("GEMINI_API_KEY", API_KEY)
    # The user's own HOME: a user-level skill there must never reach an isolated run.
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return bin_dir


@pytest.fixture
def widget_skill(tmp_path) -> Path:
    d = tmp_path / "skills" / "widget-report"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    (d / "skill_meta.json").write_text(json.dumps(CASES))
    return d
