"""``eval --jobs``: runs sharded over the local Hub's Jobs, checked against the same run done locally.

Everything goes through the real pieces: the unmodified ``huggingface_hub`` against the
local Hub (``tests/conftest.py``), each shard a subprocess ``upskill-hub jobs run-shard``
started by the local Hub's Jobs endpoints, and the ``openai`` SDK against the scripted
model server. Kept small (3 cases x 2 conditions x 2 runs = 12 calls): each Job is a
Python process start on a shared 2-core machine.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from _evalkit import make_skill

from upskill_hub.localhub.testing import TEST_WRITE_TOKEN  # noqa: E402
from upskill_hub.testing.llm_server import running_llm_server  # noqa: E402

pytestmark = pytest.mark.slow

PROVIDER_KEY = "upskillProviderSecret-7f3a9c21e4b8d605"


def banana_script(system: str, messages: list[dict[str, str]], params: dict) -> str:
    """Follows the skill: BANANA (and JSON) only when the skill is in the system prompt."""
    return '{"greeting": "BANANA"}' if "BANANA" in system else "hello there"


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills")


def _model(srv) -> str:
    return f"openai-compatible:scripted-model@{srv.openai_base_url}"


def _jobs(repo: str, shards: int, **kw):
    from upskill_hub.jobs.launch import JobsOptions

    return JobsOptions(repo_id=repo, shards=shards, image="upskill-hub-test-image", poll_s=0.5, **kw)


def _options(tmp_path: Path, name: str):
    from upskill_hub.lift.prepare import EvalOptions

    return EvalOptions(runs=2, output_dir=tmp_path / name, use_cache=False, plots=False)


def _repo_files(repo: str) -> list[str]:
    from huggingface_hub import HfApi

    return sorted(HfApi().list_repo_files(repo, repo_type="dataset"))


def _lift_view(summary) -> list[tuple]:
    return [(x.model, x.lift, x.ci_low, x.ci_high, x.p_value, x.n_cases, x.method) for x in summary.lifts]


def test_four_shards_give_the_rows_and_lift_of_the_same_run_done_locally(
    hub_server, hub_repo_id, skill, tmp_path
):
    from datasets import load_dataset

    from upskill_hub.jobs.run import run_on_jobs
    from upskill_hub.lift.api import run_eval

    with running_llm_server(banana_script, latency_s=0.05) as srv:
        local = run_eval(skill, [_model(srv)], _options(tmp_path, "local"))
        sharded = run_on_jobs(skill, [_model(srv)], _options(tmp_path, "jobs"), _jobs(hub_repo_id, 4))

    def view(rows):
        return sorted((r.model, r.condition, r.case_id, r.repeat, r.passed) for r in rows)

    rows = sharded.result.rows
    assert len(rows) == 12 and view(rows) == view(local.rows)
    assert _lift_view(sharded.result.summary) == _lift_view(local.summary)
    assert [(c.model, c.condition, c.passed, c.n) for c in sharded.result.summary.conditions] == [
        (c.model, c.condition, c.passed, c.n) for c in local.summary.conditions
    ]
    # The spread over repeats and the assertion analysis, as a local run writes them.
    def spread(summary):  # latency differs from run to run; the pass rates and tokens may not
        return [(b.model, b.condition, b.runs, b.pass_rate_mean, b.pass_rate_stddev, b.tokens_mean)
                for b in summary.benchmark]  # fmt: skip

    assert spread(sharded.result.summary) == spread(local.summary) and spread(local.summary)
    assert sharded.result.summary.assertion_flags == local.summary.assertion_flags
    assert (sharded.result.run_dir / "benchmark.json").is_file() and (sharded.result.run_dir / "benchmark.md").is_file()
    run_id = sharded.result.summary.run_id
    files = _repo_files(hub_repo_id)
    shard_files = [f for f in files if f.startswith(f"data/results/{run_id}/")]
    assert shard_files == [f"data/results/{run_id}/shard-{i}.parquet" for i in range(4)]
    assert f"data/runs/{run_id}.parquet" in files and f"data/results/{run_id}.parquet" not in files
    assert [s.done for s in sharded.shards] == [True] * 4 and sharded.relaunched == 0
    record = json.loads((Path(_download(hub_repo_id, f"jobs/{run_id}/shards.json"))).read_text())
    assert [len(s["jobs"]) for s in record["shards"]] == [1, 1, 1, 1]
    # The card's results config reads the shard files: every row exactly once.
    table = load_dataset(hub_repo_id, "results", split="train")
    assert sorted((r["case_id"], r["condition"], r["repeat"]) for r in table) == sorted(
        (r.case_id, r.condition, r.repeat) for r in local.rows
    )
    # `runs` lists it like any other run (the local run folder is complete).
    from upskill_hub.lift.history import list_runs

    (info,) = list_runs(tmp_path / "jobs")
    assert info.complete and info.summary.run_id == run_id


def _download(repo: str, path: str) -> str:
    from huggingface_hub import hf_hub_download

    return hf_hub_download(repo, path, repo_type="dataset")


def test_a_shard_killed_mid_way_is_relaunched_and_every_call_lands_once(
    hub_server, hub_repo_id, skill, tmp_path
):
    from huggingface_hub import HfApi

    from upskill_hub.jobs.run import run_on_jobs

    api = HfApi()
    said: list[str] = []
    outcome: dict = {}
    with running_llm_server(banana_script, latency_s=0.4) as srv:
        options = _options(tmp_path, "jobs")
        options.concurrency = 1  # 6 calls of 0.4 s in each shard: the kill lands mid-way

        def launch() -> None:
            try:
                outcome["run"] = run_on_jobs(
                    skill, [_model(srv)], options, _jobs(hub_repo_id, 2), say=said.append
                )
            except Exception as exc:  # surfaced by the assertion below
                outcome["error"] = exc

        thread = threading.Thread(target=launch)
        thread.start()
        victim = None
        deadline = time.monotonic() + 120
        while victim is None and time.monotonic() < deadline:
            run_ids = [line.split()[1].rstrip(":") for line in said if line.startswith("run ")]
            if run_ids and srv.calls >= 2:
                for job in api.list_jobs(labels={"upskill-hub-run": run_ids[0], "upskill-hub-shard": "0"}):
                    pid = hub_server.job_pid(job.id)
                    if pid is not None:
                        victim = (job.id, pid)
            time.sleep(0.05)
        assert victim is not None, f"shard 0 never ran: {said}"
        os.killpg(victim[1], signal.SIGKILL)
        thread.join(240)
    assert "error" not in outcome, outcome.get("error")
    run = outcome["run"]
    assert run.relaunched >= 1 and len(run.shards[0].jobs) >= 2
    assert any("relaunching" in line for line in said)
    assert api.inspect_job(job_id=victim[0]).status.stage == "ERROR"
    rows = run.result.rows
    assert len(rows) == 12 and len({r.key for r in rows}) == 12
    # The dataset holds exactly one row per planned call.
    import pyarrow.parquet as pq

    run_id = run.result.summary.run_id
    landed = [
        (r["model"], r["condition"], r["case_id"], r["repeat"])
        for i in range(2)
        for r in pq.read_table(_download(hub_repo_id, f"data/results/{run_id}/shard-{i}.parquet")).to_pylist()
    ]
    assert len(landed) == 12 and len(set(landed)) == 12


def test_a_canceled_shard_stops_the_launcher_with_the_resume_command(
    hub_server, hub_repo_id, skill, tmp_path
):
    from huggingface_hub import HfApi

    from upskill_hub.jobs.run import run_on_jobs

    api, said, outcome = HfApi(), [], {}
    with running_llm_server(banana_script, latency_s=0.4) as srv:
        options = _options(tmp_path, "jobs")
        options.concurrency = 1

        def launch() -> None:
            try:
                run_on_jobs(skill, [_model(srv)], options, _jobs(hub_repo_id, 1), say=said.append)
            except Exception as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=launch)
        thread.start()
        deadline = time.monotonic() + 60
        while srv.calls < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        run_id = next(line.split()[1].rstrip(":") for line in said if line.startswith("run "))
        (job,) = api.list_jobs(labels={"upskill-hub-run": run_id})
        api.cancel_job(job_id=job.id)
        thread.join(60)
    message = str(outcome["error"])
    assert "shard 0 of run" in message and "was canceled" in message
    assert f"eval --resume {run_id} --jobs 1 --repo {hub_repo_id}" in message


def test_no_secret_reaches_a_job_spec_log_dataset_file_or_commit(
    hub_server, hub_repo_id, skill, tmp_path, monkeypatch
):
    from huggingface_hub import HfApi

    from upskill_hub.jobs.run import run_on_jobs

    monkeypatch.setenv("UPSKILL_API_KEY", PROVIDER_KEY)
    api = HfApi()
    with running_llm_server(banana_script, latency_s=0.01, api_key=PROVIDER_KEY) as srv:
        run = run_on_jobs(skill, [_model(srv)], _options(tmp_path, "jobs"), _jobs(hub_repo_id, 2))
    assert len(run.result.rows) == 12 and not any(r.error for r in run.result.rows)
    secrets = [PROVIDER_KEY.encode(), TEST_WRITE_TOKEN.encode()]
    job_ids = [j for s in run.shards for j in s.jobs]
    seen = []
    for job_id in job_ids:
        info = api.inspect_job(job_id=job_id)
        seen.append(repr(info))
        assert set(info.secrets or {}) == {"HF_TOKEN", "UPSKILL_API_KEY"}  # they did travel, as secrets
        seen.append("\n".join(api.fetch_job_logs(job_id=job_id, follow=False)))
    seen += [repr(j) for j in api.list_jobs(labels={"upskill-hub-run": run.result.summary.run_id})]
    seen += [c.title + (c.message or "") for c in api.list_repo_commits(hub_repo_id, repo_type="dataset")]
    assert "shard" in seen[1]  # the logs were read
    for text in seen:
        assert not any(s.decode() in text for s in secrets)
    walked = 0
    for path in Path(hub_server.root).rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            walked += 1
            for s in secrets:
                assert s not in data, f"a secret is stored in {path}"
    assert walked > 20


def test_resume_relaunches_only_the_shard_whose_rows_are_missing(hub_server, hub_repo_id, skill, tmp_path):
    from huggingface_hub import HfApi

    from upskill_hub.errors import UpskillError
    from upskill_hub.jobs.run import resume_on_jobs, run_on_jobs
    from upskill_hub.jobs.shard import run_shard

    api = HfApi()
    with running_llm_server(banana_script, latency_s=0.01) as srv:
        first = run_on_jobs(skill, [_model(srv)], _options(tmp_path, "jobs"), _jobs(hub_repo_id, 3))
        run_id = first.result.summary.run_id
        api.delete_file(f"data/results/{run_id}/shard-1.parquet", hub_repo_id, repo_type="dataset")
        with pytest.raises(UpskillError, match="was split into 3 shards; resume it with --jobs 3"):
            resume_on_jobs(run_id, _jobs(hub_repo_id, 2), output_dir=tmp_path / "resumed")
        before = srv.calls
        again = resume_on_jobs(run_id, _jobs(hub_repo_id, 3), output_dir=tmp_path / "resumed", plots=False)
        assert srv.calls - before == 4  # shard 1's calls only (12 calls / 3 shards)
        # A shard whose file already holds exactly its rows (a relaunch after its commit
        # landed) makes no call and no commit.
        head = api.dataset_info(hub_repo_id).sha
        done = run_shard(hub_repo_id, run_id, 2, 3, workdir=tmp_path / "job", say=lambda _line: None)
        assert not done.uploaded and done.rows == 4 and srv.calls - before == 4
        assert api.dataset_info(hub_repo_id).sha == head
    jobs = list(api.list_jobs(labels={"upskill-hub-run": run_id}))
    by_shard = sorted((j.labels["upskill-hub-shard"], j.labels["upskill-hub-attempt"]) for j in jobs)
    assert by_shard == [("0", "1"), ("1", "1"), ("1", "2"), ("2", "1")]
    assert sorted((r.key, r.passed) for r in again.result.rows) == sorted(
        (r.key, r.passed) for r in first.result.rows
    )
    assert _lift_view(again.result.summary) == _lift_view(first.result.summary)


def test_the_local_model_runs_inside_the_jobs(hub_server, hub_repo_id, tmp_path):
    """Item 4: ``--model local`` is served inside each shard's Job; no call leaves its machine."""
    from huggingface_hub import HfApi

    from upskill_hub.jobs.run import run_on_jobs
    from upskill_hub.lift.prepare import EvalOptions

    skill = make_skill(
        tmp_path / "skills",
        cases=[{"id": "hi", "input": "Say hi.", "assert": [{"type": "not-contains", "value": "zzz"}]}],
    )
    options = EvalOptions(runs=1, output_dir=tmp_path / "jobs", plots=False, params={"max_tokens": 16})
    run = run_on_jobs(skill, ["local"], options, _jobs(hub_repo_id, 1, flavor="a10g-small"))
    rows = run.result.rows
    assert len(rows) == 2 and {r.condition for r in rows} == {"baseline", "with_skill"}
    assert all(r.provider == "local" and r.error is None and r.output_tokens for r in rows)
    # A GPU flavor: the Job lets the local model pick CUDA when torch sees it (CPU here).
    info = HfApi().inspect_job(job_id=run.shards[0].job_id)
    assert info.flavor == "a10g-small" and info.environment["UPSKILL_LOCAL_DEVICE"] == "auto"


