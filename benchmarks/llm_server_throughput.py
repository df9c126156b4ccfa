"""How close the scripted LLM server gets to ideal throughput, through the real openai SDK.

400 calls at concurrency 32 with a fixed 100 ms server latency: ideal time is
calls x latency / concurrency = 1.25 s. Prints the achieved efficiency (ideal / actual)
and the CPU time per call of the client and of the server side by side, so the eval runner's own benchmark can tell its
overhead apart from the server's.

    python benchmarks/llm_server_throughput.py [--calls 400] [--concurrency 32] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from upskill_hub.models import GenerationParams, Message, create_client
from upskill_hub.testing.llm_server import llm_server_process, running_llm_server


async def _drive(base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """Return (wall seconds, process CPU seconds) for the timed calls, after a warm-up."""
    client = create_client("bench-model", base_url=base_url, timeout=30, max_retries=0)
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await client.complete("system", [Message("user", f"call {i}")], GenerationParams())

    try:
        await asyncio.gather(*(one(i) for i in range(concurrency)))  # open the connections
        cpu0, start = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        return time.perf_counter() - start, time.process_time() - cpu0
    finally:
        await client.aclose()


def _thread_cpu(thread_ident: int) -> float:
    return time.clock_gettime(time.pthread_getcpuclockid(thread_ident))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    ideal = args.calls * args.latency / args.concurrency

    with running_llm_server(latency_s=args.latency) as srv:
        server_thread = srv._thread.ident  # the server's own event loop thread
        srv_cpu0 = _thread_cpu(server_thread)
        in_elapsed, in_cpu = asyncio.run(_drive(srv.openai_base_url, args.calls, args.concurrency))
        in_srv_cpu = _thread_cpu(server_thread) - srv_cpu0
    with llm_server_process(latency_s=args.latency) as child:
        out_elapsed, out_cpu = asyncio.run(_drive(child.openai_base_url, args.calls, args.concurrency))
        served = child.calls

    n = args.calls
    print(
        f"{n} calls at concurrency {args.concurrency}, server latency {args.latency:g} s; ideal {ideal:.3f} s"
    )
    print(f"{'server':<22}{'in-process':>14}{'child process':>16}")
    print(f"{'actual time (s)':<22}{in_elapsed:>14.3f}{out_elapsed:>16.3f}")
    print(f"{'efficiency (>= 0.9)':<22}{ideal / in_elapsed:>14.3f}{ideal / out_elapsed:>16.3f}")
    print(f"{'client CPU/call (ms)':<22}{1000 * (in_cpu - in_srv_cpu) / n:>14.2f}{1000 * out_cpu / n:>16.2f}")
    print(f"{'server CPU/call (ms)':<22}{1000 * in_srv_cpu / n:>14.2f}{'(other process)':>16}")
    print(f"child server counted {served} calls ({n} + {args.concurrency} warm-up)")
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: efficiency drops when it exceeds them"
    )


if __name__ == "__main__":
    main()
