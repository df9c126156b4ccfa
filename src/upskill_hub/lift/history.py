"""Past runs in an output folder: list them and compare them side by side.

A run folder that was killed has no ``summary.json``; its numbers are recomputed from the
rows it has, and its status says how far it got (resume it with ``eval --resume``).
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub import rundir
from upskill_hub.errors import UpskillError
from upskill_hub.lift.stats import summarize_rows
from upskill_hub.rundir.schema import RunPlan, RunSummary


@dataclass
class RunInfo:
    run_dir: Path
    plan: RunPlan
    summary: RunSummary
    done: int
    planned: int
    complete: bool

    @property
    def status(self) -> str:
        return "complete" if self.complete else f"incomplete {self.done}/{self.planned}"


def load_run(run_dir: Path) -> RunInfo | None:
    """Read one run folder; ``None`` if it is not a run folder.

    Raises :class:`UpskillError` when the folder has a ``run.json`` that cannot be read (a
    damaged run must be reported, not taken for "no runs").
    """
    plan = rundir.read_plan(run_dir)
    try:
        summary = rundir.read_summary(run_dir)
    except UpskillError:  # a damaged summary: the rows still tell what the run found
        summary = None
    if plan is None:
        if summary is None or not summary.triggers:
            return None
        # A trigger-only run (``upskill-hub triggers``) may keep no eval plan: its summary is the record.
        plan = RunPlan(
            run_id=summary.run_id, created=summary.timestamp, tool_version=summary.tool_version,
            skill_name=summary.skill_name, skill_version=summary.skill_version, modes=["catalog"],
        )  # fmt: skip
    rows = rundir.read_results(run_dir)
    planned = int(plan.planned_calls)
    done = len({r.key for r in rows})
    complete = summary is not None and done >= planned
    if summary is None:
        models = [m.model for m in plan.models]
        conds, lifts = summarize_rows(rows, models)
        summary = RunSummary(
            run_id=plan.run_id or run_dir.name,
            timestamp=plan.created,
            tool_version=plan.tool_version,
            skill_name=plan.skill_name,
            skill_version=plan.skill_version,
            models=models,
            runs_per_case=int(plan.runs),
            n_cases=len(plan.case_ids),
            conditions=conds,
            lifts=lifts,
            judge_model=plan.judge,
            params=json.dumps(plan.params, sort_keys=True),
            n_results=len(rows),
        )
    return RunInfo(run_dir, plan, summary, done, planned, complete)


def list_runs(root: str | Path) -> list[RunInfo]:
    """Run folders directly under ``root`` (or ``root`` itself), oldest first (damaged ones left out)."""
    return scan_runs(root)[0]


def scan_runs(root: str | Path) -> tuple[list[RunInfo], list[str]]:
    """Like :func:`list_runs`, plus one line per run folder that could not be read, saying why."""
    root = Path(root)
    single = any(os.path.lexists(root / f) for f in (rundir.RUN_FILE, rundir.SUMMARY_FILE))
    candidates = [root] if single else sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    infos: list[RunInfo] = []
    damaged: list[str] = []
    for p in candidates:
        try:
            info = load_run(p)
        except UpskillError as exc:
            damaged.append(str(exc))
            continue
        if info is not None:
            infos.append(info)
    return sorted(infos, key=lambda i: str(i.plan.created)), damaged


CSV_COLUMNS = [
    "run_id", "created", "status", "skill_name", "skill_version", "model", "condition", "n", "passed",
    "errors", "cached", "pass_rate", "ci_low", "ci_high", "mean_total_tokens", "lift", "lift_ci_low",
    "lift_ci_high", "p_value", "conclusive", "assertions_passed", "assertions_total", "reason",
    "mode", "trigger_recall", "recall_ci_low", "recall_ci_high", "false_trigger_rate", "fpr_ci_low", "fpr_ci_high",
]


def comparison_rows(infos: list[RunInfo]) -> list[dict[str, Any]]:
    """One flat row per run x model x mode x condition (lift columns repeated per model and mode).

    A run's trigger figures add one row per model with condition ``triggers``: ``n`` and
    ``passed`` count the trigger calls answered and those that went right (loaded when they
    should, stayed away when they should not), beside recall and false-trigger rate.
    """
    out = []
    for info in infos:
        s = info.summary
        lifts = {(x.model, x.mode): x for x in s.lifts}
        base = {
            "run_id": s.run_id,
            "created": info.plan.created,
            "status": info.status,
            "skill_name": s.skill_name,
            "skill_version": s.skill_version,
        }
        for c in s.conditions:
            x = lifts.get((c.model, c.mode))
            out.append(
                {
                    **base,
                    "model": c.model,
                    "condition": c.condition,
                    "n": c.n,
                    "passed": c.passed,
                    "errors": c.errors,
                    "cached": c.cached_calls,
                    "pass_rate": c.pass_rate,
                    "ci_low": c.ci_low,
                    "ci_high": c.ci_high,
                    "mean_total_tokens": c.mean_total_tokens,
                    "lift": x.lift if x else None,
                    "lift_ci_low": x.ci_low if x else None,
                    "lift_ci_high": x.ci_high if x else None,
                    "p_value": x.p_value if x else None,
                    "conclusive": x.conclusive if x else None,
                    "mode": c.mode,
                }
            )
        for t in s.triggers:
            right = t.triggered_should + (t.n_should_not - t.triggered_should_not)
            n = t.n_should + t.n_should_not
            out.append(
                {
                    **base,
                    "model": t.model,
                    "condition": "triggers",
                    "n": n,
                    "passed": right,
                    "errors": t.errors,
                    "pass_rate": right / n if n else None,
                    "mode": "catalog",
                    "trigger_recall": t.recall,
                    "recall_ci_low": t.recall_ci_low,
                    "recall_ci_high": t.recall_ci_high,
                    "false_trigger_rate": t.false_trigger_rate,
                    "fpr_ci_low": t.fpr_ci_low,
                    "fpr_ci_high": t.fpr_ci_high,
                }
            )
    return out


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_COLUMNS})
    return buf.getvalue()
