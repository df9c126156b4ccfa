"""Flat rows of an eval run for the agent / quiet formats of ``eval`` and ``runs``.

An agent reading ``eval --format agent`` wants, per model, the two pass rates and the lift
with its interval, in columns that do not move between versions; the Rich report is for
people. Kept apart from ``cli/evals.py`` so the commands only choose what to print.
"""

from __future__ import annotations

from typing import Any

from upskill_hub.rundir.schema import RunSummary

#: Columns of ``eval --format agent`` (one line per model).
EVAL_HEADERS = [
    "run_id", "skill", "model", "baseline", "with_skill", "lift", "lift_ci_low", "lift_ci_high",
    "p_value", "n_cases", "conclusive",
]

#: Columns of ``runs --format agent`` (one line per run x model x condition, as ``--csv``).
RUNS_HEADERS = [
    "run_id", "status", "skill_name", "model", "condition", "n", "passed", "errors", "pass_rate",
    "lift", "lift_ci_low", "lift_ci_high", "p_value", "assertions_passed", "assertions_total", "reason",
    "mode", "trigger_recall", "false_trigger_rate",
]


def lift_rows(summary: RunSummary) -> list[dict[str, Any]]:
    """One row per model of ``summary``: pass rates without and with the skill, and the lift."""
    by = {(c.model, c.condition): c for c in summary.conditions}
    lifts = {x.model: x for x in summary.lifts}
    rows = []
    for m in summary.models:
        b, w, x = by.get((m, "baseline")), by.get((m, "with_skill")), lifts.get(m)
        rows.append(
            {
                "run_id": summary.run_id,
                "skill": summary.skill_name,
                "model": m,
                "baseline": b.pass_rate if b else None,
                "with_skill": w.pass_rate if w else None,
                "lift": x.lift if x else None,
                "lift_ci_low": x.ci_low if x else None,
                "lift_ci_high": x.ci_high if x else None,
                "p_value": x.p_value if x else None,
                "n_cases": x.n_cases if x else summary.n_cases,
                "conclusive": x.conclusive if x else None,
            }
        )
    return rows
