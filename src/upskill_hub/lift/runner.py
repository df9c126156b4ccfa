"""The eval runner: plan every call, run them concurrently, record each one as it finishes.

A run is ``models x conditions x cases x repeats`` calls. Design points:

* **Fair comparison**: both conditions share one base system prompt, messages and
  parameters; the with-skill system prompt is the base plus the skill text, nothing else.
* **Concurrency**: each model gets its own limit (``concurrency`` or the client's
  ``default_concurrency``); a slow or rate-limited provider does not hold up another.
* **Durability**: a finished call is appended to ``results.jsonl`` at once by the
  :class:`~upskill_hub.rundir.ResultsWriter` thread (write + flush + fsync, grouped
  when many finish together) so the event loop never blocks on the disk and a killed run
  loses at most the calls still in flight.
* **Resume**: the plan is stored in ``run.json`` with a fingerprint; resuming rewrites
  ``results.jsonl`` keeping the first answered row per planned call (dropping a torn last
  line, duplicates and error rows, which are retried), then runs only what is missing.
* **Errors** are rows with ``error`` set and ``passed = None``, never failed answers.
* **Cache**: see :mod:`upskill_hub.session.cache`; a cached row has ``cached = True`` and
  carries the original answer's tokens, latency and list-price cost (what producing that
  answer costs, so conditions stay comparable), although this run paid nothing for it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from upskill_hub import __version__
from upskill_hub._util.redact import redact
from upskill_hub._util.timestamps import utc_now
from upskill_hub.cases import Case
from upskill_hub.lift.calls import CostFn, ModelCalls
from upskill_hub.lift.grading.assertions import JudgeContext, JudgeError, evaluate_case
from upskill_hub.lift.grading.transcript_checks import Activity, checker, judge_summary
from upskill_hub.lift.harness import AgentClient, HarnessCache, run_agent_call
from upskill_hub.models.base import (
    Completion,
    GenerationParams,
    Message,
    ModelCallError,
    ModelClient,
    ToolSpec,
)
from upskill_hub.rundir import ResultsWriter
from upskill_hub.rundir.schema import CONDITIONS, CallKey, PlannedModel, ResultRow, RunPlan
from upskill_hub.session.cache import ResponseCache
from upskill_hub.session.catalog import DEFAULT_MAX_TURNS, CatalogOutcome, run_catalog_conversation
from upskill_hub.session.clients import ConditionCatalogs
from upskill_hub.session.transcript import Transcript

#: The one system prompt both conditions share. With the skill, the skill text follows it.
BASE_SYSTEM_PROMPT = (
    "You are a capable assistant. Answer the user's request directly and completely.\n"
)
#: Outputs longer than this are truncated in the results file (assertions see the full text).
MAX_OUTPUT_CHARS = 20_000



def system_prompt(condition: str, skill_text: str) -> str:
    """The system prompt for ``condition``: base, or base + skill text (nothing else differs)."""
    if condition == "baseline":
        return BASE_SYSTEM_PROMPT
    if condition == "with_skill":
        return BASE_SYSTEM_PROMPT + "\n" + skill_text
    raise ValueError(f"unknown condition {condition!r}")


def new_run_id(skill_name: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{skill_name}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class PlannedCall:
    """One call of the plan; ``key`` is its identity in ``results.jsonl``."""

    client: ModelClient
    condition: str
    case: Case
    repeat: int
    mode: str = "inject"

    @property
    def key(self) -> CallKey:
        return (self.client.model, self.mode, self.condition, self.case.id, self.repeat)


@dataclass
class EvalPlan:
    """Everything that determines a run's calls (stored as ``run.json``)."""

    run_id: str
    skill_name: str
    skill_version: str
    skill_text: str
    clients: list[ModelClient]
    cases: list[Case]
    runs: int
    conditions: tuple[str, ...]
    params: GenerationParams
    judge_label: str | None = None
    created: str = field(default_factory=utc_now)
    #: How the skill reaches the model (``schema.MODES``); one run may hold several.
    modes: tuple[str, ...] = ("inject",)
    #: ``catalog`` mode: each condition's catalog and system prompt (the baseline drops the skill).
    catalog: ConditionCatalogs | None = None
    #: ``catalog`` mode: model turns one answer may take.
    max_turns: int = DEFAULT_MAX_TURNS

    def calls(self) -> list[PlannedCall]:
        """Calls interleaved repeat -> case -> model -> mode -> condition, so a partial run is balanced.

        Agent CLIs run only in ``harness`` mode, and models only in the other modes.
        """
        return [
            PlannedCall(c, cond, case, r, mode)
            for r in range(self.runs)
            for case in self.cases
            for c in self.clients
            for mode in self.modes
            if (mode == "harness") == isinstance(c, AgentClient)
            for cond in self.conditions
        ]

    def fingerprint(self) -> str:
        """Hash of what makes two runs the same experiment (used to find a run to resume)."""
        payload = {
            "skill_version": self.skill_version,
            "skill_text": hashlib.sha256(self.skill_text.encode()).hexdigest(),
            "base_system": BASE_SYSTEM_PROMPT,
            "models": [[c.provider, c.endpoint, c.model] for c in self.clients],
            "cases": [c.to_dict() for c in self.cases],
            "runs": self.runs,
            "conditions": list(self.conditions),
            "params": self.params.to_dict(),
            "judge": self.judge_label,
        }
        if tuple(self.modes) != ("inject",):  # inject-only plans keep the fingerprint they always had
            payload["modes"] = list(self.modes)
        if "catalog" in self.modes and self.catalog is not None:
            payload["catalog"] = hashlib.sha256(self.catalog.systems["with_skill"].encode()).hexdigest()
            payload["max_turns"] = self.max_turns
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def record(self) -> RunPlan:
        """What ``run.json`` keeps of this plan (clients and case texts are not stored)."""
        return RunPlan(
            run_id=self.run_id,
            created=self.created,
            tool_version=__version__,
            skill_name=self.skill_name,
            skill_version=self.skill_version,
            models=[PlannedModel(c.provider, c.model, c.endpoint) for c in self.clients],
            conditions=list(self.conditions),
            modes=list(self.modes),
            runs=self.runs,
            case_ids=[c.id for c in self.cases],
            params=self.params.to_dict(),
            judge=self.judge_label,
            base_system_prompt=BASE_SYSTEM_PROMPT,
            fingerprint=self.fingerprint(),
            planned_calls=len(self.calls()),
        )


