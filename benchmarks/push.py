"""Benchmark ``upskill-hub push`` against a plain ``HfApi.upload_file`` of the same parquet.

Starts a local Hub server (in this process, on a free port), writes an eval run folder
with N result rows (default 100,000) and the ``results.parquet`` + local record the runner
writes when a run ends, then times, on fresh repos:

* ``push``: the library call behind ``upskill-hub push SKILL --results RUN`` (checks the
  run's record, uploads its ``results.parquet`` as is, builds the runs/skills tables and
  the card, compares with the repo, one commit);
* ``upload_file``: a plain ``HfApi.upload_file`` of the same results parquet, already
  built: the goal is push <= 1.2x this;
* ``jsonl -> parquet -> upload_file``: the same by hand from ``results.jsonl`` (Arrow's
  JSON reader, ``pq.write_table``, ``upload_file``), what a run without the parquet costs;
* ``push`` of an older run folder without ``results.parquet`` (parses ``results.jsonl``);
* ``push`` into a repo that already holds ``--existing-runs`` runs (the card lists them
  all, so their ``runs`` rows are read: from the local table cache on the machine that
  pushed them, downloaded on another, here a push with an empty cache);

and prints the times, the ratios and the HTTP requests each made (from the server's
request log), then re-pushes unchanged content and prints what it uploaded (goal: 0
bytes, no commit). Every measurement uses content of its own (the run id differs),
because the server stores an LFS object once and would otherwise skip the upload.

Against a local server each request costs a few milliseconds of the same process's CPU,
so the ratio to ``upload_file`` (4 requests) mostly counts requests: a push also reads
the repo (2), has the card validated (1) and uploads the skill and runs tables.

    .venv/bin/python benchmarks/push.py [--rows 100000] [--repeat 3] [--existing-runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
    from upskill_hub.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE
    from upskill_hub.rundir.schema import ResultRow, RunSummary

    folder = root / run_id
    folder.mkdir(parents=True)
    models = ["model-a", "model-b", "model-c", "model-d"]
    (folder / RUN_FILE).write_text(json.dumps({"run_id": run_id, "skill_name": skill.name}), encoding="utf-8")
    summary = RunSummary(
        run_id=run_id, timestamp="2026-11-21T11:00:00Z", tool_version="0.1.0", skill_name=skill.name,
        skill_version=skill.version, models=models, runs_per_case=5, n_cases=500, conditions=[], lifts=[],
    )  # fmt: skip
    (folder / SUMMARY_FILE).write_text(json.dumps(summary.to_dict()), encoding="utf-8")
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
            # A plain dict of the dataclass's fields: ``asdict`` would dominate the setup time.
            fh.write(json.dumps(row.__dict__) + "\n")
    write_shard(folder)
    return folder


def write_shard(folder: Path) -> None:
    """The ``results.parquet`` the eval runner writes when a run ends (from its rows)."""
    from upskill_hub import rundir

    rundir.write_results_parquet(folder, rundir.read_results(folder))


def uploaded_bytes(requests) -> int:
    """Bytes the server received for uploads and commits in a request log slice."""
    return sum(
        r.bytes_in
        for r in requests
        if r.method in ("PUT", "POST") and ("/commit/" in r.path or "/lfs/" in r.path)
    )


def clone_run(src: Path, dest_root: Path, run_id: str) -> Path:
    """A copy of run folder ``src`` under a new run id: unique bytes, so no upload is deduplicated."""
    from upskill_hub.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE

    old_id = json.loads((src / RUN_FILE).read_text(encoding="utf-8"))["run_id"]
    folder = dest_root / run_id
    folder.mkdir(parents=True)
    for name in (RUN_FILE, RESULTS_FILE, SUMMARY_FILE):
        text = (src / name).read_text(encoding="utf-8")
        (folder / name).write_text(text.replace(f'"{old_id}"', f'"{run_id}"'), encoding="utf-8")
    write_shard(folder)
    return folder


def plain_parquet(run: Path) -> bytes:
    """What a user would do by hand: results.jsonl -> Arrow -> parquet, no checks."""
    import io

    import pyarrow.json as pj
    import pyarrow.parquet as pq

    from upskill_hub.rundir import RESULTS_FILE, result_arrow_schema

    table = pj.read_json(
        run / RESULTS_FILE, parse_options=pj.ParseOptions(explicit_schema=result_arrow_schema())
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def timed(hub, fn) -> tuple[float, int, object]:
    """(seconds, HTTP requests the server answered, result) of ``fn()``."""
    hub.clear_requests()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, len(hub.requests), out


def cold_cache(fn):
    """``fn()`` with an empty table cache: a push from a machine that did not push the repo's tables."""
    from upskill_hub.hub.table_cache import CACHE_ENV

    before = os.environ[CACHE_ENV]
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="cold-", dir=before)
    try:
        return fn()
    finally:
        os.environ[CACHE_ENV] = before


