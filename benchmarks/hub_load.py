"""The local Hub (``upskill-hub hub serve``) under load and faults: issue 50's measurements, redone.

Every server here is a real ``hub serve`` process on one port (clients read ``HF_ENDPOINT``
once, at import), and every client is the unmodified ``huggingface_hub`` (LFS through the
Git LFS API: ``HF_HUB_DISABLE_XET=1``) or ``datasets``. One line per phase, the figure
measured now beside the one issue 50 reported, and a verdict (``ok`` / ``FAIL``):

1. writers: N concurrent ``create_commit``s to one repo (all land, none lost); pairs of
   commits naming the same ``parent_commit`` (the loser gets an explicit 412); P concurrent
   ``upskill-hub push``es of different skills to one repo (all land; 412s re-planned).
2. readers during writes: one writer committing ``README.md`` as fast as it can while 4
   readers ``hf_hub_download`` it for S seconds (successes, consistency failures), then
   2 readers ``datasets.load_dataset`` the repo for S/2 seconds.
3. ``kill -9`` of the server at chosen moments of an LFS upload (--upload-mb) and of a
   commit of --files small files, each followed by a restart: every commit all-or-nothing,
   every retry succeeds; bytes left in ``tmp/`` after the restart cycles (each well under
   the 60 s grace, so the startup sweep keeps them), then how long a running server takes to
   sweep them once they are older than the grace (their mtime is set back an hour; at most
   ``--sweep-wait`` seconds; the servers sweep every ``--sweep-every`` seconds, passed as
   ``UPSKILL_HUB_SWEEP_S``; if any are left, one more restart).
4. a full disk (a small tmpfs; skipped in one line where ``mount`` is not permitted): a
   commit too big for it answers 507 with a clear message, stores nothing half, and the
   same commit succeeds once space is freed.

    .venv/bin/python benchmarks/hub_load.py [--seconds 20] [--commits 40] [--pushes 10]
        [--upload-mb 50] [--files 2000] [--sweep-every 5] [--sweep-wait 30] [--quick] [--only 1,2,3,4]

``--quick`` shrinks every phase (5 s of readers, 10 commits, 4 pushes, 10 MB, 500 files).
The default run takes about two minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TOKEN = "hf_" + "hubLoadBenchWriteToken000000001"
TMP = Path(tempfile.mkdtemp(prefix="hub-load-"))
os.environ.update(
    HF_HUB_DISABLE_XET="1",
    HF_HUB_DISABLE_PROGRESS_BARS="1",
    HF_TOKEN=TOKEN,
    HF_HOME=str(TMP / "hf"),
    HF_DATASETS_CACHE=str(TMP / "hf" / "datasets"),
    UPSKILL_HUB_TABLE_CACHE=str(TMP / "table-cache"),
)


def _free_port() -> int:
    from upskill_hub._util.netutil import free_port

    return free_port()


PORT = _free_port()
URL = f"http://127.0.0.1:{PORT}"
os.environ["HF_ENDPOINT"] = URL  # before huggingface_hub is imported

ROWS: list[tuple[str, str, str, bool | None]] = []
#: ``--server-src``: a src/ folder the servers import ``upskill_hub`` from (default: this install).
SERVER_SRC = ""
#: ``--sweep-every``: how often a running server sweeps ``tmp/`` (``UPSKILL_HUB_SWEEP_S``; its default is 60).
SWEEP_EVERY = 5.0


def report(label: str, now: str, issue: str, ok: bool | None) -> None:
    """One phase's line: what it measured now, what issue 50 reported, the verdict (None: a figure only)."""
    ROWS.append((label, now, issue, ok))
    print(f"{label:<46} {now:<58} {issue:<40} {'-' if ok is None else 'ok' if ok else 'FAIL'}", flush=True)


def note(text: str) -> None:
    print(f"  {text}", flush=True)