@dataclass
class ExecStats:
    """What the execution did (for the CLI and benchmarks)."""

    planned: int = 0
    skipped: int = 0  # already in results.jsonl (resume)
    fresh_calls: int = 0  # calls that reached a model
    cached: int = 0
    errors: int = 0
    judge_calls: int = 0


class Runner:
    """Executes an :class:`EvalPlan` into a run folder.

    The steps of one call: :meth:`_one` picks the way the skill reaches the model (injected,
    a catalog conversation, an agent CLI), :meth:`_answer` gets the completion,
    :meth:`_graded_row` grades it; :meth:`execute` runs the calls and records each row.
    """

    def __init__(
        self,
        plan: EvalPlan,
        run_dir: Path,
        *,
        concurrency: int | None = None,
        cache: ResponseCache | None = None,
        judges: dict[str | None, ModelClient] | None = None,
        cost_fn: CostFn | None = None,
        on_row: Callable[[ResultRow], None] | None = None,
        only: set[CallKey] | None = None,
    ) -> None:
        unsupported = sorted(set(plan.modes) - {"inject", "harness", "catalog"})
        if unsupported:
            raise ValueError(f"this runner cannot run mode(s) {unsupported}")
        if "catalog" in plan.modes and plan.catalog is None:
            raise ValueError("catalog mode needs plan.catalog")
        self.plan = plan
        #: Run only the calls with these keys (one shard of a run on Hugging Face Jobs).
        self.only = only
        self.run_dir = run_dir
        self.calls = ModelCalls(plan.params, concurrency=concurrency, cache=cache, cost_fn=cost_fn)
        self.judges = judges or {}
        self.on_row = on_row
        self.stats = ExecStats()
        self._params_json = plan.params.to_json()
        self._systems = {c: system_prompt(c, plan.skill_text) for c in plan.conditions}
        self._catalogs = plan.catalog.catalogs if plan.catalog is not None else {}
        self._catalog_systems = plan.catalog.systems if plan.catalog is not None else {}
        self._writer: ResultsWriter | None = None
        self._harness_cache = HarnessCache(cache.root) if cache is not None else None
        #: The run's rows in ``results.jsonl``'s order, once :meth:`execute` finished.
        self.written: list[ResultRow] = []

    async def _one(self, call: PlannedCall) -> ResultRow:
        base = {
            "run_id": self.plan.run_id,
            "tool_version": __version__,
            "skill_name": self.plan.skill_name,
            "skill_version": self.plan.skill_version,
            "model": call.client.model,
            "provider": call.client.provider,
            "params": self._params_json,
            "condition": call.condition,
            "mode": call.mode,
            "case_id": call.case.id,
            "repeat": call.repeat,
            "split": call.case.split,
        }
        if call.mode == "harness":
            return await self._harness_row(call, base)
        try:
            comp, cached = await self._answer(call, base)
        except _CatalogCapped as capped:  # a cap ended the conversation: an error row, not an answer
            c = capped.outcome
            comp = Completion(c.text, c.usage, c.latency_s, c.finish_reason)
            fields = {**_failed(call.case, c.error), **self._usage(call.client, comp, c.cached)}
            return ResultRow(**base, **c.row_fields(), triggered=c.triggered(self.plan.skill_name), **fields)
        except Exception as exc:  # ModelCallError, or a provider bug: the call failed, not the answer
            msg = str(exc) if isinstance(exc, ModelCallError) else f"{type(exc).__name__}: {exc}"
            return ResultRow(**base, **_failed(call.case, redact(" ".join(msg.split()))[:1000] or type(exc).__name__))
        return await self._graded_row(call, base, comp, cached)

    async def _answer(self, call: PlannedCall, base: dict[str, Any]) -> tuple[Completion, bool]:
        """The model's answer to the case: injected, or at the end of a catalog conversation
        (whose loads and trigger go into ``base``)."""
        if call.mode != "catalog":
            messages = [Message("user", call.case.prompt_for(call.condition, self.plan.skill_name, call.mode))]
            return await self.calls.complete(call.client, self._systems[call.condition], messages,
                                             self._params(call), call.repeat)  # fmt: skip
        catalog = await self._catalog_call(call)
        if catalog.error is not None:
            raise _CatalogCapped(catalog)
        base.update(triggered=catalog.triggered(self.plan.skill_name), **catalog.row_fields())
        # No final answer: say why instead of the provider's reason.
        reason = catalog.stopped if catalog.stopped is not None else catalog.finish_reason
        return Completion(catalog.text, catalog.usage, catalog.latency_s, reason), catalog.cached

    async def _graded_row(self, call: PlannedCall, base: dict[str, Any], comp: Completion, cached: bool) -> ResultRow:
        """The answered call's row: its assertions graded (a judge failure is the row's error)."""
        case, error = call.case, None
        kw: dict[str, Any] = {}
        if base.get("transcript"):  # catalog mode: the loop's tool calls, as the row keeps them
            t, loaded = Transcript.from_json(base["transcript"]), json.loads(base["loaded"])
            reads = [*json.loads(base["files_read"]), *(f"{n}/SKILL.md" for n in loaded)]
            kw["transcript"] = checker(Activity(t, self.plan.skill_name, loaded, reads))
            kw["judge_context"] = JudgeContext((("transcript", judge_summary(t)),))
        try:
            outcome = await evaluate_case(case, comp.text, judges=self.judges, call=self.calls.judge, **kw)
            passed: bool | None = outcome.passed
            n_pass, n_total, details = outcome.n_passed, outcome.n_total, outcome.details_json()
        except JudgeError as exc:
            passed, n_pass, n_total, details = None, 0, len(case.asserts), "[]"
            error = redact(str(exc))[:1000]
        return ResultRow(
            **base,
            timestamp=utc_now(),
            passed=passed,
            assertions_passed=n_pass,
            assertions_total=n_total,
            assertion_details=redact(details),
            error=error,
            **self._usage(call.client, comp, cached),
        )

    def _usage(self, client: ModelClient, comp: Completion, cached: bool) -> dict[str, Any]:
        """A row's answer, tokens, latency and cost (kept on error rows too: the spend is real)."""
        u = comp.usage
        return {"output": redact(comp.text[:MAX_OUTPUT_CHARS]), "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens, "cached_tokens": u.cached_tokens, "latency_s": comp.latency_s,
                "cost_usd": self.calls.cost(client, comp), "cached": cached, "finish_reason": comp.finish_reason}  # fmt: skip

    async def _catalog_call(self, call: PlannedCall) -> CatalogOutcome:
        """One catalog-mode answer: the model loads (or not) skills through tools, turn by turn.

        Every turn goes through the response cache with the whole conversation and the tools
        in its key, so a re-run replays the conversation without calling the model.
        """
        system = self._catalog_systems[call.condition]

        async def turn(messages: list[Message], tools: list[ToolSpec]) -> tuple[Completion, bool]:
            return await self.calls.complete(call.client, system, messages, self._params(call), call.repeat, tools)

        prompt = call.case.prompt_for(call.condition, self.plan.skill_name, "catalog")
        return await run_catalog_conversation(
            turn, prompt, self._catalogs[call.condition], max_turns=self.plan.max_turns, system=system
        )

    def _params(self, call: PlannedCall) -> GenerationParams:
        """The run's generation parameters, with the case's own over them (evals.json ``params``)."""
        return replace(self.plan.params, **dict(call.case.params)) if call.case.params else self.plan.params

    async def _harness_row(self, call: PlannedCall, base: dict[str, Any]) -> ResultRow:
        """One agent CLI call (see :mod:`upskill_hub.lift.harness`) as a row."""
        agent = call.client
        assert isinstance(agent, AgentClient)
        try:
            outcome = await run_agent_call(
                agent, call.case, call.condition, call.repeat, self.run_dir,
                judges=self.judges, judge_call=self.calls.judge, cache=self._harness_cache,
                judge_label=self.plan.judge_label,
            )  # fmt: skip
            fields = outcome.row_fields()
        except Exception as exc:  # a workspace or install failure: this call failed, not the run
            fields = _failed(call.case, redact(" ".join(f"{agent.model}: {type(exc).__name__}: {exc}".split()))[:1000])
            fields.pop("timestamp")
        base = {**base, "agent": agent.adapter.name, "params": fields.pop("params", base["params"])}
        return ResultRow(**base, timestamp=utc_now(), **fields)

    async def _run_and_record(self, call: PlannedCall) -> ResultRow:
        row = await self._one(call)
        assert self._writer is not None
        self._writer.write(row)
        if row.error is not None:
            self.stats.errors += 1
        elif row.cached:
            self.stats.cached += 1
        else:
            self.stats.fresh_calls += 1
        if self.on_row is not None:
            self.on_row(row)
        return row

    async def _worker(self, todo: collections.deque[PlannedCall], out: list[ResultRow]) -> None:
        while todo:
            out.append(await self._run_and_record(todo.popleft()))

    async def execute(self, done: list[ResultRow]) -> list[ResultRow]:
        """Run every planned call not in ``done``; return all rows of the run.

        Each model gets a pool of ``limit`` workers taking calls in plan order. Workers
        (rather than one task per call waiting on a semaphore) keep the cache lookups and
        bookkeeping interleaved with the calls instead of all front-loaded, so the first
        requests go out at once. The per-client semaphore still bounds real requests,
        judge calls included.
        """
        calls = [c for c in self.plan.calls() if self.only is None or c.key in self.only]
        have = {r.key for r in done}
        todo = [c for c in calls if c.key not in have]
        self.stats.planned = len(calls)
        self.stats.skipped = len(calls) - len(todo)
        queues: dict[int, collections.deque[PlannedCall]] = {}
        for c in todo:
            queues.setdefault(id(c.client), collections.deque()).append(c)
        new_rows: list[ResultRow] = []
        self._writer = ResultsWriter(self.run_dir)
        self.calls.submit = self._writer.submit
        try:
            tasks = [
                asyncio.ensure_future(self._worker(q, new_rows))
                for q in queues.values()
                for _ in range(min(len(q), self.calls.limit(q[0].client)))
            ]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for t in tasks:
                    t.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.gather(*tasks, return_exceptions=True)
                raise
        finally:
            self._writer.close()
            self.stats.judge_calls = self.calls.judge_calls
        # results.jsonl holds the kept rows, then the new ones in the order they finished.
        self.written = [*done, *new_rows]
        order = {c.key: i for i, c in enumerate(calls)}
        return sorted([*done, *new_rows], key=lambda r: order[r.key])


class _CatalogCapped(Exception):
    """A catalog conversation that a cap ended (its row is an error, retried on resume)."""

    def __init__(self, outcome: CatalogOutcome) -> None:
        self.outcome = outcome


def _failed(case: Case, error: str | None) -> dict[str, Any]:
    """The fields of a row whose call failed: not graded, ``error`` set (retried on resume)."""
    return {"timestamp": utc_now(), "passed": None, "assertions_passed": 0, "assertions_total": len(case.asserts),
            "assertion_details": "[]", "output": "", "error": error}  # fmt: skip


def conditions_for(include_baseline: bool) -> tuple[str, ...]:
    return CONDITIONS if include_baseline else ("with_skill",)
