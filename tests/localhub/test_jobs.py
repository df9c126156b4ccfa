"""Hugging Face Jobs on the local Hub, driven only through the unmodified ``huggingface_hub``.

Each Job runs ``python -c ...`` for a fraction of a second: ``python`` resolves to the
server's own interpreter (the Job's PATH starts with its bin dir).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

from upskill_hub.localhub.jobs import JobLimits
from upskill_hub.localhub.testing import (
    TEST_READ_TOKEN,
    TEST_TRUSTED_ORG,
    TEST_WRITE_TOKEN,
    ServerHandle,
    running_server,
)

NS = "user"
SECRET = "sk-test-" + "0123456789abcdefSECRET"  # built at run time: the value the tests hunt for


@pytest.fixture(scope="module")
def jobs_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerHandle]:
    """A local Hub of its own: a short kill grace keeps cancel/timeout tests fast."""
    with running_server(
        tmp_path_factory.mktemp("jobs-hub"),
        write_tokens=(TEST_WRITE_TOKEN,),
        read_tokens=(TEST_READ_TOKEN,),
        trusted_publishers=(TEST_TRUSTED_ORG,),
        user=NS,
        job_limits=JobLimits(kill_grace_s=1.0),
    ) as hub:
        yield hub


@pytest.fixture
def api(jobs_hub: ServerHandle) -> HfApi:
    return HfApi(endpoint=jobs_hub.url, token=TEST_WRITE_TOKEN)


def _run(api: HfApi, code: str, **kw):
    return api.run_job(image="python:3.12", command=["python", "-c", code], namespace=NS, **kw)


def _wait(api: HfApi, job_id: str, timeout: float = 30):
    return api.wait_for_job(job_id, namespace=NS, poll_interval=0.05, timeout=timeout)


def _wait_running(hub: ServerHandle, job_id: str) -> int:
    deadline = time.monotonic() + 15
    while (pid := hub.job_pid(job_id)) is None:
        assert time.monotonic() < deadline, "the Job never started"
        time.sleep(0.02)
    return pid


def test_job_runs_to_completed_with_its_output_in_the_logs(api: HfApi) -> None:
    job = _run(api, "print('hello from the job'); print('second line')", labels={"k": "v"})
    assert len(job.id) == 24 and int(job.id, 16) >= 0
    assert job.owner.name == NS and job.docker_image == "python:3.12"
    assert job.status.stage in ("SCHEDULING", "RUNNING")
    done = _wait(api, job.id)
    assert done.status.stage == "COMPLETED" and done.status.message is None
    assert done.created_at <= done.started_at <= done.finished_at
    assert done.labels["k"] == "v" and done.flavor == "cpu-basic"
    assert done.durations is not None and done.durations.total_secs is not None
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NS)) == ["hello from the job", "second line"]
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NS, follow=True)) == [
        "hello from the job",
        "second line",
    ]
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NS, tail=1)) == ["second line"]


def test_env_and_secrets_reach_the_job_and_the_secret_is_masked_everywhere(
    api: HfApi, jobs_hub: ServerHandle
) -> None:
    code = (
        "import os, pathlib\n"
        "print('env', os.environ['MODE'])\n"
        "print('secret length', len(os.environ['PROVIDER_KEY']))\n"
        "print('leak:', os.environ['PROVIDER_KEY'])\n"
        "print('server token', os.environ.get('HF_TOKEN'))\n"
        "print('cwd is home', os.getcwd() == os.environ['HOME'])\n"
        "pathlib.Path('out.txt').write_text('x')\n"
    )
    job = _run(api, code, env={"MODE": "fast"}, secrets={"PROVIDER_KEY": SECRET})
    done = _wait(api, job.id)
    assert done.status.stage == "COMPLETED"
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NS))
    assert logs == [
        "env fast",
        f"secret length {len(SECRET)}",
        "leak: ***",
        "server token None",  # the server's own environment (HF_TOKEN in tests) does not leak in
        "cwd is home True",
    ]
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NS, follow=True))[2] == "leak: ***"
    assert done.environment == {"MODE": "fast"}
    assert done.secrets == {"PROVIDER_KEY": "***"}
    listed = [j for j in api.list_jobs(namespace=NS) if j.id == job.id]
    for info in (done, *listed):
        assert SECRET not in repr(info)
    # Nothing the server stored holds the value: not the record, not the log, not the repos.
    for path in jobs_hub.root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert (jobs_hub.root / "jobs" / NS / job.id / "work" / "out.txt").exists()


def test_non_zero_exit_is_an_error_with_the_exit_code(api: HfApi) -> None:
    job = _run(api, "import sys; print('failing'); sys.exit(3)")
    done = _wait(api, job.id)
    assert (done.status.stage, done.status.message) == ("ERROR", "exit code 3")
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NS)) == ["failing"]


def test_killing_the_job_process_is_an_error_killed_by_sigkill(api: HfApi, jobs_hub: ServerHandle) -> None:
    job = _run(api, "import time; print('started', flush=True); time.sleep(60)")
    pid = _wait_running(jobs_hub, job.id)
    assert api.inspect_job(job_id=job.id, namespace=NS).status.stage == "RUNNING"
    os.killpg(pid, signal.SIGKILL)
    done = _wait(api, job.id)
    assert (done.status.stage, done.status.message) == ("ERROR", "killed by SIGKILL")
    assert jobs_hub.job_pid(job.id) is None


def test_unknown_flavor_is_refused_with_the_known_ones_listed(api: HfApi) -> None:
    with pytest.raises(HfHubHTTPError) as err:
        _run(api, "print(1)", flavor="tpu-v9")
    assert err.value.response.status_code == 400
    assert "Unknown flavor 'tpu-v9'" in str(err.value) and "a10g-small" in str(err.value)


def test_hardware_list_parses_into_job_hardware_info(api: HfApi) -> None:
    hardware = {h.name: h for h in api.list_jobs_hardware()}
    assert {"cpu-basic", "cpu-upgrade", "t4-small", "l4x1", "a10g-small", "a100-large", "h200"} <= set(
        hardware
    )
    assert hardware["cpu-basic"].accelerator is None
    assert hardware["a10g-small"].accelerator.model == "A10G"
    assert hardware["a10g-small"].unit_label == "minute" and hardware["a10g-small"].unit_cost_usd > 0


def test_job_records_are_json_without_secret_values(api: HfApi, jobs_hub: ServerHandle) -> None:
    job = _run(api, "print(1)", secrets={"TOKEN_X": SECRET})
    _wait(api, job.id)
    record = json.loads((jobs_hub.root / "jobs" / NS / job.id / "job.json").read_text())
    assert record["secretNames"] == ["TOKEN_X"] and record["stage"] == "COMPLETED"
    assert SECRET not in json.dumps(record)
