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

Usage: python benchmarks/space.py [--skills 1000] [--rows 100000] [--repeat 20] [--browser]
"""

from __future__ import annotations

import argparse
import io
import random
import socket
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def build_dataset(root: Path, n_skills: int, n_rows: int, seed: int = 7) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from upskill_hub.hub import dataset_repo as dr
    from upskill_hub.rundir import result_arrow_schema
    from upskill_hub.skill import Skill

    rng = random.Random(seed)
    words = ["json", "csv", "parse", "api", "test", "docs", "review", "sql", "rust", "python", "plot", "kernel", "cuda", "data", "chart", "lint"]
    (root / "data" / "skills").mkdir(parents=True)
    (root / "data" / "results").mkdir(parents=True)
    versions = {}
    for i in range(n_skills):
        name = f"skill-{i:04d}-{rng.choice(words)}"
        desc = f"Helps with {' '.join(rng.sample(words, 4))} tasks. Use when the user asks about {rng.choice(words)}."
        body = "# " + name + "\n\n" + "\n".join(f"- step {j}: {' '.join(rng.sample(words, 6))}" for j in range(30))
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
                    "run_id": run_id, "timestamp": "2026-11-21T00:00:00Z", "tool_version": "0.1.0",
                    "skill_name": name, "skill_version": versions[name], "model": models[(k // 10) % 4],
                    "provider": "openai-compatible", "params": "{}",
                    "condition": "with_skill" if k % 2 else "baseline", "case_id": f"case-{(k // 40) % 5}",
                    "repeat": (k // 200) % 5, "passed": rng.random() < (0.7 if k % 2 else 0.5),
                    "assertions_passed": 1, "assertions_total": 1, "assertion_details": "[]",
                    "output": "answer " * 40, "input_tokens": 300 + k % 50, "output_tokens": 80 + k % 30,
                    "cached_tokens": 0, "latency_s": 0.5, "cost_usd": None, "error": None, "cached": False,
                    "split": "train", "finish_reason": "stop",
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--browser", action="store_true", help="also measure in headless Chromium (Playwright)")
    args = ap.parse_args()

    from gradio_client import Client

    from upskill_hub.space import data, views
    from upskill_hub.space.ui import build_app

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "dataset"
        t = time.perf_counter()
        build_dataset(root, args.skills, args.rows)
        print(f"dataset: {args.skills} skills, {args.rows} result rows written in {time.perf_counter() - t:.1f}s")

        t = time.perf_counter()
        lib = data.load_library(str(root))
        load_s = time.perf_counter() - t
        print(f"load + aggregate (once per dataset commit): {load_s * 1000:8.1f} ms")
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
                search += timed(lambda q=q: client.predict(str(root), q, 0, False, "best lift", api_name="/search"), 1)
            open_skill = timed(lambda: client.predict(str(root), lib.skill_names[3], api_name="/open_skill"), 5)
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
