"""Trigger evaluation: does a skill's description make a model load it when it should, and only then?

A trigger call is one model turn with the skill catalog (the skill under test plus
distractors) and the load tools: the query *triggered* iff the model calls
``load_skill`` with the skill's name. Nothing else is answered; a trigger eval measures the
description, not the skill body.

Queries come from :mod:`.trigger_queries` (a skill-creator eval-set file, skill_meta.json's
``triggers``, or the skill's and the distractors' case inputs).

Per model: recall on should-trigger queries and the false-trigger rate on should-not ones,
each with a 95% Wilson interval, precision and F1, and the queries that went wrong. Per query
(skill-creator's run_eval): its trigger rate over the repeats, with its Wilson interval, and a
verdict at ``threshold`` (:mod:`.query_verdicts`), written to ``trigger-queries.json``. Rows are
appended to ``triggers.jsonl`` in the run folder as they finish and served from the response
cache, so a killed run resumes (``resume=True``) with only the missing calls.

``description`` scores a candidate description (:mod:`.candidates`) in place of the skill's
own without touching SKILL.md: the catalog, the rows' skill version (that of the skill as it would be with the
candidate) and the plan change, and the plan and ``trigger-queries.json`` say which text was
used and where it came from.

The plan streams: the catalog's system prompt is built once, each call's messages and cache
key only when a worker sends it, and what the run keeps in memory per call is one integer
(answered or not) and per model a few counters, so 5,000 distractors or 100,000 queries cost
the size of one catalog, not one catalog per call. The limits on what one run may ask for
(:data:`MAX_TRIGGERS_FILE_BYTES`, :data:`MAX_TRIGGER_QUERIES`, :data:`MAX_TRIGGER_CALLS`,
:data:`MAX_CONCURRENCY`) are refused in one line before any call or folder is made.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import json
import math
import os
import secrets
import stat
from array import array
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from upskill_hub import __version__
from upskill_hub._util import limits
from upskill_hub._util.fsutil import FileRefused, write_json_atomic
from upskill_hub._util.redact import redact
from upskill_hub._util.timestamps import utc_now
from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import OptionError, PathError, UpskillError
from upskill_hub.lift.figures.stats import stats_from_counts
from upskill_hub.lift.runner import BASE_SYSTEM_PROMPT
from upskill_hub.models.base import GenerationParams, ModelCallError, ModelClient
from upskill_hub.models.base import Message as Msg
from upskill_hub.rundir.schema import RunSummary, TriggerRow, TriggerStats
from upskill_hub.rundir.trigger_rows import (
    TRIGGERS_FILE,
    QueryRate,
    RowAppender,
    RowLines,
    check_run_dir,
    parse_row_line,
    read_run_json,
    write_query_rates,
)
from upskill_hub.rundir.trigger_rows import read_trigger_rows as _read_rows
from upskill_hub.session.cache import ResponseCache, cache_key, default_cache_dir
from upskill_hub.session.catalog import TOOLS, Catalog
from upskill_hub.session.clients import RunPrices, close_all, load_distractors, open_clients
from upskill_hub.skill import Skill, require_skill
from upskill_hub.triggering.candidates import candidate_skill, check_candidate_description
from upskill_hub.triggering.query_verdicts import (
    DEFAULT_THRESHOLD,
    check_threshold,
    failing_queries,
    query_rate,
    run_eval_fields,
)
from upskill_hub.triggering.trigger_queries import MAX_TRIGGER_CALLS, check_plan_size, resolve_queries

PLAN_FILE = "triggers-plan.json"

#: Highest ``--concurrency`` (calls in flight per model).
MAX_CONCURRENCY = limits.env_int("UPSKILL_MAX_CONCURRENCY", 256)
#: Wrong queries a result keeps (in plan order) to show; ``rows`` reads the rest from disk.
MAX_WRONG_KEPT = 200


# --------------------------------------------------------------------------- options
def check_run_options(*, runs: int, concurrency: int | None) -> None:
    """``--runs`` and ``--concurrency`` as one-line :class:`OptionError`s (before anything starts)."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise OptionError("runs", runs, f"must be at least 1, got {runs}")
    if runs > MAX_TRIGGER_CALLS:
        raise OptionError(
            "runs", runs, f"must be at most {MAX_TRIGGER_CALLS:,} (UPSKILL_MAX_TRIGGER_CALLS), got {runs:,}"
        )
    if concurrency is not None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise OptionError("concurrency", concurrency, f"must be at least 1, got {concurrency}")
        if concurrency > MAX_CONCURRENCY:
            raise OptionError(
                "concurrency",
                concurrency,
                f"must be at most {MAX_CONCURRENCY} (UPSKILL_MAX_CONCURRENCY), got {concurrency:,}",
            )


