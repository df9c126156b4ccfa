"""Coverage and width of the paired lift interval, against the percentile bootstrap it replaced.

Simulated paired evals with known true pass rates: baseline and with-skill rates from
{0, 0.1, 0.5, 0.9, 1}, n = 5, 10, 20, 50 cases, 1 and 3 runs per case, correlated and
uncorrelated conditions, 2,000 replications per cell. Each case has its own pass
probability per condition, drawn from Beta(k p, k (1 - p)) with k = 2 (cases differ in
difficulty; the mean is p). "correlated": both conditions use the same quantile of that
distribution (a hard case is hard with and without the skill); "independent": separate
quantiles. A run is a Bernoulli draw of the case's probability. The true lift is
p_skill - p_baseline.

Printed per cell, side by side: coverage of the true lift and mean width of
* ``boot``: today's (before issue 16) percentile bootstrap over cases; resampling cases is
  resampling the counts of each distinct per-case difference, so it is drawn as a
  multinomial over those (``--resamples`` per distinct data set; the library used 10,000);
* ``tango``: Tango's score interval without a continuity correction (a candidate);
* ``whole``: the library's interval, but counting a fractional per-case difference as a
  whole discordance (no design effect: a candidate for repeats; same as ``new`` for 1 run);
* ``new``: :func:`upskill_hub.lift.figures.intervals.paired_lift` on
  :func:`~upskill_hub.lift.figures.intervals.effective_counts`, the library's interval (Tango with
  a continuity correction of 1/2, repeats weighted by their design effect), called as the
  CLI and the Space call it.

Goal (issue 16): coverage >= 0.93 in every cell whose true lift is not +-1, and never a
zero-width interval for n < 50. The last lines say whether each method meets it.

Run: ``.venv/bin/python benchmarks/interval_coverage.py [--reps 2000] [--resamples 2000]``
(one and a half to three minutes on 2 shared CPU cores with the defaults)
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy.stats import beta

from upskill_hub.lift.figures.intervals import CONTINUITY, effective_counts, paired_lift

RATES = (0.0, 0.1, 0.5, 0.9, 1.0)
SIZES = (5, 10, 20, 50)
RUNS = (1, 3)
KAPPA = 2.0
GOAL = 0.93


def case_probabilities(u: np.ndarray, p: float) -> np.ndarray:
    """Per-case pass probabilities with mean ``p`` at quantiles ``u`` (exact at p = 0 or 1)."""
    if p in (0.0, 1.0):
        return np.full(u.shape, p)
    return beta.ppf(u, KAPPA * p, KAPPA * (1 - p))


def simulate(rng, reps: int, n: int, runs: int, pb: float, ps: float, correlated: bool) -> np.ndarray:
    """Per-case pass-rate differences (with skill - baseline), shape (reps, n), in steps of 1/runs."""
    ub = rng.random((reps, n))
    us = ub if correlated else rng.random((reps, n))
    kb = rng.binomial(runs, case_probabilities(ub, pb))
    ks = rng.binomial(runs, case_probabilities(us, ps))
    return (ks - kb) / runs


def bootstrap(rng, diffs: np.ndarray, runs: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """The old 95% percentile bootstrap over cases, for every row of ``diffs``."""
    reps, n = diffs.shape
    steps = np.rint(diffs * runs).astype(int) + runs  # 0 .. 2 runs
    hist = np.stack([(steps == k).sum(axis=1) for k in range(2 * runs + 1)], axis=1)
    uniq, inverse = np.unique(hist, axis=0, return_inverse=True)
    values = (np.arange(2 * runs + 1) - runs) / runs
    lo, hi = np.empty(len(uniq)), np.empty(len(uniq))
    for start in range(0, len(uniq), 256):
        chunk = uniq[start : start + 256]
        counts = rng.multinomial(n, chunk / n, size=(resamples, len(chunk)))
        means = counts @ values / n
        lo[start : start + 256], hi[start : start + 256] = np.percentile(means, [2.5, 97.5], axis=0)
    return lo[inverse.ravel()], hi[inverse.ravel()]


def discordance(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise sums of the positive parts, negative parts and squares of the differences."""
    return np.clip(diffs, 0, None).sum(axis=1), np.clip(-diffs, 0, None).sum(axis=1), (diffs * diffs).sum(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2000, help="replications per cell")
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per distinct data set")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--cc", type=float, default=CONTINUITY, help="continuity correction of whole/new (library: 0.5)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    methods = ("boot", "tango", "whole", "new")
    stats = {m: {"min_cov": 1.0, "min_cell": None, "below": 0, "zero": 0, "widths": {r: [] for r in RUNS}} for m in methods}
    print(
        f"{args.reps} replications per cell; bootstrap: {args.resamples} resamples per distinct data set; "
        f"continuity correction of whole/new: {args.cc}"
    )
    header = f"{'runs':>4} {'corr':>5} {'n':>3} {'p_base':>6} {'p_skill':>7} {'lift':>5} |"
    header += "".join(f" {m + ' cov':>9} {'width':>6} |" for m in methods)
    print(header)
    cells = itertools.product(RUNS, (True, False), SIZES, RATES, RATES)
    for runs, corr, n, pb, ps in cells:
        diffs = simulate(rng, args.reps, n, runs, pb, ps, corr)
        true = ps - pb
        b, c, sq = discordance(diffs)
        eff = effective_counts(b, c, sq, n, runs)

        def bounds(r):
            return r.ci_low, r.ci_high

        intervals = {
            "boot": bootstrap(rng, diffs, runs, args.resamples),
            "tango": bounds(paired_lift(*eff, cc=0.0)),
            "whole": bounds(paired_lift(b, c, n, cc=args.cc)),
            "new": bounds(paired_lift(*eff, cc=args.cc)),
        }
        cells_out = []
        for m, (lo, hi) in intervals.items():
            cov = float(np.mean((lo <= true + 1e-9) & (true - 1e-9 <= hi)))
            width = hi - lo
            st = stats[m]
            st["widths"][runs].append(float(width.mean()))
            if n < 50:
                st["zero"] += int(np.sum(width <= 1e-12))
            if abs(true) < 1:
                if cov < st["min_cov"]:
                    st["min_cov"], st["min_cell"] = cov, (runs, corr, n, pb, ps)
                st["below"] += cov < GOAL
            cells_out.append((cov, float(width.mean())))
        line = f"{runs:>4} {'yes' if corr else 'no':>5} {n:>3} {pb:>6} {ps:>7} {true:>+5.1f} |"
        line += "".join(f" {cov:>9.3f} {w:>6.3f} |" for cov, w in cells_out)
        print(line, flush=True)
    print()
    for m in methods:
        st = stats[m]
        ok = st["below"] == 0 and st["zero"] == 0
        print(
            f"{m:>5}: min coverage {st['min_cov']:.3f} at (runs, correlated, n, p_base, p_skill) = {st['min_cell']}; "
            f"{st['below']} cell(s) below {GOAL}; {st['zero']} zero-width interval(s) with n < 50; "
            "mean width " + " / ".join(f"{np.mean(st['widths'][r]):.3f} ({r} run{'s' * (r > 1)})" for r in RUNS)
            + f" -> goal {'MET' if ok else 'NOT met'}"
        )
    print(f"elapsed {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
