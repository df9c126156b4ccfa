"""``upskill-hub jobs ls|logs|cancel RUN_ID`` against Jobs launched on the local Hub with the run labels."""

from __future__ import annotations

import json
import uuid

import pytest
from cli_runner import run_cli
from huggingface_hub import HfApi
from shard_jobs import NS, launch, wait

from upskill_hub.localhub.testing import TEST_WRITE_TOKEN


@pytest.fixture
def api(hub_server) -> HfApi:
    return HfApi()


@pytest.fixture
def run_id() -> str:
    return f"cli-run-{uuid.uuid4().hex[:8]}"


def test_ls_shows_every_shard_in_a_table_and_as_json(api, run_id, capsys, monkeypatch) -> None:
    ok = launch(api, run_id, 0, "print('fine')")
    bad = launch(api, run_id, 1, "import sys; sys.exit(4)")
    wait(api, ok, bad)
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(["jobs", "ls", run_id, "--format", "human"], capsys, monkeypatch)
    assert code == 0, err
    assert f"Jobs of run {run_id}" in out
    assert "COMPLETED" in out and "ERROR" in out and "exit code 4" in out and bad.id in out
    assert "2 shard(s): 1 COMPLETED, 1 ERROR" in out
    code, out, _ = run_cli(["jobs", "ls", run_id, "--json"], capsys, monkeypatch)
    data = json.loads(out)
    assert data["run_id"] == run_id
    assert [(s["shard"], s["stage"], s["message"]) for s in data["shards"]] == [
        (0, "COMPLETED", None),
        (1, "ERROR", "exit code 4"),
    ]
    code, out, _ = run_cli(["jobs", "ls", run_id, "--format", "quiet"], capsys, monkeypatch)
    assert out.split() == [ok.id, bad.id]


def test_logs_prefix_lines_with_the_shard_when_several(api, run_id, capsys, monkeypatch) -> None:
    jobs = [launch(api, run_id, i, f"print('hello {i}')") for i in range(2)]
    wait(api, *jobs)
    code, out, err = run_cli(["jobs", "logs", run_id], capsys, monkeypatch)
    assert code == 0, err
    assert out.splitlines() == ["[shard 0] hello 0", "[shard 1] hello 1"]
    code, out, _ = run_cli(["jobs", "logs", run_id, "--shard", "1", "--follow"], capsys, monkeypatch)
    assert code == 0 and out.splitlines() == ["hello 1"]


def test_cancel_prints_what_it_canceled_and_repeats_safely(api, run_id, capsys, monkeypatch) -> None:
    jobs = [launch(api, run_id, i, "import time; time.sleep(60)") for i in range(2)]
    code, out, err = run_cli(["jobs", "cancel", run_id, "--format", "human"], capsys, monkeypatch)
    assert code == 0, err
    for job in jobs:
        assert job.id in out
    assert f"Canceled 2 Job(s) of run {run_id}." in out
    wait(api, *jobs)
    code, out, _ = run_cli(["jobs", "cancel", run_id, "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out) == {"run_id": run_id, "canceled": []}
    code, out, _ = run_cli(["jobs", "cancel", run_id, "--format", "human"], capsys, monkeypatch)
    assert "Nothing to cancel" in out
    assert {
        s["stage"]
        for s in json.loads(run_cli(["jobs", "ls", run_id, "--json"], capsys, monkeypatch)[1])["shards"]
    } == {"CANCELED"}


@pytest.mark.parametrize("verb", ["ls", "logs", "cancel"])
def test_unknown_run_is_one_line_error(hub_server, verb, capsys, monkeypatch) -> None:
    code, out, err = run_cli(["jobs", verb, "no-such-run-x1"], capsys, monkeypatch)
    assert code == 1
    assert err.strip() == f"Error: no Jobs found for run no-such-run-x1 in namespace {NS}"
    assert "Traceback" not in err


def test_without_a_token_says_how_to_log_in(hub_server, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    monkeypatch.setattr("huggingface_hub.constants.HF_TOKEN_PATH", str(tmp_path / "none" / "token"))
    code, _, err = run_cli(["jobs", "ls", "some-run"], capsys, monkeypatch)
    assert code == 1 and "no Hugging Face token found" in err and "hf auth login" in err


def test_a_refused_token_is_one_line_without_the_token(hub_server, capsys, monkeypatch) -> None:
    bad = "hf_" + "refusedTokenForJobsCli000000000"
    monkeypatch.setenv("HF_TOKEN", bad)
    code, _, err = run_cli(["jobs", "ls", "some-run", "--namespace", NS], capsys, monkeypatch)
    assert code == 1
    assert "cannot list the Jobs of run some-run: the Hub refused your token (HTTP 401)" in err
    assert bad not in err and TEST_WRITE_TOKEN not in err and len(err.strip().splitlines()) == 1


def test_help_names_the_verbs(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(["jobs", "--help"], capsys, monkeypatch)
    assert code == 0
    for verb in ("ls", "logs", "cancel"):
        assert verb in out
    code, out, _ = run_cli(["jobs", "logs", "--help"], capsys, monkeypatch)
    assert "--follow" in out and "--shard" in out