def wrong_queries(rows: Sequence[TriggerRow]) -> list[TriggerRow]:
    """Answered calls that went wrong: a should-trigger query that did not, or a should-not that did."""
    return [
        r for r in rows if r.error is None and r.triggered is not None and r.triggered != r.should_trigger
    ]


# --------------------------------------------------------------------------- run folders
def find_resumable(
    output: Path, fingerprint: str, plan_file: str = PLAN_FILE, skipped: list[str] | None = None
) -> Path | None:
    """The latest run folder in ``output`` whose ``plan_file`` has this ``fingerprint``.

    Plans are read with the run-folder reader (no FIFO wait, no symlinked plan, capped);
    one that cannot be read is no match (its refusal is added to ``skipped``). A matching
    folder that is a symlink is refused: it would be resumed, and written, wherever it points.
    """
    found = []
    try:
        entries = sorted(os.scandir(output), key=lambda e: e.name)
    except OSError as exc:
        raise PathError(output, exc.strerror or "cannot be listed", kind="output folder") from None
    for entry in entries:
        try:
            if not stat.S_ISDIR(os.stat(entry.path).st_mode):
                continue
            plan = read_run_json(Path(entry.path) / plan_file)
        except OSError:
            continue
        except FileRefused as exc:
            if skipped is not None and "No such file" not in exc.problem:
                skipped.append(str(exc))
            continue
        if isinstance(plan, dict) and plan.get("fingerprint") == fingerprint:
            if entry.is_symlink():
                check_run_dir(Path(entry.path))  # raises: a symlinked run folder
            found.append(Path(entry.path))
    return max(found, default=None)


def open_run_dir(
    output_dir: str | Path, fingerprint: str, plan_file: str, name: str, kind: str, *, resume: bool,
    plan: dict[str, object],
) -> Path:  # fmt: skip
    """The run folder of a resumable run: with ``resume``, the latest one in ``output_dir``
    whose ``plan_file`` has this ``fingerprint`` (a one-line error when none does); else a new
    ``<stamp>-<name>-<id>`` folder, with ``plan_file`` (run id, fingerprint, ``plan``) written
    in it. ``kind`` names the run in the error ("trigger", "tune", "routing").
    """
    output = Path(output_dir)
    if resume:
        skipped: list[str] = []
        found = find_resumable(output, fingerprint, plan_file, skipped) if output.is_dir() else None
        if found is None:
            unread = f" ({len(skipped)} plan(s) could not be read; first: {skipped[0]})" if skipped else ""
            raise UpskillError(
                f"no {kind} run in {output} matches this one{unread}; run without --resume to start one"
            )
        return check_run_dir(found)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = output / f"{stamp}-{name}-{secrets.token_hex(3)}"
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        raise UpskillError(f"cannot create run folder {run_dir}: {exc.strerror}") from None
    write_json_atomic(run_dir / plan_file, {"run_id": run_dir.name, "fingerprint": fingerprint, **plan})
    return run_dir


def read_trigger_rows(run_dir: Path) -> list[TriggerRow]:
    """Rows of ``triggers.jsonl``, one per call, every row checked (a torn last line from a killed run is skipped)."""
    return _read_rows(run_dir)


