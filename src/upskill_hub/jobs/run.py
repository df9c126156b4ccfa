"""``eval --jobs N``: plan a run here, run its shards as Hugging Face Jobs, land every row once.

The steps, and why:

1. **Plan locally** with :func:`~upskill_hub.lift.api.prepare_eval`, exactly as a local run
   (keys, endpoints, judge, fingerprint), so bad input fails here, before any Job or commit.
2. **Bundle**: the plan, cases, skill and (without ``--image``) the wheel of this very
   upskill-hub (:mod:`upskill_hub.selfwheel`) go to ``jobs/<run_id>/`` of the results repo
   in one commit (:mod:`.job_bundle`); a Job needs nothing else from this machine.
3. **Launch** one Job per shard and **wait**, relaunching failed shards up to ``attempts``
   Jobs each (:mod:`.job_launch`); keys travel only as Job *secrets*.
4. Each Job runs ``upskill-hub jobs run-shard`` (:mod:`.job_shard`), which commits its rows
   to ``data/results/<run_id>/shard-<i>.parquet`` and nothing else.
5. **Collect**: every shard file is read back; the rows must be exactly one per planned
   call. The local run folder, summary, report and plots are then written by the same
   code as a local run (:func:`~upskill_hub.lift.execute.write_summary_files`, :mod:`~upskill_hub.rundir`), and the
   run is recorded with ``push`` (its ``runs`` row, the card, and ``jobs/<run_id>/shards.json``
   with each shard's Jobs) in one commit.

:func:`resume_on_jobs` rebuilds the plan from the bundle and relaunches only the shards
whose rows are missing, with the run's original shard count (the assignment of calls to
shards depends on it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from upskill_hub import rundir
from upskill_hub.errors import UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.client import REPO_TYPE, hub_errors, make_api
from upskill_hub.jobs.assign import check_shard_count, missing_shards, owned_keys
from upskill_hub.jobs.bundle import (
    SHARDS_FILE,
    BundledWheel,
    bundle_files,
    download_bundle,
    read_bundle,
    rebuild,
)
from upskill_hub.jobs.launch import (
    JobsOptions,
    Progress,
    Say,
    ShardLauncher,
    ShardState,
    check_options,
    make_launcher,
    next_attempts,
)
from upskill_hub.jobs.status import resolve_namespace
from upskill_hub.lift.execute import RunResult, write_summary_files
from upskill_hub.lift.prepare import EvalOptions, PreparedEval, prepare_eval
from upskill_hub.lift.runner import EvalPlan, new_run_id
from upskill_hub.models.endpoints import with_endpoint
from upskill_hub.models.spec import ModelSpec, parse_model_spec
from upskill_hub.rundir.schema import ResultRow
from upskill_hub.skill import Skill, require_skill

__all__ = [
    "JobsOptions",
    "ShardedRun",
    "check_rows",
    "endpoint_warnings",
    "job_specs",
    "resume_on_jobs",
    "run_on_jobs",
]

_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


@dataclass
class ShardedRun:
    """What a sharded run produced: the same :class:`RunResult` as a local run, plus its Jobs."""

    result: RunResult
    shards: list[ShardState]
    relaunched: int
    launched: int
    commit_url: str | None = None


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
    if jobs.namespace is None:  # once, not on every poll (the Jobs API needs it spelled out)
        with hub_errors(jobs.repo_id, action="run Jobs for"):
            jobs.namespace = resolve_namespace(api, None)
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
    prepared = asyncio.run(_plan_only(skill, specs, options))
    plan = prepared.plan
    check_shard_count(jobs.shards, len(plan.calls()))
    for line in endpoint_warnings(plan, api.endpoint):
        say(line)
    wheel = _own_wheel(say) if jobs.image is None else None  # before anything is written
    plan.run_id = new_run_id(plan.skill_name)
    # The bundle is checked (secrets) and uploaded before the run folder exists: a refused or
    # failed launch leaves no empty run behind in `runs`.
    files = bundle_files(
        plan.record(), jobs.shards, specs, skill, plan.cases, _bundle_options(options, plan), wheel=wheel
    )
    with hub_errors(jobs.repo_id, action="upload the run's Job bundle to"):
        from huggingface_hub import CommitOperationAdd

        api.create_repo(jobs.repo_id, repo_type=REPO_TYPE, exist_ok=True)
        api.create_commit(
            jobs.repo_id,
            [CommitOperationAdd(path_in_repo=p, path_or_fileobj=d) for p, d in files.items()],
            commit_message=f"Plan run {plan.run_id} on {jobs.shards} Hugging Face Job(s)",
            repo_type=REPO_TYPE,
        )
    run_dir = rundir.create_run(options.output_dir, plan.record())
    say(f"run {plan.run_id}: {len(plan.calls())} calls in {jobs.shards} shard(s); plan in {jobs.repo_id}")
    launcher = make_launcher(
        api, jobs, plan, list(prepared.judges.values()), token, jobs.shards, say=say, progress=progress,
        wheel=wheel[0] if wheel else None,
    )  # fmt: skip
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
        if bundle.wheel is None and jobs.image is None:
            raise UpskillError(
                f"run {run_id} was launched without an upskill-hub wheel in its bundle; resume it with --image"
            )
        if bundle.shards != jobs.shards:
            raise UpskillError(
                f"run {run_id} was split into {bundle.shards} shards; resume it with --jobs {bundle.shards} "
                "(which calls a shard runs depends on the count)"
            )
        skill, specs, options = rebuild(folder, bundle)
        prepared = asyncio.run(_plan_only(skill, specs, options))
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
    launcher = make_launcher(
        api, jobs, plan, list(prepared.judges.values()), token, bundle.shards, say=say, progress=progress,
        wheel=bundle.wheel,  # the code the run was launched with
    )  # fmt: skip
    for i in range(bundle.shards):
        if i not in todo:
            launcher.states[i] = ShardState(i, stage="COMPLETED")
    if todo:
        say(f"run {run_id}: relaunching shard(s) {', '.join(map(str, todo))} of {bundle.shards}")
        launcher.start(todo, next_attempts(api, jobs, run_id, todo))
        launcher.wait()
    else:
        say(f"run {run_id}: every shard's rows are in {jobs.repo_id}; nothing to relaunch")
    return _finish(api, jobs, plan, run_dir, launcher, plots, say)


def _own_wheel(say: Say) -> tuple[BundledWheel, bytes]:
    """This upskill-hub's wheel (built or cached) for the bundle, and one line about it."""
    from upskill_hub.selfwheel import own_wheel

    built = own_wheel()
    say(f"Jobs install upskill-hub {built.version} from {built.filename} (sha256 {built.sha256[:12]})")
    return BundledWheel(built.filename, built.sha256, built.version), built.path.read_bytes()


