"""The coverage benchmark: its old-bootstrap baseline reproduces issue 16, and it runs end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from interval_coverage import bootstrap, simulate  # noqa: E402


def test_old_bootstrap_collapses_where_the_issue_says():
    rng = np.random.default_rng(0)
    lo, hi = bootstrap(rng, np.array([[1.0] * 10, [0.0] * 10]), runs=1, resamples=500)
    assert (lo.tolist(), hi.tolist()) == ([1.0, 0.0], [1.0, 0.0])  # 0/10 -> 10/10 and all tied
    lo, hi = bootstrap(rng, np.array([[1.0, -1.0, 0.0, 1.0] * 5]), runs=1, resamples=2000)
    assert lo[0] < 0.25 < hi[0]


def test_simulation_has_the_asked_marginals():
    rng = np.random.default_rng(1)
    d = simulate(rng, 4000, 20, 3, 0.1, 0.9, correlated=True)
    assert d.shape == (4000, 20) and abs(d.mean() - 0.8) < 0.01
    assert set(np.unique(np.rint(d * 3))) <= set(range(-3, 4))


def test_benchmark_runs_and_reports_the_goal():
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "interval_coverage.py"), "--reps", "30", "--resamples", "30"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert sum(1 for x in lines if x.lstrip().startswith(("1 ", "3 "))) == 400
    assert any(x.strip().startswith("new:") and "zero-width" in x for x in lines)
    assert any(x.strip().startswith("boot:") for x in lines)
