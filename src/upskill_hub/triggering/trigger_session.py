"""Trigger calls against any catalog, from synchronous code: the engine of ``tune`` and ``triggers --library``.

The description-tuning loop and the library routing run decide each step from the last, so
they are written as plain functions, while model clients are async and bound to the event
loop they first ran on. A :class:`TriggerSession` owns that loop, one client per model
spec, the response cache and the run's prices, and sends a batch of trigger calls
concurrently (each model under its own concurrency limit).

Every call goes through :func:`upskill_hub.triggering.triggers._trigger_call`, the one that
``upskill-hub triggers`` uses: the same rows, the same cache keys (the key holds the whole
catalog prompt, so a changed description is a new call and an unchanged one is free).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import UpskillError
from upskill_hub.lift.runner import BASE_SYSTEM_PROMPT
from upskill_hub.models.base import GenerationParams, ModelClient
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.session.cache import ResponseCache, default_cache_dir
from upskill_hub.session.catalog import Catalog
from upskill_hub.session.clients import RunPrices, close_all, open_clients
from upskill_hub.skill import Skill
from upskill_hub.triggering.triggers import _trigger_call, check_run_options, concurrency_of, run_workers


@dataclass(frozen=True)
class Call:
    """One trigger call: ``query`` (written for ``skill``) to ``model``, repeat number ``repeat``."""

    model: str
    skill: Skill
    query: TriggerQuery
    repeat: int


class TriggerSession:
    """Clients, cache and an event loop for trigger calls; close it (or use ``with``).

    ``fresh_calls`` counts the calls that reached a model (the rest came from the cache).
    """

    def __init__(
        self,
        model_specs: Sequence[str],
        *,
        base_url: str | None = None,
        use_cache: bool = True,
        cache_dir: str | Path | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        concurrency: int | None = None,
        params: GenerationParams | None = None,
    ) -> None:
        check_run_options(runs=1, concurrency=concurrency)
        self.clients = open_clients(list(model_specs), base_url, timeout=timeout, max_retries=max_retries)
        self.cache = ResponseCache(cache_dir or default_cache_dir()) if use_cache else None
        self.params = params or GenerationParams()
        self.concurrency = concurrency
        self.fresh_calls = 0
        self._prices = RunPrices()
        self._loop = asyncio.new_event_loop()

    @property
    def models(self) -> list[str]:
        return [c.model for c in self.clients]

    def client(self, model: str) -> ModelClient:
        for c in self.clients:
            if c.model == model:
                return c
        raise UpskillError(f"model {model!r} is not in this session")

    def send(
        self,
        catalog: Catalog,
        calls: Sequence[Call],
        run_id: str,
        on_row: Callable[[TriggerRow], None] | None = None,
    ) -> list[TriggerRow]:
        """Send ``calls`` with ``catalog`` in the system prompt; the rows in the order of ``calls``.

        ``on_row`` sees each row as its call finishes (on this thread), so a caller can
        append it to disk before the next one lands: a kill loses no answered call.
        """

        async def go() -> list[TriggerRow]:
            system = catalog.system_prompt(BASE_SYSTEM_PROMPT)  # once, not once per call
            params_json = self.params.to_json()
            rows: list[TriggerRow | None] = [None] * len(calls)
            by_model = {
                m: [i for i, c in enumerate(calls) if c.model == m]
                for m in dict.fromkeys(c.model for c in calls)
            }

            async def worker(client: ModelClient, todo: Iterator[int]) -> None:
                for i in todo:  # shared by the model's workers: each call is taken once
                    call = calls[i]
                    row, called = await _trigger_call(
                        system, call.skill, self.params, client, call.query, call.repeat, run_id, self.cache,
                        self._prices, params_json,
                    )  # fmt: skip
                    self.fresh_calls += called
                    rows[i] = row
                    if on_row is not None:
                        on_row(row)

            # A fixed pool of workers per model, not one task per call: a batch of 100,000
            # calls holds as many prompts as calls in flight.
            await run_workers(
                worker(client, todo)
                for model, indexes in by_model.items()
                for client, todo in [(self.client(model), iter(indexes))]
                for _ in range(min(concurrency_of(client, self.concurrency), len(indexes)))
            )
            return [r for r in rows if r is not None]

        return self._loop.run_until_complete(go())

    def close(self) -> None:
        """Release every client's connections, then the loop."""
        try:
            self._loop.run_until_complete(close_all(self.clients))
        finally:
            self._loop.close()

    def __enter__(self) -> TriggerSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
