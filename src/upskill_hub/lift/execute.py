"""Run a prepared eval into its run folder: open (or resume) the folder, run, sum up.

The second half of :func:`upskill_hub.lift.api.run_eval_async`, after
:mod:`upskill_hub.lift.prepare` checked everything: nothing here validates user input,
and every disk error on the way says how to go on with ``--resume``.
"""

from __future__ import annotations

import contextlib
import errno
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub import __version__, rundir
from upskill_hub._util.fsutil import StorageError, storage_error
from upskill_hub._util.timestamps import utc_now
from upskill_hub.errors import UpskillError
from upskill_hub.lift.figures.stats import stats_from_eval_rows, summarize_rows
from upskill_hub.lift.prepare import EvalOptions, PreparedEval, ShardPart
from upskill_hub.lift.runner import EvalPlan, ExecStats, Runner, new_run_id
from upskill_hub.rundir.schema import ResultRow, RunSummary
from upskill_hub.session.cache import ResponseCache, default_cache_dir


@dataclass
class RunResult:
    """What :func:`run_eval` returns."""

    run_dir: Path
    #: ``None`` only for one shard of a run on Jobs (``EvalOptions.shard``): a shard's numbers
    #: mean nothing alone, the launcher summarizes all shards together.
    summary: RunSummary | None
    rows: list[ResultRow]
    stats: ExecStats = field(default_factory=ExecStats)
    plots: list[Path] = field(default_factory=list)


def _open_run_folder(
    plan: EvalPlan, o: EvalOptions, lock: contextlib.ExitStack
) -> tuple[Path, set | None, list[ResultRow]]:
    """The run folder (a shard's, the one to resume, or a new one), locked; the keys to run
    (``None``: all) and the rows already answered."""
    output = Path(o.output_dir)
    if o.shard is not None:
        run_dir, only = _shard_folder(plan, o.shard, output)
        lock.enter_context(rundir.run_lock(run_dir))
        return run_dir, only, rundir.compact_results(run_dir, only)
    if not o.resume:
        plan.run_id = new_run_id(plan.skill_name)
        run_dir = rundir.create_run(output, plan.record())
        lock.enter_context(rundir.run_lock(run_dir))
        return run_dir, None, []
    found = rundir.find_resumable(output, plan.fingerprint())
    if found is None:
        raise UpskillError(
            f"no run in {output} matches this eval (same skill version, models, cases, runs and "
            "parameters); run without --resume to start one"
        )
    stored = rundir.read_plan(found)
    assert stored is not None  # find_resumable only returns folders with a plan
    plan.run_id = stored.run_id
    plan.created = stored.created or plan.created
    lock.enter_context(rundir.run_lock(found))
    return found, None, rundir.compact_results(found, {c.key for c in plan.calls()})


def _write_outcome(
    run_dir: Path, plan: EvalPlan, rows: list[ResultRow], written_rows: list[ResultRow], o: EvalOptions
) -> tuple[RunSummary | None, list[Path]]:
    """The results shard, the summary, ``benchmark.json`` / ``benchmark.md`` and the plots
    (a Jobs shard writes only the rows)."""
    # Every row is in memory now: write the results shard, so push need not parse the JSON.
    rundir.write_results_parquet(run_dir, written_rows)
    if o.shard is not None:
        return None, []
    summary = write_summary_files(run_dir, plan, rows)
    if not o.plots:
        return summary, []
    from upskill_hub.lift.plots import write_plots

    return summary, write_plots(run_dir, summary, rows)


def _resumable(exc: StorageError) -> StorageError:
    """``exc`` telling how to go on: every answer already written is kept for ``--resume``."""
    if exc.errno == errno.EROFS:
        return exc
    return StorageError(exc.path, exc.errno, "then run the same eval with --resume: the answers already written are kept")


def _shard_folder(plan: EvalPlan, shard: ShardPart, output: Path) -> tuple[Path, set]:
    """The run folder of one shard of a run planned elsewhere, and the keys it owns.

    The plan rebuilt here must be the launcher's (same fingerprint), or the shard would
    answer a different experiment under the same run id.
    """
    if plan.fingerprint() != shard.fingerprint:
        raise UpskillError(
            f"shard {shard.index} of run {shard.run_id}: the plan rebuilt here differs from the launcher's "
            f"(fingerprint {plan.fingerprint()} != {shard.fingerprint}); run the same upskill-hub version"
        )
    plan.run_id, plan.created = shard.run_id, shard.created
    run_dir = rundir.create_run(output, plan.record(), exist_ok=True)
    return run_dir, shard.owns(c.key for c in plan.calls())


def write_summary_files(run_dir: Path, plan: EvalPlan, rows: list[ResultRow]) -> RunSummary:
    """``summary.json`` with the spread over repeats and the assertion analysis, and
    skill-creator's ``benchmark.json`` / ``benchmark.md`` beside it (a local run and a run
    collected from Jobs alike)."""
    from upskill_hub.lift.figures.assertion_audit import audit_rows
    from upskill_hub.lift.figures.benchmark import add_figures, benchmark_files

    summary = build_summary(plan, rows)
    audit = audit_rows(rows)
    add_figures(summary, rows, audit)
    rundir.write_summary(run_dir, summary)
    rundir.write_benchmark(run_dir, *benchmark_files(summary, rows, [c.id for c in plan.cases], audit))
    return summary


def build_summary(plan: EvalPlan, rows: list[ResultRow]) -> RunSummary:
    models = [c.model for c in plan.clients]
    conds, lifts = [], []
    for mode in dict.fromkeys(r.mode for r in rows):  # each mode's figures apart: inject lift beside catalog lift
        c, lf = summarize_rows([r for r in rows if r.mode == mode], models)
        for stat in [*c, *lf]:
            stat.mode = mode
        conds += c
        lifts += lf


    return RunSummary(
        run_id=plan.run_id,
        timestamp=utc_now(),
        tool_version=__version__,
        skill_name=plan.skill_name,
        skill_version=plan.skill_version,
        models=models,
        runs_per_case=plan.runs,
        n_cases=len(plan.cases),
        conditions=conds,
        lifts=lifts,
        judge_model=plan.judge_label,
        params=plan.params.to_json(),
        n_results=len(rows),
        triggers=stats_from_eval_rows(rows, models),
    )


async def execute_prepared(prepared: PreparedEval, o: EvalOptions) -> RunResult:
    """Run ``prepared``'s plan with options ``o``; the caller closes ``prepared``'s clients."""
    plan = prepared.plan
    try:
        with contextlib.ExitStack() as lock:  # holds the run folder's lock while it is written
            run_dir, only, done = _open_run_folder(plan, o, lock)
            cache = ResponseCache(o.cache_dir or default_cache_dir()) if o.use_cache else None
            runner = Runner(
                plan, run_dir, concurrency=o.concurrency, cache=cache, judges=prepared.judges,
                cost_fn=prepared.prices, on_row=o.on_row, only=only,
            )  # fmt: skip
            if o.on_start is not None:
                o.on_start(len(plan.calls()) if only is None else len(only), len(done))
            rows = await runner.execute(done)
            summary, written = _write_outcome(run_dir, plan, rows, runner.written, o)
    except OSError as exc:  # the disk filled up, a file-size limit, a read-only folder (StorageError too)
        err = storage_error(exc)
        if err is None:
            raise
        raise _resumable(err) from None
    return RunResult(run_dir=run_dir, summary=summary, rows=rows, stats=runner.stats, plots=written)
