"""Is the Space's browse page usable with 1,000 skills and 100,000 result rows?

Builds a dataset folder in the exact layout ``upskill-hub push`` writes (skills table
shards made by :mod:`upskill_hub.hub.dataset_repo`, results shards with the real arrow
schema), then measures, against the goals in the issue:

* load: reading the tables and computing every aggregate (once per dataset commit);
* first render: the app's ``/load`` endpoint called through ``gradio_client`` on a
  launched app with the data cached (what a page load waits for), and the page HTML;
* search: the ``/search`` endpoint through ``gradio_client`` (what one keystroke costs),
  and the library search alone.

* with ``--browser`` (needs /usr/bin/chromium): the same two in headless Chromium, from
  navigation to the filled table, and from a keystroke to the updated table.

Under load (issue 50), with the Space in its own process (as on a Space) and the clients here:

* the skill page (``/open_skill`` of a skill with results, through ``gradio_client``): calls
  per second and median latency with 1 client and with ``--clients`` (20) clients, each
  calling as fast as it is answered for ``--load-seconds``, and the ratio of the two;
* memory: the server's RSS before and after ``--sessionless`` (1,000) plain HTTP calls of
  ``/open_skill``, each with a fresh ``session_hash`` (an API caller or crawler), per call.

Usage: python benchmarks/space.py [--skills 1000] [--rows 100000] [--repeat 20] [--browser]
       python benchmarks/space.py --only-load [--clients 20] [--load-seconds 4] [--sessionless 1000]
                                  [--server-cores 1]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path


def build_dataset(root: Path, n_skills: int, n_rows: int, seed: int = 7) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from upskill_hub.hub import dataset_repo as dr
    from upskill_hub.rundir import result_arrow_schema
    from upskill_hub.skill import Skill

    rng = random.Random(seed)
    words = [
        "json",
        "csv",
        "parse",
        "api",
        "test",
        "docs",
        "review",
        "sql",
        "rust",
        "python",
        "plot",
        "kernel",
        "cuda",
        "data",
        "chart",
        "lint",
    ]
    (root / "data" / "skills").mkdir(parents=True)
    (root / "data" / "results").mkdir(parents=True)
    versions = {}
    for i in range(n_skills):
        name = f"skill-{i:04d}-{rng.choice(words)}"
        desc = f"Helps with {' '.join(rng.sample(words, 4))} tasks. Use when the user asks about {rng.choice(words)}."
        body = (
            "# "
            + name
            + "\n\n"
            + "\n".join(f"- step {j}: {' '.join(rng.sample(words, 6))}" for j in range(30))
        )
        sk = Skill.create(name, desc, body)
        versions[name] = sk.version
        (root / dr.skill_table_path(name)).write_bytes(dr.skill_table_bytes(sk))
    names = list(versions)
    models = ["m-small", "m-medium", "m-large", "m-xl"]
    schema = result_arrow_schema()
    shard = 1000
    for s in range(0, n_rows, shard):
        run_id = f"run-{s // shard:04d}"
        rows = []
        skills = rng.sample(names, 10)
        for k in range(min(shard, n_rows - s)):
            name = skills[k % 10]
            rows.append(
                {
                    "run_id": run_id,
                    "timestamp": "2026-11-21T00:00:00Z",
                    "tool_version": "0.1.0",
                    "skill_name": name,
                    "skill_version": versions[name],
                    "model": models[(k // 10) % 4],
                    "provider": "openai-compatible",
                    "params": "{}",
                    "condition": "with_skill" if k % 2 else "baseline",
                    "case_id": f"case-{(k // 40) % 5}",
                    "repeat": (k // 200) % 5,
                    "passed": rng.random() < (0.7 if k % 2 else 0.5),
                    "assertions_passed": 1,
                    "assertions_total": 1,
                    "assertion_details": "[]",
                    "output": "answer " * 40,
                    "input_tokens": 300 + k % 50,
                    "output_tokens": 80 + k % 30,
                    "cached_tokens": 0,
                    "latency_s": 0.5,
                    "cost_usd": None,
                    "error": None,
                    "cached": False,
                    "split": "train",
                    "finish_reason": "stop",
                }  # fmt: skip
            )
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
        (root / dr.results_path(run_id)).write_bytes(buf.getvalue())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def fmt(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:7.1f} ms  max {max(xs) * 1000:7.1f} ms"


def browser_figures(url: str, lib, queries: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """First render and search as a browser sees them (Debian's Chromium, headless)."""
    from playwright.sync_api import sync_playwright

    from upskill_hub.space import views

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
    n = len(lib.skills)
    render, search = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=args, headless=True)
        try:
            top = views.search_skills(lib.aggregates, "")["name"].iloc[:3].tolist()
            loaded = (
                "(names) => (document.querySelector('#status')?.innerText || '').includes(' skills ')"
                " && names.every(n => (document.querySelector('#skills-table')?.innerText || '').includes(n))"
            )
            skeleton = []
            for _ in range(3):
                page = browser.new_page()
                t = time.perf_counter()
                page.goto(url, wait_until="commit")
                page.wait_for_selector("#search-box", timeout=60_000)  # Gradio has drawn the page
                skeleton.append(time.perf_counter() - t)
                page.wait_for_function(loaded, arg=top, timeout=60_000)  # ... and our data is in it
                render.append(time.perf_counter() - t)
                page.close()
            floor = _gradio_floor(browser)
            page = browser.new_page()
            page.goto(url)
            page.wait_for_function(loaded, arg=top, timeout=60_000)
            box = page.locator("#search-box textarea, #search-box input").first
            for i in range(repeat):
                q = queries[i % len(queries)] + ("" if i < len(queries) else " ")
                want = f"{len(views.search_skills(lib.aggregates, q))} of {n} skills match"
                t = time.perf_counter()
                box.fill(q)
                page.wait_for_function(
                    "(w) => (document.querySelector('#match-note')?.innerText || '').startsWith(w)", arg=want
                )
                search.append(time.perf_counter() - t)
                box.fill("zz-reset-" + str(i))  # next query always changes the note
                page.wait_for_function(
                    "(w) => (document.querySelector('#match-note')?.innerText || '').startsWith(w)",
                    arg=f"0 of {n} skills match",
                )
        finally:
            browser.close()
    return render, search, floor, skeleton