# ----------------------------------------------------------------------------- servers
class Server:
    """A ``hub serve`` process on ``PORT`` with its state in ``root``; its log goes to a file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root.parent / f"{root.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start it and wait until it answers; returns the seconds that took."""
        cmd = [
            sys.executable,
            "-m",
            "upskill_hub.cli.app",
            "hub",
            "serve",
            "--root",
            str(self.root),
            "--port",
            str(PORT),
        ]
        env = {**os.environ, "UPSKILL_HUB_WRITE_TOKENS": TOKEN, "UPSKILL_HUB_SWEEP_S": f"{SWEEP_EVERY:g}"}
        if SERVER_SRC:  # measure another version of the server (its src/ first on the path)
            env["PYTHONPATH"] = os.pathsep.join([SERVER_SRC, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        t0 = time.monotonic()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        import httpx2

        while time.monotonic() - t0 < 30:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"hub serve exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}"
                )
            with contextlib.suppress(httpx2.HTTPError):
                if (
                    httpx2.get(
                        f"{URL}/api/whoami-v2", headers={"authorization": f"Bearer {TOKEN}"}, timeout=1
                    ).status_code
                    == 200
                ):
                    return time.monotonic() - t0
            time.sleep(0.05)
        raise RuntimeError("hub serve did not answer within 30 s")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill9()

    def log_count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.log.read_text(errors="replace")))


@contextlib.contextmanager
def serving(root: Path) -> Iterator[Server]:
    server = Server(root)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def http_status(exc: BaseException | None) -> int | None:
    """The HTTP status behind ``exc`` (an LFS upload's error arrives wrapped in a RuntimeError)."""
    from huggingface_hub.errors import HfHubHTTPError

    while exc is not None:
        if isinstance(exc, HfHubHTTPError) and exc.response is not None:
            return exc.response.status_code
        exc = exc.__cause__ or exc.__context__
    return None


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]


def disk_full_line(exc: BaseException | None) -> str:
    """The line of ``exc`` (or of an error it wraps) that says the disk is full, else its first line."""
    first = one_line(exc) if exc is not None else ""
    while exc is not None:
        found = next((ln for ln in str(exc).splitlines() if "disk is full" in ln), None)
        if found:
            return found[:160]
        exc = exc.__cause__ or exc.__context__
    return first


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def api():
    from huggingface_hub import HfApi

    return HfApi(endpoint=URL, token=TOKEN)


# ------------------------------------------------------------------------- 1. writers
def phase_writers(n_commits: int, n_pushes: int) -> None:
    from huggingface_hub import CommitOperationAdd

    hf = api()
    with serving(TMP / "writers") as server:
        repo = "bench/commits"
        hf.create_repo(repo, repo_type="dataset")
        gate = threading.Barrier(n_commits)

        def commit(i: int) -> str | None:
            gate.wait()
            try:
                hf.create_commit(repo, [CommitOperationAdd(f"c/{i}.txt", f"commit {i}\n".encode())],
                                 commit_message=f"c{i}", repo_type="dataset")  # fmt: skip
                return None
            except Exception as exc:  # noqa: BLE001 - counted and shown
                return one_line(exc)

        t0 = time.monotonic()
        with ThreadPoolExecutor(n_commits) as pool:
            errors = [e for e in pool.map(commit, range(n_commits)) if e]
        took = time.monotonic() - t0
        files = set(hf.list_repo_files(repo, repo_type="dataset"))
        landed = sum(f"c/{i}.txt" in files for i in range(n_commits))
        commits = len(hf.list_repo_commits(repo, repo_type="dataset")) - 1
        report(f"{n_commits} concurrent create_commit, one repo", f"{landed}/{n_commits} landed, {commits} commits, {took:.1f} s",
               "80 concurrent: nothing lost", landed == commits == n_commits and not errors)  # fmt: skip
        for e in Counter(errors).most_common(3):
            note(f"error x{e[1]}: {e[0]}")

        # Pairs of commits naming the same parent: one lands, the other gets an explicit 412.
        pairs, explicit = 5, 0
        for k in range(pairs):
            head = hf.repo_info(repo, repo_type="dataset").sha
            gate2 = threading.Barrier(2)

            def racer(
                j: int, head: str = head, gate2: threading.Barrier = gate2, k: int = k
            ) -> BaseException | None:
                gate2.wait()
                try:
                    hf.create_commit(repo, [CommitOperationAdd(f"p/{k}-{j}.txt", b"x")], commit_message="race",
                                     repo_type="dataset", parent_commit=head)  # fmt: skip
                    return None
                except Exception as exc:  # noqa: BLE001
                    return exc

            with ThreadPoolExecutor(2) as pool:
                outcomes = list(pool.map(racer, (0, 1)))
            losers = [e for e in outcomes if e is not None]
            if (
                len(losers) == 1
                and http_status(losers[0]) == 412
                and "A commit has happened since" in str(losers[0])
            ):
                explicit += 1
            else:
                note(f"pair {k}: {[one_line(e) if e else 'landed' for e in outcomes]}")
        report("parent_commit races (2 commits, same parent)", f"{explicit}/{pairs}: one lands, loser gets 412",
               "loser gets an explicit 412", explicit == pairs)  # fmt: skip

        # upskill-hub push of different skills into one repo at once: push re-plans on 412.
        from upskill_hub.hub.push import push
        from upskill_hub.skill import Skill

        dirs = [
            Skill.create(f"load-skill-{i}", f"Use when testing load {i}.", f"Step {i}.\n").write(TMP / "skills" / f"load-skill-{i}")
            for i in range(n_pushes)
        ]  # fmt: skip
        hf.create_repo("bench/pushes", repo_type="dataset")
        before_412 = server.log_count(r"POST \S*/commit/\S* 412")
        gate3 = threading.Barrier(n_pushes)

        def pushing(d: Path) -> tuple[int, str | None]:
            gate3.wait()
            try:
                result = push([d], "bench/pushes", token=TOKEN)
                return result.attempts, None if result.committed else "not committed"
            except Exception as exc:  # noqa: BLE001
                return 0, one_line(exc)

        t0 = time.monotonic()
        with ThreadPoolExecutor(n_pushes) as pool:
            outs = list(pool.map(pushing, dirs))
        took = time.monotonic() - t0
        time.sleep(0.2)  # the server's log line follows its answer
        conflicts = server.log_count(r"POST \S*/commit/\S* 412") - before_412
        files = hf.list_repo_files("bench/pushes", repo_type="dataset")
        present = sum(any(f"load-skill-{i}/" in f for f in files) for i in range(n_pushes))
        ok_pushes = sum(err is None for _, err in outs)
        replans = sum(max(a - 1, 0) for a, _ in outs)
        report(f"{n_pushes} concurrent `push`es, one repo",
               f"{ok_pushes}/{n_pushes} landed, {present} in repo ({conflicts} x 412, {replans} re-plans), {took:.0f} s",
               "40/40 landed (412 conflicts re-planned)", ok_pushes == present == n_pushes)  # fmt: skip
        for e, c in Counter(err for _, err in outs if err).most_common(3):
            note(f"error x{c}: {e}")


