"""Tokens per second of the offline model's backends, on the same prompts, in one run.

Measured side by side (each on the default GGUF, ``$UPSKILL_LOCAL_THREADS`` threads):

* ``transformers (worker)``: what ``upskill-hub eval --model local`` uses: the GGUF
  de-quantised into a transformers model, in the worker process;
* ``transformers (in-process)``: the same backend called directly, to show what the
  worker's isolation (a process and two pipes) costs per call;
* ``llama.cpp (worker)``: when ``llama-cpp-python`` is installed (the ``local-llamacpp``
  extra; build it with ``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON
  -DGGML_F16C=ON"`` so it runs on other CPUs too); otherwise reported as not installed.

For each: load time, then per prompt (a short question, and a skill-sized ~1,500-token
context) the prompt tokens, generated tokens and wall time, and the generation speed in
tokens/s; the last column is the ratio to the default backend.

Then batching (issue 30): the worker answers N short prompts queued together as one batched
generation, for each N of ``--batches``: aggregate tokens/s, time to the answers, and the
ratio to N=1 (the worker before batching). With ``--demo-eval``, the demo's eval step as a
whole command (hub-kernels, 14 cases x 2 conditions, 64 tokens, model load included): the
old path (``UPSKILL_LOCAL_BATCH=1``, the GGUF de-quantised at every load, fp32) against the
new one in fp32 and with the defaults (bf16 where the CPU has it), in one run, with the
ratios. ``--precisions fp32,bf16`` adds bf16 rows to the batch table and ``--agreement``
counts the demo's answers that bf16 gives word for word as fp32 does.

    .venv/bin/python benchmarks/local_model.py [--tokens 64] [--repeat 2] [--batches 1,4,8,16] [--demo-eval]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import asdict
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")  # the in-process load's conversion bar

from upskill_hub.models.local import DEFAULT_N_CTX, default_gguf_path, local_device, local_threads
from upskill_hub.models.local_backends import (
    LoadOptions,
    TransformersBackend,
    backend_missing,
    backend_version,
    cpu_features,
    cpu_model,
)
from upskill_hub.models.local_worker import LocalWorker, WorkerConfig

PROMPTS = {
    "short": ("", "Write a short story about a robot who learns to paint."),
    "long": (
        "Reference notes:\n" + "A kernel variant is built for one torch version and one backend. " * 110,
        "Summarise the notes, then write a short story about a robot who learns to paint.",
    ),
}


def request(system: str, user: str, tokens: int) -> dict[str, Any]:
    return {"system": system, "messages": [{"role": "user", "content": user}], "temperature": 0.0,
            "max_tokens": tokens, "top_p": None, "seed": None, "stop": []}


def measure(call, tokens: int, repeat: int) -> dict[str, tuple[int, int, float]]:  # noqa: ANN001
    """Per prompt: (prompt tokens, generated tokens, best wall seconds over ``repeat``)."""
    out = {}
    for name, (system, user) in PROMPTS.items():
        times, answer = [], {}
        for _ in range(repeat):
            t0 = time.perf_counter()
            answer = call(request(system, user, tokens))
            times.append(time.perf_counter() - t0)
        out[name] = (int(answer["input_tokens"]), int(answer["output_tokens"]), min(times))
    return out


def batched(options: LoadOptions, sizes: list[int], tokens: int, precisions: list[str]) -> None:
    """Aggregate tokens/s of N short prompts queued at once, for each N and precision (one worker each)."""
    print(f"\nbatched generation ({tokens} tokens per answer, {options.threads} thread(s)); ratio to fp32 batch 1:")
    header = f"{'precision':>9s} {'batch':>6s} {'answers':>8s} {'out tok':>8s} {'wall s':>8s} {'tok/s':>8s} {'ratio':>6s}"
    print(header)
    print("-" * len(header))
    base = None
    for precision, n in [(p, n) for p in precisions for n in sizes]:
        opts = LoadOptions(**{**asdict(options), "precision": precision})
        worker = LocalWorker(WorkerConfig(backend="transformers", options=opts, batch=n))
        try:
            worker.ensure_started()
            prompts = [request("", f"{PROMPTS['short'][1]} Story number {i + 1}.", tokens) for i in range(n)]
            t0 = time.perf_counter()
            answers = [f.result() for f in worker.submit_many(prompts)]
            wall = time.perf_counter() - t0
        finally:
            worker.close()
        out = sum(int(a["output_tokens"]) for a in answers)
        speed = out / wall
        base = base or speed
        print(f"{precision:>9s} {n:6d} {len(answers):8d} {out:8d} {wall:8.2f} {speed:8.1f} {speed / base:6.2f}")


def agreement(options: LoadOptions) -> None:
    """How often bf16 gives the fp32 answer, on the demo's 28 prompts (greedy, 64 tokens)."""
    from upskill_hub.lift.runner import system_prompt
    from upskill_hub.shipped import shipped_skill
    from upskill_hub.skill import require_skill

    skill = require_skill(shipped_skill("hub-kernels"))
    text = (skill.path / "SKILL.md").read_text(encoding="utf-8")
    prompts = [request(system_prompt(c, text), case.input, 64) for case in skill.meta.cases for c in ("baseline", "with_skill")]
    answers = {}
    for precision in ("fp32", "bf16"):
        worker = LocalWorker(WorkerConfig(backend="transformers", options=LoadOptions(**{**asdict(options), "precision": precision}), batch=16))
        try:
            answers[precision] = [f.result()["text"] for f in worker.submit_many(prompts)]
        finally:
            worker.close()
    same = sum(a == b for a, b in zip(answers["fp32"], answers["bf16"], strict=True))
    print(f"\nbf16 against fp32 on the demo's {len(prompts)} prompts: {same} identical answers ({same / len(prompts):.0%})")


