"""Statistics of an eval run: pass rates with intervals, paired lift, pass@k, tokens, cost.

Choices, and why:

* **Pass rate** per model x condition uses the 95% *Wilson* score interval: unlike the
  normal approximation it stays inside [0, 1] and behaves at 0% and 100% with small n.
* **Lift** (with-skill minus baseline) is *paired over cases*: each case's per-condition
  pass rate (averaged over its repeats) is compared with itself, so easy/hard cases do
  not add noise, and repeats never inflate n — the unit of evidence is the case.
  The interval is a paired bootstrap over cases (fixed seed, so a summary is reproducible).
  The p-value is exact McNemar when every case has one binary outcome per condition
  (runs = 1), else an exact (or, for many cases, seeded Monte Carlo) sign-flip permutation
  test on the per-case differences — which reduces to McNemar in the binary case.
* **Errors** (failed calls) are excluded from n and counted separately; a case is used for
  the lift only when both conditions have at least one answered call for it.
* **Cached rows**: inside one run there is exactly one row per planned call
  (model, condition, case, repeat) and the cache key includes the repeat index, so a cached
  answer is never reused as another repeat. Its row counts once, as the answer for that
  call. When rows of *several* runs are pooled (:func:`independent_rows`), cached rows are
  dropped because they duplicate the run that first paid for them.
* **conclusive** is true only when there are enough cases for the test to possibly reach
  p < 0.05 *and* it does; otherwise ``note`` says plainly why no conclusion can be drawn.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from upskill_hub.evals.schema import ConditionStats, LiftStats, ResultRow

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20251121
ALPHA = 0.05
#: With exact McNemar, fewer than this many discordant cases can never give p < 0.05.
MIN_DISCORDANT_FOR_SIGNIFICANCE = 6


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """95% Wilson score interval for ``k`` successes out of ``n``; ``(None, None)`` if n = 0."""
    if n <= 0:
        return None, None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Exact at the edges (floating point leaves e.g. 3e-18 for 0/n) and never excluding p.
    lo = 0.0 if k == 0 else min(p, max(0.0, centre - half))
    hi = 1.0 if k == n else max(p, min(1.0, centre + half))
    return lo, hi


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def sign_flip_p_value(diffs: np.ndarray, *, seed: int = BOOTSTRAP_SEED, resamples: int = 20_000) -> float:
    """Two-sided paired permutation test of mean(diffs) = 0 by flipping signs.

    Exact enumeration up to 16 non-zero differences; seeded Monte Carlo beyond.
    """
    d = diffs[diffs != 0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum())
    if d.size <= 16:
        signs = ((np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1) * 2 - 1
        sums = np.abs(signs @ d)
        return float(np.mean(sums >= observed - 1e-12))
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, size=(resamples, d.size), dtype=np.int8) * 2 - 1
    sums = np.abs(signs @ d)
    return float((np.sum(sums >= observed - 1e-12) + 1) / (resamples + 1))


def paired_bootstrap_ci(
    diffs: np.ndarray, *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """95% percentile interval of the mean per-case difference, resampling cases."""
    if diffs.size == 1:
        return float(diffs[0]), float(diffs[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diffs.size, size=(resamples, diffs.size))
    means = diffs[idx].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one case: n samples, c correct (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mean(values: list[float]) -> float | None:
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
        mean_assertions=_mean(frac),
        mean_input_tokens=_mean([float(x) for x in inp]),
        mean_output_tokens=_mean([float(x) for x in out]),
        mean_total_tokens=_mean([float(x) for x in tot]),
        mean_latency_s=_mean(lat),
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
    # The headline lift is the paired (per-case) difference so it matches its interval.
    lift = float(diffs.mean())
    lo, hi = paired_bootstrap_ci(diffs)
    binary = all(b[c].n == 1 and s[c].n == 1 for c in common)
    if binary:
        better = int(np.sum(diffs > 0))
        worse = int(np.sum(diffs < 0))
        p = mcnemar_exact(better, worse)
        method = f"exact McNemar; paired bootstrap CI over cases ({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})"
        discordant = better + worse
    else:
        p = sign_flip_p_value(diffs)
        method = (
            "sign-flip permutation test on per-case pass rates; paired bootstrap CI over cases "
            f"({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})"
        )
        discordant = int(np.sum(diffs != 0))
    n_cases = len(common)
    notes = []
    if discordant < MIN_DISCORDANT_FOR_SIGNIFICANCE:
        notes.append(
            f"too few cases to conclude: only {discordant} of {n_cases} case(s) differ between conditions, "
            f"and fewer than {MIN_DISCORDANT_FOR_SIGNIFICANCE} can never reach p < {ALPHA}; add test cases"
        )
    elif p >= ALPHA:
        notes.append(f"no significant difference (p = {p:.3g}); the interval includes 0")
    errs = base_stats.errors + skill_stats.errors
    if errs:
        notes.append(f"{errs} call(s) failed and are excluded")
    conclusive = discordant >= MIN_DISCORDANT_FOR_SIGNIFICANCE and p < ALPHA
    return LiftStats(
        model=model,
        lift=lift,
        ci_low=lo,
        ci_high=hi,
        p_value=float(p),
        n_cases=n_cases,
        method=method,
        token_savings=savings,
        conclusive=conclusive,
        note="; ".join(notes),
    )


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