def _code_lines(api, job_ids: list[str]) -> list[str]:
    """The line each Job printed about the code it ran (see ``job_shard.code_line``)."""
    from upskill_hub.jobs.launch import CODE_LINE_RE

    found = []
    for job_id in job_ids:
        lines = [m.group(0) for line in api.fetch_job_logs(job_id=job_id) if (m := CODE_LINE_RE.search(line))]
        assert len(lines) == 1, f"Job {job_id} printed {lines}"
        found += lines
    return found


def _landed(repo: str, run_id: str, shards: int) -> list[tuple]:
    import pyarrow.parquet as pq

    return [
        (r["model"], r["condition"], r["case_id"], r["repeat"])
        for i in range(shards)
        for r in pq.read_table(_download(repo, f"data/results/{run_id}/shard-{i}.parquet")).to_pylist()
    ]


def _run_without_image(hub_repo_id, skill, tmp_path, monkeypatch, shards: int):
    """``eval --jobs`` with no --image: the shards install the launcher's wheel from the bundle."""
    from huggingface_hub import HfApi

    from upskill_hub.jobs.launch import JobsOptions
    from upskill_hub.jobs.run import run_on_jobs

    monkeypatch.setenv("UPSKILL_WHEEL_CACHE", str(tmp_path / "wheels"))
    said: list[str] = []
    with running_llm_server(banana_script) as srv:
        jobs = JobsOptions(repo_id=hub_repo_id, shards=shards, poll_s=0.5)
        run = run_on_jobs(skill, [_model(srv)], _options(tmp_path, "jobs"), jobs, say=said.append)
    run_id = run.result.summary.run_id
    (bundled,) = [f for f in _repo_files(hub_repo_id) if f.startswith(f"jobs/{run_id}/") and f.endswith(".whl")]
    plan = json.loads(Path(_download(hub_repo_id, f"jobs/{run_id}/plan.json")).read_text())
    wheel = plan["wheel"]
    assert bundled == f"jobs/{run_id}/{wheel['filename']}"
    # The uploaded wheel is the launcher's: same bytes as its cached build, same version.
    from upskill_hub import __version__
    from upskill_hub.selfwheel import file_sha256

    assert wheel["version"] == __version__
    assert file_sha256(Path(_download(hub_repo_id, bundled))) == wheel["sha256"]
    assert any(wheel["sha256"][:12] in line for line in said)
    # Every shard's Job printed the version and the sha256 of the wheel it was installed from.
    api = HfApi()
    expected = f"upskill-hub {__version__} installed from {wheel['filename']} sha256={wheel['sha256']}"
    assert _code_lines(api, [s.jobs[-1] for s in run.shards]) == [expected] * shards
    assert [s.ran for s in run.shards] == [(__version__, wheel["sha256"])] * shards
    # Exactly one row per call in the dataset.
    landed = _landed(hub_repo_id, run_id, shards)
    assert len(run.result.rows) == 12 and len(landed) == 12 and len(set(landed)) == 12
    return run, api


