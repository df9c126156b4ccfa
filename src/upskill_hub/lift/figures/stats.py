"""Statistics of an eval run: pass rates with intervals, paired lift, pass@k, tokens, cost.

Choices, and why:

* **Pass rate** per model x condition uses the 95% *Wilson* score interval: unlike the
  normal approximation it stays inside [0, 1] and behaves at 0% and 100% with small n.
  :func:`upskill_hub.lift.figures.intervals.wilson_bounds` is the one implementation (vectorised; the CLI, ``summary.json``
  and the Space all use it). It is clamped so that ``lo <= rate <= hi`` holds exactly:
  floating point otherwise leaves e.g. ``1 - 1e-16`` as the upper bound of 10/10, and a
  plot then draws a negative error bar (matplotlib refuses it).
* **Lift** (with-skill minus baseline) is *paired over cases*: each case's per-condition
  pass rate (averaged over its repeats) is compared with itself, so easy/hard cases do
  not add noise, and repeats never inflate n: the unit of evidence is the case. Its 95%
  interval and p-value come from :mod:`upskill_hub.lift.figures.intervals` (Tango's score interval
  with a continuity correction, chosen by the coverage simulation in
  ``benchmarks/interval_coverage.py``); the p-value is the same score test, so the
  interval excludes 0 exactly when p < 0.05.
* **Errors** (failed calls) are excluded from n and counted separately; a case is used for
  the lift only when both conditions have at least one answered call for it.
* **Cached rows**: inside one run there is exactly one row per planned call
  (model, condition, case, repeat) and the cache key includes the repeat index, so a cached
  answer is never reused as another repeat. Its row counts once, as the answer for that
  call. When rows of *several* runs are pooled (:func:`independent_rows`), cached rows are
  dropped because they duplicate the run that first paid for them.
* **Triggering** (recall, false-trigger rate, precision, F1 of a description) comes from
  trigger rows or from a ``catalog`` eval's rows, with the same Wilson intervals.
* **conclusive** is true exactly when the interval excludes 0; otherwise ``note`` says
  plainly why no conclusion can be drawn (too few differing cases, or no significant
  difference).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from upskill_hub._util.percent import count
from upskill_hub.lift.figures import intervals
from upskill_hub.lift.figures.intervals import wilson_bounds, wilson_interval
from upskill_hub.rundir.schema import ConditionStats, LiftStats, ResultRow, TriggerStats

ALPHA = intervals.ALPHA
#: With one run per case, fewer differing cases than this can never give an interval that excludes 0.
MIN_DISCORDANT_FOR_SIGNIFICANCE = intervals.min_discordant_for_significance()


def error_bars(rate, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative below/above error-bar lengths for plots; 0 where anything is missing.

    Plots draw pass rates of 0%, 100%, one case or only errors; matplotlib rejects a
    negative ``yerr``, so the lengths are clipped at 0 and NaN (not measured) becomes 0.
    """
    rate, lo, hi = (np.asarray(x, dtype=float) for x in (rate, lo, hi))
    below = np.nan_to_num(rate - lo, nan=0.0, posinf=0.0, neginf=0.0)
    above = np.nan_to_num(hi - rate, nan=0.0, posinf=0.0, neginf=0.0)
    return np.clip(below, 0.0, None), np.clip(above, 0.0, None)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one case: n samples, c correct (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_or_none(values: list[float]) -> float | None:
    """The mean, or ``None`` when nothing was measured (not 0)."""
    return float(sum(values) / len(values)) if values else None


def independent_rows(rows: Iterable[ResultRow]) -> list[ResultRow]:
    """Rows that are independent samples when pooling several runs: cached rows dropped."""
    return [r for r in rows if not r.cached]


def condition_stats(model: str, condition: str, rows: list[ResultRow]) -> ConditionStats:
    """Aggregate the rows of one model x condition."""
    answered = [r for r in rows if r.error is None and r.passed is not None]
    errors = sum(1 for r in rows if r.error is not None)
    n = len(answered)
    passed = sum(1 for r in answered if r.passed)
    lo, hi = wilson_interval(passed, n)
    frac = [r.assertions_passed / r.assertions_total for r in answered if r.assertions_total]
    inp = [r.input_tokens for r in answered if r.input_tokens is not None]
    out = [r.output_tokens for r in answered if r.output_tokens is not None]
    tot = [
        (r.input_tokens or 0) + (r.output_tokens or 0)
        for r in answered
        if r.input_tokens is not None or r.output_tokens is not None
    ]
    lat = [r.latency_s for r in answered if r.latency_s is not None]
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]

    by_case: dict[str, list[bool]] = defaultdict(list)
    for r in answered:
        by_case[r.case_id].append(bool(r.passed))
    pak: dict[str, float] = {}
    if by_case:
        reps = min(len(v) for v in by_case.values())
        ks = sorted({1, reps} | ({k for k in (2, 3, 5, 10) if k <= reps}))
        for k in ks:
            if k <= reps:
                vals = [pass_at_k(len(v), sum(v), k) for v in by_case.values()]
                pak[f"pass@{k}"] = float(np.mean(vals))
    return ConditionStats(
        model=model,
        condition=condition,
        n=n,
        passed=passed,
        errors=errors,
        pass_rate=(passed / n) if n else None,
        ci_low=lo,
        ci_high=hi,
        mean_assertions=mean_or_none(frac),
        mean_input_tokens=mean_or_none([float(x) for x in inp]),
        mean_output_tokens=mean_or_none([float(x) for x in out]),
        mean_total_tokens=mean_or_none([float(x) for x in tot]),
        mean_latency_s=mean_or_none(lat),
        total_cost_usd=float(sum(costs)) if costs else None,
        pass_at_k=pak,
        cached_calls=sum(1 for r in rows if r.cached),
    )