async def _plan_only(skill: Skill, specs: list[ModelSpec], options: EvalOptions) -> PreparedEval:
    """The validated plan; its clients are closed at once (the Jobs make the calls)."""
    prepared = await prepare_eval(skill, specs, options)
    await prepared.aclose()
    return prepared


def _bundle_options(options: EvalOptions, plan: EvalPlan) -> EvalOptions:
    from dataclasses import replace

    return replace(options, params=plan.params, include_baseline="baseline" in plan.conditions)


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


def _finish(api: Any, jobs: JobsOptions, plan: EvalPlan, run_dir: Path, launcher: ShardLauncher, plots: bool,
            say: Say) -> ShardedRun:  # fmt: skip
    """Read every shard back, write the run folder like a local run, record the run in the repo."""
    from upskill_hub.hub.push import push

    checked = sum(s.ran is not None for s in launcher.states.values())
    if launcher.wheel is not None and checked:
        say(
            f"{checked} shard Job(s) ran upskill-hub {launcher.wheel.version} from the bundled wheel "
            f"(sha256 {launcher.wheel.sha256[:12]}, read from their logs)"
        )
    by_shard = _read_shards(api, jobs.repo_id, plan.run_id, range(launcher.count), strict=True)
    rows = check_rows(plan, launcher.count, by_shard)
    rundir.write_results(run_dir, rows)
    rundir.write_results_parquet(run_dir, rows)
    summary = write_summary_files(run_dir, plan, rows)
    written: list[Path] = []
    if plots:
        from upskill_hub.lift.plots import write_plots

        written = write_plots(run_dir, summary, rows)
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
