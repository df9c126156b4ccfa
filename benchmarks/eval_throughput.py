"""Eval runner throughput: how close does it get to the ideal under a fixed model latency?

Setup: the scripted OpenAI-compatible server (upskill_hub.testing.llm_server) runs in a
*separate process* with a fixed latency (default 100 ms), so its CPU does not count as the
runner's and it does not compete for the runner's GIL. The eval goes through the real
``openai`` SDK: 20 cases x 2 conditions x 10 repeats = 400 calls at concurrency 32.

Printed side by side:
* efficiency = ideal time (calls x latency / concurrency) / actual time   (goal >= 0.9)
* the runner's CPU time per call (this process: SDK, assertions, results file, cache)
* a second, identical eval served from the response cache               (goal: 0 calls, < 2 s)
* the same 400 calls straight through the bare SDK (no runner), and through the runner with
  an in-process client that only sleeps (no SDK, no HTTP): together they separate the
  runner's own cost from the SDK's on this machine

Run: ``.venv/bin/python benchmarks/eval_throughput.py [--calls 400] [--concurrency 32] [--latency 0.1]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER_CODE = r"""
import sys
from upskill_hub.testing.llm_server import ScriptedLLMServer

def script(system, messages, params):
    return "BANANA reply" if "BANANA" in system else "plain reply"

srv = ScriptedLLMServer(script, latency_s=float(sys.argv[1])).start()
print(srv.openai_base_url, flush=True)
for line in sys.stdin:
    if line.strip() == "calls":
        print(srv.calls, flush=True)
    elif line.strip() == "quit":
        break
srv.stop()
"""


class ServerProcess:
    """The scripted server in a child process; ``calls()`` asks it how many requests it got."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_CODE, str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def calls(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("calls\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(10)


class SleepClient:
    """No HTTP, no SDK: answers after ``latency`` seconds. Isolates the runner's own cost."""

    provider = "bench"
    endpoint = "in-process://sleep"
    default_concurrency = 32

    def __init__(self, latency: float) -> None:
        self.model = "sleep"
        self.latency = latency

    async def complete(self, system, messages, params):  # noqa: ANN001
        import asyncio

        from upskill_hub.models.base import Completion, Usage

        await asyncio.sleep(self.latency)
        text = "BANANA reply" if "BANANA" in system else "plain reply"
        return Completion(text, Usage(len(system.split()), 2, 0), self.latency, "stop", self.model)

    async def aclose(self) -> None:
        pass


