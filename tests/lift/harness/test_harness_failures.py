"""Agent CLIs that hang, print garbage, are missing, or would see the user's own skills."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from _harness_kit import API_KEY, write_fake_clis

from upskill_hub.errors import UpskillError
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.process import run_process
from upskill_hub.lift.prepare import EvalOptions


def _options(tmp_path, agents, **harness) -> EvalOptions:
    return EvalOptions(
        agents=agents, output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", plots=False,
        harness=HarnessOptions(**{"timeout": 60, **harness}),
    )  # fmt: skip


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie holds nothing and runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _wait_gone(pids: list[int], limit_s: float = 20.0) -> list[int]:
    """The pids still alive once SIGKILL had time to land (it is delivered asynchronously)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _pids(piddir: Path) -> list[int]:
    """Every pid the hanging fake CLIs wrote (each writes its own file, whole, with its helper's pid)."""
    return [int(p) for f in sorted(piddir.glob("*.pids")) for p in f.read_text().split()]


def test_hanging_cli_is_killed_at_the_timeout_with_its_helpers(agents_env, widget_skill, tmp_path):
    piddir = tmp_path / "pids"
    opts = _options(
        tmp_path, ["claude-code"], timeout=5,
        agent_env=["FAKE_AGENT_MODE=hang", f"FAKE_AGENT_PIDDIR={piddir}"],
    )  # fmt: skip
    opts.include_baseline = False
    t0 = time.monotonic()
    result = run_eval(widget_skill, [], opts)  # failed calls are rows; the CLI exits 1 on them
    assert time.monotonic() - t0 < 60
    errors = [r.error for r in result.rows]
    assert all(e and "timed out after 5 s; its process group was killed" in e for e in errors), errors
    assert all(r.passed is None for r in result.rows)
    # The CLI and the helper it started (same process group) are both gone: no orphan.
    pids = _pids(piddir)
    assert pids and len(pids) == 2 * len(list(piddir.glob("*.pids")))
    assert _wait_gone(pids) == []


def test_cancelling_a_call_kills_the_process_group(tmp_path):
    """Ctrl-C cancels the eval's tasks: the CLI's whole process group dies before the cancel returns."""
    write_fake_clis(tmp_path / "bin", ("claude",))
    piddir = tmp_path / "pids"
    env = {"PATH": os.environ["PATH"], "FAKE_AGENT_MODE": "hang", "FAKE_AGENT_PIDDIR": str(piddir)}

    async def scenario() -> list[int]:
        task = asyncio.ensure_future(
            run_process([str(tmp_path / "bin" / "claude"), "-p", "x"], cwd=tmp_path, env=env, timeout=3600)
        )
        deadline = time.monotonic() + 60
        while not _pids(piddir):  # until the CLI and its helper are both running
            assert not task.done() and time.monotonic() < deadline, "the fake CLI never started"
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return _pids(piddir)

    pids = asyncio.run(scenario())
    assert len(pids) == 2 and _wait_gone(pids) == []


def test_garbage_output_is_an_error_row_naming_cli_and_version(agents_env, widget_skill, tmp_path):
    opts = _options(tmp_path, ["gemini", "codex"], agent_env=["FAKE_AGENT_MODE=garbage"])
    result = run_eval(widget_skill, [], opts)
    assert result.rows and all(r.passed is None for r in result.rows)
    by = {r.model: r.error for r in result.rows}
    assert by["gemini"].startswith(
        "gemini (0.16.0): unknown output shape: gemini printed a line that is not JSON"
    )
    assert by["codex"].startswith("codex (codex-cli 0.58.0): unknown output shape")
    # The run finished and its summary counts the errors instead of crashing.
    assert {c.errors for c in result.summary.conditions} == {2}


def test_missing_cli_is_a_one_line_error_with_the_install_hint(tmp_path, monkeypatch, widget_skill):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(UpskillError) as exc:
        run_eval(widget_skill, [], _options(tmp_path, ["codex"]))
    msg = str(exc.value)
    assert msg == "codex: `codex` is not on PATH; install it with `npm install -g @openai/codex`"
    assert not (tmp_path / "runs").exists()  # nothing was written


def test_unknown_agent_lists_the_known_ones(agents_env, widget_skill, tmp_path):
    with pytest.raises(
        UpskillError, match=r"unknown agent 'cursor' \(known: claude-code, codex, gemini, opencode"
    ):
        run_eval(widget_skill, [], _options(tmp_path, ["cursor"]))


