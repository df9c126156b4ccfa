"""``upskill-hub doctor``: does the offline model run on this machine, and how fast?

The failure it exists for: a runtime built for another CPU crashing on the first prompt of
two or more tokens. It loads the local model in its worker, asks a two-token prompt and a
long one (a skill-sized context), times a generation, and gives one verdict with what to
try next. The worker isolates it: a crash here is a finding, not a dead ``doctor``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from upskill_hub.errors import UpskillError
from upskill_hub.models.local_backends import BACKENDS, backend_version, cpu_features, cpu_model
from upskill_hub.models.spec import parse_model_spec

#: A skill-sized context for the long prompt (about 1,500 tokens).
LONG_CONTEXT = "Reference notes:\n" + "A kernel variant is built for one torch version and backend. " * 120


@dataclass
class DoctorReport:
    """What ``doctor`` found; ``ok`` is the verdict."""

    backend: str
    device: str = "?"
    threads: int = 0
    cpu: str = ""
    cpu_features: list[str] = field(default_factory=list)
    load_s: float | None = None
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    tokens_per_s: float | None = None
    advice: str = ""
    batch: int = 1  # concurrent calls answered as one batched generation
    precision: str = "fp32"
    precision_why: str = ""
    loaded_from: str = ""  # "gguf" (de-quantised now) or "converted copy" (the cached safetensors)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(passed for _, passed, _ in self.checks)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["checks"] = [{"name": n, "ok": p, "detail": t} for n, p, t in self.checks]
        d["ok"] = self.ok
        return d


def _advice(backend: str) -> str:
    others = [b for b in BACKENDS if b != backend]
    return (
        f"try another backend (UPSKILL_LOCAL_BACKEND={others[0]}), fewer threads (UPSKILL_LOCAL_THREADS=1), "
        "or point --model at an OpenAI-compatible server"
    )


def check_local_model(spec: str = "local", *, tokens: int = 48) -> DoctorReport:
    """Load the local model and run the checks; never raises for a model that fails to run."""
    from upskill_hub.models.base import GenerationParams, Message, ModelCallError
    from upskill_hub.models.local import LocalModelClient, local_precision_choice, local_threads

    parsed = parse_model_spec(spec)
    if parsed.provider != "local":
        raise UpskillError(f"doctor checks the local model; {spec!r} is not a local model spec")
    client = LocalModelClient(parsed)  # preflight: file, backend installed, settings
    name = client.backend
    report = DoctorReport(
        backend=backend_version(name) if ":" not in name else name,
        threads=local_threads(),
        cpu=cpu_model(),
        cpu_features=cpu_features(),
    )
    worker = client.worker
    t0 = time.perf_counter()
    try:
        worker.ensure_started()
        report.load_s = time.perf_counter() - t0
        report.checks.append(("load", True, f"{report.load_s:.1f} s"))
    except Exception as exc:  # noqa: BLE001 - WorkerCrashed / WorkerRefused: the finding itself
        report.checks.append(("load", False, str(exc)))
        report.advice = _advice(name)
        return report
    report.device = str(worker.facts.get("device", "?"))
    report.threads = int(worker.facts.get("threads", report.threads))
    report.batch = worker.config.batch
    report.loaded_from = str(worker.facts.get("loaded_from") or "")
    report.precision, report.precision_why = local_precision_choice()

    def ask(label: str, system: str, text: str, max_tokens: int) -> Any:
        try:
            out = client.complete_sync(system, [Message("user", text)], GenerationParams(max_tokens=max_tokens))
        except ModelCallError as exc:
            report.checks.append((label, False, str(exc)))
            return None
        report.checks.append((label, bool(out.usage.output_tokens), f"{out.usage.input_tokens} tokens in, "
                              f"{out.usage.output_tokens} out, {out.latency_s:.2f} s"))
        return out

    ask("two-token prompt", "", "Hi", 4)
    ask("long prompt", LONG_CONTEXT, "In one sentence: what is a kernel variant built for?", 16)
    speed = ask("generation speed", "", "Write a short story about a robot who learns to paint.", tokens)
    if speed is not None and speed.latency_s > 0 and speed.usage.output_tokens:
        report.tokens_per_s = speed.usage.output_tokens / speed.latency_s
    if not report.ok:
        report.advice = _advice(name)
    return report