def bare_sdk(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """The same number of calls straight through ``openai.AsyncOpenAI`` with a semaphore:
    no runner at all. Its wall and CPU time are the floor the runner is compared with."""
    import asyncio

    import openai

    async def go() -> tuple[float, float]:
        client = openai.AsyncOpenAI(api_key="no-key", base_url=url, max_retries=0)
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem:
                await client.chat.completions.create(
                    model="bench", messages=[{"role": "user", "content": f"Case {i}: greet me."}], max_tokens=64
                )

        await asyncio.gather(*(one(i) for i in range(concurrency)))  # warm the pool
        c0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        await client.close()
        return wall, cpu

    return asyncio.run(go())


def make_skill(root: Path, n_cases: int) -> Path:
    from upskill_hub.cases import parse_meta
    from upskill_hub.skill import Skill

    cases = [
        {"id": f"c{i}", "input": f"Case {i}: greet me.", "assert": [{"type": "contains", "value": "BANANA"}]}
        for i in range(n_cases)
    ]
    skill = Skill.create(
        "bench-skill", "Greets with BANANA.", "# Bench\n\nAlways say BANANA.\n", meta=parse_meta({"cases": cases})
    )
    return skill.write(root / "bench-skill")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--runs", type=int, default=10, help="repeats per case (cases = calls / 2 / runs)")
    args = ap.parse_args()

    import openai  # noqa: F401 - import cost is not the runner's per-call cost

    from upskill_hub.evals.api import EvalOptions, run_eval

    n_cases = args.calls // (2 * args.runs)
    calls = n_cases * 2 * args.runs
    ideal = calls * args.latency / args.concurrency
    work = Path(tempfile.mkdtemp(prefix="eval-bench-"))
    os.environ["UPSKILL_HUB_CACHE"] = str(work / "cache")
    skill = make_skill(work, n_cases)
    server = ServerProcess(args.latency)
    try:
        spec = f"openai-compatible:bench@{server.url}"
        common = dict(runs=args.runs, concurrency=args.concurrency, plots=False)

        # warm-up (imports, connection pool code paths); not timed, not cached
        run_eval(skill, [spec], EvalOptions(runs=1, cases=None, output_dir=work / "warm", use_cache=False, plots=False))
        start_calls = server.calls()

        cpu0, t0 = time.process_time(), time.perf_counter()
        first = run_eval(skill, [spec], EvalOptions(output_dir=work / "runs", **common))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        made = server.calls() - start_calls

        cpu1, t1 = time.process_time(), time.perf_counter()
        second = run_eval(skill, [spec], EvalOptions(output_dir=work / "runs", **common))
        wall2, cpu2 = time.perf_counter() - t1, time.process_time() - cpu1
        made2 = server.calls() - start_calls - made

        wall4, cpu4 = bare_sdk(server.url, calls, args.concurrency)

        cpu3, t3 = time.process_time(), time.perf_counter()
        run_eval(skill, [SleepClient(args.latency)], EvalOptions(output_dir=work / "runs", use_cache=False, **common))
        wall3, cpu3 = time.perf_counter() - t3, time.process_time() - cpu3
    finally:
        server.close()

    eff = ideal / wall
    errors = sum(1 for r in first.rows if r.error)
    figures = {
        "calls_planned": calls,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "fresh_run": {
            "calls_to_server": made,
            "errors": errors,
            "ideal_s": round(ideal, 3),
            "actual_s": round(wall, 3),
            "efficiency": round(eff, 3),
            "runner_cpu_ms_per_call": round(cpu / calls * 1000, 3),
        },
        "bare_sdk_no_runner": {
            "actual_s": round(wall4, 3),
            "efficiency": round(ideal / wall4, 3),
            "cpu_ms_per_call": round(cpu4 / calls * 1000, 3),
        },
        "runner_only_no_http": {
            "actual_s": round(wall3, 3),
            "efficiency": round(calls * args.latency / args.concurrency / wall3, 3),
            "runner_cpu_ms_per_call": round(cpu3 / calls * 1000, 3),
        },
        "cached_run": {
            "calls_to_server": made2,
            "cached_rows": sum(1 for r in second.rows if r.cached),
            "actual_s": round(wall2, 3),
            "runner_cpu_ms_per_row": round(cpu2 / calls * 1000, 3),
        },
    }
    print(f"eval throughput: {calls} calls, concurrency {args.concurrency}, server latency {args.latency * 1000:.0f} ms")
    eff3 = ideal / wall3
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(machine: {os.cpu_count()} CPUs, load average {load:.1f}; the figures need an idle CPU)")
    w = 13
    print(f"{'':26}{'eval (SDK)':>{w}}{'eval cached':>{w}}{'bare SDK':>{w}}{'eval no HTTP':>{w}}{'goal':>16}")
    print(f"{'calls to the server':26}{made:>{w}}{made2:>{w}}{calls:>{w}}{'–':>{w}}{'0 when cached':>16}")
    print(f"{'wall time (s)':26}{wall:>{w}.3f}{wall2:>{w}.3f}{wall4:>{w}.3f}{wall3:>{w}.3f}{'< 2 s cached':>16}")
    print(f"{'ideal time (s)':26}{ideal:>{w}.3f}{'':>{w}}{ideal:>{w}.3f}{ideal:>{w}.3f}")
    print(f"{'efficiency ideal/actual':26}{eff:>{w}.3f}{'':>{w}}{ideal / wall4:>{w}.3f}{eff3:>{w}.3f}{'>= 0.9':>16}")
    print(
        f"{'CPU ms per call':26}{cpu / calls * 1000:>{w}.3f}{cpu2 / calls * 1000:>{w}.3f}"
        f"{cpu4 / calls * 1000:>{w}.3f}{cpu3 / calls * 1000:>{w}.3f}"
    )
    print(f"{'eval wall / bare SDK wall':26}{wall / wall4:>{w}.3f}")
    print(f"{'error rows':26}{errors:>{w}}{sum(1 for r in second.rows if r.error):>{w}}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