# ------------------------------------------------------------------------- 2. readers
def phase_readers(seconds: float, n_readers: int = 4) -> None:
    from huggingface_hub import CommitOperationAdd, hf_hub_download

    hf = api()
    repo = "bench/readers"

    def card(i: int) -> bytes:
        # A regular (non-LFS) file whose size changes with every commit.
        return f"---\nlicense: mit\n---\n# Readers under load\n\nrevision {i}\n{'.' * (i % 500)}\n".encode()

    with serving(TMP / "readers"):
        hf.create_repo(repo, repo_type="dataset")
        csv = "text,label\n" + "".join(f"row {i},{i % 2}\n" for i in range(100))
        hf.create_commit(repo, [CommitOperationAdd("README.md", card(0)), CommitOperationAdd("data/train.csv", csv.encode())],
                         commit_message="init", repo_type="dataset")  # fmt: skip

        def run(readers: list[Callable[[], None]], duration: float) -> tuple[int, Counter[str], Counter[str]]:
            stop = threading.Event()
            commits = [0]
            successes: Counter[str] = Counter()
            failures: Counter[str] = Counter()
            lock = threading.Lock()

            def writer() -> None:
                i = 1
                while not stop.is_set():
                    with contextlib.suppress(Exception):
                        hf.create_commit(repo, [CommitOperationAdd("README.md", card(i))], commit_message=f"w{i}",
                                         repo_type="dataset")  # fmt: skip
                        commits[0] += 1
                    i += 1

            def reader(read: Callable[[], None]) -> None:
                while not stop.is_set():
                    try:
                        read()
                        with lock:
                            successes["ok"] += 1
                    except Exception as exc:  # noqa: BLE001 - counted by kind
                        msg = one_line(exc)
                        kind = (
                            "consistency" if "Consistency check failed" in msg else re.sub(r"\d+", "N", msg)
                        )
                        with lock:
                            failures[kind] += 1

            threads = [threading.Thread(target=writer)] + [
                threading.Thread(target=reader, args=(r,)) for r in readers
            ]
            for t in threads:
                t.start()
            time.sleep(duration)
            stop.set()
            for t in threads:
                t.join(120)
            return commits[0], successes, failures

        def downloader(k: int) -> Callable[[], None]:
            cache = TMP / "hf" / f"reader-{k}"
            return lambda: hf_hub_download(
                repo, "README.md", repo_type="dataset", cache_dir=cache, force_download=True
            )

        def readers(label: str, fns: list[Callable[[], None]], secs: float, before: str) -> None:
            """One writer against ``fns`` for ``secs``: a verdict line, then the other failures."""
            commits, ok, bad = run(fns, secs)
            mismatches = bad.pop("consistency", 0)
            report(f"1 writer + {label}, {secs:g} s",
                   f"{ok['ok']:,} ok, {mismatches:,} consistency failures, {sum(bad.values())} other ({commits:,} commits)",
                   before, mismatches == 0 and not bad)  # fmt: skip
            for kind, c in bad.most_common(3):
                note(f"other failure x{c}: {kind}")

        readers(f"{n_readers} readers of README.md", [downloader(k) for k in range(n_readers)], seconds,
                "2,968 ok, 3,309 consistency failures")  # fmt: skip

        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()

        def loader(k: int) -> Callable[[], None]:
            cache = TMP / "hf" / f"datasets-{k}"

            def load() -> None:
                ds = datasets.load_dataset(repo, split="train", cache_dir=str(cache))
                if len(ds) != 100:
                    raise ValueError(f"{len(ds)} rows, not 100")

            return load

        readers("2 load_dataset readers", [loader(k) for k in range(2)], max(seconds / 2, 3),
                "downloads fail while a commit lands")  # fmt: skip


