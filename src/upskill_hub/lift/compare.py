"""Did a skill stop helping? Compare a new run's lift with a reference run's, case by case.

CI (``eval --compare ... --fail-on-regression``) must not fail on noise, so a lower lift
alone is not a regression: the change must be lower with a paired test at the chosen level.

The pairing is over test cases present in both runs. For case ``i`` the lift contribution
is ``d_i = pass_rate_with_skill - pass_rate_baseline`` and the change is
``e_i = d_new_i - d_old_i``. Written as ``e_i / 2 = mean((s_new - s_old), (b_old - b_new))``,
it is the mean of two paired pass/fail differences per case (with-skill now vs then, and
baseline then vs now), which is exactly the "per-case pass-rate difference with repeats"
that :mod:`upskill_hub.lift.figures.intervals` handles: :func:`intervals.discordance` with
``runs = 2 x`` the fewest calls per case turns the ``e_i / 2`` into effective discordance
counts (the design effect keeps each case worth between 1 and that many pairs), and
:func:`intervals.paired_lift` gives the interval and the score test. The change and its
interval are twice those of ``e / 2``.

A regression is a change whose two-sided interval at ``level`` lies wholly below 0 (a
one-sided test at ``(1 - level) / 2``); a case that only one run has does not count.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from upskill_hub.lift.figures import intervals
from upskill_hub.lift.figures.stats import summarize_rows
from upskill_hub.rundir.schema import ResultRow


@dataclass
class LiftChange:
    """One model's lift then and now, and the paired test of the change."""

    skill: str
    model: str
    lift_then: float | None
    then_ci_low: float | None
    then_ci_high: float | None
    lift_now: float | None
    now_ci_low: float | None
    now_ci_high: float | None
    change: float | None
    change_ci_low: float | None
    change_ci_high: float | None
    p_value: float | None
    n_cases: int  # cases with both conditions in both runs
    regression: bool
    mode: str = "inject"  # how the skill reached the model (inject / catalog / harness)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def z_for_level(level: float) -> float:
    """The normal quantile of a two-sided interval at ``level`` (0.95 -> 1.96)."""
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


def _case_lifts(rows: list[ResultRow], model: str) -> tuple[dict[str, float], int]:
    """Per case ``with_skill - baseline`` pass rates for ``model``, and the fewest calls per case."""
    acc: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in rows:
        if r.model == model and r.error is None and r.passed is not None:
            acc[(r.condition, r.case_id)].append(bool(r.passed))
    out: dict[str, float] = {}
    fewest = 0
    for (cond, case), got in acc.items():
        if cond != "with_skill" or ("baseline", case) not in acc:
            continue
        base = acc[("baseline", case)]
        out[case] = sum(got) / len(got) - sum(base) / len(base)
        n = min(len(got), len(base))
        fewest = n if fewest == 0 else min(fewest, n)
    return out, max(fewest, 1)


def _models(rows: list[ResultRow]) -> list[str]:
    return list(dict.fromkeys(r.model for r in rows))


def compare_runs(
    then_rows: list[ResultRow], now_rows: list[ResultRow], *, level: float = 0.95
) -> list[LiftChange]:
    """One :class:`LiftChange` per model and mode the two runs share (in the new run's order).

    A catalog lift is only ever compared with a catalog lift: the modes measure different
    things (inject is an upper bound; catalog includes whether the model loads the skill).
    """
    if not 0.5 <= level < 1:
        from upskill_hub.errors import OptionError

        raise OptionError("level", level, f"must be between 0.5 and 1 (e.g. 0.95), not {level}")
    then_modes = {r.mode for r in then_rows}
    out = []
    for mode in dict.fromkeys(r.mode for r in now_rows):
        if mode in then_modes:
            out += _compare_mode(
                [r for r in then_rows if r.mode == mode], [r for r in now_rows if r.mode == mode], level, mode
            )
    return out


def _compare_mode(then_rows: list[ResultRow], now_rows: list[ResultRow], level: float, mode: str) -> list[LiftChange]:
    """:func:`compare_runs` for rows of one mode."""
    z = z_for_level(level)
    shared = [m for m in _models(now_rows) if m in set(_models(then_rows))]
    _, then_lifts = summarize_rows(then_rows, shared)
    _, now_lifts = summarize_rows(now_rows, shared)
    by_then = {x.model: x for x in then_lifts}
    by_now = {x.model: x for x in now_lifts}
    skill = next((r.skill_name for r in now_rows), "")
    out = []
    for m in shared:
        old, old_runs = _case_lifts(then_rows, m)
        new, new_runs = _case_lifts(now_rows, m)
        common = sorted(set(old) & set(new))
        t, n = by_then.get(m), by_now.get(m)
        change = lo = hi = p = None
        if common:
            half = np.array([(new[c] - old[c]) / 2 for c in common])
            res = intervals.paired_lift(*intervals.discordance(half, 2 * min(old_runs, new_runs)), z=z)
            change, lo, hi, p = (float(x) for x in (2 * res.lift, 2 * res.ci_low, 2 * res.ci_high, res.p_value))
        out.append(
            LiftChange(
                skill=skill,
                model=m,
                lift_then=t.lift if t else None,
                then_ci_low=t.ci_low if t else None,
                then_ci_high=t.ci_high if t else None,
                lift_now=n.lift if n else None,
                now_ci_low=n.ci_low if n else None,
                now_ci_high=n.ci_high if n else None,
                change=change,
                change_ci_low=lo,
                change_ci_high=hi,
                p_value=p,
                n_cases=len(common),
                regression=hi is not None and hi < 0,
                mode=mode,
            )
        )
    return out
