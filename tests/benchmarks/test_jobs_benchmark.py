"""``benchmarks/jobs.py`` runs end to end (tiny sizes) and prints its table with the ideal alongside."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_jobs_benchmark_prints_local_and_sharded_rows():
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "jobs.py"), "--cases", "2", "--runs", "2", "--shards", "2",
         "--latency", "0.5"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    rows = [line.split() for line in res.stdout.splitlines() if line.startswith(("local ", "jobs "))]
    assert [(r[0], r[1]) for r in rows] == [("local", "1"), ("jobs", "2")]
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows)  # wall and ideal