@dataclass
class _PerCase:
    rate: float
    n: int


def _per_case(rows: list[ResultRow]) -> dict[str, _PerCase]:
    acc: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if r.error is None and r.passed is not None:
            acc[r.case_id].append(bool(r.passed))
    return {cid: _PerCase(sum(v) / len(v), len(v)) for cid, v in acc.items()}


def lift_stats(
    model: str,
    baseline: list[ResultRow],
    with_skill: list[ResultRow],
    base_stats: ConditionStats,
    skill_stats: ConditionStats,
) -> LiftStats:
    """with_skill minus baseline for one model, paired over cases."""
    b, s = _per_case(baseline), _per_case(with_skill)
    common = sorted(set(b) & set(s))
    savings = None
    if base_stats.mean_total_tokens is not None and skill_stats.mean_total_tokens is not None:
        savings = base_stats.mean_total_tokens - skill_stats.mean_total_tokens
    if not common:
        return LiftStats(
            model, None, None, None, None, 0, "none", savings, False,
            "no case has answers in both conditions; cannot compute a lift",
        )
    diffs = np.array([s[c].rate - b[c].rate for c in common], dtype=float)
    n_cases = len(common)
    runs = min(min(b[c].n, s[c].n) for c in common)
    repeats = any(b[c].n > 1 or s[c].n > 1 for c in common)
    res = intervals.paired_lift(*intervals.discordance(diffs, runs))
    # The headline lift is the paired (per-case) difference so it matches its interval.
    lift, lo, hi, p = (float(x) for x in (res.lift, res.ci_low, res.ci_high, res.p_value))
    conclusive = bool(res.conclusive)
    method = intervals.METHOD + (intervals.METHOD_REPEATS if repeats else "")
    discordant = int(np.sum(diffs != 0))
    notes = []
    if not conclusive:
        if discordant == 0:
            notes.append(_no_case_differs(n_cases, [b[c].rate for c in common]))
        elif discordant < MIN_DISCORDANT_FOR_SIGNIFICANCE:
            never = (
                f", and fewer than {MIN_DISCORDANT_FOR_SIGNIFICANCE} can never give an interval that excludes 0"
                if not repeats
                else "; the 95% interval includes 0"
            )
            notes.append(
                f"too few cases to conclude: only {discordant} of {count(n_cases, 'case')} "
                f"{'differs' if discordant == 1 else 'differ'} between conditions"
                f"{never}; add test cases"
            )
        else:
            notes.append(f"no significant difference (p = {p:.3g}); the 95% interval includes 0")
    errs = base_stats.errors + skill_stats.errors
    if errs:
        notes.append(f"{errs} call(s) failed and are excluded")
    return LiftStats(
        model=model,
        lift=lift,
        ci_low=lo,
        ci_high=hi,
        p_value=p,
        n_cases=n_cases,
        method=method,
        token_savings=savings,
        conclusive=conclusive,
        note="; ".join(notes),
    )


