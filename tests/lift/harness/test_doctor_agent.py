"""``doctor --agent NAME``: one line per thing that would stop ``eval --agent``, then one real call.

The fake CLIs (``_harness_kit.write_fake_clis``) stand in for the real ones and call the
scripted model server of the ``llm`` fixture; ``agents_env`` points every provider variable
at it.
"""

from __future__ import annotations

import json
import socket
from types import SimpleNamespace

import pytest
from _harness_kit import write_fake_clis
from cli_runner import run_cli

from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.doctor import check_agent, classify
from upskill_hub.lift.harness.spec import ADAPTERS

CHECKS = ["executable", "version", "credentials", "endpoint", "root", "call"]
#: A key no token pattern recognises: only the harness's own masking can hide it.
PLAIN_KEY = "plainvalue-without-any-known-shape-4242"


def _checks(report) -> dict[str, tuple[bool | None, str]]:
    return {c.name: (c.ok, c.detail) for c in report.checks}


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "opencode"])
def test_every_check_passes_against_the_scripted_server(agents_env, agent):
    report = check_agent(agent, HarnessOptions(timeout=60))
    got = _checks(report)
    assert [c.name for c in report.checks] == CHECKS
    assert report.ok and report.first_failure is None, got
    assert got["executable"][1] == str(agents_env / ADAPTERS[agent].binary)
    assert got["call"][1].startswith("answered"), got["call"]
    if agent != "opencode":  # OpenCode's endpoint follows its model's provider
        assert "127.0.0.1" in got["endpoint"][1] and "reachable" in got["endpoint"][1]


def test_missing_binary_gives_the_install_line(tmp_path, agents_env, monkeypatch):
    only_codex = write_fake_clis(tmp_path / "other-bin", names=("codex",))
    monkeypatch.setenv("PATH", str(only_codex))
    report = check_agent("claude-code", HarnessOptions(timeout=30))
    got = _checks(report)
    assert report.first_failure.name == "executable"
    assert got["executable"][0] is False
    assert "not on PATH" in got["executable"][1]
    assert "npm install -g @anthropic-ai/claude-code" in got["executable"][1]
    assert got["call"][0] is None  # no call without a CLI, and no second failure line for it


def test_no_key_gives_the_auth_line(agents_env, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    report = check_agent("claude-code", HarnessOptions(timeout=30))
    ok, detail = _checks(report)["credentials"]
    assert report.first_failure.name == "credentials" and ok is False
    assert "export ANTHROPIC_API_KEY=" in detail and "--agent-real-home" in detail


def test_key_present_names_the_variable_not_its_value(agents_env, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLAIN_KEY)
    report = check_agent("claude-code", HarnessOptions(timeout=30))
    assert _checks(report)["credentials"] == (True, "ANTHROPIC_API_KEY set")
    assert PLAIN_KEY not in json.dumps(report.to_dict())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when the block ends: nothing listens there


def test_base_url_on_a_closed_port_gives_the_endpoint_line(agents_env, monkeypatch):
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    report = check_agent("claude-code", HarnessOptions(timeout=30))
    got = _checks(report)
    ok, detail = got["endpoint"]
    assert report.first_failure.name == "endpoint" and ok is False
    assert (
        detail.startswith(f"cannot reach {url} (ANTHROPIC_BASE_URL)") and "fix ANTHROPIC_BASE_URL" in detail
    )
    # No call is made: a CLI would only retry the dead endpoint until the timeout.
    assert got["call"][0] is None and got["call"][1].startswith("not made: the endpoint is unreachable")


def test_hanging_cli_is_a_timeout_line_within_the_limit(tmp_path, agents_env):
    piddir = tmp_path / "pids"
    env = ["FAKE_AGENT_MODE=hang", f"FAKE_AGENT_PIDDIR={piddir}"]
    report = check_agent("codex", HarnessOptions(timeout=2, agent_env=env))
    ok, detail = _checks(report)["call"]
    assert report.first_failure.name == "call" and ok is False
    assert detail.startswith("timeout") and "timed out after 2 s" in detail and "--agent-timeout" in detail
    assert list(piddir.glob("*.pids"))  # it really hung (and was killed at the limit)


def test_a_key_echoed_by_the_cli_is_never_shown(agents_env, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLAIN_KEY)
    token = "another-plain-secret-value-9876"  # secret by its name only (…_TOKEN)
    env = ["FAKE_AGENT_MODE=leak", f"FAKE_AGENT_TOKEN={token}"]
    report = check_agent("claude-code", HarnessOptions(timeout=30, agent_env=env))
    ok, detail = _checks(report)["call"]
    assert ok is False and detail.startswith("auth:") and "ANTHROPIC_API_KEY" in detail, detail
    shown = json.dumps(report.to_dict())
    assert PLAIN_KEY not in shown and token not in shown and "***" in detail


@pytest.mark.parametrize(
    ("agent", "error", "kind"),
    [  # the real CLIs' words (issue 46)
        ("claude-code", "--dangerously-skip-permissions cannot be used with root/sudo privileges", "root:"),
        ("gemini", "exited with code 55 (not running in a trusted directory … use --skip-trust)", "trust:"),
        ("gemini", "exited with code 41 (Invalid auth method selected.)", "auth:"),
        ("claude-code", 'API Error: 401 {"type":"authentication_error"}', "auth:"),
        ("codex", "timed out after 5 s; its process group was killed", "timeout (connection?):"),
    ],
)
def test_call_errors_are_classified_with_their_fix(agent, error, kind):
    client = SimpleNamespace(adapter=ADAPTERS[agent], cli_model=None)
    tails = '{"type":"error","message":"Reconnecting... waiting for network"}' if agent == "codex" else ""
    line = classify(error, tails, client)
    assert line.startswith(kind), line
    assert "\n" not in line


# ----- through the command line ------------------------------------------------------------


def test_cli_prints_one_line_per_check_and_exits_0(agents_env, capsys, monkeypatch):
    code, out, err = run_cli(["doctor", "--agent", "gemini", "--format", "human"], capsys, monkeypatch)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("gemini ")
    assert [ln.split(":", 1)[0] for ln in lines[1:7]] == [f"✓ {c}" for c in CHECKS]
    assert "OK" in lines[-1]


def test_cli_exits_1_naming_the_first_failed_check(agents_env, capsys, monkeypatch):
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url)
    code, out, err = run_cli(["doctor", "--agent", "gemini", "--format", "agent"], capsys, monkeypatch)
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "gemini would not run an eval here: endpoint: cannot reach" in err and url in err
    rows = [ln.split("\t") for ln in out.strip().splitlines()]
    assert rows[0] == ["check", "ok", "detail"]
    assert [r[0] for r in rows[1:]] == CHECKS and rows[4][1] == "false"


def test_cli_json_never_holds_an_echoed_key(agents_env, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLAIN_KEY)
    args = ["doctor", "--agent", "claude-code", "--agent-env", "FAKE_AGENT_MODE=leak", "--json"]
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 1 and PLAIN_KEY not in out + err
    data = json.loads(out)
    assert data["ok"] is False and data["checks"][-1]["name"] == "call"
    assert data["checks"][-1]["detail"].startswith("auth:")


def test_cli_bad_timeout_is_a_one_line_error(agents_env, capsys, monkeypatch):
    code, _out, err = run_cli(["doctor", "--agent", "codex", "--agent-timeout", "0"], capsys, monkeypatch)
    assert code != 0 and "agent_timeout" in err.replace("-", "_") and len(err.strip().splitlines()) == 1
