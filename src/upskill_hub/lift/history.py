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
from upskill_hub.lift.figures.intervals import wilson_interval
from upskill_hub.lift.figures.stats import summarize_rows
from upskill_hub.rundir.schema import RunPlan, RunSummary
from upskill_hub.rundir.upskill_runs import INCOMPLETE, STATUS, batch_results, incomplete_runs


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
    from upskill_hub._util.fsutil import FileRefused

    plan = rundir.read_plan(run_dir)
    try:
        summary = rundir.read_summary(run_dir)
    except FileRefused:  # an unreadable summary (a FIFO, not JSON): the rows still tell what the run found
        summary = None
    # A summary that reads but states impossible figures (a pass rate of 7.0, a count of -4)
    # is a PathError naming the file and field: the run is reported damaged, never shown.
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


def batch_rows(batch_dir: Path) -> list[dict[str, Any]]:
    """Comparison rows (one per model and condition) for one upskill batch folder.

    upskill records no per-case pairing, so no lift interval is claimed for its batches.
    """
    loaded = batch_results(batch_dir)
    header, results = loaded if loaded is not None else ({"batch_id": batch_dir.name}, [])
    listed = {
        (r.get("metadata") or {}).get("run_number")
        for r in results
        if isinstance((r.get("metadata") or {}).get("run_number"), int)
    }
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        meta = r.get("metadata") or {}
        model = str(meta.get("model") or header.get("model") or "")
        condition = r.get("run_type") if r.get("run_type") in ("baseline", "with_skill") else "with_skill"
        groups.setdefault((model, condition), []).append(r)
    created = min((str((r.get("metadata") or {}).get("timestamp", "")) for r in results), default="")
    skill = next((str(r["skill_name"]) for r in results if r.get("skill_name")), "")
    rows = []
    for (model, condition), runs in sorted(groups.items()):
        n = len(runs)
        passed = sum(bool(r.get("passed")) for r in runs)
        errors = sum(r.get("error_message") is not None for r in runs)
        low, high = wilson_interval(passed, n)
        tokens = [((r.get("stats") or {}).get("total_tokens") or 0) for r in runs]
        a_passed = sum(_count(r.get("assertions_passed")) for r in runs)
        a_total = sum(_count(r.get("assertions_total")) for r in runs)
        rows.append(
            {
                "run_id": str(header.get("batch_id") or batch_dir.name),
                "created": created,
                "status": STATUS,
                "skill_name": skill,
                "skill_version": "",
                "model": model,
                "condition": condition,
                "n": n,
                "passed": passed,
                "errors": errors,
                "cached": 0,
                "pass_rate": passed / n if n else None,
                "ci_low": low,
                "ci_high": high,
                "mean_total_tokens": sum(tokens) / n if n else None,
                "lift": None,
                "lift_ci_low": None,
                "lift_ci_high": None,
                "p_value": None,
                "conclusive": None,
                "assertions_passed": a_passed,
                "assertions_total": a_total,
                "assertion_rate": a_passed / a_total if a_total else None,
                "reason": None,
            }
        )
    for name, meta, reason in incomplete_runs(batch_dir, listed):
        rows.append(
            {
                "run_id": f"{header.get('batch_id') or batch_dir.name}/{name}",
                "created": str(meta.get("timestamp", "")),
                "status": INCOMPLETE,
                "skill_name": skill,
                "skill_version": "",
                "model": str(meta.get("model") or header.get("model") or ""),
                "condition": "",
                "n": 0,
                "passed": 0,
                "errors": 0,
                "cached": 0,
                "pass_rate": None,
                "ci_low": None,
                "ci_high": None,
                "mean_total_tokens": None,
                "lift": None,
                "lift_ci_low": None,
                "lift_ci_high": None,
                "p_value": None,
                "conclusive": None,
                "assertions_passed": None,
                "assertions_total": None,
                "assertion_rate": None,
                "reason": reason,
            }
        )
    return rows


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