def measurements(api, push, dr, skill_dir: Path, runs: dict[str, Path], prebuilt: bytes, i: int) -> dict:
    """What repetition ``i`` times, by name (each on content and a repo of its own)."""

    def upload(data: bytes, repo: str, name: str):
        return lambda: api.upload_file(path_or_fileobj=data, path_in_repo=f"data/results/{name}.parquet",
                                       repo_id=repo, repo_type="dataset")  # fmt: skip

    return {
        "push": lambda: push([skill_dir], f"bench/push-{i}", results=[runs["push"]]),
        "old": lambda: push([skill_dir], f"bench/old-{i}", results=[runs["old"]]),
        "existing": lambda: push([skill_dir], "bench/existing", results=[runs["existing"]]),
        "upload": upload(prebuilt, f"bench/upload-{i}", f"run-upload-{i}"),
        "existing-cold": lambda: cold_cache(
            lambda: push([skill_dir], "bench/existing", results=[runs["existing-cold"]])
        ),
        "existing-upload": upload(prebuilt, "bench/existing", f"run-existing-upload-{i}"),
        "plain": lambda: upload(plain_parquet(runs["plain"]), f"bench/plain-{i}", f"run-plain-{i}")(),
        "load": lambda: dr.load_run_dir(runs["push"]),  # the local part of a push
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--existing-runs", type=int, default=20)
    args = parser.parse_args()

    from upskill_hub._util.netutil import free_port
    from upskill_hub.localhub.testing import running_server

    with tempfile.TemporaryDirectory(prefix="upskill-bench-") as tmp:
        tmp_path = Path(tmp)
        port = free_port()
        os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
        os.environ["UPSKILL_HUB_TABLE_CACHE"] = str(tmp_path / "table-cache")  # not the user's cache
        with running_server(tmp_path / "hub", port=port) as hub:
            from huggingface_hub import HfApi

            from upskill_hub.hub import dataset_repo as dr
            from upskill_hub.hub.push import push
            from upskill_hub.skill import Skill

            skill = Skill.create("bench-skill", "Use when benchmarking pushes.", "Do the thing well.\n")
            skill_dir = skill.write(tmp_path / "skills" / skill.name)
            t0 = time.perf_counter()
            base = write_run_folder(tmp_path / "base", "run-base", skill, args.rows)
            jsonl_mb = (base / "results.jsonl").stat().st_size / 1e6
            print(
                f"wrote {args.rows:,} result rows ({jsonl_mb:.1f} MB of results.jsonl) in {time.perf_counter() - t0:.1f}s"
            )
            api = HfApi()

            # Warm up both paths (imports, first connections) on a throwaway repo.
            warm = clone_run(base, tmp_path / "warm", "run-warm")
            api.create_repo("bench/warmup", repo_type="dataset")
            push([skill_dir], "bench/warmup", results=[warm])
            api.upload_file(path_or_fileobj=plain_parquet(warm), path_in_repo="x.parquet", repo_id="bench/warmup",
                            repo_type="dataset")  # fmt: skip

            # A repo that already holds earlier (small) runs of the skill.
            api.create_repo("bench/existing", repo_type="dataset")
            small = write_run_folder(tmp_path / "small", "run-small", skill, 20)
            for k in range(args.existing_runs):
                push(
                    [skill_dir],
                    "bench/existing",
                    results=[clone_run(small, tmp_path / "small", f"run-old-{k}")],
                )

            kinds = ("push", "upload", "plain", "old", "existing", "existing-cold", "existing-upload")
            times: dict[str, list[float]] = {k: [] for k in (*kinds, "load")}
            requests: dict[str, int] = {}
            parquet_size = 0
            for i in range(args.repeat):
                reps = tmp_path / f"rep-{i}"
                runs = {k: clone_run(base, reps, f"run-{k}-{i}") for k in kinds}
                # A run made before runs wrote the parquet and its record.
                for name in ("results.parquet", ".results.parquet.check"):
                    (runs["old"] / name).unlink()
                prebuilt = dr.results_table_bytes(dr.load_run_dir(runs["upload"]))
                parquet_size = len(prebuilt)
                for k in ("push", "upload", "plain", "old"):
                    api.create_repo(f"bench/{k}-{i}", repo_type="dataset")

                plans = measurements(api, push, dr, skill_dir, runs, prebuilt, i)
                for k, fn in plans.items():
                    seconds, n_requests, out = timed(hub, fn)
                    times[k].append(seconds)
                    requests[k] = n_requests
                    assert k not in ("push", "old", "existing", "existing-cold") or out.committed
                shutil.rmtree(reps)

            rerun = clone_run(base, tmp_path / "again", "run-push-0")
            hub.clear_requests()
            t0 = time.perf_counter()
            again = push([skill_dir], "bench/push-0", results=[rerun])
            repush_time = time.perf_counter() - t0
            repush_server_bytes = uploaded_bytes(hub.requests)

    med = {k: statistics.median(v) for k, v in times.items()}
    size_mb = f"{parquet_size / 1e6:.1f} MB"
    committed = "yes" if again.committed else "no"

    def row(*cells: str) -> None:
        print(f"{cells[0]:<44}" + "".join(f"{c:>22}" for c in cells[1:]))

    def every(k: str) -> str:
        return " ".join(f"{t:.3f}" for t in times[k])

    def compare(label: str, ours: str, base: str) -> None:
        row(label, f"{med[ours]:.3f} s ({requests[ours]} req)", f"{med[base]:.3f} s ({requests[base]} req)",
            f"{med[ours] / med[base]:.2f}")  # fmt: skip

    print()
    print(
        f"{args.rows:,} result rows ({jsonl_mb:.1f} MB jsonl, {size_mb} parquet), median of {args.repeat} runs, "
        f"load average {os.getloadavg()[0]:.2f}:"
    )
    row("", "upskill-hub push", "baseline", "ratio")
    compare("vs upload_file of the parquet (goal <= 1.2)", "push", "upload")
    row("  of which reading the run folder", f"{med['load']:.3f} s", "", "")
    compare("vs jsonl -> parquet -> upload_file", "push", "plain")
    compare("older run without results.parquet", "old", "plain")
    compare(f"repo with {args.existing_runs} runs vs upload_file there", "existing", "existing-upload")
    compare("  the same from another machine (cold cache)", "existing-cold", "existing-upload")
    row("  every run: upskill-hub push", every("push"))
    row("  every run: upload_file", every("upload"))
    row("  every run: jsonl->parquet->upload_file", every("plain"))
    print()
    row("re-push of unchanged content (goal: 0 B)", "time", "bytes uploaded", "commit made")
    row("  counted by the library", f"{repush_time:.3f} s", f"{again.bytes_uploaded:,}", committed)
    row("  counted by the server's request log", "", f"{repush_server_bytes:,}", "")
    ok_ratio = med["push"] / med["upload"] <= 1.2
    ok_repush = again.bytes_uploaded == 0 and repush_server_bytes == 0 and not again.committed
    print()
    print(f"ratio goal {'met' if ok_ratio else 'NOT met'}; re-push goal {'met' if ok_repush else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