def _no_case_differs(n_cases: int, rates: list[float]) -> str:
    """The verdict when every case gives the same result with and without the skill.

    "Too few cases … add test cases" misled here: 14 cases that never differ are not too
    few, they show no effect; more cases of the same kind would show none either. The
    advice follows from how they tie (``rates``: each case's pass rate, equal in both).
    """
    cases = f"all {n_cases} cases give" if n_cases > 1 else "the one case gives"
    every = "every case" if n_cases > 1 else "the case"
    said = f"no case differs between the conditions: {cases} the same result with and without the skill"
    if all(r == 1 for r in rates):
        advice = f"the model already passes {every} without the skill: add cases it fails without it"
    elif all(r == 0 for r in rates):
        advice = f"{every} fails with the skill too: check that the cases ask what the skill teaches"
    else:
        advice = "add cases where the skill should change the answer"
    return f"{said}, so there is no evidence of an effect; {advice}"


def summarize_rows(rows: list[ResultRow], models: list[str]) -> tuple[list[ConditionStats], list[LiftStats]]:
    """Per model x condition stats and per model lifts, in the order of ``models``."""
    groups: dict[tuple[str, str], list[ResultRow]] = defaultdict(list)
    for r in rows:
        groups[(r.model, r.condition)].append(r)
    conds: list[ConditionStats] = []
    lifts: list[LiftStats] = []
    for m in models:
        per: dict[str, ConditionStats] = {}
        for cond in ("baseline", "with_skill"):
            if (m, cond) in groups:
                per[cond] = condition_stats(m, cond, groups[(m, cond)])
                conds.append(per[cond])
        if "baseline" in per and "with_skill" in per:
            lifts.append(
                lift_stats(m, groups[(m, "baseline")], groups[(m, "with_skill")], per["baseline"], per["with_skill"])
            )
    return conds, lifts


# --------------------------------------------------------------------------- figures
def _rate(k: int, n: int) -> tuple[float | None, float | None, float | None]:
    if n == 0:
        return None, None, None
    lo, hi = wilson_bounds(k, n)
    return k / n, float(lo), float(hi)


def trigger_stats(
    model: str, should: Sequence[bool], should_not: Sequence[bool], errors: int = 0
) -> TriggerStats:
    """Recall and false-trigger rate (95% Wilson intervals), precision and F1 from answered calls.

    ``should`` / ``should_not``: whether each answered should-trigger / should-not query triggered.
    """
    return stats_from_counts(model, len(should), sum(should), len(should_not), sum(should_not), errors)


def stats_from_counts(
    model: str, n_should: int, tp: int, n_should_not: int, fp: int, errors: int = 0
) -> TriggerStats:
    """:func:`trigger_stats` from counts (a streamed run keeps counts, not one flag per call)."""
    recall, r_lo, r_hi = _rate(tp, n_should)
    fpr, f_lo, f_hi = _rate(fp, n_should_not)
    precision = tp / (tp + fp) if tp + fp else None
    f1 = None
    if precision is not None and recall:
        f1 = 2 * precision * recall / (precision + recall)
    elif recall == 0.0:
        f1 = 0.0
    return TriggerStats(
        model=model,
        n_should=n_should,
        triggered_should=tp,
        recall=recall,
        recall_ci_low=r_lo,
        recall_ci_high=r_hi,
        n_should_not=n_should_not,
        triggered_should_not=fp,
        false_trigger_rate=fpr,
        fpr_ci_low=f_lo,
        fpr_ci_high=f_hi,
        precision=precision,
        f1=f1,
        errors=errors,
    )


def stats_from_eval_rows(rows: Sequence[ResultRow], models: Sequence[str]) -> list[TriggerStats]:
    """Trigger figures of a ``catalog`` eval: every with-skill answer is a should-trigger query.

    (The baseline's catalog lacks the skill, so it has no should-not queries to offer.)
    """
    out = []
    for m in models:
        mine = [r for r in rows if r.model == m and r.mode == "catalog" and r.condition == "with_skill"]
        if not mine:
            continue
        ok = [r for r in mine if r.error is None and r.triggered is not None]
        out.append(trigger_stats(m, [bool(r.triggered) for r in ok], [], errors=len(mine) - len(ok)))
    return out
