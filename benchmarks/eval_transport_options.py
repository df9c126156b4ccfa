"""What each option under the eval's model calls is worth, side by side (issue 14).

The same calls as ``benchmarks/eval_throughput.py`` (default 400, 100 ms fixed latency, the
scripted OpenAI-compatible server in its own process) but straight through the ``openai``
SDK, no runner, so each option's effect is seen alone:

* transport: the SDK's default httpx client vs its ``DefaultAioHttpClient`` (aiohttp);
* reply: ``cast_to=ChatCompletion`` (the SDK builds its pydantic models) vs ``cast_to=object``
  (the SDK decodes the JSON and stops there);
* processes: the calls split over P worker processes (each its own event loop, client and
  share of the concurrency), timed with and without their start-up;
* client construction: what building one SDK client costs, with its own SSL context or a
  shared one (paid once per run and per worker process).

Run: ``.venv/bin/python benchmarks/eval_transport_options.py [--calls 400] [--latency 0.1]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from eval_throughput import ServerProcess  # noqa: E402

CALLS_CODE = r"""
import asyncio, sys, time
import openai

async def run(url, n, conc, transport, reply, warm):
    http = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    client = openai.AsyncOpenAI(api_key="no-key", base_url=url, max_retries=0, http_client=http)
    cast = object if reply == "object" else openai.types.chat.ChatCompletion
    sem = asyncio.Semaphore(conc)

    async def one(i):
        async with sem:
            body = {"model": "bench", "messages": [{"role": "user", "content": f"Case {i}"}], "max_tokens": 64}
            await client.post("/chat/completions", cast_to=cast, body=body)

    if warm:  # open the pool and walk the code paths once
        await asyncio.gather(*(one(i) for i in range(conc)))
    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await client.close()
    return wall, cpu

if __name__ == "__main__":
    url, n, conc, transport, reply, warm = sys.argv[1:7]
    print("ready", flush=True)
    sys.stdin.readline()
    wall, cpu = asyncio.run(run(url, int(n), int(conc), transport, reply, warm == "1"))
    print(wall, cpu, flush=True)
"""


def in_process(url: str, calls: int, conc: int, transport: str, reply: str) -> tuple[float, float]:
    """One warm client in this process: (wall s, CPU s)."""
    namespace: dict = {}
    exec(compile(CALLS_CODE, "<calls>", "exec"), namespace)
    return asyncio.run(namespace["run"](url, calls, conc, transport, reply, True))


def processes(url: str, calls: int, conc: int, p: int) -> tuple[float, float]:
    """The calls split over ``p`` fresh worker processes (aiohttp, untyped replies).

    Returns (wall s from spawning them to the last one done, wall s once all were ready).
    The workers do not warm up: a real run's workers would not either.
    """
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CALLS_CODE,
                url,
                str(calls // p),
                str(conc // p),
                "aiohttp",
                "object",
                "0",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(p)
    ]
    for proc in procs:
        assert proc.stdout is not None
        proc.stdout.readline()
    t1 = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        proc.communicate()
    end = time.perf_counter()
    return end - t0, end - t1


def construction_ms(shared: bool, n: int = 5) -> float:
    """Milliseconds to build one ``AsyncOpenAI`` (aiohttp), own or shared SSL context."""
    import httpx2
    import openai

    ctx = httpx2.create_ssl_context() if shared else None
    t0 = time.perf_counter()
    for _ in range(n):
        http = openai.DefaultAioHttpClient(verify=ctx) if ctx is not None else openai.DefaultAioHttpClient()
        openai.AsyncOpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", http_client=http)
    return (time.perf_counter() - t0) / n * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    args = ap.parse_args()
    server = ServerProcess(args.latency)
    loads = [os.getloadavg()[0]]
    rows: dict[str, dict[int, str]] = {}
    try:
        for conc in args.concurrency:
            ideal = args.calls * args.latency / conc
            for transport in ("httpx", "aiohttp"):
                for reply in ("typed", "object"):
                    wall, cpu = in_process(server.url, args.calls, conc, transport, reply)
                    label = f"1 process, {transport}, {reply} reply"
                    rows.setdefault(label, {})[conc] = f"{ideal / wall:.3f} / {cpu / args.calls * 1000:.2f}"
            for p in (1, 2):
                total, ready = processes(server.url, args.calls, conc, p)
                label = f"{p} fresh worker process{'es' if p > 1 else ''}"
                rows.setdefault(label, {})[conc] = f"{ideal / total:.3f} / {ideal / ready:.3f}"
            loads.append(os.getloadavg()[0])
    finally:
        server.close()
    print(f"{args.calls} calls, {args.latency * 1000:.0f} ms latency, openai SDK only (no runner)")
    print(f"(machine: {os.cpu_count()} CPUs, load average {min(loads):.1f}-{max(loads):.1f})")
    w = 24
    print(f"{'':38}" + "".join(f"{f'concurrency {c}':>{w}}" for c in args.concurrency))
    print(f"{'in process: efficiency / CPU ms/call':38}")
    for label, cells in rows.items():
        if label.startswith("1 process"):
            print(f"  {label:36}" + "".join(f"{cells[c]:>{w}}" for c in args.concurrency))
    print(f"{'workers: efficiency incl. / excl. start':38}")
    for label, cells in rows.items():
        if "worker" in label:
            print(f"  {label:36}" + "".join(f"{cells[c]:>{w}}" for c in args.concurrency))
    print(
        f"client construction: {construction_ms(False):.1f} ms own SSL context, {construction_ms(True):.1f} ms shared"
    )


if __name__ == "__main__":
    main()
