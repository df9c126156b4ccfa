"""Fixtures for the Space: a skill library pushed to the local Hub, and a scripted model server.

The library is made the way users make one: skills written to disk, evaluated with
``run_eval`` against the scripted OpenAI-compatible server through the real ``openai`` SDK,
then published with ``upskill_hub.hub.push``. The Space reads it back from the local Hub.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill

#: SKILL.md body of a hostile skill: none of this may run in a visitor's browser.
XSS_BODY = """# Hostile skill

<script>window.__xss = 'script';</script>

<img src="x" onerror="window.__xss = 'onerror'">

[click me](javascript:window.__xss='link')

| col | val |
| --- | --- |
| a   | 1   |
"""

GREETING_BODY = "# Greeting\n\nAlways greet with the word BANANA.\n"
CASES = [
    {"id": "greet", "input": "Say hello.", "assert": [{"type": "contains", "value": "BANANA"}]},
    {"id": "wave", "input": "Wave at me.", "assert": [{"type": "icontains", "value": "banana"}]},
    {"id": "plain", "input": "Just talk.", "assert": [{"type": "not-contains", "value": "ERROR"}]},
]


def banana_script(system: str, messages: list[dict[str, str]], params: dict) -> str:
    """With the greeting skill in the system prompt, say BANANA; model 'scripted-b' never does."""
    if "BANANA" in system and params.get("model") != "scripted-b":
        return "BANANA! hello there"
    return "hello there"


def make_skills(root: Path) -> dict[str, Path]:
    meta = parse_meta({"schema_version": 1, "cases": CASES})
    out = {}
    out["greeting"] = Skill.create("greeting", "Greets with BANANA. Use when greeting someone.", GREETING_BODY, meta=meta).write(
        root / "greeting"
    )
    out["xss-demo"] = Skill.create(
        "xss-demo",
        "A skill whose Markdown tries to run script in the browser.",
        XSS_BODY,
        meta=parse_meta({"schema_version": 1, "cases": CASES[:1]}),
        files={"references/notes.md": b"# Notes\n\nplain reference file\n"},
    ).write(root / "xss-demo")
    out["json-helper"] = Skill.create(
        "json-helper", "Answers in strict JSON. Use for structured output.", "# JSON\n\nAnswer only JSON.\n"
    ).write(root / "json-helper")
    return out


@pytest.fixture(scope="module")
def llm_server() -> Iterator:
    from upskill_hub.testing.llm_server import running_llm_server

    with running_llm_server(banana_script, models=("scripted-a", "scripted-b")) as server:
        yield server


def model_specs(server) -> list[str]:
    return [f"openai-compatible:scripted-a@{server.url}/v1", f"openai-compatible:scripted-b@{server.url}/v1"]


@pytest.fixture
def space_repo(hub_server, hub_repo_id, llm_server, tmp_path, monkeypatch) -> str:
    """A dataset repo on the local Hub with 3 skills and one eval run of 'greeting'."""
    from upskill_hub.evals.api import run_eval
    from upskill_hub.hub.push import push

    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skills = make_skills(tmp_path / "skills")
    result = run_eval(
        skills["greeting"], model_specs(llm_server), runs=1, output_dir=tmp_path / "runs", use_cache=False, plots=False
    )
    push(list(skills.values()), hub_repo_id, results=[result.run_dir])
    return hub_repo_id


@pytest.fixture(autouse=True)
def _fresh_library_cache():
    from upskill_hub.space import data

    data.clear_cache()
    yield
    data.clear_cache()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def running_app(space_repo, monkeypatch):
    """The Space launched on 127.0.0.1 (free port), reading ``space_repo``; closed afterwards."""
    from upskill_hub.space.safety import ALLOW_PRIVATE_ENV
    from upskill_hub.space.ui import build_app

    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")  # the scripted model server is on 127.0.0.1
    demo = build_app(space_repo)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