# --------------------------------------------------------------------------- running
@dataclass
class TriggerResult:
    """A finished trigger run: its figures, and its rows on demand.

    ``wrong`` holds the first :data:`MAX_WRONG_KEPT` wrong answers in plan order
    (``n_wrong`` counts them all); ``failed`` counts calls that failed, ``first_error`` says
    why one did. ``queries`` holds each query's rate over the repeats and its verdict at
    ``threshold``, per model (model by model, queries in plan order); ``description`` is
    the candidate scored in place of SKILL.md's (``None``: SKILL.md's own), from
    ``description_source``. ``rows`` reads every row back from ``triggers.jsonl`` (plan
    order), so a large run costs memory only when someone asks for them.
    """

    run_dir: Path
    stats: list[TriggerStats]
    source: str
    skill_name: str = ""
    fresh_calls: int = 0
    skipped: int = 0
    wrong: list[TriggerRow] = field(default_factory=list)
    n_wrong: int = 0
    failed: int = 0
    first_error: str | None = None
    threshold: float = DEFAULT_THRESHOLD
    queries: list[QueryRate] = field(default_factory=list)
    description: str | None = None
    description_source: str | None = None
    #: The description the calls saw (the candidate's, else SKILL.md's): run_eval's ``description``.
    tested_description: str = ""
    _order: Callable[[TriggerRow], int | None] | None = field(default=None, repr=False)

    @property
    def failing(self) -> list[QueryRate]:
        """The queries that fail at ``threshold``, each once per model."""
        return failing_queries(self.queries)

    @cached_property
    def rows(self) -> list[TriggerRow]:
        order = self._order or (lambda _r: 0)
        keyed = [(k, r) for r in read_trigger_rows(self.run_dir) if (k := order(r)) is not None]
        return [r for _, r in sorted(keyed, key=lambda x: x[0])]


@dataclass
class TriggerPlan:
    skill: Skill
    catalog: Catalog
    queries: list[TriggerQuery]
    clients: list[ModelClient]
    runs: int
    params: GenerationParams = field(default_factory=GenerationParams)

    @cached_property
    def system(self) -> str:
        """The catalog's system prompt, built once for every call of the plan."""
        return self.catalog.system_prompt(BASE_SYSTEM_PROMPT)

    def fingerprint(self) -> str:
        """Identity of the plan (resume finds its run folder by it), hashed piece by piece.

        The digest is that of ``json.dumps(payload, sort_keys=True)`` (what earlier versions
        stored), but the text of 100,000 queries is never held at once.
        """
        parts = {
            "models": [[c.provider, c.endpoint, c.model] for c in self.clients],
            "params": self.params.to_dict(),
            "runs": self.runs,
            "skill_version": self.skill.version,
            "system": self.system,
        }
        h = hashlib.sha256()
        first = True
        for key in sorted([*parts, "queries"]):
            h.update(("{" if first else ", ").encode() + json.dumps(key).encode() + b": ")
            first = False
            if key != "queries":
                h.update(json.dumps(parts[key], sort_keys=True).encode())
                continue
            h.update(b"[")
            for i in range(0, len(self.queries), 10_000):  # "[a, b]" minus its brackets, 10,000 at a time
                chunk = json.dumps([q.to_dict() for q in self.queries[i : i + 10_000]], sort_keys=True)
                h.update((", " if i else "").encode() + chunk[1:-1].encode())
            h.update(b"]")
        h.update(b"}")
        return h.hexdigest()[:16]


def _finite(v: float | None) -> float | None:
    return v if isinstance(v, int | float) and math.isfinite(v) else None


async def _trigger_call(
    system: str, skill: Skill, params: GenerationParams, client: ModelClient, q: TriggerQuery, repeat: int,
    run_id: str, cache: ResponseCache | None, cost_fn: Callable | None, params_json: str | None = None,
) -> tuple[TriggerRow, bool]:  # fmt: skip
    """One trigger call, its prompt built now (not when planned); the caller bounds concurrency."""
    messages = [Msg("user", q.query)]
    base = {
        "run_id": run_id, "tool_version": __version__, "skill_name": skill.name,
        "skill_version": skill.version, "model": client.model, "provider": client.provider,
        "params": params_json if params_json is not None else params.to_json(), "query_id": q.id, "query": q.query,
        "should_trigger": q.should_trigger, "repeat": repeat,
    }  # fmt: skip
    key = cache_key(
        provider=client.provider, endpoint=client.endpoint, model=client.model, system=system,
        messages=messages, params=params, repeat=repeat, tools=TOOLS,
    )  # fmt: skip
    comp = cache.get(key) if cache is not None else None
    cached = comp is not None
    if comp is None:
        try:
            comp = await client.complete(system, messages, params, tools=TOOLS)
        except Exception as exc:  # the call failed: a row with error, never a "did not trigger"
            msg = str(exc) if isinstance(exc, ModelCallError) else f"{type(exc).__name__}: {exc}"
            return TriggerRow(
                **base, timestamp=utc_now(), triggered=None, error=redact(" ".join(msg.split()))[:1000]
            ), False
        if cache is not None:
            cache.put(key, comp)
    loaded = [str(c.arguments.get("name")) for c in comp.tool_calls if c.name == "load_skill"]
    cost = None
    if cost_fn is not None:
        try:
            cost = _finite(cost_fn(client.provider, client.model, comp.usage))
        except Exception:
            cost = None
    row = TriggerRow(
        **base, timestamp=utc_now(), triggered=skill.name in loaded, loaded=json.dumps(loaded),
        input_tokens=comp.usage.input_tokens, output_tokens=comp.usage.output_tokens,
        latency_s=_finite(comp.latency_s), cost_usd=cost, cached=cached,
    )  # fmt: skip
    return row, not cached


