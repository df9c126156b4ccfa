"""Benchmark ``eval --jobs``: one run of 1,600 calls, locally vs 4 and 8 shards on (local) Jobs.

Starts, in this process, a local Hub with its Jobs endpoints (each Job a subprocess
``upskill-hub jobs run-shard``) and, in a child process, the scripted model server with a
fixed latency per call. The same eval (20 cases x 2 conditions x 40 runs, one model) is
then timed:

* locally: ``run_eval`` with ``--concurrency C``;
* on N shards (4 and 8): ``run_on_jobs``, from planning to the recorded run (bundle
  commit, N Jobs, N shard commits, reading the shards back, summary, ``runs`` commit).

The ideal is ``calls x latency / (C x shards)``: the model time alone, every shard
running its calls at full concurrency. The gap to it is Job start-up (a Python process
importing upskill-hub and downloading the bundle), commits, polling and reading back.

Caveat: local Jobs share this machine's cores with the launcher, the Hub and the model
server (2 cores on the CI box), so start-up of 8 Jobs at once is slower here than on
separate Hugging Face machines; the model latency, not CPU, is what shards divide.

    .venv/bin/python benchmarks/jobs.py [--latency 0.2] [--concurrency 16] [--shards 4 8]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

TOKEN = "hf_" + "benchmarkJobsLocalToken00000000"
ROOT = Path(__file__).resolve().parents[1]


def _environment(tmp: Path, port: int) -> None:
    """Point every HF client (here and in the Jobs) at the local Hub, before they are imported."""
    os.environ.update(
        HF_ENDPOINT=f"http://127.0.0.1:{port}",
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HOME=str(tmp / "hf_home"),
        HF_TOKEN=TOKEN,
        UPSKILL_HUB_CACHE=str(tmp / "cache"),
    )
    # The Jobs inherit the server's PYTHONPATH: make them run this checkout.
    src = str(ROOT / "src")
    if src not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)


def make_skill(root: Path, n_cases: int) -> Path:
    from upskill_hub.cases import parse_meta
    from upskill_hub.skill import Skill

    cases = [
        {"id": f"case-{i}", "input": f"Question {i}", "assert": [{"type": "contains", "value": "said"}]}
        for i in range(n_cases)
    ]
    meta = parse_meta({"schema_version": 1, "cases": cases})
    skill = Skill.create(
        "bench-skill", "A benchmark skill. Use when benchmarking.", "# Bench\n\nAnswer.\n", meta=meta
    )
    return skill.write(root / "bench-skill")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent calls per model, per process")
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--runs", type=int, default=40, help="repeats: calls = cases x 2 x runs")
    parser.add_argument("--shards", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args()

    from upskill_hub._util.netutil import free_port

    tmp = Path(tempfile.mkdtemp(prefix="upskill-bench-jobs-"))
    port = free_port()
    _environment(tmp, port)

    from upskill_hub.jobs.launch import JobsOptions
    from upskill_hub.jobs.run import run_on_jobs
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.localhub.jobs import JobLimits
    from upskill_hub.localhub.testing import running_server
    from upskill_hub.testing.llm_server import llm_server_process

    skill = make_skill(tmp / "skills", args.cases)
    calls = args.cases * 2 * args.runs
    rows: list[tuple[str, int, float, float]] = []
    phases: list[tuple[int, float, float, float, float]] = []
    limits = JobLimits(max_running=max(args.shards))
    with (
        running_server(tmp / "hub", port=port, write_tokens=(TOKEN,), job_limits=limits),
        llm_server_process(latency_s=args.latency) as srv,
    ):
        model = f"openai-compatible:bench-model@{srv.openai_base_url}"

        def options(name: str) -> EvalOptions:
            return EvalOptions(
                runs=args.runs,
                concurrency=args.concurrency,
                output_dir=tmp / name,
                use_cache=False,
                plots=False,
            )

        t0 = time.perf_counter()
        local = run_eval(skill, [model], options("local"))
        rows.append(("local", 1, time.perf_counter() - t0, calls * args.latency / args.concurrency))
        assert len(local.rows) == calls
        print(f"local: {rows[-1][2]:.1f} s", file=sys.stderr)
        for n in args.shards:
            jobs = JobsOptions(repo_id=f"user/bench-jobs-{n}", shards=n, image="local-jobs", poll_s=0.5)
            t0 = time.perf_counter()
            marks: list[tuple[float, str]] = []
            out = run_on_jobs(skill, [model], options(f"jobs-{n}"), jobs, say=_marker(marks))
            wall = time.perf_counter() - t0
            rows.append(("jobs", n, wall, calls * args.latency / (args.concurrency * n)))
            assert len(out.result.rows) == calls and out.result.summary.lifts == local.summary.lifts
            phases.append((n, *_phases(t0, marks, out, wall)))
            print(f"{n} shards: {wall:.1f} s", file=sys.stderr)

    base = rows[0][2]
    print(f"\n{calls} calls, {args.latency * 1000:.0f} ms each, concurrency {args.concurrency} per process")
    print(f"{'where':<8}{'shards':>7}{'wall s':>9}{'ideal s':>9}{'speed-up':>10}{'ideal/wall':>12}")
    for where, n, wall, ideal in rows:
        print(f"{where:<8}{n:>7}{wall:>9.1f}{ideal:>9.1f}{base / wall:>9.2f}x{ideal / wall:>12.2f}")
    print("(local Jobs share this machine's cores: start-up of N Python processes at once is CPU-bound here)")
    print(f"\n{'shards':>6}{'plan+bundle s':>15}{'Jobs s':>9}{'mean Job s':>12}{'collect+record s':>18}")
    for n, plan_s, jobs_s, mean_job_s, record_s in phases:
        print(f"{n:>6}{plan_s:>15.1f}{jobs_s:>9.1f}{mean_job_s:>12.1f}{record_s:>18.1f}")


def _marker(marks: list[tuple[float, str]]):
    """A ``say`` callback recording when each of the launcher's lines came."""
    return lambda line: marks.append((time.perf_counter(), line))


def _phases(t0: float, marks: list[tuple[float, str]], out, wall: float) -> tuple[float, float, float, float]:
    """Seconds spent planning and uploading the bundle, waiting for the Jobs, and recording the run."""
    from huggingface_hub import HfApi

    bundled = next(t for t, line in marks if " calls in " in line)
    collected = next(t for t, line in marks if "recording the run" in line)
    api = HfApi()
    spans = []
    for shard in out.shards:
        info = api.inspect_job(job_id=shard.job_id)
        if info.started_at and info.finished_at:
            spans.append((info.finished_at - info.started_at).total_seconds())
    mean_job = sum(spans) / len(spans) if spans else float("nan")
    return bundled - t0, collected - bundled, mean_job, t0 + wall - collected


if __name__ == "__main__":
    main()
