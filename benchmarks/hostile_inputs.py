"""What the attacks of issue 10 cost now: each figure is measured, none is assumed.

Printed, one line per attack:
* parquet bomb: a small parquet that decompresses to 400 MB, named as a Space library:
  time to refuse it and the growth of this process's peak memory (was: +3.2 GB, 2.6 GB cached);
* anonymous 400 MB commit body to ``hub serve``: bytes the server read and peak memory growth
  (was: 1.26 GB);
* README alias bomb (~350 bytes): size of the repo-info answer (was: 659 MB);
* catastrophic regex ``(x+x+)+y`` on 5,000 ``x``: time until the assertion fails (was: never);
* ``{"$ref": "#"}`` and ``$ref`` to a URL: time until the assertion fails, requests sent.

Then round 2 (issue 29), one line per attack with its verdict: ``ok`` when the command ended
within its budget in exactly one ``Error:`` line (or the reported refusal), no traceback,
nothing written, and the tool answered a clean command afterwards; ``FAIL`` otherwise.
Classes: 1 regex budget in JSON Schemas, 2 file types and sizes, 3 numbers and nesting,
4 file-system faults, 5 tables from strangers, 6 names, 7 truthful messages.

Round 3 (issue 33) runs the attacks of ``benchmarks/hostile3_*.py``, one module per area, with
the same verdict rules; each class has at least one attack.

Round 4 (issue 45) runs ``benchmarks/hostile4_*.py`` the same way.

Run: ``.venv/bin/python benchmarks/hostile_inputs.py`` (local servers only; ``--round2``,
``--round3`` or ``--round4`` runs only that part).
"""

from __future__ import annotations