def demo_eval() -> None:
    """The demo's eval step as a whole command: the old path against the new, in one run."""
    import subprocess
    import sys
    import tempfile

    cli = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]
    from upskill_hub.shipped import shipped_skill

    skill = shipped_skill("hub-kernels")
    rows = []
    old = {"UPSKILL_LOCAL_BATCH": "1", "UPSKILL_LOCAL_CACHE": "off", "UPSKILL_LOCAL_PRECISION": "fp32"}
    from upskill_hub.models.local import local_precision

    for label, env in (("old: batch 1, GGUF load, fp32", old),
                       ("new: batches, copy, fp32", {"UPSKILL_LOCAL_PRECISION": "fp32"}),
                       (f"new: defaults ({local_precision()})", {})):  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            args = [*cli, "eval", str(skill), "--model", "local", "--runs", "1", "--max-tokens", "64", "--no-plots",
                    "--no-cache", "--output", tmp, "--format", "quiet"]  # fmt: skip
            t0 = time.perf_counter()
            subprocess.run(args, check=True, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
            rows.append((label, time.perf_counter() - t0))
    print("\nthe demo's eval step (hub-kernels, 14 cases x 2 conditions, 64 tokens), whole command:")
    for label, wall in rows:
        print(f"  {label:32s} {wall:7.1f} s   ratio {rows[0][1] / wall:5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64, help="tokens to generate per prompt")
    ap.add_argument("--repeat", type=int, default=2, help="runs per prompt; the best is kept")
    ap.add_argument("--batches", default="1,4,8,16", help="batch sizes to measure, comma-separated ('' skips)")
    ap.add_argument("--demo-eval", action="store_true", help="also time the demo's eval step, old path vs new")
    ap.add_argument("--only-batching", action="store_true", help="skip the backend comparison")
    ap.add_argument("--precisions", default="fp32", help="precisions of the batched rows, e.g. fp32,bf16")
    ap.add_argument("--agreement", action="store_true", help="also count bf16 answers equal to fp32 ones")
    args = ap.parse_args()
    path = default_gguf_path()
    options = LoadOptions(path=str(path), threads=local_threads(), device=local_device(), n_ctx=DEFAULT_N_CTX)
    print(f"model {path.name}; {options.threads} thread(s); device {options.device}")
    print(f"cpu {cpu_model()} [{' '.join(cpu_features())}]\n")

    sizes = [int(x) for x in args.batches.split(",") if x.strip()]
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    if not args.only_batching:
        compare_backends(options, args.tokens, args.repeat)
    if sizes:
        batched(options, sizes, args.tokens, precisions)
    if args.agreement:
        agreement(options)
    if args.demo_eval:
        demo_eval()


def compare_backends(options: LoadOptions, tokens: int, repeat: int) -> None:
    """The backends side by side on the short and the long prompt, one call at a time."""
    results: dict[str, tuple[float | None, dict | None, str]] = {}
    for label, backend in (("transformers (worker)", "transformers"), ("llama.cpp (worker)", "llama.cpp")):
        missing = backend_missing(backend)
        if missing:
            results[label] = (None, None, f"not installed: {missing}")
            continue
        worker = LocalWorker(WorkerConfig(backend=backend, options=options))
        t0 = time.perf_counter()
        try:
            worker.ensure_started()
            load = time.perf_counter() - t0
            results[label] = (load, measure(worker.call, tokens, repeat), backend_version(backend))
        except Exception as exc:  # noqa: BLE001 - a crashing backend is a result here
            results[label] = (None, None, f"failed: {exc}")
        finally:
            worker.close()

    direct = TransformersBackend()
    t0 = time.perf_counter()
    direct.load(LoadOptions(**asdict(options)))
    load = time.perf_counter() - t0
    results["transformers (in-process)"] = (load, measure(direct.generate, tokens, repeat),
                                           backend_version("transformers"))

    base = results["transformers (worker)"][1]
    header = f"{'backend':28s} {'load s':>7s} {'prompt':>7s} {'in tok':>7s} {'out tok':>7s} {'wall s':>7s} {'tok/s':>7s} {'ratio':>6s}"
    print(header)
    print("-" * len(header))
    for label, (load, per_prompt, note) in results.items():
        if per_prompt is None:
            print(f"{label:28s} {note}")
            continue
        for name, (n_in, n_out, wall) in per_prompt.items():
            speed = n_out / wall if wall else 0.0
            ratio = ""
            if base is not None:
                b_in, b_out, b_wall = base[name]
                ratio = f"{speed / (b_out / b_wall):.2f}" if b_wall and b_out else ""
            first = name == "short"
            shown_load = f"{load:.1f}" if first and load is not None else ""
            print(f"{label if first else '':28s} {shown_load:>7s} {name:>7s} "
                  f"{n_in:7d} {n_out:7d} {wall:7.2f} {speed:7.1f} {ratio:>6s}")
    speeds = [o / w for _, r, _ in results.values() if r for (_, o, w) in r.values() if w]
    if speeds:
        print(f"\nmedian generation speed over all rows: {statistics.median(speeds):.1f} tokens/s")


if __name__ == "__main__":
    main()