# -------------------------------------------------------------------------- 3. kill -9
def phase_crashes(upload_mb: int, n_files: int, sweep_wait: float) -> None:
    from huggingface_hub import CommitOperationAdd

    hf = api()
    root = TMP / "crash"
    server = Server(root)
    server.start()
    repo = "bench/crash"
    hf.create_repo(repo, repo_type="dataset")
    repo_dir = root / "repos" / "dataset" / "bench" / "crash"
    size = upload_mb * 1024 * 1024
    base = os.urandom(size)

    def lfs_case(tag: str) -> tuple[list[CommitOperationAdd], dict[str, str]]:
        data = tag.encode().ljust(64, b"\0") + base[64:]
        path = f"big/{tag}.bin"
        return [CommitOperationAdd(path, data)], {path: hashlib.sha256(data).hexdigest()}

    def files_case(tag: str) -> tuple[list[CommitOperationAdd], dict[str, str]]:
        ops, want = [], {}
        for i in range(n_files):
            data = f"{tag} file {i}\n".encode() * 4
            ops.append(CommitOperationAdd(f"many/{tag}/f{i:05d}.txt", data))
            want[f"many/{tag}/f{i:05d}.txt"] = hashlib.sha256(data).hexdigest()
        return ops, want

    def uploads() -> list[Path]:
        return [p for p in (root / "tmp").glob("upload-*") if p.is_file()]

    def uploaded_fraction() -> float:
        return max((p.stat().st_size for p in uploads()), default=0) / size

    def blob_count() -> int:
        return sum(len(os.listdir(d)) for d in (root / "blobs").iterdir() if d.is_dir())

    def commit_files() -> int:
        return len(os.listdir(repo_dir / "commits"))

    # (label, builder, "moment reached?" given the counts taken just before the call)
    moments: list[tuple[str, Callable, Callable[[dict], bool]]] = [
        ("LFS upload 10% received", lfs_case, lambda s: uploaded_fraction() >= 0.10),
        ("LFS upload 50% received", lfs_case, lambda s: uploaded_fraction() >= 0.50),
        ("LFS upload 90% received", lfs_case, lambda s: uploaded_fraction() >= 0.90),
        ("LFS object stored, commit not yet", lfs_case, lambda s: blob_count() > s["blobs"]),
        ("LFS commit file written", lfs_case, lambda s: commit_files() > s["commits"]),
        (f"{n_files}-file commit: first blob", files_case, lambda s: blob_count() > s["blobs"]),
        (f"{n_files}-file commit: half the blobs", files_case, lambda s: blob_count() >= s["blobs"] + n_files // 2),
        (f"{n_files}-file commit: all blobs", files_case, lambda s: blob_count() >= s["blobs"] + n_files),
        (f"{n_files}-file commit: commit file written", files_case, lambda s: commit_files() > s["commits"]),
        (f"{n_files}-file commit: 5 ms after that", files_case,
         lambda s: commit_files() > s["commits"] and (time.sleep(0.005) or True)),
    ]  # fmt: skip
    all_or_nothing = retried = hit = whole_after = answered_ok = 0
    tmp_after: list[int] = []
    restarts: list[float] = []
    try:
        for k, (label, build, reached) in enumerate(moments):
            ops, want = build(f"case{k}")
            state = {"blobs": blob_count(), "commits": commit_files()}
            outcome: list[BaseException | None] = []

            def call(ops: list = ops, outcome: list = outcome) -> None:
                try:
                    hf.create_commit(repo, ops, commit_message="crash test", repo_type="dataset")
                    outcome.append(None)
                except Exception as exc:  # noqa: BLE001
                    outcome.append(exc)

            client = threading.Thread(target=call)
            client.start()
            deadline = time.monotonic() + 120
            while not reached(state) and client.is_alive() and time.monotonic() < deadline:
                time.sleep(0.002)
            caught = client.is_alive()
            server.kill9()
            hit += caught
            restarts.append(server.start())
            client.join(120)
            tmp_after.append(dir_bytes(root / "tmp"))
            # All or nothing: the head has every file of the commit with its content, or none.
            tree = {
                f.path: f
                for f in hf.list_repo_tree(repo, repo_type="dataset", recursive=True)
                if hasattr(f, "size")
            }
            present = [p for p in want if p in tree]
            whole = all(
                (tree[p].lfs.sha256 if tree[p].lfs else None) in (want[p], None)
                and hashlib.sha256(server.root.joinpath("blobs", want[p][:2], want[p]).read_bytes()).hexdigest() == want[p]
                for p in present
            )  # fmt: skip
            consistent = whole and len(present) in (0, len(want))
            all_or_nothing += consistent
            whole_after += bool(present) and consistent
            answered_ok += bool(outcome) and outcome[0] is None
            try:
                # the same commit again (fresh operations: the client marks sent ones as uploaded)
                hf.create_commit(repo, build(f"case{k}")[0], commit_message="retry", repo_type="dataset")
                files = set(hf.list_repo_files(repo, repo_type="dataset"))
                retried += all(p in files for p in want)
            except Exception as exc:  # noqa: BLE001
                note(f"{label}: retry failed: {one_line(exc)}")
            first = (
                "landed"
                if outcome and outcome[0] is None
                else one_line(outcome[0])
                if outcome
                else "no answer"
            )
            if not consistent or not caught:
                note(f"{label}: {'killed' if caught else 'moment missed, killed after'}; "
                     f"{len(present)}/{len(want)} files in head; interrupted call: {first}")  # fmt: skip
        n = len(moments)
        report(f"kill -9 x{n}: {upload_mb} MB LFS, {n_files}-file commit",
               f"{all_or_nothing}/{n} all-or-nothing, {retried}/{n} retries ok ({hit} mid-call)",
               "10/10 all-or-nothing, every retry ok", all_or_nothing == retried == n)  # fmt: skip
        note(f"after the restarts {whole_after}/{n} commits were whole in the head, {n - all_or_nothing} partly; "
             f"{answered_ok}/{n} interrupted calls still succeeded (huggingface_hub retried them)")  # fmt: skip
        left = tmp_after[-1]
        report(f"tmp/ after {n} crash+restart cycles",
               f"{left / 1e6:.0f} MB ({max(restarts):.1f} s restarts, < 60 s apart)",
               "294 MB stayed in tmp/", None)  # fmt: skip
        note(
            "each killed upload's partial file is younger than the 60 s grace, so it may still be live: kept"
        )
        if sweep_wait > 0:
            # As if the grace had passed: does the running server sweep them, with no restart?
            before = left
            for p in (root / "tmp").iterdir():
                os.utime(p, (time.time() - 3600, time.time() - 3600))
            t0 = time.monotonic()
            while (left := dir_bytes(root / "tmp")) and time.monotonic() - t0 < sweep_wait:
                time.sleep(0.5)
            report("tmp/ once older than the grace, no restart",
                   f"{before / 1e6:.0f} MB -> {left / 1e6:.0f} MB within {time.monotonic() - t0:.1f} s",
                   "stays until a restart >= 60 s later", left == 0)  # fmt: skip
        if left:
            # Leftovers older than the grace: the next start sweeps them.
            for p in (root / "tmp").iterdir():
                os.utime(p, (time.time() - 3600, time.time() - 3600))
            server.stop()
            server.start()
            left = dir_bytes(root / "tmp")
            report(
                "tmp/ after one more restart, older than grace",
                f"{left / 1e6:.0f} MB",
                "swept at startup",
                left == 0,
            )
    finally:
        server.stop()


# ------------------------------------------------------------------------ 4. full disk
def phase_full_disk() -> None:
    from huggingface_hub import CommitOperationAdd

    mnt = TMP / "small"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        print(
            f"{'full disk (3 MB tmpfs)':<46} skipped: cannot mount a tmpfs here ({proc.stderr.strip()[:80]})"
        )
        return
    hf = api()
    try:
        with serving(mnt / "hub"):
            repo = "bench/full"
            hf.create_repo(repo, repo_type="dataset")
            before = len(hf.list_repo_commits(repo, repo_type="dataset"))
            blob = os.urandom(4 * 1024 * 1024)
            cases = [("big.bin", blob), ("notes.txt", blob.hex()[: 4 * 1024 * 1024].encode())]  # LFS, inline
            answers, messages = [], set()
            for path, data in cases:
                try:
                    hf.create_commit(
                        repo, [CommitOperationAdd(path, data)], commit_message="big", repo_type="dataset"
                    )
                    answers.append(200)
                except Exception as exc:  # noqa: BLE001
                    answers.append(http_status(exc))
                    messages.add(disk_full_line(exc))
            after = len(hf.list_repo_commits(repo, repo_type="dataset"))
            leftovers = [p.name for p in (mnt / "hub" / "tmp").iterdir()]
            bad_blobs = [
                p.name for d in (mnt / "hub" / "blobs").iterdir() for p in d.iterdir()
                if hashlib.sha256(p.read_bytes()).hexdigest() != p.name
            ]  # fmt: skip
            subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
            retried = 0
            for path, data in cases:
                with contextlib.suppress(Exception):
                    hf.create_commit(
                        repo, [CommitOperationAdd(path, data)], commit_message="big", repo_type="dataset"
                    )
                    retried += 1
            clean = after == before and not leftovers and not bad_blobs
            report("full disk (3 MB tmpfs): LFS + inline commit",
                   f"{'/'.join(str(a) for a in answers)}, {after - before} commits, {len(leftovers)} in tmp/, "
                   f"{retried}/2 ok once freed",
                   "507 + clear message, nothing half-stored",
                   answers == [507, 507] and clean and retried == 2)  # fmt: skip
            for m in sorted(messages):
                note(f"message: {m}")
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20, help="readers phase length")
    parser.add_argument("--commits", type=int, default=40, help="concurrent create_commit calls")
    parser.add_argument("--pushes", type=int, default=10, help="concurrent upskill-hub pushes")
    parser.add_argument("--upload-mb", type=int, default=50, help="size of the LFS upload killed mid-way")
    parser.add_argument("--files", type=int, default=2000, help="files in the commit killed mid-way")
    parser.add_argument("--sweep-every", type=float, default=5, help="UPSKILL_HUB_SWEEP_S of the servers")
    parser.add_argument(
        "--sweep-wait", type=float, default=30, help="at most this long, watch a running server sweep tmp/"
    )
    parser.add_argument(
        "--server-src",
        default="",
        metavar="DIR",
        help="run the servers from another src/ (e.g. `git archive HEAD src | tar -x -C /tmp/old`)",
    )
    parser.add_argument("--quick", action="store_true", help="short phases (a smoke run)")
    parser.add_argument("--only", default="1,2,3,4", help="phases to run, e.g. 2,3")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.commits, args.pushes, args.upload_mb, args.files = 5, 10, 4, 10, 500
    only = {s.strip() for s in args.only.split(",")}
    global SERVER_SRC, SWEEP_EVERY
    SWEEP_EVERY = args.sweep_every
    SERVER_SRC = str(Path(args.server_src).resolve()) if args.server_src else ""
    from huggingface_hub.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # no "Retrying in 1s" while a server is down
    t0 = time.monotonic()
    print(
        f"local Hub under load ({'servers from ' + SERVER_SRC if SERVER_SRC else 'this install'}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}), huggingface_hub clients"
    )
    print(f"{'phase':<46} {'now':<58} {'issue 50 reported':<40} verdict")
    try:
        if "1" in only:
            phase_writers(args.commits, args.pushes)
        if "2" in only:
            phase_readers(args.seconds)
        if "3" in only:
            phase_crashes(args.upload_mb, args.files, args.sweep_wait)
        if "4" in only:
            phase_full_disk()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    failed = [r[0] for r in ROWS if r[3] is False]
    judged = sum(r[3] is not None for r in ROWS)
    print(
        f"\n{judged - len(failed)}/{judged} ok in {time.monotonic() - t0:.0f} s"
        + (f"; FAIL: {'; '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
