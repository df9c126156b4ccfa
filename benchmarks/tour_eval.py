"""The README tour's ``eval`` line, timed as a newcomer runs it, output piped (issue 48 item 2).

Runs ``upskill-hub eval skills/hf-dataset-card --model local --runs 3`` exactly as the
README's tour writes it (from a copy of the repository's ``skills/``, with an empty answer
cache so every call is really made), stdout and stderr piped, and reports:

* the wall time, against the time the README states on that line (``(~N min)``): the
  benchmark fails (exit 1) when the run takes longer;
* the progress lines stderr printed while it ran, and the longest silence between two
  stderr lines (it fails when that exceeds 60 s: piped, a run must never go quiet for minutes);
* the time per answer the run recorded (the mean of its rows' ``latency_s``), beside the
  wall time divided by the calls, so the two can be compared.

    .venv/bin/python benchmarks/tour_eval.py [--line-only]

Measured on this project's 2-core CI box; the README states the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "upskill-hub eval skills/hf-dataset-card --model local --runs 3"
MAX_SILENCE_S = 60.0


def readme_line() -> tuple[str, float]:
    """The tour's line for :data:`COMMAND` and the minutes it states (``(~N min)``)."""
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith(COMMAND + " "):
            stated = re.search(r"\(~?(\d+(?:\.\d+)?) min", line)
            if stated is None:
                raise SystemExit(f"the README's tour line states no time: {line!r}")
            return line, float(stated.group(1))
    raise SystemExit(f"the README's tour has no line starting {COMMAND!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--line-only", action="store_true", help="print the README line and its stated time, run nothing"
    )
    args = parser.parse_args()
    line, stated_min = readme_line()
    print(f"README: {line}")
    if args.line_only:
        return 0
    cli = Path(sys.executable).with_name("upskill-hub")
    with tempfile.TemporaryDirectory(prefix="tour-eval-") as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "skills", work / "skills")
        env = {**os.environ, "UPSKILL_HUB_CACHE": str(work / "cache")}  # every call made, none replayed
        argv = [str(cli), *COMMAND.split()[1:]]
        stamps: list[tuple[float, str]] = []
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

        def read_stderr() -> None:
            assert proc.stderr is not None
            for text in proc.stderr:
                stamps.append((time.monotonic() - t0, text.rstrip("\n")))

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        stdout = proc.stdout.read() if proc.stdout else ""
        code = proc.wait()
        reader.join()
        wall = time.monotonic() - t0
        rows = [json.loads(r) for d in (work / "upskill-runs").iterdir() if d.is_dir()
                for r in (d / "results.jsonl").read_text().splitlines()]  # fmt: skip
    times = [at for at, _ in stamps]
    gaps = [b - a for a, b in zip([0.0, *times], [*times, wall], strict=True)]
    progress = [(at, text) for at, text in stamps if text.startswith("eval: ")]
    latencies = [r["latency_s"] for r in rows if r.get("latency_s") is not None]
    finishes: dict[str, int] = {}
    for r in rows:
        finishes[str(r.get("finish_reason"))] = finishes.get(str(r.get("finish_reason")), 0) + 1
    print(f"exit {code}; wall {wall:.0f} s ({wall / 60:.1f} min) against the README's ~{stated_min:g} min")
    print(f"cores: {len(os.sched_getaffinity(0))}; calls: {len(rows)}; finish reasons: {finishes}")
    print(f"progress lines: {len(progress)}; longest silence on stderr: {max(gaps):.0f} s")
    for at, text in progress:
        print(f"  {at:6.0f} s  {text}")
    if latencies:
        mean = sum(latencies) / len(latencies)
        print(
            f"time per answer recorded: {mean:.2f} s (sum {sum(latencies):.0f} s); wall / calls: {wall / len(rows):.2f} s"
        )
    if code != 0:
        print(stdout[-2000:], "\n".join(t for _, t in stamps[-20:]))
    ok = code == 0 and wall <= stated_min * 60 and max(gaps) <= MAX_SILENCE_S and len(progress) >= 2
    print("OK" if ok else "FAILED: over the stated time, silent too long, or no progress lines")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