def concurrency_of(client: ModelClient, concurrency: int | None) -> int:
    """Calls in flight for ``client``: ``concurrency`` or the provider's default (at most :data:`MAX_CONCURRENCY`)."""
    limit = concurrency or getattr(client, "default_concurrency", 4) or 4
    return max(1, min(int(limit), MAX_CONCURRENCY))


async def run_workers(workers: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Run ``workers`` together; the first failure (a full disk, a refused file) cancels the
    rest and is raised as itself, not wrapped in an exception group the CLI would not print."""
    try:
        async with asyncio.TaskGroup() as tg:
            for w in workers:
                tg.create_task(w)
    except BaseExceptionGroup as group:
        first = group.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None


class _Wrong:
    """The first :data:`MAX_WRONG_KEPT` wrong answers in plan order, whatever order they land in."""

    def __init__(self) -> None:
        self.heap: list[tuple[int, int, TriggerRow]] = []  # (-plan index, tiebreak, row): a max-heap
        self.n = 0

    def add(self, index: int, row: TriggerRow) -> None:
        if row.error is not None or row.triggered is None or row.triggered == row.should_trigger:
            return
        self.n += 1
        item = (-index, self.n, row)
        if len(self.heap) < MAX_WRONG_KEPT:
            heapq.heappush(self.heap, item)
        elif -index > self.heap[0][0]:
            heapq.heapreplace(self.heap, item)

    def rows(self) -> list[TriggerRow]:
        return [r for _, _, r in sorted(self.heap, key=lambda x: -x[0])]


@dataclass
class TriggerRunPlan:
    """What :func:`drive_trigger_run` needs of a trigger run, whoever answers its calls (models
    through a catalog, or agent CLIs): one label and one worker count per answering client."""

    skill: Skill
    queries: list[TriggerQuery]
    source: str
    labels: list[str]
    workers: list[int]
    runs: int
    run_dir: Path
    params_json: str
    threshold: float
    description: str | None = None
    candidate: dict[str, Any] | None = None
    #: Extra keys for ``trigger-queries.json`` (e.g. ``mode``).
    queries_meta: dict[str, Any] = field(default_factory=dict)


async def drive_trigger_run(
    plan: TriggerRunPlan,
    call: Callable[[int, TriggerQuery, int], Coroutine[Any, Any, tuple[TriggerRow, bool]]],
    *,
    on_plan: Callable[[int, int], None] | None = None,
    on_row: Callable[[TriggerRow], None] | None = None,
) -> TriggerResult:
    """Make a trigger run's missing calls and sum it up: the part both kinds of trigger run share.

    Rows already in ``triggers.jsonl`` are counted and not asked again (failed ones are);
    ``call(client_index, query, repeat)`` answers one call with ``(row, made_a_fresh_call)``;
    each row is appended as it lands. Per client and query three integers are kept (answered,
    loads, failed), never the rows, so the figures of a 100,000-query run cost kilobytes.
    Writes ``summary.json`` and ``trigger-queries.json``.
    """
    skill, queries, runs, run_dir = plan.skill, plan.queries, plan.runs, plan.run_dir
    nq, nc = len(queries), len(plan.labels)
    qindex: dict[str, int] = {}  # built on first use: a fresh run never needs it
    cindex = {label: i for i, label in enumerate(plan.labels)}

    def index_of(row: TriggerRow) -> int | None:
        """The row's place in the plan (repeat, query, client), or None when it is not in this plan."""
        if not qindex:
            qindex.update((q.id, i) for i, q in enumerate(queries))
        qi, ci = qindex.get(row.query_id), cindex.get(row.model)
        if qi is None or ci is None or row.skill_name != skill.name or not 0 <= row.repeat < runs:
            return None
        return (row.repeat * nq + qi) * nc + ci

    wrong = _Wrong()
    answered, loads, errs = ([array("L", bytes(array("L").itemsize * nq)) for _ in range(nc)] for _ in range(3))

    def count(i: int, row: TriggerRow) -> None:
        ci, qi = i % nc, (i // nc) % nq
        if row.error is not None or row.triggered is None:
            errs[ci][qi] += 1
        else:
            answered[ci][qi] += 1
            loads[ci][qi] += bool(row.triggered)
        wrong.add(i, row)

    done: set[int] = set()
    path = run_dir / TRIGGERS_FILE
    lines = RowLines(path)
    for number, line in lines:  # streamed: one row in memory at a time
        row = parse_row_line(path, number, line)
        if row is None or row.error is not None or (i := index_of(row)) is None:
            continue  # failed calls are asked again
        if i in done:
            raise FileRefused(path, f"line {number} answers a call an earlier line already answered (by "
                              f"{row.model!r}, query {row.query_id!r}, repeat {row.repeat}); a run holds one answer per call")  # fmt: skip
        done.add(i)
        count(i, row)
    left = [runs * nq - sum(1 for i in done if i % nc == ci) for ci in range(nc)]
    if on_plan is not None:
        on_plan(sum(left), len(done))
    fresh = failed = 0
    first_error: str | None = None

    def todo_of(ci: int) -> Iterator[tuple[int, TriggerQuery, int]]:
        """Client ``ci``'s calls still to make, in plan order, made up as they are taken."""
        for r in range(runs):
            for qi, q in enumerate(queries):
                i = (r * nq + qi) * nc + ci
                if i not in done:
                    yield i, q, r

    with RowAppender(path, trim_to=lines.complete_bytes if lines.torn else None) as out:

        async def worker(ci: int, calls: Iterator[tuple[int, TriggerQuery, int]]) -> None:
            nonlocal fresh, failed, first_error
            for i, q, r in calls:  # the iterator is shared by the client's workers: each call goes once
                row, called = await call(ci, q, r)
                out.write(row)
                fresh += called
                count(i, row)
                if row.error is not None:
                    failed += 1
                    first_error = first_error or row.error
                if on_row is not None:
                    on_row(row)

        await run_workers(
            worker(ci, calls)
            for ci in range(nc)
            for calls in [todo_of(ci)]
            for _ in range(min(plan.workers[ci], left[ci]))
        )
    stats = []
    should = [q.should_trigger for q in queries]
    for ci, label in enumerate(plan.labels):
        n_s = tp = n_n = fp = 0
        for qi, s_ in enumerate(should):
            if s_:
                n_s, tp = n_s + answered[ci][qi], tp + loads[ci][qi]
            else:
                n_n, fp = n_n + answered[ci][qi], fp + loads[ci][qi]
        if n_s + n_n + sum(errs[ci]):
            stats.append(stats_from_counts(label, n_s, tp, n_n, fp, sum(errs[ci])))
    summary = RunSummary(
        run_id=run_dir.name, timestamp=utc_now(), tool_version=__version__, skill_name=skill.name,
        skill_version=skill.version, models=list(plan.labels), runs_per_case=runs, n_cases=0,
        params=plan.params_json, n_results=sum(map(sum, answered)) + sum(map(sum, errs)), triggers=stats,
    )  # fmt: skip
    write_json_atomic(run_dir / "summary.json", summary.to_dict())
    rates = [
        query_rate(label, q, answered[ci][qi], loads[ci][qi], errs[ci][qi], plan.threshold)
        for ci, label in enumerate(plan.labels)
        for qi, q in enumerate(queries)
        if answered[ci][qi] or errs[ci][qi]
    ]
    write_query_rates(
        run_dir, {"run_id": run_dir.name, "skill_version": skill.version, "runs": runs,
                  "threshold": plan.threshold, **plan.queries_meta, "candidate_description": plan.candidate,
                  **run_eval_fields(skill.name, skill.description, rates)}, rates,
    )  # fmt: skip
    return TriggerResult(
        run_dir, stats, plan.source, skill_name=skill.name, fresh_calls=fresh, skipped=len(done), wrong=wrong.rows(),
        n_wrong=wrong.n, failed=failed, first_error=first_error, threshold=plan.threshold, queries=rates,
        description=plan.description, description_source=plan.candidate["source"] if plan.candidate else None,
        tested_description=skill.description,
        _order=index_of,
    )  # fmt: skip


async def run_triggers_async(
    skill: Skill | str | Path,
    clients: Sequence[ModelClient],
    *,
    runs: int = 1,
    triggers_file: str | Path | None = None,
    distractors: str | Path | None = None,
    output_dir: str | Path = "upskill-runs",
    resume: bool = False,
    cache: ResponseCache | None = None,
    params: GenerationParams | None = None,
    concurrency: int | None = None,
    cost_fn: Callable | None = None,
    on_row: Callable[[TriggerRow], None] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    description: str | None = None,
    description_source: str | None = None,
) -> TriggerResult:
    """Send every trigger query ``runs`` times to every client; see the module docstring.

    ``on_plan(to_send, already_done)`` hears the plan before the first call goes out;
    ``on_row`` sees each row as it lands (after it is on disk). ``threshold`` decides each
    query's verdict (it is not part of the plan: a resume may judge at another threshold);
    ``description`` is a candidate to score instead of SKILL.md's (``description_source``
    says where it came from, for the record).
    """
    check_run_options(runs=runs, concurrency=concurrency)
    threshold = check_threshold(threshold)
    if description is not None:
        check_candidate_description(description)
    if isinstance(skill, (str, Path)):
        skill = require_skill(skill)
    original = skill.description
    if description is not None:
        skill = candidate_skill(skill, description)
    others = load_distractors(distractors, skill.name)
    queries, source = resolve_queries(skill, others, triggers_file)
    check_plan_size(len(queries), len(clients), runs, skill.name)
    plan = TriggerPlan(
        skill, Catalog.of([skill, *others]), queries, list(clients), runs, params or GenerationParams()
    )
    del others  # the catalog holds what the calls need
    candidate = None if description is None else {
        "text": description, "source": description_source or "--description", "skill_md_description": original,
    }  # fmt: skip
    run_dir = open_run_dir(
        output_dir, plan.fingerprint(), PLAN_FILE, f"{skill.name}-triggers", "trigger", resume=resume,
        plan={"source": source, "skill_name": skill.name, "models": [c.model for c in clients],
              "catalog": plan.catalog.names(), "runs": runs, "candidate_description": candidate},
    )  # fmt: skip
    params_json = plan.params.to_json()
    system = plan.system

    async def call(ci: int, q: TriggerQuery, repeat: int) -> tuple[TriggerRow, bool]:
        return await _trigger_call(
            system, skill, plan.params, clients[ci], q, repeat, run_dir.name, cache, cost_fn, params_json
        )

    return await drive_trigger_run(
        TriggerRunPlan(
            skill=skill, queries=queries, source=source, labels=[c.model for c in clients],
            workers=[concurrency_of(c, concurrency) for c in clients], runs=runs, run_dir=run_dir,
            params_json=params_json, threshold=threshold, description=description, candidate=candidate,
        ),
        call, on_plan=on_plan, on_row=on_row,
    )  # fmt: skip


def run_triggers(
    skill: Skill | str | Path,
    model_specs: Sequence[str | ModelClient],
    *,
    base_url: str | None = None,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    timeout: float = 60.0,
    max_retries: int = 4,
    **kwargs: object,
) -> TriggerResult:
    """Run a trigger eval synchronously: builds (and closes) the clients, then :func:`run_triggers_async`."""
    async def go() -> TriggerResult:
        clients = open_clients(model_specs, base_url, timeout=timeout, max_retries=max_retries)
        opened = [c for c in clients if not any(c is s for s in model_specs)]
        cache = ResponseCache(cache_dir or default_cache_dir()) if use_cache else None
        try:
            return await run_triggers_async(skill, clients, cache=cache, cost_fn=RunPrices(), **kwargs)  # type: ignore[arg-type]
        finally:
            await close_all(opened)

    return asyncio.run(go())