import base64
import io
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="hostile-bench-"))
    os.environ.update(HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp / "hf"), HF_HUB_CACHE=str(tmp / "hf" / "hub"))
    from upskill_hub._util.netutil import free_port

    port = free_port()
    os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
    import httpx2
    import pyarrow as pa
    import pyarrow.parquet as pq
    from huggingface_hub import CommitOperationAdd, HfApi

    from upskill_hub.cases import parse_assertion
    from upskill_hub.errors import UpskillError
    from upskill_hub.lift.grading.assertions import check_sync
    from upskill_hub.localhub.testing import running_server
    from upskill_hub.space import data

    token = "hf_" + "bench" * 6
    with running_server(tmp / "root", port=port, write_tokens=(token,)) as srv:
        api = HfApi(token=token)
        # --- parquet bomb
        # Written one 6.25 MB row at a time, so building the bomb does not raise this process's peak.
        buf = io.BytesIO()
        schema = pa.schema([("name", pa.string()), ("body", pa.string())])
        with pq.ParquetWriter(buf, schema, compression="zstd", use_dictionary=False) as writer:
            for i in range(64):
                writer.write_table(pa.table({"name": [f"s{i}"], "body": ["a" * (400 * 1024 * 1024 // 64)]}, schema))
        api.create_repo("user/bomb", repo_type="dataset")
        api.create_commit("user/bomb", [CommitOperationAdd("data/skills/bomb.parquet", buf.getvalue())],
                          commit_message="bomb", repo_type="dataset")  # fmt: skip
        before, started = peak_mb(), time.monotonic()
        try:
            data.load_library("user/bomb", token=False, allow_local=False)
            outcome = "LOADED"
        except UpskillError as exc:
            outcome = f"refused ({str(exc)[:70]}...)"
        print(f"parquet bomb ({len(buf.getvalue()) / 1024:.0f} KB -> 400 MB): {outcome} in "
              f"{time.monotonic() - started:.2f}s, peak memory +{peak_mb() - before:.0f} MB, "
              f"cached libraries {len(data._CACHE)}")  # fmt: skip

        # --- anonymous 400 MB body
        api.create_repo("user/target")
        srv.clear_requests()
        before = peak_mb()

        def chunks():
            for _ in range(400):
                yield b"\0" * (1 << 20)

        try:
            status = httpx2.post(f"{srv.url}/api/models/user/target/commit/main", content=chunks(), timeout=60).status_code
        except httpx2.TransportError:
            status = "closed"
        rec = [r for r in srv.requests if r.path.endswith("/commit/main")][-1]
        print(f"anonymous 400 MB commit body: answer {status}/{rec.status}, server read "
              f"{rec.bytes_in / 1e6:.1f} MB, peak memory +{peak_mb() - before:.0f} MB")  # fmt: skip

        # --- README alias bomb
        levels = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
        readme = ("---\n" + "\n".join(levels) + "\n---\n").encode()
        line = {"key": "file", "value": {"path": "README.md", "content": base64.b64encode(readme).decode()}}
        payload = json.dumps({"key": "header", "value": {"summary": "bomb"}}) + "\n" + json.dumps(line)
        httpx2.post(f"{srv.url}/api/models/user/target/commit/main", content=payload.encode(),
                    headers={"Authorization": f"Bearer {token}"}).raise_for_status()  # fmt: skip
        r = httpx2.get(f"{srv.url}/api/models/user/target")
        print(f"README alias bomb ({len(readme)} bytes): repo info {r.status_code}, {len(r.content)} bytes")

    # --- assertions
    for label, atype, value, answer in (
        ("catastrophic regex (x+x+)+y on 5,000 x", "regex", "(x+x+)+y", "x" * 5000),
        ("json-schema loop through the answer's data", "json-schema",
         {"properties": {"a": {"$ref": "#/properties/a"}}}, '{"a": 1}'),
        ("json-schema $ref to a URL (reached by the data)", "json-schema",
         {"properties": {"a": {"$ref": "http://127.0.0.1:9/s.json"}}}, '{"a": 1}'),
    ):  # fmt: skip
        a = parse_assertion({"type": atype, "value": value}, "bench")
        started = time.monotonic()
        res = check_sync(a, answer)
        print(f"{label}: passed={res.passed} in {time.monotonic() - started:.2f}s ({res.evidence[:60]})")


# --------------------------------------------------------------------------- round 2 (issue 29)
GOOD_MD = "---\nname: demo\ndescription: Use for demos.\n---\n\n# Demo\n\nSteps.\n"


def cli(args: list[str], budget_s: float = 30, env: dict | None = None, pre: str = "") -> tuple[int | str, float, str]:
    """``upskill-hub ARGS`` in a child process: (exit code or "HANG", seconds, stderr)."""
    code = pre + "import sys\nfrom upskill_hub.cli.app import entry\nsys.argv = ['upskill-hub'] + sys.argv[1:]\nentry()\n"
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                              timeout=budget_s, env={**os.environ, **(env or {})})  # fmt: skip
    except subprocess.TimeoutExpired:
        return "HANG", time.monotonic() - started, ""
    return proc.returncode, time.monotonic() - started, proc.stderr


def verdict(label: str, result: tuple[int | str, float, str], must: str, *, code: int = 1, unchanged: Path | None = None,
            before: dict | None = None) -> bool:  # fmt: skip
    """Print one verdict line; True when the attack met every rule."""
    rc, took, err = result
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("Error:", "  ", "Warning:")) or must in ln]
    shown = next((ln for ln in lines if must in ln), lines[-1] if lines else "")
    rules = {
        "no hang": rc != "HANG",
        "exit code": rc == code,
        "no traceback": "Traceback" not in err,
        "names the problem": must in err,
        "nothing written": unchanged is None or snapshot(unchanged) == before,
    }
    ok = all(rules.values())
    broken = ", ".join(k for k, v in rules.items() if not v)
    print(f"  {'ok  ' if ok else 'FAIL'} {label}: exit {rc} in {took:.1f}s: {shown.strip()[:150]}"
          + (f"  [broken: {broken}]" if broken else "") + (f" ({len(errors)} lines)" if len(errors) > 1 else ""))  # fmt: skip
    return ok


def snapshot(root: Path) -> dict[str, int]:
    return {str(p): p.lstat().st_size for p in root.rglob("*")} if root.exists() else {}


def skill_with(root: Path, make) -> Path:
    d = root / "demo"
    (d / "references").mkdir(parents=True)
    (d / "SKILL.md").write_text(GOOD_MD)
    make(d)
    return d


def round2() -> bool:
    """Issue 29's classes: each attack, its verdict."""
    tmp = Path(tempfile.mkdtemp(prefix="hostile-r2-"))
    os.environ.setdefault("UPSKILL_HUB_CACHE", str(tmp / "cache"))
    results: list[bool] = []
    from upskill_hub._util import guarded
    from upskill_hub.cases import parse_assertion
    from upskill_hub.lift.grading.assertions import check_sync

    print("class 1: regex budget in JSON Schemas")
    evil = "(x+x+)+y"
    for kw, schema, inst in (
        ("pattern", {"type": "string", "pattern": evil}, "x" * 5000),
        ("patternProperties", {"patternProperties": {evil: {}}}, {"x" * 5000: 1}),
        ("additionalProperties", {"patternProperties": {evil: {}}, "additionalProperties": False}, {"x" * 5000: 1}),
        ("unevaluatedProperties", {"patternProperties": {evil: {}}, "unevaluatedProperties": False}, {"x" * 5000: 1}),
        ("propertyNames", {"propertyNames": {"pattern": evil}}, {"x" * 5000: 1}),
    ):  # fmt: skip
        a = parse_assertion({"type": "json-schema", "value": schema}, "bench")
        # Another thread counts in pure Python meanwhile: its rate shows whether the GIL was free.
        stop, count = threading.Event(), [0]

        def spin(stop: threading.Event = stop, count: list[int] = count) -> None:
            while not stop.is_set():
                count[0] += 1

        t0 = time.monotonic()
        th = threading.Thread(target=spin)
        th.start()
        res = check_sync(a, json.dumps(inst))
        took = time.monotonic() - t0
        stop.set()
        th.join()
        ok = not res.passed and "gave up" in res.evidence and took < 3
        results.append(ok)
        print(f"  {'ok  ' if ok else 'FAIL'} {kw} (x+x+)+y on 5,000 x: failed its row in {took:.2f}s "
              f"({res.evidence[:70]}); another thread ran {count[0] / took / 1e6:.1f} M loops/s meanwhile")  # fmt: skip
    del guarded

    print("class 2: only regular files and folders are read (skills validate)")
    attacks = {
        "FIFO": lambda d: os.mkfifo(d / "references" / "pipe.md"),
        "character device": lambda d: os.mknod(d / "references" / "null.md", 0o600 | 0o020000, os.makedev(1, 3)),
        "symlink loop": lambda d: (os.symlink("b", d / "references" / "a"), os.symlink("a", d / "references" / "b")),
        "non-UTF-8 name": lambda d: os.close(os.open(os.fsencode(d) + b"/references/caf\xe9.md", os.O_CREAT | os.O_WRONLY)),
        "1 GiB sparse file": lambda d: os.truncate(os.open(d / "big.bin", os.O_CREAT | os.O_WRONLY), 1 << 30),
    }
    expect = {"FIFO": "FIFO", "character device": "character device", "symlink loop": "symlink loop",
              "non-UTF-8 name": "valid UTF-8", "1 GiB sparse file": "files over"}  # fmt: skip
    for i, (label, make) in enumerate(attacks.items()):
        d = skill_with(tmp / f"c2-{i}", make)
        before = snapshot(d.parent)
        for cmd in (["skills", "validate", str(d)], ["skills", "install", str(d), "--dest", str(tmp / f"c2-{i}-inst")]):
            results.append(verdict(f"{label}: {cmd[1]}", cli(cmd), expect[label], unchanged=d.parent, before=before))
    inst = tmp / "c2-0-inst"
    results.append(not inst.exists() or not any(inst.iterdir()))

    print("class 3: numbers and nesting from strangers")
    runs = tmp / "c3-runs" / "r1"
    runs.mkdir(parents=True)
    (runs / "run.json").write_text("[" * 200_000)
    results.append(verdict("run.json nested 200,000 deep: runs", cli(["runs", str(runs.parent)]), "nests deeper than"))
    kdir = tmp / "c3-kernel"
    kdir.mkdir()
    for label, content in (("10 MB string", b's = "' + b"x" * 10_000_000 + b'"\n'), ("binary", b"\xff\xfe\x00[general\x00\xff"),
                           ("arrays nested 1,000 deep", b"[general]\na = " + b"[" * 1000 + b"\n")):  # fmt: skip
        (kdir / "build.toml").write_bytes(content)
        want = {"10 MB string": "KB", "binary": "UTF-8", "arrays nested 1,000 deep": "nests deeper"}[label]
        results.append(verdict(f"build.toml with a {label}: kernels check", cli(["kernels", "check", str(kdir)], 30), want))
    from upskill_hub.testing.llm_server import Reply, running_llm_server

    sk = tmp / "c3-skill" / "demo"
    sk.mkdir(parents=True)
    (sk / "SKILL.md").write_text(GOOD_MD)
    (sk / "skill_meta.json").write_text('{"cases": [{"id": "c", "input": "q", "assert": [{"type": "contains", "value": "x"}]}]}')
    with running_llm_server(lambda s, m, p: Reply("x", usage={"prompt_tokens": 10**30})) as srv:
        args = ["eval", str(sk), "-m", f"openai-compatible:m@{srv.openai_base_url}", "-o", str(tmp / "c3-out"), "--no-cache", "--no-plots"]
        results.append(verdict("usage of 10**30 tokens: eval", cli(args, 60), "implausible token count"))
        results.append(verdict("usage of 10**30 tokens: eval --resume", cli([*args, "--resume"], 60), "implausible token count"))

    print("class 4: file-system faults")
    sk4 = tmp / "c4-skill" / "demo"
    sk4.mkdir(parents=True)
    (sk4 / "SKILL.md").write_text(GOOD_MD)
    cases = [{"id": f"c{i}", "input": f"q {i}", "assert": [{"type": "contains", "value": "x"}]} for i in range(12)]
    (sk4 / "skill_meta.json").write_text(json.dumps({"cases": cases}))
    limit = "import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (16384, resource.RLIM_INFINITY))\n"
    with running_llm_server(lambda s, m, p: "x" * 3000) as srv:
        args = ["eval", str(sk4), "-m", f"openai-compatible:m@{srv.openai_base_url}", "-o", str(tmp / "c4-out"), "--no-cache", "--no-plots"]
        results.append(verdict("file-size limit 16 KB (EFBIG): eval", cli(args, 60, pre=limit), "--resume"))
        results.append(verdict("  then, limit lifted: eval --resume", cli([*args, "--resume"], 60), "", code=0))

    print("class 5: tables from strangers")
    from upskill_hub.errors import UpskillError
    from upskill_hub.hub import dataset_repo as dr

    t0 = time.monotonic()
    try:
        dr.read_parquet_rows(b"PAR1 garbage PAR1", "data/runs/x.parquet")
        outcome = (0, time.monotonic() - t0, "read garbage")
    except UpskillError as exc:
        outcome = (1, time.monotonic() - t0, f"Error: {exc}")
    results.append(verdict("garbage parquet in data/runs/", outcome, "not a readable parquet table"))
    import pandas as pd

    from upskill_hub.rundir import result_arrow_schema
    from upskill_hub.space import data
    from upskill_hub.space.aggregate import compute_aggregates
    from upskill_hub.space.views import leaderboard

    empty = data._read_parquets([], data.RESULT_COLUMNS, result_arrow_schema(), budget=data.ReadBudget("b"), table="results")
    skills = pd.DataFrame({"name": ["a"], "description": ["d"], "version": ["v"], "token_estimate": [1], "n_cases": [0]})
    t0 = time.monotonic()
    try:
        got = leaderboard(compute_aggregates(skills, empty), query="a")
        outcome = (0, time.monotonic() - t0, f"empty leaderboard: {got}")
    except Exception as exc:  # noqa: BLE001 - the benchmark reports whatever escapes
        outcome = (1, time.monotonic() - t0, f"{type(exc).__name__}: {exc}")
    results.append(verdict("/leaderboard query on a library without results", outcome, "empty leaderboard", code=0))

    print("class 6: names (one policy for validate, install, push, pull)")
    for label, name, want in (("bidi override U+202E", "evil\u202egpj.sh", "U+202E"), ("C1 control \\x9b", "a\x9bb.md", "control"),
                              ("ESC", "a\x1b[2Jb.md", "control"), ("newline", "a\nb.md", "control")):  # fmt: skip
        d = skill_with(tmp / f"c6-{abs(hash(name))}", lambda d, n=name: (d / "references" / n).write_text("x"))
        results.append(verdict(f"{label} in a file name: skills validate", cli(["skills", "validate", str(d)]), want))

    print("class 7: messages that tell the truth")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        results.append(verdict("hub serve on a busy port", cli(["hub", "serve", "--root", str(tmp / "hub"), "--port", str(port)]),
                               "another program is using that port"))  # fmt: skip
    bad = tmp / "c7-runs" / "r1"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text("{corrupt")
    results.append(verdict("runs with a corrupt run.json", cli(["runs", str(bad.parent)]), "is not valid JSON"))
    from upskill_hub._util import safeyaml

    t0 = time.monotonic()
    try:
        safeyaml.load("\n".join(f"k{i}: v" for i in range(60_000)))
        outcome = (0, time.monotonic() - t0, "loaded")
    except safeyaml.YAMLLimitError as exc:
        outcome = (1, time.monotonic() - t0, f"Error: {exc}")
    results.append(verdict("60,000 plain YAML keys (a dataset card)", outcome, "more than 100000 nodes (keys"))
    for label, fm, want in (("60,000 plain keys", "\n".join(f"k{i}: v" for i in range(60_000)), "at most 64,000 are read"),
                            ("a NUL in frontmatter", "name: demo\ndescription: a\x00b", "character U+0000")):  # fmt: skip
        d = tmp / f"c7-{label[:3]}" / "demo"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\n{fm}\n---\nbody\n")
        results.append(verdict(f"{label}: skills validate", cli(["skills", "validate", str(d)]), want))

    clean = skill_with(tmp / "clean", lambda d: None)
    usable = cli(["skills", "validate", str(clean)])[0] == 0
    results.append(usable)
    print(f"tool still usable afterwards: {usable}")
    print(f"round 2: {sum(results)} of {len(results)} checks ok")
    return all(results)


# --------------------------------------------------------------------------- round 3 (issue 33)
#: One module per area of the round-3 attacks; each has ``attacks(tmp) -> list[bool]``.
ROUND3 = ("hostile3_harness", "hostile3_catalog", "hostile3_triggers", "hostile3_tunepush", "hostile3_text")


def round3() -> bool:
    """Issue 33's classes: untrusted text as options, reads beyond the skill, memory bombs, run
    folders, tune --write, processes, token caps, row types, terminal output, options."""
    import importlib

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    tmp = Path(tempfile.mkdtemp(prefix="hostile-r3-"))
    os.environ.setdefault("UPSKILL_HUB_CACHE", str(tmp / "cache"))
    results: list[bool] = []
    for name in ROUND3:
        module = importlib.import_module(name)
        area = tmp / name
        area.mkdir()
        results += module.attacks(area)
    print(f"round 3: {sum(results)} of {len(results)} checks ok")
    return all(results)


# --------------------------------------------------------------------------- round 4 (issue 45)
#: Round 4's end-to-end attacks (the workspace, streams, --against, tune, run folders); the rest
#: of round 4 (the judge prompt, its verdict, tables, numbers) is unit-tested under tests/.
ROUND4 = ("hostile4_workspace",)


def round4() -> bool:
    """Issue 45's attacks that need a whole command: staging, keys in file names, a 6 MB stream,
    raw line separators, non-UTF-8 names, 101 tool calls, --against trees and revisions,
    tune --write on an alias, a tampered summary.json."""
    import importlib

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    tmp = Path(tempfile.mkdtemp(prefix="hostile-r4-"))
    os.environ.setdefault("UPSKILL_HUB_CACHE", str(tmp / "cache"))
    results: list[bool] = []
    for name in ROUND4:
        area = tmp / name
        area.mkdir()
        results += importlib.import_module(name).attacks(area)
    print(f"round 4: {sum(results)} of {len(results)} checks ok")
    return all(results)


if __name__ == "__main__":
    rounds = {"--round2": round2, "--round3": round3, "--round4": round4}
    chosen = [fn for flag, fn in rounds.items() if flag in sys.argv]
    if not chosen:
        main()
        chosen = [round2, round3, round4]
    sys.exit(0 if all([fn() for fn in chosen]) else 1)
