"""The library entry point of an eval, used by the CLI, the Space, the demo and generation.

:func:`run_eval` validates everything first (skill, cases, model specs, API keys,
reachable endpoints, judge), so bad input is a one-line :class:`UpskillError` before any
model call and before a run folder exists (:mod:`.prepare`). Then it runs the plan, writes
the summary and plots, and returns a :class:`RunResult` (:mod:`.execute`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence
from pathlib import Path

from upskill_hub.lift.execute import RunResult, execute_prepared
from upskill_hub.lift.prepare import EvalOptions, prepare_eval
from upskill_hub.models.base import ModelClient
from upskill_hub.models.spec import ModelSpec
from upskill_hub.skill import Skill


async def run_eval_async(
    skill: Skill | str | Path,
    model_specs: Sequence[str | ModelSpec | ModelClient] = ("local",),
    options: EvalOptions | None = None,
) -> RunResult:
    """Run ``skill``'s cases on every model, with and without the skill; see :func:`run_eval`.

    Arguments:
        skill: a :class:`Skill` or the path of a skill folder.
        model_specs: model specs (``"local"``, ``"haiku"``, ``"openai:gpt-4.1-mini"``, ...) or
            ready :class:`ModelClient` objects (not closed here: they belong to the caller).
        options: an :class:`EvalOptions`:

            * runs: repeats of every case per model and condition.
            * cases: a tests file, a list of :class:`Case`, or ``None`` for the skill's own cases.
            * include_baseline: also run without the skill (needed for the lift).
            * concurrency: concurrent calls per model (default: each client's ``default_concurrency``).
            * output_dir: folder receiving the run folder ``<run_id>/``.
            * resume: finish the latest run in ``output_dir`` with the same plan instead.
            * use_cache / cache_dir: the shared response cache (see :mod:`.cache`).
            * judge: model spec or client grading ``llm-rubric`` (default: the first model).
            * base_url: OpenAI-compatible endpoint for the model specs.
            * params: :class:`GenerationParams` or a dict (temperature, max_tokens, seed, ...).
            * on_start(total, already_done) / on_row(row): progress hooks (called on the loop thread).
            * plots: write PNG/HTML plots into the run folder.
            * timeout / max_retries: per-attempt timeout and retries of each provider call.
            * shard: run only one shard's calls of a run planned by the Jobs launcher.
    """
    o = options or EvalOptions()
    prepared = await prepare_eval(skill, model_specs, o)
    try:
        return await execute_prepared(prepared, o)
    finally:
        await prepared.aclose()


def run_eval(
    skill: Skill | str | Path,
    model_specs: Sequence[str | ModelClient] = ("local",),
    options: EvalOptions | None = None,
) -> RunResult:
    """Run an eval synchronously; see :func:`run_eval_async` for the arguments.

    Safe from any thread: with no running loop it uses ``asyncio.run``; called from inside
    a running loop (a Gradio handler, a notebook) it runs in a fresh worker thread.
    """
    coro_fn = lambda: run_eval_async(skill, model_specs, options)  # noqa: E731
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(coro_fn())).result()
