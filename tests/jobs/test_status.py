"""``upskill_hub.jobs.status``: a sharded run's Jobs, found by label through ``HfApi`` (local Hub)."""

from __future__ import annotations

import time
import uuid

import pytest
from huggingface_hub import HfApi
from shard_jobs import NS, launch, wait

from upskill_hub.errors import UpskillError
from upskill_hub.jobs.status import cancel_run, run_jobs, stream_logs


@pytest.fixture
def api(hub_server) -> HfApi:
    return HfApi()


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:8]}"


def test_each_shard_reports_its_newest_attempt(api: HfApi, run_id: str) -> None:
    failed = launch(api, run_id, 0, attempt=1, code="import sys; sys.exit(2)")
    wait(api, failed)
    retried = launch(api, run_id, 0, attempt=2, code="print('shard 0 ok')")
    other = launch(api, run_id, 1, attempt=1, code="print('shard 1 ok')")
    wait(api, retried, other)
    launch(api, run_id + "-x", 0, attempt=1, code="print(1)")  # another run: not ours
    shards = run_jobs(api, run_id)
    assert [(s.shard, s.attempt, s.attempts, s.stage) for s in shards] == [
        (0, 2, 2, "COMPLETED"),
        (1, 1, 1, "COMPLETED"),
    ]
    assert shards[0].job_id == retried.id and shards[0].duration_s is not None
    assert shards[0].to_json()["stage"] == "COMPLETED"


def test_unknown_or_invalid_run_ids_are_one_line_errors(api: HfApi, run_id: str) -> None:
    with pytest.raises(UpskillError, match=f"no Jobs found for run {run_id} in namespace {NS}"):
        run_jobs(api, run_id)
    with pytest.raises(UpskillError, match="invalid run id"):
        run_jobs(api, "../x")


def test_logs_of_every_shard_or_of_one(api: HfApi, run_id: str) -> None:
    jobs = [launch(api, run_id, i, attempt=1, code=f"print('from {i}'); print('bye {i}')") for i in range(3)]
    wait(api, *jobs)
    assert list(stream_logs(api, run_id)) == [
        (0, "from 0"),
        (0, "bye 0"),
        (1, "from 1"),
        (1, "bye 1"),
        (2, "from 2"),
        (2, "bye 2"),
    ]
    assert list(stream_logs(api, run_id, shard=1)) == [(1, "from 1"), (1, "bye 1")]
    with pytest.raises(UpskillError, match=f"run {run_id} has no shard 7"):
        list(stream_logs(api, run_id, shard=7))


def test_follow_interleaves_running_shards_until_all_end(api: HfApi, run_id: str) -> None:
    code = "import time\nfor i in range(3):\n    print('{s}', i, flush=True)\n    time.sleep(0.3)\n"
    for shard in range(2):
        launch(api, run_id, shard, attempt=1, code=code.format(s=f"s{shard}"))
    started = time.monotonic()
    got = list(stream_logs(api, run_id, follow=True))
    assert sorted(got) == sorted((s, f"s{s} {i}") for s in range(2) for i in range(3))
    assert [line for s, line in got if s == 0] == ["s0 0", "s0 1", "s0 2"]  # in order within a shard
    assert time.monotonic() - started < 20
    assert all(s.stage == "COMPLETED" for s in run_jobs(api, run_id))


def test_cancel_stops_every_running_job_and_is_idempotent(api: HfApi, run_id: str) -> None:
    done = launch(api, run_id, 0, attempt=1, code="print('done')")
    wait(api, done)
    running = [launch(api, run_id, s, attempt=1, code="import time; time.sleep(60)") for s in (1, 2)]
    canceled = cancel_run(api, run_id)
    assert sorted(canceled) == sorted(j.id for j in running)
    wait(api, *running)
    stages = {s.shard: s.stage for s in run_jobs(api, run_id)}
    assert stages == {0: "COMPLETED", 1: "CANCELED", 2: "CANCELED"}
    assert cancel_run(api, run_id) == []
