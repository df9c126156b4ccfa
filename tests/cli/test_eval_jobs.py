"""``eval --jobs``: every flag that cannot work is one line on stderr, and nothing is created."""

from __future__ import annotations

from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import run_cli
from huggingface_hub import HfApi

from upskill_hub.testing.llm_server import running_llm_server  # noqa: E402


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills")


def _one_line_error(code: int, err: str, expected: str) -> None:
    assert code == 1
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), err
    assert expected in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--jobs", "0", "--repo", "user/x"], "--jobs must be at least 1"),
        (["--jobs", "2"], "--jobs needs --repo"),
        (["--repo", "user/x"], "--repo is for runs on Hugging Face Jobs"),
        (["--jobs", "2", "--repo", "not a repo"], "invalid repo id"),
        (["--jobs", "2", "--repo", "user/x", "--attempts", "0"], "--attempts must be at least 1"),
        (["--jobs", "2", "--repo", "user/x", "--job-timeout", "soon"], "--job-timeout 'soon'"),
        (["--jobs", "2", "--repo", "user/x", "--flavor", "Big GPU"], "is not a hardware flavor name"),
    ],
)
def test_flags_that_cannot_work_are_one_line_before_anything_runs(
    flags, expected, skill, tmp_path, capsys, monkeypatch
):
    code, _out, err = run_cli(["eval", str(skill), "-o", str(tmp_path / "runs"), *flags], capsys, monkeypatch)
    _one_line_error(code, err, expected)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--jobs", "13"], "--jobs 13 is more shards than the run has calls (12)"),
        (
            ["--jobs", "2", "--flavor", "gpu-unicorn"],
            "unknown --flavor 'gpu-unicorn'; the Hub offers: cpu-basic",
        ),
        (["--jobs", "2", "--model", "local:/nowhere/model.gguf"], "names a file on this machine"),
    ],
)
def test_checks_with_the_hub_fail_before_any_commit_or_job(flags, expected, hub_server, hub_repo_id, skill, tmp_path,
                                                           capsys, monkeypatch):  # fmt: skip
    with running_llm_server() as srv:
        args = ["eval", str(skill), "--runs", "2", "-o", str(tmp_path / "runs"), "--repo", hub_repo_id]
        if "--model" not in flags:
            args += ["--model", f"openai-compatible:scripted-model@{srv.openai_base_url}"]
        code, _out, err = run_cli([*args, *flags], capsys, monkeypatch)
    _one_line_error(code, err, expected)
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_resume_with_another_shard_count_or_an_unknown_run_is_one_line(
    hub_server, hub_repo_id, capsys, monkeypatch
):
    HfApi().create_repo(hub_repo_id, repo_type="dataset")
    code, _out, err = run_cli(
        ["eval", "--resume", "20260101T000000Z-greeting-abcdef", "--jobs", "2", "--repo", hub_repo_id],
        capsys,
        monkeypatch,
    )
    _one_line_error(code, err, "has no Job bundle")


@pytest.mark.slow
def test_eval_on_two_jobs_prints_the_report_and_jobs_ls_shows_the_shards(hub_server, hub_repo_id, skill, tmp_path,
                                                                          capsys, monkeypatch):  # fmt: skip
    with running_llm_server(lambda system, messages, params: "BANANA" if "BANANA" in system else "hi") as srv:
        code, out, err = run_cli(
            ["eval", str(skill), "--runs", "2", "-o", str(tmp_path / "runs"), "--no-plots", "--jobs", "2",
             "--repo", hub_repo_id, "--image", "local-test-image",
             "--model", f"openai-compatible:scripted-model@{srv.openai_base_url}", "--format", "json"],
            capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    import json

    summary = json.loads(out)
    assert summary["n_results"] == 12 and summary["lifts"][0]["lift"] > 0
    assert "launched 2 Job(s)" in err and "2 shard(s) landed" in err
    code, out, err = run_cli(["jobs", "ls", summary["run_id"], "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    listed = json.loads(out)
    assert listed["run_id"] == summary["run_id"]
    assert [(s["shard"], s["attempt"]) for s in listed["shards"]] == [(0, 1), (1, 1)]
    assert all("COMPLETED" in json.dumps(s) for s in listed["shards"])


def test_a_refused_bundle_leaves_no_run_folder_behind(hub_server, hub_repo_id, skill, tmp_path, capsys, monkeypatch):
    """A launch refused while bundling (a secret in the wheel) must not leave a '0/12' run in `runs`."""
    import io
    import zipfile

    from upskill_hub.jobs import run as jobs_run
    from upskill_hub.jobs.bundle import BundledWheel

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("upskill_hub/leak.py", 'TOKEN = "hf_' + 'abcdefghijklmnopqrstuvwxyz0123"\n')
    wheel = BundledWheel("upskill_hub-0.1.0-py3-none-any.whl", "ab" * 32, "0.1.0")
    monkeypatch.setattr(jobs_run, "_own_wheel", lambda say: (wheel, buf.getvalue()))
    with running_llm_server() as srv:
        args = ["eval", str(skill), "--runs", "2", "-o", str(tmp_path / "runs"), "--repo", hub_repo_id, "--jobs", "2",
                "--model", f"openai-compatible:scripted-model@{srv.openai_base_url}"]  # fmt: skip
        code, _out, err = run_cli(args, capsys, monkeypatch)
    _one_line_error(code, err, "own wheel holds something that looks like an access token")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    code, out, _err = run_cli(["runs", str(tmp_path / "runs")], capsys, monkeypatch)
    assert "0/12" not in out
