"""Is the new version of a skill better than the old one? ``eval NEW --against OLD``.

Skill authors iterate: the question after an edit is not "does the skill help?" but "does
this version help more than the last?". Comparing two lifts over no skill answers it
badly: each lift carries the noise of its own baseline, so two versions that differ by one
instruction show overlapping intervals wider than any real change (``+100 -> +100, change
+0 [-189,+189]``). Here both versions answer the same cases, the same number of times, on
the same models and modes, and the difference is paired per case, with the interval and
p-value of the lift itself (:func:`upskill_hub.lift.figures.stats.lift_stats`, the old version's
answers in the baseline's place).

The new version runs first, with its baseline unless ``--no-baseline``; the old version
runs second on the new version's cases, without a baseline: its lift over no skill is
measured against the same no-skill answers, so the two lifts differ by the skill alone.
Each version keeps its own run folder (``runs`` lists both); the new one's ``summary.json``
and ``versus.json`` carry the comparison and the old version's hash and run id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from upskill_hub import rundir
from upskill_hub._util.fsutil import write_json_atomic
from upskill_hub.errors import UpskillError
from upskill_hub.lift.api import run_eval_async
from upskill_hub.lift.execute import RunResult
from upskill_hub.lift.figures.stats import condition_stats, lift_stats
from upskill_hub.lift.prepare import EvalOptions, resolve_cases
from upskill_hub.models.base import ModelClient
from upskill_hub.models.spec import ModelSpec
from upskill_hub.rundir.schema import LiftStats, ResultRow, RunSummary, VersusStats
from upskill_hub.skill import Skill, require_skill

#: The comparison beside the new version's run files.
VERSUS_FILE = "versus.json"


@dataclass
class VersusResult:
    """Both versions' runs, and the new-minus-old figures (also in ``new.summary.versus``)."""

    new: RunResult
    old: RunResult
    versus: list[VersusStats]

    @property
    def regressions(self) -> list[VersusStats]:
        return [v for v in self.versus if v.regression]


def _lift(model: str, before: list[ResultRow], after: list[ResultRow]) -> LiftStats | None:
    """``after`` minus ``before`` for one model, paired over cases; ``None`` when either is empty."""
    if not before or not after:
        return None
    return lift_stats(
        model, before, after,
        condition_stats(model, before[0].condition, before), condition_stats(model, after[0].condition, after),
    )  # fmt: skip


def _pick(rows: Sequence[ResultRow], model: str, mode: str, condition: str) -> list[ResultRow]:
    return [r for r in rows if (r.model, r.mode, r.condition) == (model, mode, condition)]


def versus_stats(new_rows: Sequence[ResultRow], old_rows: Sequence[ResultRow]) -> list[VersusStats]:
    """New minus old per model x mode, beside each version's lift over the new run's baseline.

    Error rows are left out by the statistics as they are for the lift (no answer, no grade).
    """
    out: list[VersusStats] = []
    keys = dict.fromkeys((r.model, r.mode) for r in new_rows if r.condition == "with_skill")
    for model, mode in keys:
        new, old = _pick(new_rows, model, mode, "with_skill"), _pick(old_rows, model, mode, "with_skill")
        base = _pick(new_rows, model, mode, "baseline")
        head = _lift(model, old, new)
        if head is None:
            out.append(VersusStats(model, mode, None, None, None, None, 0, "none", False,
                                   "the old version has no answers for this model and mode"))  # fmt: skip
            continue
        new_lift, old_lift = _lift(model, base, new), _lift(model, base, old)
        note = head.note.replace("between conditions", "between the versions")
        out.append(VersusStats(
            model, mode, head.lift, head.ci_low, head.ci_high, head.p_value, head.n_cases, head.method,
            head.conclusive, note, new_lift.lift if new_lift else None, old_lift.lift if old_lift else None,
        ))  # fmt: skip
    return out


async def run_versus_async(
    new: Skill | str | Path,
    old: Skill,
    against: str,
    model_specs: Sequence[str | ModelSpec | ModelClient],
    options: EvalOptions,
) -> VersusResult:
    """Run ``new`` then ``old`` on ``new``'s cases and compare them head to head.

    ``against`` is how the user named the old version (recorded as is). The old version
    must be the same skill (same name): comparing two different skills is a different
    question, refused in one line before any call.
    """
    new_skill = new if isinstance(new, Skill) else require_skill(new)
    if old.name != new_skill.name:
        raise UpskillError(
            f"--against {against}: that is skill {old.name!r}, not {new_skill.name!r}; compare two versions of one skill"
        )
    cases = resolve_cases(new_skill, options.cases)
    new_result = await run_eval_async(new_skill, model_specs, dataclasses.replace(options, cases=cases))
    old_options = dataclasses.replace(options, cases=cases, include_baseline=False, plots=False)
    old_result = await run_eval_async(old, model_specs, old_options)
    versus = versus_stats(new_result.rows, old_result.rows)
    summary = new_result.summary
    if summary is not None:
        summary.against, summary.against_version = against, old.version
        summary.against_run_id, summary.versus = old_result.summary.run_id if old_result.summary else None, versus
        rundir.write_summary(new_result.run_dir, summary)
        write_json_atomic(new_result.run_dir / VERSUS_FILE, _versus_record(summary))
    return VersusResult(new_result, old_result, versus)


def _versus_record(summary: RunSummary) -> dict:
    """``versus.json``: both versions and the comparison, readable without the rest of the folder."""
    return {
        "skill_name": summary.skill_name,
        "new": {"skill_version": summary.skill_version, "run_id": summary.run_id},
        "old": {"against": summary.against, "skill_version": summary.against_version, "run_id": summary.against_run_id},
        "versus": [dataclasses.asdict(v) | {"regression": v.regression} for v in summary.versus or []],
    }
