"""Hugging Face Jobs on the local Hub, driven only through the unmodified ``huggingface_hub``.

Each Job runs ``python -c ...`` for a fraction of a second: ``python`` resolves to the
server's own interpreter (the Job's PATH starts with its bin dir).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
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


def test_a_job_installs_packages_through_this_machines_caches_and_trust(api: HfApi) -> None:
    """uv/pip in a Job reuse the server user's caches (not the Job's fresh HOME) and its trust store."""
    code = (
        "import os\n"
        "print(os.environ['UV_CACHE_DIR'] == os.environ['EXPECT_UV'], os.environ['PIP_CACHE_DIR'] == os.environ['EXPECT_PIP'])\n"
        "print(os.environ['UV_SYSTEM_CERTS'], os.environ['HOME'] not in os.environ['UV_CACHE_DIR'])\n"
    )
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    expect = {
        "EXPECT_UV": os.environ.get("UV_CACHE_DIR") or str(cache / "uv"),
        "EXPECT_PIP": os.environ.get("PIP_CACHE_DIR") or str(cache / "pip"),
    }
    job = _run(api, code, env=expect)
    assert _wait(api, job.id).status.stage == "COMPLETED"
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NS)) == ["True True", "1 True"]


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
        "print('path starts with', os.environ['PATH'].split(os.pathsep)[0])\n"
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
        f"path starts with {Path(sys.executable).parent}",  # `python`, `upskill-hub`: this install
    ]
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NS, follow=True))[2] == "leak: ***"
    assert done.environment == {"MODE": "fast"}
    assert done.secrets == {"PROVIDER_KEY": "***"}
    listed = [j for j in api.list_jobs(namespace=NS) if j.id == job.id]
    for info in (done, *listed):
        assert SECRET not in repr(info)
    headers = {"authorization": f"Bearer {TEST_WRITE_TOKEN}"}
    for url in (f"{jobs_hub.url}/api/jobs/{NS}", f"{jobs_hub.url}/api/jobs/{NS}/{job.id}"):
        raw = httpx2.get(url, headers=headers, timeout=10)
        assert raw.status_code == 200 and "PROVIDER_KEY" in raw.text and SECRET not in raw.text
    # Nothing the server stored holds the value: not the record, not the log, not the repos.
    for path in jobs_hub.root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert not (jobs_hub.root / "jobs" / NS / job.id / "work").exists()  # gone with the Job


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


def _until_file(path: Path) -> str:
    """Job code that waits (at most 60 s) until the test creates ``path``: the test, not the
    clock, decides when the Job goes on."""
    return (
        f"import os, time\ndeadline = time.monotonic() + 60\n"
        f"while not os.path.exists({str(path)!r}) and time.monotonic() < deadline:\n    time.sleep(0.02)\n"
    )


def test_timeout_ends_the_job_as_an_error(api: HfApi, jobs_hub: ServerHandle) -> None:
    # The Job says its pid first (read from its log afterwards: no race with a short life).
    job = _run(api, "import os, time; print(os.getpid(), flush=True); time.sleep(60)", timeout=3)
    done = _wait(api, job.id)
    assert (done.status.stage, done.status.message) == ("ERROR", "timed out after 3s")
    pid = int(next(iter(api.fetch_job_logs(job_id=job.id, namespace=NS))))
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_cancel_stops_the_whole_process_group_and_is_idempotent(api: HfApi, jobs_hub: ServerHandle) -> None:
    # The Job starts a child that ignores nothing and would outlive a naive kill of the leader.
    code = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    job = _run(api, code)
    pid = _wait_running(jobs_hub, job.id)
    api.cancel_job(job_id=job.id, namespace=NS)
    done = _wait(api, job.id)
    assert done.status.stage == "CANCELED"
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # no process of the Job's group is left
    api.cancel_job(job_id=job.id, namespace=NS)  # again: no error, nothing changes
    assert api.inspect_job(job_id=job.id, namespace=NS).status.stage == "CANCELED"


def test_follow_streams_the_log_of_a_running_job_as_it_is_written(api: HfApi, tmp_path: Path) -> None:
    go_on = tmp_path / "go-on"
    # "tick 0", then the Job waits for the test: only a stream that delivers lines as they are
    # written lets the test see "tick 0" while the Job still runs (and so ever let it finish).
    code = "print('tick 0', flush=True)\n" + _until_file(go_on) + "for i in (1, 2, 3):\n    print('tick', i, flush=True)\n"
    job = _run(api, code)
    seen: list[str] = []
    for line in api.fetch_job_logs(job_id=job.id, namespace=NS, follow=True):
        if not seen:
            assert api.inspect_job(job_id=job.id, namespace=NS).status.stage == "RUNNING"
            go_on.touch()
        seen.append(line)
    assert seen == ["tick 0", "tick 1", "tick 2", "tick 3"]
    assert api.inspect_job(job_id=job.id, namespace=NS).status.stage == "COMPLETED"


def test_list_filters_by_every_label_and_by_stage(api: HfApi) -> None:
    run = f"run-{time.monotonic_ns()}"
    jobs = [
        _run(api, "print(0)", labels={"upskill-hub-run": run, "upskill-hub-shard": str(i)}) for i in range(3)
    ]
    other = _run(api, "print(0)", labels={"upskill-hub-run": run + "-other"})
    for job in (*jobs, other):
        _wait(api, job.id)
    found = api.list_jobs(labels={"upskill-hub-run": run}, namespace=NS)
    assert {j.id for j in found} == {j.id for j in jobs}
    one = list(api.list_jobs(labels={"upskill-hub-run": run, "upskill-hub-shard": "1"}, namespace=NS))
    assert [j.id for j in one] == [jobs[1].id]
    assert not list(api.list_jobs(labels={"upskill-hub-run": run}, status="RUNNING", namespace=NS))
    completed = api.list_jobs(labels={"upskill-hub-run": run}, status=["COMPLETED"], namespace=NS)
    assert len(list(completed)) == 3


def test_jobs_run_in_an_organization_the_token_belongs_to(api: HfApi) -> None:
    job = api.run_job(
        image="python:3.12", command=["python", "-c", "print('org')"], namespace=TEST_TRUSTED_ORG
    )
    assert job.owner.name == TEST_TRUSTED_ORG and job.owner.type == "org"
    done = api.wait_for_job(job.id, namespace=TEST_TRUSTED_ORG, poll_interval=0.05, timeout=30)
    assert done.status.stage == "COMPLETED"
    with pytest.raises(HfHubHTTPError) as err:  # ids do not leak across namespaces
        api.inspect_job(job_id=job.id, namespace=NS)
    assert err.value.response.status_code == 404


@pytest.mark.parametrize(
    ("kwargs", "status", "needle"),
    [
        ({"command": []}, 400, "command"),
        ({"env": {"BAD NAME": "x"}}, 400, "environment"),
        ({"secrets": {"A": "1"}, "env": {"A": "2"}}, 400, "both an environment variable and a secret"),
        ({"attempts": 3}, 400, "attempts"),
        ({"namespace": "someone-else"}, 403, "cannot run Jobs in namespace"),
    ],
)
def test_bad_job_specs_are_refused_with_a_clear_error(
    api: HfApi, kwargs: dict, status: int, needle: str
) -> None:
    spec = {"image": "python:3.12", "command": ["python", "-c", "print(1)"], "namespace": NS, **kwargs}
    before = len(list(api.list_jobs(namespace=NS)))
    with pytest.raises(HfHubHTTPError) as err:
        api.run_job(**spec)
    assert err.value.response.status_code == status
    assert needle in str(err.value)
    assert len(list(api.list_jobs(namespace=NS))) == before  # nothing was created


def test_tokens_are_checked_like_the_rest_of_the_hub(jobs_hub: ServerHandle, api: HfApi) -> None:
    job = _run(api, "print(1)")
    reader = HfApi(endpoint=jobs_hub.url, token=TEST_READ_TOKEN)
    anonymous = HfApi(endpoint=jobs_hub.url, token=False)
    stranger = HfApi(endpoint=jobs_hub.url, token="hf_" + "notAKnownToken0000000000000000")
    cases = [
        (lambda: reader.run_job(image="x", command=["true"], namespace=NS), 403),
        (lambda: reader.cancel_job(job_id=job.id, namespace=NS), 403),
        (lambda: anonymous.run_job(image="x", command=["true"], namespace=NS), 401),
        (lambda: list(anonymous.list_jobs(namespace=NS)), 401),
        (lambda: anonymous.inspect_job(job_id=job.id, namespace=NS), 401),
        (lambda: stranger.inspect_job(job_id=job.id, namespace=NS), 401),
        (lambda: api.inspect_job(job_id="0" * 24, namespace=NS), 404),
        (lambda: api.inspect_job(job_id="../../etc", namespace=NS), 404),
        (lambda: list(api.fetch_job_logs(job_id="f" * 24, namespace=NS)), 404),
        (lambda: api.cancel_job(job_id="a" * 24, namespace=NS), 404),
    ]
    for call, status in cases:
        with pytest.raises(HfHubHTTPError) as err:
            call()
        assert err.value.response.status_code == status
    assert reader.inspect_job(job_id=job.id, namespace=NS).id == job.id  # a read token may read
    assert anonymous.list_jobs_hardware()  # the flavor list is public


def test_jobs_past_the_running_cap_wait_in_scheduling(tmp_path: Path) -> None:
    with running_server(
        tmp_path / "hub", user=NS, job_limits=JobLimits(max_running=1, kill_grace_s=1)
    ) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        first = _run(api, _until_file(tmp_path / "first-may-end"))  # runs until the test says so
        _wait_running(hub, first.id)
        second = _run(api, "print('my turn')")
        assert api.inspect_job(job_id=second.id, namespace=NS).status.stage == "SCHEDULING"
        (tmp_path / "first-may-end").touch()
        assert _wait(api, second.id).status.stage == "COMPLETED"
        first_done = api.inspect_job(job_id=first.id, namespace=NS)
        second_done = api.inspect_job(job_id=second.id, namespace=NS)
        assert second_done.started_at >= first_done.finished_at
        blocker = _run(api, "import time; time.sleep(60)")
        _wait_running(hub, blocker.id)
        waiting = _run(api, "print('never')")
        api.cancel_job(job_id=waiting.id, namespace=NS)
        assert api.inspect_job(job_id=waiting.id, namespace=NS).status.stage == "CANCELED"
        assert list(api.fetch_job_logs(job_id=waiting.id, namespace=NS)) == []


def test_records_survive_a_restart_and_running_jobs_end_as_server_stopped(tmp_path: Path) -> None:
    root = tmp_path / "hub"
    with running_server(root, user=NS) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        finished = _run(api, "print('kept')")
        _wait(api, finished.id)
        running = _run(api, "import time; print('up', flush=True); time.sleep(60)")
        pid = _wait_running(hub, running.id)
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # the server took its Jobs down with it
    with running_server(root, user=NS) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        stopped = api.inspect_job(job_id=running.id, namespace=NS)
        assert (stopped.status.stage, stopped.status.message) == ("ERROR", "server stopped")
        assert api.inspect_job(job_id=finished.id, namespace=NS).status.stage == "COMPLETED"
        assert list(api.fetch_job_logs(job_id=finished.id, namespace=NS)) == ["kept"]


def test_a_chatty_job_has_its_log_capped(tmp_path: Path) -> None:
    with running_server(tmp_path / "hub", user=NS, job_limits=JobLimits(max_log_bytes=4000)) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        job = _run(api, "for i in range(5000): print('line', i)")
        assert _wait(api, job.id).status.stage == "COMPLETED"  # its output was drained, not blocked
        logs = list(api.fetch_job_logs(job_id=job.id, namespace=NS))
        assert 10 < len(logs) < 100
        assert logs[-1].startswith("[local Hub: log truncated at 4000 bytes")
        assert (hub.root / "jobs" / NS / job.id / "log").stat().st_size <= 4000


def test_a_command_that_does_not_exist_is_an_error_saying_so(api: HfApi) -> None:
    job = api.run_job(image="python:3.12", command=["no-such-program-xyz", "--flag"], namespace=NS)
    done = _wait(api, job.id)
    assert done.status.stage == "ERROR"
    assert done.status.message == "cannot start 'no-such-program-xyz': No such file or directory"


def test_list_pages_are_followed_by_the_client(api: HfApi, monkeypatch: pytest.MonkeyPatch) -> None:
    from upskill_hub.localhub.routes import jobs as job_routes

    run = f"paged-{time.monotonic_ns()}"
    jobs = [_run(api, "print(0)", labels={"upskill-hub-run": run}) for _ in range(5)]
    monkeypatch.setattr(job_routes, "PAGE_SIZE", 2)  # the server runs in this process
    found = [j.id for j in api.list_jobs(labels={"upskill-hub-run": run}, namespace=NS)]
    assert sorted(found) == sorted(j.id for j in jobs) and len(found) == 5


def test_the_queue_and_the_log_streams_are_bounded(tmp_path: Path) -> None:
    limits = JobLimits(max_running=1, max_queued=1, max_log_streams=1, kill_grace_s=1)
    with running_server(tmp_path / "hub", user=NS, job_limits=limits) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        running = _run(api, "import time; print('on', flush=True); time.sleep(60)")
        _wait_running(hub, running.id)
        _run(api, "print('queued')")
        with pytest.raises(HfHubHTTPError) as err:
            _run(api, "print('one too many')")
        assert err.value.response.status_code == 429
        headers = {"authorization": f"Bearer {TEST_WRITE_TOKEN}"}
        logs_url = f"{hub.url}/api/jobs/{NS}/{running.id}/logs"
        with httpx2.stream("GET", logs_url, headers=headers, timeout=10) as first:
            assert first.status_code == 200
            assert httpx2.get(logs_url, headers=headers).status_code == 429  # one stream at a time
        deadline = time.monotonic() + 10
        while True:  # the closed stream gives its slot back (the server notices the disconnect)
            with httpx2.stream("GET", logs_url, headers=headers, timeout=5) as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "a closed stream never gave its slot back"
            time.sleep(0.1)
        api.cancel_job(job_id=running.id, namespace=NS)