def test_user_level_skill_is_isolated(agents_env, widget_skill, tmp_path):
    """A user-level skill of the same name would win in the real HOME; the run's HOME never has it."""
    shadow = Path(os.environ["HOME"]) / ".claude" / "skills" / "widget-report"
    shadow.mkdir(parents=True)
    (shadow / "SKILL.md").write_text(
        "---\nname: widget-report\ndescription: Widget inventory reports, the user's own copy.\n---\nOLD COPY\n"
    )
    result = run_eval(widget_skill, [], _options(tmp_path, ["claude-code"]))
    by = {(r.condition, r.case_id): r for r in result.rows}
    # With the skill, the candidate (not the user's copy) was loaded; the baseline loaded nothing at all.
    assert by[("with_skill", "report")].passed is True
    assert by[("baseline", "report")].triggered is False
    assert json.loads(by[("baseline", "report")].loaded) == []


def test_user_level_skill_refuses_a_real_home_run(agents_env, widget_skill, tmp_path):
    shadow = Path(os.environ["HOME"]) / ".config" / "opencode" / "skills" / "widget-report"
    shadow.mkdir(parents=True)
    with pytest.raises(UpskillError, match="would shadow it with --agent-real-home"):
        run_eval(widget_skill, [], _options(tmp_path, ["opencode"], real_home=True))
    assert not (tmp_path / "runs").exists()


def test_environment_is_allow_listed(agents_env, widget_skill, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_PRIVATE_TOKEN", "do-not-leak-1234567890")
    monkeypatch.setenv("AGENT_FLAG", "on")
    dumps = tmp_path / "env"
    opts = _options(tmp_path, ["claude-code"], agent_env=["AGENT_FLAG", f"FAKE_AGENT_ENV_DUMP={dumps}"])
    opts.include_baseline = False
    result = run_eval(widget_skill, [], opts)
    envs = [json.loads(f.read_text()) for f in sorted(dumps.glob("*.json"))]
    assert len(envs) == len(result.rows) > 0  # every call (they run concurrently) got the same treatment
    for env in envs:
        assert "MY_PRIVATE_TOKEN" not in env and "OPENAI_API_KEY" not in env  # not Claude Code's key
        assert env["ANTHROPIC_API_KEY"] == API_KEY and env["AGENT_FLAG"] == "on"
        assert env["HOME"] != os.environ["HOME"] and "/home" in env["HOME"]  # HOME inside the workspace
    with pytest.raises(UpskillError, match="--agent-env NOT_SET_ANYWHERE: not set in this environment"):
        run_eval(widget_skill, [], _options(tmp_path, ["claude-code"], agent_env=["NOT_SET_ANYWHERE"]))


def test_ctrl_c_on_the_cli_kills_the_agent_process_group(agents_env, widget_skill, tmp_path):
    """SIGINT to `upskill-hub eval` (Ctrl-C) while an agent runs: the agent and its helper die too."""
    import signal
    import subprocess

    piddir = tmp_path / "pids"
    cmd = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()", "eval", str(widget_skill),
           "--agent", "claude-code", "--agent-env", "FAKE_AGENT_MODE=hang", "--agent-env", f"FAKE_AGENT_PIDDIR={piddir}",
           "--no-baseline", "--no-plots", "-o", str(tmp_path / "runs"), "--cache-dir", str(tmp_path / "cache"),
           "--concurrency", "1"]  # fmt: skip
    from cli_runner import default_ctrl_c

    # The SIGINT below is a user's Ctrl-C, whatever disposition the test runner left ignored.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_ctrl_c)
    try:
        deadline = time.monotonic() + 120
        while not _pids(piddir):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    pids = _pids(piddir)  # read after exit: any call that started before the SIGINT is counted
    assert len(pids) >= 2 and _wait_gone(pids) == []


def test_a_key_the_cli_echoes_never_reaches_rows_or_artifacts(
    agents_env, widget_skill, tmp_path, monkeypatch
):
    key = "AIzaSyPlainLookingGeminiKey0123456789"  # no token pattern matches it: masked as a passed value
    monkeypatch.setenv("GEMINI_API_KEY", key)
    result = run_eval(widget_skill, [], _options(tmp_path, ["gemini"], agent_env=["FAKE_AGENT_MODE=leak"]))
    for r in result.rows:
        assert r.error and "exited with code 41" in r.error and "Error authenticating with key ***" in r.error
        assert key not in r.error
    for f in (result.run_dir / "agents").rglob("*"):
        if f.is_file():
            assert key not in f.read_text()
    assert key not in (result.run_dir / "results.jsonl").read_text()
