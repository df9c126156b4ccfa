"""Issue 33, the ``triggers`` area: what each attack does now, measured in child processes.

Classes (issue 33's numbering), one verdict line per attack (see ``hostile_inputs.verdict``):

* 3, memory and endless files: ``--triggers`` naming a FIFO, a character device or a 3 GB
  sparse file; a 1,000,000-query eval set (refused at once, by size); a 150,000-query set
  (refused by count); and two streamed runs against the scripted local server, whose child
  process's peak resident memory (``VmHWM``) is measured: 5,000 distractors (a ~1.5 MB
  catalog in every prompt), and 1,000,000 queries with the caps lifted. Both must print
  progress at once and stay under 1 GB; they run for a fixed time budget, then stop.
* 4, run folders: ``triggers --resume`` and ``triggers --library --resume`` through a
  symlinked ``triggers.jsonl``; a run folder that is a symlink; a FIFO as
  ``triggers.jsonl`` and as ``triggers-plan.json``; a resume under a file-size limit
  (``RLIMIT_FSIZE``), which must keep every row there was.
* 8, rows read back: ``"triggered": "yes"``, a duplicated answer, a NaN latency, a list
  where text belongs, a NaN share in ``routing.json``; a library skill named ``none``.
* 10, options: ``--concurrency 0``, ``--concurrency 100000``, ``--runs 10**12``,
  ``--distractors ''``.

Run: ``cd benchmarks && ../.venv/bin/python hostile3_triggers.py`` (about 2 minutes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hostile_inputs import cli, snapshot, verdict

#: Peak resident memory a streamed run may reach (the issue's bar).
RSS_LIMIT_MB = 1024
#: Seconds each streamed run is watched before it is stopped.
STREAM_BUDGET_S = 40.0
#: Seconds within which the first progress line must appear.
FIRST_PROGRESS_S = 30.0


def _skill(
    root: Path, name: str, description: str, cases: list[str], triggers: list[dict] | None = None
) -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nSteps.\n")
    meta: dict = {
        "cases": [
            {"id": f"c{i}", "input": q, "assert": [{"type": "contains", "value": "x"}]}
            for i, q in enumerate(cases)
        ]
    }
    if triggers is not None:
        meta["triggers"] = triggers
    (d / "skill_meta.json").write_text(json.dumps(meta))
    return d


def _vm_hwm_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def streamed_run(label: str, args: list[str], env: dict[str, str] | None = None) -> bool:
    """Run ``upskill-hub ARGS`` for :data:`STREAM_BUDGET_S` s: its peak RSS and when progress first showed."""
    code = "import sys\nfrom upskill_hub.cli.app import entry\nsys.argv = ['upskill-hub'] + sys.argv[1:]\nentry()\n"
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "COLUMNS": "200", **(env or {})})  # fmt: skip
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.monotonic() - started, line.rstrip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak = 0.0
    while proc.poll() is None and time.monotonic() - started < STREAM_BUDGET_S:
        peak = max(peak, _vm_hwm_mb(proc.pid))
        time.sleep(0.2)
    peak = max(peak, _vm_hwm_mb(proc.pid))
    finished = proc.poll() is not None
    if not finished:
        proc.terminate()
        proc.wait(10)
    reader.join(5)
    progress = [(t, ln) for t, ln in lines if "calls" in ln]
    first = progress[0][0] if progress else None
    last = progress[-1][1].strip() if progress else "no progress line"
    tb = any("Traceback" in ln for _, ln in lines)
    ok = (
        peak < RSS_LIMIT_MB
        and first is not None
        and first < FIRST_PROGRESS_S
        and not tb
        and (not finished or proc.returncode == 0)
    )
    shown = "none" if first is None else f"{first:.1f}s"
    print(f"  {'ok  ' if ok else 'FAIL'} {label}: peak RSS {peak:.0f} MB (limit {RSS_LIMIT_MB}), first progress at {shown}, "
          f"{'finished' if finished else f'stopped after {STREAM_BUDGET_S:.0f}s'}; last: {last[:90]}")  # fmt: skip
    return ok


def attacks(tmp: Path) -> list[bool]:
    """Every attack of the ``triggers`` area; one verdict line each, the verdicts returned."""
    os.environ.setdefault("UPSKILL_HUB_CACHE", str(tmp / "cache"))
    from upskill_hub.testing.llm_server import running_llm_server

    results: list[bool] = []
    skills = tmp / "skills"
    sk = _skill(skills, "csv-tidy", "Tidy messy CSV files into clean tables.",
                [f"tidy this csv export {i}" for i in range(3)])  # fmt: skip
    lib = tmp / "library"
    for i, name in enumerate(("csv-tidy", "sql-lint", "yaml-fix")):
        _skill(lib, name, f"Work on {name.split('-')[0]} files.", [f"please {name.split('-')[0]} thing {i}"])

    with running_llm_server() as srv:
        model = ["-m", f"openai-compatible:m@{srv.openai_base_url}", "--no-cache", "--format", "human"]
        out = tmp / "out"
        base = ["triggers", str(sk), *model, "--distractors", "none", "-o", str(out)]

        print("class 3: endless and huge inputs (triggers)")
        fifo = tmp / "set.fifo"
        os.mkfifo(fifo)
        results.append(verdict("--triggers names a FIFO", cli([*base, "--triggers", str(fifo)]), "FIFO"))
        results.append(
            verdict("--triggers /dev/zero", cli([*base, "--triggers", "/dev/zero"]), "character device")
        )
        sparse = tmp / "sparse.json"
        with open(sparse, "wb") as fh:
            fh.truncate(3 * 1024**3)
        results.append(
            verdict(
                "--triggers: a 3 GB sparse file",
                cli([*base, "--triggers", str(sparse)]),
                "UPSKILL_MAX_TRIGGERS_MB",
            )
        )
        million = tmp / "million.json"
        with open(million, "w") as fh:
            fh.write(
                "["
                + ",".join(
                    f'{{"query":"q{i}","should_trigger":{"true" if i % 2 else "false"}}}'
                    for i in range(1_000_000)
                )
                + "]"
            )
        res = cli([*base, "--triggers", str(million)])
        results.append(verdict(f"--triggers: 1,000,000 queries ({million.stat().st_size / 1e6:.0f} MB)", res, "UPSKILL_MAX_TRIGGERS_MB")
                       and res[1] < 10)  # fmt: skip
        many = tmp / "many.json"
        many.write_text(json.dumps([{"query": f"q{i}", "should_trigger": True} for i in range(150_000)]))
        results.append(
            verdict(
                "--triggers: 150,000 short queries",
                cli([*base, "--triggers", str(many)]),
                "UPSKILL_MAX_TRIGGER_QUERIES",
            )
        )
        results.append(not out.exists() or not any(out.iterdir()))

        # 5,000 distractors, each with one case: ~5,000 should-not queries, each call carrying the whole catalog.
        dis = tmp / "distractors"
        words = [
            "parse",
            "render",
            "audit",
            "convert",
            "index",
            "merge",
            "split",
            "verify",
            "translate",
            "compress",
        ]
        for i in range(5000):
            w = words[i % len(words)]
            _skill(dis, f"d{i:04d}-{w}", f"{w.capitalize()} documents of kind {i} in the house style, with checks and "
                   f"a summary; use it when asked to {w} kind {i} records or files.", [f"{w} the kind {i} records now"])  # fmt: skip
        stop = threading.Event()

        def forget() -> None:  # the in-process server records bodies; a 1.5 MB prompt each
            while not stop.wait(0.5):
                srv.clear()

        cleaner = threading.Thread(target=forget, daemon=True)
        cleaner.start()
        try:
            results.append(streamed_run("5,000 distractors (default queries: ~5,000 calls, ~1.5 MB catalog each)",
                                        ["triggers", str(sk), *model, "--distractors", str(dis), "-o", str(tmp / "out-5k")]))  # fmt: skip
            lifted = {"UPSKILL_MAX_TRIGGER_QUERIES": "2000000", "UPSKILL_MAX_TRIGGERS_MB": "100"}
            results.append(streamed_run("1,000,000 queries, caps lifted (UPSKILL_MAX_TRIGGER_QUERIES=2000000)",
                                        [*base[:-1], str(tmp / "out-1m"), "--triggers", str(million), "-c", "16"], env=lifted))  # fmt: skip
        finally:
            stop.set()
            cleaner.join(5)
            srv.clear()

        print("class 4: run folders (triggers)")
        small = tmp / "small.json"
        small.write_text(
            json.dumps([{"query": f"tidy csv number {i}", "should_trigger": i % 3 != 0} for i in range(60)])
        )
        good = tmp / "good"
        assert (
            cli(
                [
                    "triggers",
                    str(sk),
                    *model,
                    "--distractors",
                    "none",
                    "--triggers",
                    str(small),
                    "-o",
                    str(good),
                ]
            )[0]
            == 0
        )
        (run,) = [p for p in good.iterdir() if p.is_dir()]
        rows_file = run / "triggers.jsonl"
        pristine = rows_file.read_bytes()
        resume = [
            "triggers",
            str(sk),
            *model,
            "--distractors",
            "none",
            "--triggers",
            str(small),
            "-o",
            str(good),
            "--resume",
        ]
        outside = tmp / "outside.txt"
        outside.write_text("precious\n")

        rows_file.unlink()
        rows_file.symlink_to(outside)
        before = snapshot(tmp / "outside.txt")
        res = cli(resume)
        results.append(verdict("triggers --resume: triggers.jsonl -> outside file", res, "symlink",
                               unchanged=outside, before=before) and outside.read_text() == "precious\n")  # fmt: skip
        rows_file.unlink()
        os.mkfifo(rows_file)
        results.append(verdict("triggers --resume: triggers.jsonl is a FIFO", cli(resume), "FIFO"))
        rows_file.unlink()
        rows_file.write_bytes(pristine)

        linked_out = tmp / "linked-out"
        linked_out.mkdir()
        (linked_out / run.name).symlink_to(run)
        before = snapshot(run)
        results.append(verdict("triggers --resume: the run folder is a symlink",
                               cli([*resume[:-2], str(linked_out), "--resume"]), "symlink", unchanged=run, before=before))  # fmt: skip

        fifo_out = tmp / "fifo-out"
        (fifo_out / "20260101T000000Z-x").mkdir(parents=True)
        os.mkfifo(fifo_out / "20260101T000000Z-x" / "triggers-plan.json")
        results.append(verdict("triggers --resume: triggers-plan.json is a FIFO",
                               cli([*resume[:-2], str(fifo_out), "--resume"]), "could not be read; first: "))  # fmt: skip

        lib_out = tmp / "lib-out"
        lib_args = ["triggers", str(lib), "--library", *model, "-o", str(lib_out)]
        assert cli(lib_args)[0] == 0
        (lrun,) = [p for p in lib_out.iterdir() if p.is_dir()]
        (lrun / "triggers.jsonl").unlink()
        (lrun / "triggers.jsonl").symlink_to(outside)
        before = snapshot(outside)
        res = cli([*lib_args, "--resume"])
        results.append(verdict("triggers --library --resume: triggers.jsonl -> outside file", res, "symlink",
                               unchanged=outside, before=before) and outside.read_text() == "precious\n")  # fmt: skip

        # A resume under a file-size limit keeps every row it had (it used to rewrite the file).
        lines = pristine.decode().splitlines(keepends=True)
        rows_file.write_text("".join(lines[:40]) + lines[40][:50])  # 40 rows and a torn one
        kept = rows_file.stat().st_size
        cap = kept // 2  # below what the file holds: a rewrite would lose half of it
        limit = (
            f"import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, ({cap}, resource.RLIM_INFINITY))\n"
        )
        res = cli(resume, pre=limit)
        after = rows_file.read_text()
        whole = after.endswith("\n") and all(json.loads(ln) for ln in after.splitlines())
        n_after = len(after.splitlines())
        results.append(verdict(f"triggers --resume under a {cap}-byte file-size limit ({kept} bytes there)", res, "--resume")
                       and n_after >= 40 and whole)  # fmt: skip
        print(f"       rows before 40 (+ a torn one), after {n_after}, every line whole: {whole}")
        res = cli(resume)
        results.append(verdict("  then, limit lifted: triggers --resume", res, "", code=0)
                       and len(rows_file.read_text().splitlines()) == 60)  # fmt: skip

        print("class 8: rows read back (triggers, routing)")
        good_rows = [json.loads(ln) for ln in pristine.decode().splitlines()]
        for label, edit, must in (
            ('"triggered": "yes"', lambda rs: rs[3].update(triggered="yes"), "field 'triggered' is text"),
            ("an answer given twice", lambda rs: rs.append(dict(rs[5])), "answers a call an earlier line already answered"),
            ("latency NaN", lambda rs: rs[7].update(latency_s=float("nan")), "line 8"),
            ("a list where the query text belongs", lambda rs: rs[2].update(query=["a", "b"]), "field 'query' is a list, not text"),
        ):  # fmt: skip
            rs = [dict(r) for r in good_rows]
            edit(rs)
            rows_file.write_text("".join(json.dumps(r) + "\n" for r in rs))
            before = snapshot(run)
            results.append(
                verdict(f"triggers --resume: {label}", cli(resume), must, unchanged=run, before=before)
            )
        rows_file.write_bytes(pristine)
        routing = lrun / "routing.json"
        data = json.loads(routing.read_text())
        data["reports"][0]["accuracy"] = float("nan")
        routing.write_text(json.dumps(data))
        from upskill_hub.triggering.description_runs import description_runs

        t0 = time.monotonic()
        try:
            (listed,) = description_runs(lib_out)
            outcome: tuple[int | str, float, str] = (
                0,
                time.monotonic() - t0,
                f"runs lists it as: {listed.result}",
            )
        except Exception as exc:  # noqa: BLE001 - the benchmark reports whatever escapes
            outcome = (1, time.monotonic() - t0, f"{type(exc).__name__}: {exc}")
        results.append(
            verdict("runs: routing.json with a NaN accuracy", outcome, "unreadable routing.json", code=0)
        )
        nlib = tmp / "none-lib"
        _skill(nlib, "none", "Handle the none format files.", ["none format please"])
        _skill(nlib, "csv-tidy", "Tidy CSV files.", ["tidy csv please"])
        before_calls = srv.calls
        res = cli(["triggers", str(nlib), "--library", *model, "-o", str(tmp / "none-out")])
        results.append(
            verdict("triggers --library: a skill named 'none'", res, "named 'none'")
            and srv.calls == before_calls
        )

        print("class 10: options (triggers)")
        for label, extra, must in (
            ("--concurrency 0", ["--concurrency", "0"], "--concurrency must be at least 1"),
            ("--concurrency -1", ["-c", "-1"], "--concurrency must be at least 1"),
            ("--concurrency 100000", ["--concurrency", "100000"], "--concurrency must be at most"),
            ("--runs 10**12", ["--runs", str(10**12)], "--runs must be at most"),
        ):  # fmt: skip
            results.append(verdict(label, cli([*base, *extra]), must))
        results.append(verdict("--distractors ''", cli(["triggers", str(sk), *model, "--distractors", "", "-o", str(out)]),
                               "--distractors is empty"))  # fmt: skip
        results.append(not out.exists() or not any(out.iterdir()))
    return results


if __name__ == "__main__":
    verdicts = attacks(Path(tempfile.mkdtemp(prefix="hostile3-triggers-")))
    print(f"{sum(verdicts)}/{len(verdicts)} ok")
    sys.exit(0 if all(verdicts) else 1)