def _gradio_floor(browser) -> list[float]:
    """First render of a one-line Gradio app with one load event: what Gradio itself costs here."""
    import gradio as gr

    with gr.Blocks() as demo:
        md = gr.Markdown("")
        demo.load(lambda: "ready-marker", None, md)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    out = []
    try:
        for _ in range(3):
            page = browser.new_page()
            t = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/", wait_until="commit")
            page.wait_for_function("() => document.body.innerText.includes('ready-marker')", timeout=60_000)
            out.append(time.perf_counter() - t)
            page.close()
    finally:
        demo.close()
    return out


def serve_in_subprocess(root: Path, port: int, cores: set[int] | None = None) -> subprocess.Popen:
    """The Space on ``root`` in its own process, as a Space runs it; returns once it answers.

    With ``cores``, the server runs on those cores only (and so do its threads).
    """
    code = (
        "import sys; from upskill_hub.space.ui import launch; "
        "launch(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(root), str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit(
                    f"the Space did not start:\n{proc.stdout.read() if proc.stdout else ''}"
                ) from None
            time.sleep(0.3)


def cpu_s(pid: int) -> float:
    """CPU seconds ``pid`` has used, all its threads (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` (Linux /proc), in kB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        return int(fh.read().split("VmRSS:")[1].split()[0])


class HttpCaller:
    """One visitor calling an endpoint over plain HTTP (``/call/<api>``, then its result stream).

    Its own session hash, like a browser tab. Lighter than ``gradio_client``, whose every
    call costs about 75 ms on the client's side even against an empty app (it would cap one
    client at ~12 calls/s whatever the server does).
    """

    def __init__(self, url: str, session_hash: str | None = None) -> None:
        import httpx

        self.http = httpx.Client(base_url=url.rstrip("/") + "/gradio_api", timeout=60)
        self.session_hash = session_hash

    def predict(self, *args, api_name: str) -> None:
        api = api_name.lstrip("/")
        body: dict = {"data": list(args), "session_hash": self.session_hash or uuid.uuid4().hex}
        r = self.http.post(f"/call/{api}", json=body)
        r.raise_for_status()
        with self.http.stream("GET", f"/call/{api}/{r.json()['event_id']}") as stream:
            text = "".join(stream.iter_text())
        if "event: complete" not in text:
            raise SystemExit(f"/{api} failed: {text[-500:]}")

    def close(self) -> None:
        self.http.close()


def make_caller(url: str, via: str):
    if via == "gradio_client":
        from gradio_client import Client

        return Client(url, verbose=False)
    return HttpCaller(url, session_hash=uuid.uuid4().hex)


def calls_per_second(
    url: str, root: str, names: list[str], clients: int, seconds: float, via: str = "http"
) -> tuple[float, list[float]]:
    """``clients`` visitors opening skill pages back to back for ``seconds``: calls/s, latencies.

    Each client opens ``names`` in turn, starting at its own place in the list.
    """
    pool = [make_caller(url, via) for _ in range(clients)]
    for c in pool:  # each client's first call (its session) is not measured
        c.predict(root, names[-1], api_name="/open_skill")
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    stop = 0.0  # set once every client is ready

    def work(client, k: int) -> None:
        start.wait()
        mine = []
        while time.perf_counter() < stop:
            t = time.perf_counter()
            client.predict(root, names[(k + len(mine)) % len(names)], api_name="/open_skill")
            mine.append(time.perf_counter() - t)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=work, args=(c, k * 7)) for k, c in enumerate(pool)]
    for th in threads:
        th.start()
    began = time.perf_counter()
    stop = began + seconds
    start.wait()
    for th in threads:
        th.join()
    took = time.perf_counter() - began
    for c in pool:
        c.close()
    return len(latencies) / took, latencies


def sessionless_calls(url: str, data: list, api_name: str, n: int) -> None:
    """``n`` plain HTTP calls, each with a new session hash (as an API caller or a crawler makes them)."""
    caller = HttpCaller(url)  # no session hash of its own: a fresh one per call
    try:
        for _ in range(n):
            caller.predict(*data, api_name=api_name)
    finally:
        caller.close()


def split_cores(server: int) -> tuple[set[int], set[int]]:
    """The first ``server`` usable cores for the Space, the rest for the clients (this process)."""
    usable = sorted(os.sched_getaffinity(0))
    if not 0 < server < len(usable):
        raise SystemExit(f"--server-cores must leave the clients a core: {len(usable)} usable here")
    return set(usable[:server]), set(usable[server:])


def under_load(
    root: Path, lib, clients: int, seconds: float, sessionless: int, via: str = "http", server_cores: int = 0
) -> None:
    """Issue 50: the skill page's calls/s with 1 and ``clients`` clients; RSS per sessionless call.

    With ``server_cores``, the Space and its clients run on separate cores (as on a Space,
    whose visitors are elsewhere); otherwise they share every core.
    """
    from upskill_hub.space import views

    names = views.search_skills(lib.aggregates, "", with_results=True)["name"].tolist()
    port = free_port()
    server, mine = split_cores(server_cores) if server_cores else (None, None)
    proc = serve_in_subprocess(root, port, server)
    if mine:
        os.sched_setaffinity(0, mine)
    url = f"http://127.0.0.1:{port}/"
    rows = []
    try:
        # The server's first call reads the library (seconds of CPU): not part of any row.
        sessionless_calls(url, [str(root), names[-1]], "open_skill", 1)
        # Every call a different skill (pages built, as visitors browsing or a crawler make them),
        # then one skill over and over (its page is built once per library commit).
        for label, pick in (("a different skill each call", names), ("the same skill each call", names[:1])):
            for n in (1, clients):
                c0 = cpu_s(proc.pid)
                rate, lat = calls_per_second(url, str(root), pick, n, seconds, via)
                cpu = (cpu_s(proc.pid) - c0) / (len(lat) + n) * 1000  # n unmeasured first calls
                rows.append((label, n, rate, lat, cpu))
        args = [str(root), names[0]]
        sessionless_calls(url, args, "open_skill", 20)  # warm: first allocations of this path
        before = rss_kb(proc.pid)
        t = time.perf_counter()
        sessionless_calls(url, args, "open_skill", sessionless)
        took = time.perf_counter() - t
        after = rss_kb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if server:
        where = f"the server on {len(server)} core(s), the clients on {len(mine)} other(s)"
    else:
        where = f"{len(os.sched_getaffinity(0))} cores for the server and the clients together"
    print(f"under load: skill pages with results ({len(names)} skills), {where}, "
          f"clients via {via}, {seconds:g} s per row:")  # fmt: skip
    single = {}
    for label, n, rate, lat, cpu in rows:
        line = (f"{label:28s} {n:2d} client{'s' if n > 1 else ' '}: {rate:6.1f} calls/s   "
                f"p50 {statistics.median(lat) * 1000:7.1f} ms   server CPU {cpu:5.1f} ms/call")  # fmt: skip
        if n == 1:
            single[label] = rate
        else:
            ratio = rate / single[label]
            line += f"   {ratio:.2f}x one client (goal >= 1.40x: {'OK' if ratio >= 1.4 else 'below'})"
        print(line)
    per_call = (after - before) / sessionless
    print(f"{sessionless:,} sessionless calls ({sessionless / took:.0f}/s): server RSS {before / 1024:.0f} MB -> "
          f"{after / 1024:.0f} MB, {per_call:.1f} kB per call   goal < 20 kB  {'OK' if per_call < 20 else 'GROWS'}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--browser", action="store_true", help="also measure in headless Chromium (Playwright)")
    ap.add_argument(
        "--clients", type=int, default=20, help="concurrent clients of the skill page (under load)"
    )
    ap.add_argument("--load-seconds", type=float, default=4.0, help="seconds per calls/s phase (0: skip)")
    ap.add_argument("--sessionless", type=int, default=1000, help="sessionless calls for the memory figure")
    ap.add_argument("--only-load", action="store_true", help="only the under-load figures (issue 50)")
    ap.add_argument(
        "--server-cores", type=int, default=0,
        help="run the Space on this many cores and the load clients on the others (0: all share)",
    )  # fmt: skip
    ap.add_argument(
        "--via", choices=("http", "gradio_client"), default="http", help="how the load clients call"
    )
    args = ap.parse_args()

    from gradio_client import Client

    from upskill_hub.space import data, views
    from upskill_hub.space.ui import build_app

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "dataset"
        t = time.perf_counter()
        build_dataset(root, args.skills, args.rows)
        print(
            f"dataset: {args.skills} skills, {args.rows} result rows written in {time.perf_counter() - t:.1f}s"
        )

        t = time.perf_counter()
        lib = data.load_library(str(root))
        load_s = time.perf_counter() - t
        print(f"load + aggregate (once per dataset commit): {load_s * 1000:8.1f} ms")
        if args.load_seconds > 0:
            under_load(
                root, lib, args.clients, args.load_seconds, args.sessionless, args.via, args.server_cores
            )
        if args.only_load:
            return
        import gradio as gr
        import pandas as pd

        table = gr.Dataframe(headers=views.BROWSE_HEADERS, interactive=False)

        def server_side(q: str) -> None:
            rows = views.search_skills(lib.aggregates, q)
            table.postprocess(pd.DataFrame(views.browse_table(rows.head(100)), columns=views.BROWSE_HEADERS))

        lib_search = timed(lambda: server_side("json api"), args.repeat)
        print(f"search, server side (filter + format + Dataframe payload): {fmt(lib_search)}")

        demo = build_app(str(root))
        port = free_port()
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
        try:
            url = f"http://127.0.0.1:{port}/"
            page = timed(lambda: urllib.request.urlopen(url, timeout=30).read(), 5)
            client = Client(url, verbose=False)
            first = timed(lambda: client.predict(str(root), api_name="/load"), 5)
            queries = ["json", "skill-05", "parse csv", "kernel", "zzz-no-match", ""]
            search = []
            for i in range(args.repeat):
                q = queries[i % len(queries)]
                search += timed(
                    lambda q=q: client.predict(str(root), q, 0, False, "best lift", api_name="/search"), 1
                )
            open_skill = timed(
                lambda: client.predict(str(root), lib.skill_names[3], api_name="/open_skill"), 5
            )
            lb = timed(lambda: client.predict(str(root), "m-large", "", api_name="/leaderboard"), 5)
            browser = browser_figures(url, lib, queries, args.repeat) if args.browser else None
        finally:
            demo.close()

    print("through HTTP with gradio_client (includes the client's own overhead):")
    print(f"page HTML:                                  {fmt(page)}")
    print(f"first render (/load, data cached):          {fmt(first)}   goal < 2000 ms  "
          f"{'OK' if statistics.median(first) < 2 else 'SLOW'}")  # fmt: skip
    print(f"search (/search, one keystroke):            {fmt(search)}   goal <  200 ms  "
          f"{'OK' if statistics.median(search) < 0.2 else 'SLOW'}")  # fmt: skip
    print(f"open a skill page (/open_skill):            {fmt(open_skill)}")
    print(f"leaderboard sorted by a model:              {fmt(lb)}")
    if browser:
        render, search_b, floor, skeleton = browser
        print("in headless Chromium (what a visitor waits for):")
        print(f"Gradio's floor (empty app, one load event): {fmt(floor)}")
        print(f"this page drawn, still empty (Gradio only): {fmt(skeleton)}")
        data_part = [r - k for r, k in zip(render, skeleton, strict=True)]
        print(f"then until the table is filled (our data):  {fmt(data_part)}")
        print(f"first render (navigation -> filled table):  {fmt(render)}   goal < 2000 ms  "
              f"{'OK' if statistics.median(render) < 2 else 'SLOW'}  "
              f"({statistics.median(render) / statistics.median(floor):.2f}x the floor)")  # fmt: skip
        print(f"search (keystroke -> updated table):        {fmt(search_b)}   goal <  200 ms  "
              f"{'OK' if statistics.median(search_b) < 0.2 else 'SLOW'}")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
