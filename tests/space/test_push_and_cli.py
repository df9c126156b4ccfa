"""Pushing a visitor's run as the signed-in user, and ``space run`` from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest
from space_helpers import free_port, model_specs, wait_for

from upskill_hub.errors import UpskillError
from upskill_hub.space import data
from upskill_hub.space.session import EvalSession, SessionKeys, build_clients, push_run

CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]


def _run_visitor_eval(space_repo, llm_server, tmp_path, monkeypatch):
    from upskill_hub.space.safety import ALLOW_PRIVATE_ENV

    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    lib = data.load_library(space_repo, token=None)
    skill = data.load_library_skill(lib, "greeting", tmp_path / "skill")
    clients = build_clients(model_specs(llm_server)[:1], SessionKeys())
    session = EvalSession(skill, clients, runs=1, workdir=tmp_path / "work").start()
    updates = list(session.updates())
    assert updates[-1].finished and updates[-1].error is None
    assert [u.done for u in updates] == sorted(u.done for u in updates)  # progress only grows
    return updates[-1].result


def test_push_results_as_the_signed_in_user(space_repo, llm_server, tmp_path, monkeypatch):
    from upskill_hub.localhub.testing import TEST_READ_TOKEN, TEST_WRITE_TOKEN

    result = _run_visitor_eval(space_repo, llm_server, tmp_path, monkeypatch)
    before = data.load_library(space_repo, token=None)
    n_before = len(before.results)

    with pytest.raises(UpskillError, match="sign in"):
        push_run(result.run_dir, space_repo, None)  # never falls back to the Space's HF_TOKEN
    with pytest.raises(UpskillError) as info:
        push_run(result.run_dir, space_repo, TEST_READ_TOKEN)  # signed in, but no write access
    assert TEST_READ_TOKEN not in str(info.value)
    assert len(data.load_library(space_repo, token=None).results) == n_before  # nothing half-pushed

    msg = push_run(result.run_dir, space_repo, TEST_WRITE_TOKEN)
    assert msg.startswith("pushed run") and space_repo in msg
    after = data.load_library(space_repo, token=None)
    assert after.revision != before.revision and len(after.results) == n_before + 6
    assert "already has" in push_run(result.run_dir, space_repo, TEST_WRITE_TOKEN)


@pytest.mark.slow
@pytest.mark.parametrize("use_flag", [False, True], ids=["env-port", "flag-beats-env"])
def test_space_run_serves_on_the_chosen_port(space_repo, use_flag):
    env_port, flag_port = free_port(), free_port()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(env_port), GRADIO_SERVER_NAME="127.0.0.1")
    cmd = [*CLI, "space", "run", "--repo", space_repo] + (["--port", str(flag_port)] if use_flag else [])
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = flag_port if use_flag else env_port
    try:
        wait_for(f"http://127.0.0.1:{port}/", proc)
        assert space_repo in urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=10).read().decode()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
