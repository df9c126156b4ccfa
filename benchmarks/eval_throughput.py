"""Eval runner throughput: how close does it get to the ideal under a fixed model latency?

Setup: the scripted OpenAI-compatible server (upskill_hub.testing.llm_server) runs in a
*separate process* with a fixed latency (default 100 ms), so its CPU does not count as the
runner's and it does not compete for the runner's GIL. The eval goes through the real
``openai`` SDK: 20 cases x 2 conditions x 10 repeats = 400 calls, at concurrency 32 and 128.

Two configurations, fresh runs interleaved, the median of ``--repeats`` each:
* **before**: how upskill-hub ran before issue 14: the SDK's default httpx transport
  (``UPSKILL_HUB_HTTP_TRANSPORT=httpx``, each client loading its own CA bundle), the reply
  built into the SDK's pydantic models, a fresh jitter RNG per call;
* **now**: the default: the SDKs' aiohttp transport, one SSL context per process, the
  pool sized to the concurrency, the reply read from the decoded JSON.

Printed side by side per concurrency:
* efficiency = ideal time (calls x latency / concurrency) / actual time (goal >= 0.9 at 32,
  >= 0.8 at 128), and against the attainable bound: with a fixed latency no schedule beats
  ceil(calls / concurrency) x latency (at 128: 4 rounds, 0.4 s, i.e. 0.78 of the "ideal");
* the runner's CPU time per call (this process: SDK, assertions, results file, cache);
* a second, identical eval served from the response cache (goal: 0 calls, < 2 s), and the
  runner with an in-process client that only sleeps (no SDK, no HTTP): the runner's own cost.

Run: ``.venv/bin/python benchmarks/eval_throughput.py [--calls 400] [--latency 0.1] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
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


def make_skill(root: Path, n_cases: int) -> Path:
    from upskill_hub.cases import parse_meta
    from upskill_hub.skill import Skill

    cases = [
        {"id": f"c{i}", "input": f"Case {i}: greet me.", "assert": [{"type": "contains", "value": "BANANA"}]}
        for i in range(n_cases)
    ]
    skill = Skill.create(
        "bench-skill",
        "Greets with BANANA.",
        "# Bench\n\nAlways say BANANA.\n",
        meta=parse_meta({"cases": cases}),
    )
    return skill.write(root / "bench-skill")


@contextlib.contextmanager
def previous_stack() -> Iterator[None]:
    """Run the OpenAI client as it was before issue 14 (for the "before" column).

    The SDK's default httpx transport (``UPSKILL_HUB_HTTP_TRANSPORT=httpx``), the reply cast
    to the SDK's typed ``ChatCompletion`` and a new jitter RNG seeded for every call: the
    code of ``OpenAIChatClient._attempt`` and ``RetryingClient.complete`` as they were.
    """
    import openai

    from upskill_hub.models import openai_client, retry
    from upskill_hub.models.base import Completion, Usage
    from upskill_hub.models.transport import TRANSPORT_ENV, classify, malformed

    async def attempt(self, body):  # noqa: ANN001, ANN202
        start = time.perf_counter()
        try:
            resp = await self._client.post(
                "/chat/completions", cast_to=openai.types.chat.ChatCompletion, body=body
            )
            latency = time.perf_counter() - start
            if isinstance(resp, str | bytes) or not getattr(resp, "choices", None):
                raise malformed("no choices")
            choice = resp.choices[0]
            usage = resp.usage
            cached = None
            if usage is not None and getattr(usage, "prompt_tokens_details", None) is not None:
                cached = usage.prompt_tokens_details.cached_tokens
            return Completion(
                text=(choice.message.content if choice.message is not None else None) or "",
                usage=Usage(
                    usage.prompt_tokens if usage is not None else None,
                    usage.completion_tokens if usage is not None else None,
                    cached,
                ),
                latency_s=latency,
                finish_reason=choice.finish_reason,
                model=getattr(resp, "model", None),
            )
        except Exception as exc:
            raise classify(exc, self._sdk) from None

    async def complete(self, system, messages, params):  # noqa: ANN001, ANN202
        body = self._request(system, messages, params)
        return await retry.call_with_retries(
            lambda: self._attempt(body), policy=self._policy, what=self._label, secrets=self._secrets
        )

    cls = openai_client.OpenAIChatClient
    saved = cls._attempt, cls.complete, os.environ.get(TRANSPORT_ENV)
    cls._attempt, cls.complete = attempt, complete  # type: ignore[method-assign]
    os.environ[TRANSPORT_ENV] = "httpx"
    try:
        yield
    finally:
        cls._attempt, cls.complete = saved[0], saved[1]  # type: ignore[method-assign]
        if saved[2] is None:
            os.environ.pop(TRANSPORT_ENV, None)
        else:
            os.environ[TRANSPORT_ENV] = saved[2]


@dataclass
class Figures:
    """One measured eval: wall and CPU seconds, calls the server got, error rows."""

    wall: float
    cpu: float
    made: int
    errors: int
    rows: int = 0


def timed_eval(skill: Path, client: object, options: object, server: ServerProcess | None) -> Figures:
    from upskill_hub.lift.api import run_eval

    before = server.calls() if server is not None else 0
    cpu0, t0 = time.process_time(), time.perf_counter()
    result = run_eval(skill, [client], options)  # type: ignore[list-item, arg-type]
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    made = server.calls() - before if server is not None else 0
    cached = sum(1 for r in result.rows if r.cached)
    return Figures(wall, cpu, made, sum(1 for r in result.rows if r.error), cached)


def median_run(runs: list[Figures]) -> Figures:
    """The run with the median wall time (the machine is shared: single runs are noisy)."""
    return sorted(runs, key=lambda f: f.wall)[len(runs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--runs", type=int, default=10, help="repeats per case (cases = calls / 2 / runs)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh evals per configuration (median shown)")
    args = ap.parse_args()

    import openai  # noqa: F401 - import cost is not the runner's per-call cost

    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions

    n_cases = args.calls // (2 * args.runs)
    calls = n_cases * 2 * args.runs
    work = Path(tempfile.mkdtemp(prefix="eval-bench-"))
    os.environ["UPSKILL_HUB_CACHE"] = str(work / "cache")
    skill = make_skill(work, n_cases)
    server = ServerProcess(args.latency)
    spec = f"openai-compatible:bench@{server.url}"
    loads: list[float] = []
    fresh: dict[tuple[int, str], list[Figures]] = {}
    cached: dict[int, Figures] = {}
    no_http: dict[int, Figures] = {}
    n = 0
    try:
        # warm-up of both stacks (imports, first-use code paths); not timed, not cached
        warm = EvalOptions(runs=1, output_dir=work / "warm", use_cache=False, plots=False)
        with previous_stack():
            run_eval(skill, [spec], warm)
        run_eval(skill, [spec], warm)
        for conc in args.concurrency:
            common = dict(runs=args.runs, concurrency=conc, plots=False, output_dir=work / "runs")
            for _ in range(args.repeats):
                for name in ("before", "now"):  # interleaved, so drifting load hits both alike
                    n += 1  # a cache of its own: every fresh run really calls the server
                    opts = EvalOptions(cache_dir=work / f"cache{n}", **common)  # type: ignore[arg-type]
                    loads.append(os.getloadavg()[0])
                    if name == "before":
                        with previous_stack():
                            f = timed_eval(skill, spec, opts, server)
                    else:
                        f = timed_eval(skill, spec, opts, server)
                    fresh.setdefault((conc, name), []).append(f)
            # the last "now" run's cache answers this identical eval
            cached[conc] = timed_eval(
                skill, spec, EvalOptions(cache_dir=work / f"cache{n}", **common), server
            )  # type: ignore[arg-type]
            no_http[conc] = timed_eval(
                skill,
                SleepClient(args.latency),
                EvalOptions(use_cache=False, **common),
                None,  # type: ignore[arg-type]
            )
    finally:
        server.close()

    print(
        f"eval throughput: {calls} calls, server latency {args.latency * 1000:.0f} ms, server in its own process"
    )
    print(
        f"(machine: {os.cpu_count()} CPUs, load average {min(loads):.1f}-{max(loads):.1f} during the runs; "
        f"median of {args.repeats} fresh runs per column; the figures need an idle CPU)"
    )
    goal = {32: 0.9, 128: 0.8}
    w = 13
    head = "".join(f"{f'c={c} before':>{w}}{f'c={c} now':>{w}}" for c in args.concurrency)
    print(f"{'':28}{head}")

    def line(label: str, fn, fmt: str) -> None:  # noqa: ANN001
        cells = "".join(f"{fn(c, name):>{w}{fmt}}" for c in args.concurrency for name in ("before", "now"))
        print(f"{label:28}{cells}")

    med = {k: median_run(v) for k, v in fresh.items()}
    ideal = {c: calls * args.latency / c for c in args.concurrency}
    bound = {c: math.ceil(calls / c) * args.latency for c in args.concurrency}
    line("calls to the server", lambda c, m: med[c, m].made, "")
    line("ideal time (s)", lambda c, m: ideal[c], ".3f")
    line("actual time (s)", lambda c, m: med[c, m].wall, ".3f")
    line("efficiency ideal/actual", lambda c, m: ideal[c] / med[c, m].wall, ".3f")
    line("  goal", lambda c, m: f">= {goal.get(c, 0.9)}", "")
    line(
        "  runs (ideal/actual)",
        lambda c, m: "/".join(f"{ideal[c] / f.wall:.2f}"[1:] for f in fresh[c, m]),
        "",
    )
    line("attainable ceil(n/c)*lat", lambda c, m: bound[c], ".3f")
    line("efficiency attainable/actual", lambda c, m: bound[c] / med[c, m].wall, ".3f")
    line("CPU ms per call", lambda c, m: med[c, m].cpu / calls * 1000, ".3f")
    line("error rows", lambda c, m: med[c, m].errors, "")
    print()
    w2 = 2 * w
    print(f"{'':28}" + "".join(f"{f'c={c}':>{w2}}" for c in args.concurrency))
    print(
        f"{'cached rerun: calls/rows':28}"
        + "".join(f"{f'{cached[c].made}/{cached[c].rows}':>{w2}}" for c in args.concurrency)
    )
    print(
        f"{'cached rerun: wall (s)':28}"
        + "".join(f"{cached[c].wall:>{w2}.3f}" for c in args.concurrency)
        + "   (goal: 0 calls, < 2 s)"
    )
    print(
        f"{'no HTTP: efficiency':28}"
        + "".join(f"{ideal[c] / no_http[c].wall:>{w2}.3f}" for c in args.concurrency)
    )
    print(
        f"{'no HTTP: CPU ms per call':28}"
        + "".join(f"{no_http[c].cpu / calls * 1000:>{w2}.3f}" for c in args.concurrency)
    )
    figures = {
        "calls": calls,
        "latency_s": args.latency,
        "load_average": [min(loads), max(loads)],
        "fresh": {
            f"{c}/{m}": {
                "efficiency": round(ideal[c] / med[c, m].wall, 3),
                "efficiency_attainable": round(bound[c] / med[c, m].wall, 3),
                "actual_s": round(med[c, m].wall, 3),
                "cpu_ms_per_call": round(med[c, m].cpu / calls * 1000, 3),
                "errors": med[c, m].errors,
            }
            for (c, m) in med
        },
        "cached": {
            c: {"calls": f.made, "rows": f.rows, "actual_s": round(f.wall, 3)} for c, f in cached.items()
        },
        "no_http": {c: round(ideal[c] / f.wall, 3) for c, f in no_http.items()},
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
