"""One model call of an eval: under its model's concurrency limit, through the response cache.

The runner's rows, catalog conversations and judges all call models this way, so a judge
call waits under the same limit as the answers, a catalog turn is cached like a plain
answer, and the run's price snapshot prices every answer alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from upskill_hub.models.base import Completion, GenerationParams, Message, ModelClient, ToolSpec
from upskill_hub.session.cache import ResponseCache, cache_key

CostFn = Callable[[str, str, Any], float | None]


class ModelCalls:
    """The run's model calls: a semaphore per client, the cache, the prices and a judge count.

    ``submit`` hands cache writes to the run folder's writer thread, so the event loop
    never waits on the disk; ``None`` until the run starts writing (nothing is cached then).
    """

    def __init__(
        self,
        params: GenerationParams,
        *,
        concurrency: int | None = None,
        cache: ResponseCache | None = None,
        cost_fn: CostFn | None = None,
    ) -> None:
        self.params = params
        self.concurrency = concurrency
        self.cache = cache
        self.cost_fn = cost_fn
        self.submit: Callable[[Callable[[], None]], None] | None = None
        self.judge_calls = 0
        self._params_dict = params.to_dict()
        self._sems: dict[int, asyncio.Semaphore] = {}

    def limit(self, client: ModelClient) -> int:
        return max(1, int(self.concurrency or client.default_concurrency))

    def _sem(self, client: ModelClient) -> asyncio.Semaphore:
        sem = self._sems.get(id(client))
        if sem is None:
            sem = self._sems[id(client)] = asyncio.Semaphore(self.limit(client))
        return sem

    async def complete(
        self,
        client: ModelClient,
        system: str,
        messages: list[Message],
        params: GenerationParams,
        repeat: int,
        tools: list[ToolSpec] | None = None,
    ) -> tuple[Completion, bool]:
        """Serve from the cache or call the model (under its limit) and cache the success."""
        key = cache_key(
            provider=client.provider,
            endpoint=client.endpoint,
            model=client.model,
            system=system,
            messages=messages,
            params=self._params_dict if params is self.params else params,
            repeat=repeat,
            tools=tools,
        )
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit, True
        async with self._sem(client):
            if tools:
                comp = await client.complete(system, messages, params, tools=tools)
            else:  # clients written before tool calling take three arguments
                comp = await client.complete(system, messages, params)
        if self.cache is not None and self.submit is not None:
            cache = self.cache
            self.submit(lambda: cache.put(key, comp))
        return comp, False

    async def judge(
        self, client: ModelClient, system: str, messages: list[Message], params: GenerationParams
    ) -> Completion:
        """A judge's call: cached like any other, counted apart."""
        comp, cached = await self.complete(client, system, messages, params, 0)
        if not cached:
            self.judge_calls += 1
        return comp

    def cost(self, client: ModelClient, comp: Completion) -> float | None:
        if self.cost_fn is None:
            return None
        try:
            return self.cost_fn(client.provider, client.model, comp.usage)
        except Exception:  # a price table problem must not lose the row
            return None
