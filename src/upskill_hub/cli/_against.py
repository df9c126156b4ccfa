"""``eval NEW --against OLD``: the run, the new-vs-old table, and the regression gate."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from upskill_hub._util.percent import points
from upskill_hub.errors import UpskillError
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.lift.versus import VersusResult, run_versus_async
from upskill_hub.rundir.schema import RunSummary
from upskill_hub.skill import Skill, require_skill
from upskill_hub.versions import SkillAbsentAtRef, old_version

#: Columns of ``--format agent/json/csv`` output of a comparison.
VERSUS_HEADERS = ["model", "mode", "new_minus_old", "ci_low", "ci_high", "p_value", "n_cases", "new_lift", "old_lift",
                  "verdict"]  # fmt: skip


def check_against(against: str | None, *, compare: str | None, jobs: int | None) -> None:
    """Refuse what cannot go with ``--against``, before anything runs."""
    if against is None:
        return
    if compare is not None:
        raise UpskillError("--against and --compare answer different questions: give one of them")
    if jobs is not None:
        raise UpskillError("--against runs on this machine only for now: drop --jobs")


def run_against(skill: Path, against: str, specs: Sequence[str], options: EvalOptions) -> VersusResult:
    """Run the new version, then the old one named by ``against``, on the new version's cases."""
    new = require_skill(skill)
    with old_version(against, new) as old:
        return asyncio.run(run_versus_async(new, old, against, specs, options))


def open_old_versions(against: str, scenarios: Sequence[Any], stack: contextlib.ExitStack) -> dict[Path, Skill]:
    """``--scenarios --against OLD``: every scenario skill's old version, loaded before any call.

    A ref (or folder) without one of the skills, or holding another skill there, is one line
    naming the scenario; nothing has run or been written by then.
    """
    out: dict[Path, Skill] = {}
    for sc in scenarios:
        for folder in sc.skills:
            if folder not in out:
                out[folder] = _open_old(against, sc, require_skill(folder), stack)
    return out


def open_base_versions(
    against: str, scenarios: Sequence[Any], stack: contextlib.ExitStack
) -> tuple[dict[Path, Skill], set[Path], set[Path]]:
    """upskill's CI mode: each scenario skill at the base ref, the skills absent there (NEW,
    not an error), and the skills whose files differ from the base's (new ones included).

    "Changed" compares the folder's files in the work tree with those at the base ref (the
    skill's content hash), so an uncommitted edit counts; other problems stay errors.
    """
    olds: dict[Path, Skill] = {}
    new: set[Path] = set()
    changed: set[Path] = set()
    for sc in scenarios:
        for folder in sc.skills:
            if folder in olds or folder in new:
                continue
            now = require_skill(folder)
            try:
                olds[folder] = old = _open_old(against, sc, now, stack)
            except SkillAbsentAtRef:
                new.add(folder)
                changed.add(folder)
                continue
            if old.full_hash != now.full_hash:
                changed.add(folder)
    return olds, new, changed


def _open_old(against: str, sc: Any, new: Skill, stack: contextlib.ExitStack) -> Skill:
    """One scenario skill's old version; a problem is one line naming the scenario."""
    try:
        old = stack.enter_context(old_version(against, new))
    except SkillAbsentAtRef as exc:
        raise SkillAbsentAtRef(f"scenario {sc.id!r}: {exc}") from None
    except UpskillError as exc:
        raise UpskillError(f"scenario {sc.id!r}: {exc}") from None
    if old.name != new.name:
        raise UpskillError(
            f"scenario {sc.id!r}: --against {against}: that is skill {old.name!r}, not {new.name!r}; "
            "compare two versions of one skill"
        )
    return old


def _verdict(v: Any) -> str:
    if v.lift is None:
        return "no answers"
    if v.regression:
        return "worse"
    return "better" if v.ci_low is not None and v.ci_low > 0 else "no difference shown"


def versus_rows(summary: RunSummary) -> list[dict[str, Any]]:
    """One row per model x mode, for the machine formats."""
    return [
        {"model": v.model, "mode": v.mode, "new_minus_old": v.lift, "ci_low": v.ci_low, "ci_high": v.ci_high,
         "p_value": v.p_value, "n_cases": v.n_cases, "new_lift": v.new_lift, "old_lift": v.old_lift,
         "verdict": _verdict(v)}  # fmt: skip
        for v in summary.versus or []
    ]


def render_versus(summary: RunSummary, console: Console) -> None:
    """New minus old with its paired interval, beside each version's lift over no skill."""
    old = (summary.against_version or "?")[:12]
    t = Table(
        title=f"{summary.skill_name}: this version ({summary.skill_version[:12]}) against {summary.against} ({old})",
        caption="new − old: paired over the same cases, in points [95% CI]; lifts: each version over no skill",
    )
    for col in ("model", "mode", "new − old", "p", "cases", "new lift", "old lift", "verdict"):
        t.add_column(col, justify="left" if col in ("model", "mode", "verdict") else "right")
    for v in summary.versus or []:
        verdict = _verdict(v)
        t.add_row(
            v.model, v.mode, points(v.lift, v.ci_low, v.ci_high, unit="", compact=True),
            "–" if v.p_value is None else f"{v.p_value:.2g}", str(v.n_cases),
            points(v.new_lift, unit="") if v.new_lift is not None else "–",
            points(v.old_lift, unit="") if v.old_lift is not None else "–",
            f"[red]{verdict}[/]" if verdict == "worse" else verdict,
        )  # fmt: skip
    console.print(t)
    for v in summary.versus or []:
        if v.note:
            console.print(f"note: {v.model} ({v.mode}): {v.note}", markup=False, highlight=False)


def check_regression(result: VersusResult) -> None:
    """``--fail-on-regression``: exit 1 when the new version is worse, interval and all."""
    if result.regressions:
        v = result.regressions[0]
        raise UpskillError(
            f"regression: this version is worse than {result.new.summary.against if result.new.summary else 'the old one'} "
            f"on {v.model} ({v.mode}): {points(v.lift, v.ci_low, v.ci_high)} over {v.n_cases} cases"
        )