def test_without_image_every_shard_installs_the_bundled_wheel_through_uvx(
    hub_server, hub_repo_id, skill, tmp_path, monkeypatch
):
    import shutil

    from upskill_hub.jobs.launch import NO_UV_LINE

    assert shutil.which("uvx", path=str(Path(sys.executable).parent)), "uv is in the test extra (pip install uv)"
    run, api = _run_without_image(hub_repo_id, skill, tmp_path, monkeypatch, shards=2)
    for s in run.shards:
        log = list(api.fetch_job_logs(job_id=s.jobs[-1]))
        assert not any(NO_UV_LINE in line for line in log)


def test_without_uv_a_shard_says_so_and_installs_the_bundled_wheel_with_pip(
    hub_server, hub_repo_id, skill, tmp_path, monkeypatch
):
    from upskill_hub.jobs import launch as job_launch
    from upskill_hub.jobs.launch import NO_UV_LINE

    plain = job_launch.job_env

    def env_without_uv(plan, jobs):  # an image without uv: only the system's tools on PATH
        return {**plain(plan, jobs), "PATH": "/usr/local/bin:/usr/bin:/bin"}

    monkeypatch.setattr(job_launch, "job_env", env_without_uv)
    run, api = _run_without_image(hub_repo_id, skill, tmp_path, monkeypatch, shards=1)
    log = list(api.fetch_job_logs(job_id=run.shards[0].jobs[-1]))
    assert sum(NO_UV_LINE in line for line in log) == 1


def test_without_a_wheel_to_send_nothing_is_written_or_committed(hub_server, hub_repo_id, skill, tmp_path, monkeypatch):
    from importlib import metadata
    from types import SimpleNamespace

    from huggingface_hub import HfApi

    from upskill_hub import selfwheel
    from upskill_hub.errors import UpskillError
    from upskill_hub.jobs.launch import JobsOptions
    from upskill_hub.jobs.run import run_on_jobs

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    # upskill-hub imported from a path, not installed (only selfwheel's view: the SDKs read metadata too)
    shim = SimpleNamespace(distribution=not_installed, PackageNotFoundError=metadata.PackageNotFoundError)
    monkeypatch.setattr(selfwheel, "metadata", shim)
    HfApi().create_repo(hub_repo_id, repo_type="dataset")
    before, jobs_before = _repo_files(hub_repo_id), len(list(HfApi().list_jobs()))
    with running_llm_server(banana_script) as srv, pytest.raises(UpskillError, match="pass --image") as err:
        run_on_jobs(skill, [_model(srv)], _options(tmp_path, "jobs"), JobsOptions(repo_id=hub_repo_id, shards=2))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())
    assert _repo_files(hub_repo_id) == before and len(list(HfApi().list_jobs())) == jobs_before
