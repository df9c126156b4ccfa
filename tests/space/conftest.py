"""Fixtures for the Space: a skill library pushed to the local Hub, and a scripted model server.

The library is made the way users make one: skills written to disk, evaluated with
``run_eval`` against the scripted OpenAI-compatible server through the real ``openai`` SDK,
then published with ``upskill_hub.hub.push``. The Space reads it back from the local Hub.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The helpers are a plain module next to this file; make it importable in any import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from space_helpers import banana_script, free_port, make_skills, model_specs  # noqa: E402,F401


@pytest.fixture(scope="module")
def llm_server() -> Iterator:
    from upskill_hub.testing.llm_server import running_llm_server

    with running_llm_server(banana_script, models=("scripted-a", "scripted-b")) as server:
        yield server


@pytest.fixture
def space_repo(hub_server, hub_repo_id, llm_server, tmp_path, monkeypatch) -> str:
    """A dataset repo on the local Hub with 3 skills and one eval run of 'greeting'."""
    from upskill_hub.hub.push import push
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions

    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skills = make_skills(tmp_path / "skills")
    result = run_eval(
        skills["greeting"], model_specs(llm_server), EvalOptions(runs=1, output_dir=tmp_path / "runs", use_cache=False, plots=False)
    )
    push(list(skills.values()), hub_repo_id, results=[result.run_dir])
    return hub_repo_id


@pytest.fixture(autouse=True)
def _fresh_library_cache():
    from upskill_hub.space import data

    data.clear_cache()
    yield
    data.clear_cache()


@pytest.fixture
def running_app(space_repo, monkeypatch):
    """The Space launched on 127.0.0.1 (free port), reading ``space_repo``; closed afterwards."""
    from space_helpers import launched_space

    from upskill_hub.space.safety import ALLOW_PRIVATE_ENV

    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")  # the scripted model server is on 127.0.0.1
    with launched_space(space_repo) as url:
        yield url
