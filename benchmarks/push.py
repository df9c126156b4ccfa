"""Benchmark ``upskill-hub push`` against a plain ``HfApi.upload_file`` of the same parquet.

Starts a local Hub server (in this process, on a free port), writes an eval run folder
with N result rows (default 100,000), then times, on fresh repos:

* ``push``: the library call behind ``upskill-hub push SKILL --results RUN`` (reads the run
  folder, redacts, builds the results/runs/skills tables and the card, compares with the
  repo, one commit);
* ``upload_file``: a plain ``HfApi.upload_file`` of the same results parquet, already built;

and prints both times and their ratio (goal <= 1.2), then re-pushes unchanged content and
prints what it uploaded (goal: 0 bytes, no commit), counted by the library and by the
server's request log.

    .venv/bin/python benchmarks/push.py [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ["HF_TOKEN"] = "hf_benchmarklocaltoken0000000000"


def write_run_folder(root: Path, run_id: str, skill, rows: int) -> Path:
    """A run folder shaped like the eval runner's, with ``rows`` result rows."""
    from upskill_hub.evals.schema import RESULTS_FILE, RUN_FILE, ResultRow

    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / RUN_FILE).write_text(json.dumps({"run_id": run_id, "skill_name": skill.name}), encoding="utf-8")
    models = ["model-a", "model-b", "model-c", "model-d"]
    with (folder / RESULTS_FILE).open("w", encoding="utf-8") as fh:
        for i in range(rows):
            cond = "with_skill" if i % 2 else "baseline"
            row = ResultRow(
                run_id=run_id,
                timestamp=f"2026-11-21T10:{(i // 60) % 60:02d}:{i % 60:02d}Z",
                tool_version="0.1.0",
                skill_name=skill.name,
                skill_version=skill.version,
                model=models[i % 4],
                provider="openai-compatible",
                params='{"temperature": 0, "max_tokens": 512}',
                condition=cond,
                case_id=f"case-{(i // 8) % 500}",
                repeat=(i // 4000) % 5,
                passed=(i * 7919) % 3 != 0,
                assertions_passed=(i * 31) % 4,
                assertions_total=3,
                assertion_details='[{"type": "contains", "passed": true, "evidence": "found"}]',
                output=f"Answer {i}: the function returns {i * 7919 % 1000} after {i % 13} steps. " * 3,
                input_tokens=800 + i % 200,
                output_tokens=100 + i % 50,
                cached_tokens=0,
                latency_s=round(0.5 + (i % 100) / 100, 3),
                cost_usd=None,
                error=None,
            )
            fh.write(json.dumps(row.to_dict()) + "\n")
    return folder


def uploaded_bytes(requests) -> int:
    """Bytes the server received for uploads and commits in a request log slice."""
    return sum(
        r.bytes_in
        for r in requests
        if r.method in ("PUT", "POST") and ("/commit/" in r.path or "/lfs/" in r.path)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from upskill_hub.hub.server.testing import free_port, running_server

    with tempfile.TemporaryDirectory(prefix="upskill-bench-") as tmp:
        tmp_path = Path(tmp)
        port = free_port()
        os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
        with running_server(tmp_path / "hub", port=port) as hub:
            from huggingface_hub import HfApi

            from upskill_hub.hub import dataset_repo as dr
            from upskill_hub.hub.push import push
            from upskill_hub.skill import Skill

            skill = Skill.create("bench-skill", "Use when benchmarking pushes.", "Do the thing well.\n")
            skill_dir = skill.write(tmp_path / "skills" / skill.name)
            t0 = time.perf_counter()
            run = write_run_folder(tmp_path / "runs", "run-bench", skill, args.rows)
            print(f"wrote {args.rows:,} rows ({(run / 'results.jsonl').stat().st_size / 1e6:.1f} MB jsonl) "
                  f"in {time.perf_counter() - t0:.1f}s")  # fmt: skip
            parquet = tmp_path / "run-bench.parquet"
            parquet.write_bytes(dr.results_table_bytes(dr.load_run_dir(run)))
            api = HfApi()

            # Warm up both paths (imports, first connections) on a throwaway repo.
            api.create_repo("bench/warmup", repo_type="dataset")
            push([skill_dir], "bench/warmup")
            api.upload_file(path_or_fileobj=str(parquet), path_in_repo="x.parquet", repo_id="bench/warmup",
                            repo_type="dataset")  # fmt: skip

            push_times, upload_times = [], []
            for i in range(args.repeat):
                for name in (f"bench/push-{i}", f"bench/plain-{i}"):
                    api.create_repo(name, repo_type="dataset")
                t0 = time.perf_counter()
                result = push([skill_dir], f"bench/push-{i}", results=[run])
                push_times.append(time.perf_counter() - t0)
                assert result.committed
                t0 = time.perf_counter()
                api.upload_file(
                    path_or_fileobj=str(parquet),
                    path_in_repo="data/results/run-bench.parquet",
                    repo_id=f"bench/plain-{i}",
                    repo_type="dataset",
                )
                upload_times.append(time.perf_counter() - t0)

            hub.clear_requests()
            t0 = time.perf_counter()
            again = push([skill_dir], "bench/push-0", results=[run])
            repush_time = time.perf_counter() - t0
            repush_server_bytes = uploaded_bytes(hub.requests)

    p, u = statistics.median(push_times), statistics.median(upload_times)
    ratio = p / u
    size_mb = f"{parquet.stat().st_size / 1e6:.1f} MB"
    committed = "yes" if again.committed else "no"

    def row(*cells: str) -> None:
        print(f"{cells[0]:<36}" + "".join(f"{c:>20}" for c in cells[1:]))

    print()
    row("", "upskill-hub push", "HfApi.upload_file", "ratio (goal <= 1.2)")
    row(f"{args.rows:,} rows, median of {args.repeat}", f"{p:.2f} s", f"{u:.2f} s", f"{ratio:.2f}")
    row("  every run", " ".join(f"{t:.2f}" for t in push_times), " ".join(f"{t:.2f}" for t in upload_times))
    row("  results parquet", size_mb, size_mb)
    print()
    row("re-push of unchanged content", "time", "bytes uploaded", "commit (goal: 0 B)")
    row("  counted by the library", f"{repush_time:.2f} s", f"{again.bytes_uploaded:,}", committed)
    row("  server request log", "", f"{repush_server_bytes:,}", "")
    ok = ratio <= 1.2 and again.bytes_uploaded == 0 and repush_server_bytes == 0 and not again.committed
    print()
    print("goals met" if ok else "goals NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
