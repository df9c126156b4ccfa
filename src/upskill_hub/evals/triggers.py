"""Trigger evaluation: does a skill's description make a model load it when it should, and only then?

A trigger call is one model turn with the skill catalog (the skill under test plus
distractors) and the load tools: the query *triggered* iff the model calls
``load_skill`` with the skill's name. Nothing else is answered; a trigger eval measures the
description, not the skill body.

Queries come from ``triggers`` in skill_meta.json, else a skill-creator trigger eval-set file
(``--triggers FILE``: a JSON list of ``{"query", "should_trigger"}``), else the skill's case
inputs (should trigger) and the distractors' case inputs (should not).

Per model: recall on should-trigger queries and the false-trigger rate on should-not ones,
each with a 95% Wilson interval, precision and F1, and the queries that went wrong. Rows are
appended to ``triggers.jsonl`` in the run folder as they finish and served from the response
cache, so a killed run resumes (``resume=True``) with only the missing calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from upskill_hub import __version__
from upskill_hub._util.fsutil import write_json_atomic
from upskill_hub._util.redact import redact
from upskill_hub._util.timestamps import utc_now
from upskill_hub.cases import CasesError, TriggerQuery, parse_triggers
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.evals.cache import ResponseCache, cache_key, default_cache_dir
from upskill_hub.evals.catalog import TOOLS, Catalog
from upskill_hub.evals.runner import BASE_SYSTEM_PROMPT
from upskill_hub.evals.schema import ResultRow, RunSummary, TriggerRow, TriggerStats
from upskill_hub.evals.stats import wilson_bounds
from upskill_hub.models.base import GenerationParams, ModelCallError, ModelClient
from upskill_hub.models.base import Message as Msg
from upskill_hub.skill import Skill, require_skill

TRIGGERS_FILE = "triggers.jsonl"
PLAN_FILE = "triggers-plan.json"


# --------------------------------------------------------------------------- figures
def _rate(k: int, n: int) -> tuple[float | None, float | None, float | None]:
    if n == 0:
        return None, None, None
    lo, hi = wilson_bounds(k, n)
    return k / n, float(lo), float(hi)


def trigger_stats(model: str, should: Sequence[bool], should_not: Sequence[bool], errors: int = 0) -> TriggerStats:
    """Recall and false-trigger rate (95% Wilson intervals), precision and F1 from answered calls.

    ``should`` / ``should_not``: whether each answered should-trigger / should-not query triggered.
    """
    tp, fp = sum(should), sum(should_not)
    recall, r_lo, r_hi = _rate(tp, len(should))
    fpr, f_lo, f_hi = _rate(fp, len(should_not))
    precision = tp / (tp + fp) if tp + fp else None
    f1 = None
    if precision is not None and recall:
        f1 = 2 * precision * recall / (precision + recall)
    elif recall == 0.0:
        f1 = 0.0
    return TriggerStats(
        model=model,
        n_should=len(should),
        triggered_should=tp,
        recall=recall,
        recall_ci_low=r_lo,
        recall_ci_high=r_hi,
        n_should_not=len(should_not),
        triggered_should_not=fp,
        false_trigger_rate=fpr,
        fpr_ci_low=f_lo,
        fpr_ci_high=f_hi,
        precision=precision,
        f1=f1,
        errors=errors,
    )


def stats_from_trigger_rows(rows: Sequence[TriggerRow], models: Sequence[str]) -> list[TriggerStats]:
    """Per model figures from trigger rows (failed calls counted apart, never as misses)."""
    out = []
    for m in models:
        mine = [r for r in rows if r.model == m]
        if not mine:
            continue
        ok = [r for r in mine if r.error is None and r.triggered is not None]
        out.append(
            trigger_stats(
                m,
                [bool(r.triggered) for r in ok if r.should_trigger],
                [bool(r.triggered) for r in ok if not r.should_trigger],
                errors=len(mine) - len(ok),
            )
        )
    return out


def stats_from_eval_rows(rows: Sequence[ResultRow], models: Sequence[str]) -> list[TriggerStats]:
    """Trigger figures of a ``catalog`` eval: every with-skill answer is a should-trigger query.

    (The baseline's catalog lacks the skill, so it has no should-not queries to offer.)
    """
    out = []
    for m in models:
        mine = [r for r in rows if r.model == m and r.mode == "catalog" and r.condition == "with_skill"]
        if not mine:
            continue
        ok = [r for r in mine if r.error is None and r.triggered is not None]
        out.append(trigger_stats(m, [bool(r.triggered) for r in ok], [], errors=len(mine) - len(ok)))
    return out


def wrong_queries(rows: Sequence[TriggerRow]) -> list[TriggerRow]:
    """Answered calls that went wrong: a should-trigger query that did not, or a should-not that did."""
    return [r for r in rows if r.error is None and r.triggered is not None and r.triggered != r.should_trigger]


# --------------------------------------------------------------------------- queries
def _query_id(prefix: str, text: str) -> str:
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def resolve_queries(skill: Skill, distractors: Sequence[Skill], triggers_file: str | Path | None) -> tuple[list[TriggerQuery], str]:
    """The queries to send and one line saying where they came from."""
    if triggers_file is not None:
        path = Path(triggers_file)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise PathError(path, exc.strerror or "cannot be read", kind="triggers file") from None
        except ValueError as exc:
            raise PathError(path, f"is not JSON: {exc}", kind="triggers file") from None
        try:
            queries = parse_triggers(raw, where="triggers")
        except CasesError as exc:
            raise PathError(path, exc.message, kind="triggers file", field=exc.field) from None
        if not queries:
            raise PathError(path, "holds no queries", kind="triggers file")
        return queries, f"{len(queries)} trigger queries from {path}"
    if skill.meta.triggers:
        qs = list(skill.meta.triggers)
        return qs, f"{len(qs)} trigger queries from {skill.name}'s skill_meta.json"
    should = [TriggerQuery(_query_id("case", c.input), c.input, True) for c in skill.meta.cases]
    should_not = [
        TriggerQuery(_query_id("neg", c.input), c.input, False) for d in distractors for c in d.meta.cases
    ]
    queries = list({q.id: q for q in [*should, *should_not]}.values())
    if not should:
        raise UpskillError(
            f"skill {skill.name!r} has no trigger queries: add 'triggers' to skill_meta.json, pass --triggers FILE, "
            "or give it test cases"
        )
    return queries, (
        f"{len(should)} should-trigger queries from {skill.name}'s cases and {len(should_not)} should-not "
        "from the distractors' cases"
    )


# --------------------------------------------------------------------------- running
@dataclass
class TriggerResult:
    run_dir: Path
    rows: list[TriggerRow]
    stats: list[TriggerStats]
    source: str
    fresh_calls: int = 0
    skipped: int = 0


@dataclass
class TriggerPlan:
    skill: Skill
    catalog: Catalog
    queries: list[TriggerQuery]
    clients: list[ModelClient]
    runs: int
    params: GenerationParams = field(default_factory=GenerationParams)

    def fingerprint(self) -> str:
        payload = {
            "skill_version": self.skill.version,
            "system": self.catalog.system_prompt(BASE_SYSTEM_PROMPT),
            "models": [[c.provider, c.endpoint, c.model] for c in self.clients],
            "queries": [q.to_dict() for q in self.queries],
            "runs": self.runs,
            "params": self.params.to_dict(),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def find_resumable(output: Path, fingerprint: str, plan_file: str = PLAN_FILE) -> Path | None:
    """The latest run folder in ``output`` whose ``plan_file`` has this ``fingerprint``."""
    found = []
    for plan in output.glob(f"*/{plan_file}"):
        try:
            if json.loads(plan.read_text()).get("fingerprint") == fingerprint:
                found.append(plan.parent)
        except (OSError, ValueError, AttributeError):
            continue
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
        found = find_resumable(output, fingerprint, plan_file) if output.is_dir() else None
        if found is None:
            raise UpskillError(f"no {kind} run in {output} matches this one; run without --resume to start one")
        return found
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = output / f"{stamp}-{name}-{secrets.token_hex(3)}"
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        raise UpskillError(f"cannot create run folder {run_dir}: {exc.strerror}") from None
    write_json_atomic(run_dir / plan_file, {"run_id": run_dir.name, "fingerprint": fingerprint, **plan})
    return run_dir


def read_trigger_rows(run_dir: Path) -> list[TriggerRow]:
    """Rows of ``triggers.jsonl`` (a torn last line from a killed run is skipped)."""
    rows = []
    try:
        lines = (run_dir / TRIGGERS_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            rows.append(TriggerRow.from_dict(json.loads(line)))
        except (ValueError, TypeError):
            continue
    return rows


async def _trigger_call(
    plan: TriggerPlan, client: ModelClient, q: TriggerQuery, repeat: int, run_id: str,
    cache: ResponseCache | None, sem: asyncio.Semaphore, cost_fn: Callable | None,
) -> tuple[TriggerRow, bool]:  # fmt: skip
    system = plan.catalog.system_prompt(BASE_SYSTEM_PROMPT)
    messages = [Msg("user", q.query)]
    base = {
        "run_id": run_id, "tool_version": __version__, "skill_name": plan.skill.name,
        "skill_version": plan.skill.version, "model": client.model, "provider": client.provider,
        "params": plan.params.to_json(), "query_id": q.id, "query": q.query,
        "should_trigger": q.should_trigger, "repeat": repeat,
    }  # fmt: skip
    key = cache_key(
        provider=client.provider, endpoint=client.endpoint, model=client.model, system=system,
        messages=messages, params=plan.params, repeat=repeat, tools=TOOLS,
    )  # fmt: skip
    comp = cache.get(key) if cache is not None else None
    cached = comp is not None
    if comp is None:
        try:
            async with sem:
                comp = await client.complete(system, messages, plan.params, tools=TOOLS)
        except Exception as exc:  # the call failed: a row with error, never a "did not trigger"
            msg = str(exc) if isinstance(exc, ModelCallError) else f"{type(exc).__name__}: {exc}"
            return TriggerRow(**base, timestamp=utc_now(), triggered=None, error=redact(" ".join(msg.split()))[:1000]), False
        if cache is not None:
            cache.put(key, comp)
    loaded = [str(c.arguments.get("name")) for c in comp.tool_calls if c.name == "load_skill"]
    cost = None
    if cost_fn is not None:
        try:
            cost = cost_fn(client.provider, client.model, comp.usage)
        except Exception:
            cost = None
    row = TriggerRow(
        **base, timestamp=utc_now(), triggered=plan.skill.name in loaded, loaded=json.dumps(loaded),
        input_tokens=comp.usage.input_tokens, output_tokens=comp.usage.output_tokens,
        latency_s=comp.latency_s, cost_usd=cost, cached=cached,
    )  # fmt: skip
    return row, not cached


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
) -> TriggerResult:
    """Send every trigger query ``runs`` times to every client; see the module docstring."""
    from upskill_hub.evals.api import load_distractors

    if isinstance(skill, (str, Path)):
        skill = require_skill(skill)
    if runs < 1:
        raise UpskillError(f"--runs must be at least 1, got {runs}")
    others = load_distractors(distractors, skill.name)
    queries, source = resolve_queries(skill, others, triggers_file)
    plan = TriggerPlan(skill, Catalog.of([skill, *others]), queries, list(clients), runs, params or GenerationParams())
    run_dir = open_run_dir(
        output_dir, plan.fingerprint(), PLAN_FILE, f"{skill.name}-triggers", "trigger", resume=resume,
        plan={"source": source, "skill_name": skill.name, "models": [c.model for c in clients],
              "catalog": plan.catalog.names(), "runs": runs},
    )  # fmt: skip
    run_id = run_dir.name
    planned = [(c, q, r) for r in range(runs) for q in queries for c in clients]
    keys = {(c.model, q.id, r) for c, q, r in planned}
    done = {r.key: r for r in read_trigger_rows(run_dir) if r.error is None and r.key in keys}
    todo = [(c, q, r) for c, q, r in planned if (c.model, q.id, r) not in done]
    # Rewrite the kept rows (drops torn lines, duplicates and failed calls, which are retried).
    with open(run_dir / TRIGGERS_FILE, "w", encoding="utf-8") as fh:
        for row in done.values():
            fh.write(json.dumps(row.to_dict()) + "\n")
    sems = {id(c): asyncio.Semaphore(concurrency or getattr(c, "default_concurrency", 4) or 4) for c in clients}
    new: list[TriggerRow] = []
    fresh = 0
    with open(run_dir / TRIGGERS_FILE, "a", encoding="utf-8") as fh:

        async def one(c: ModelClient, q: TriggerQuery, r: int) -> None:
            nonlocal fresh
            row, called = await _trigger_call(plan, c, q, r, run_id, cache, sems[id(c)], cost_fn)
            fh.write(json.dumps(row.to_dict()) + "\n")
            fh.flush()
            new.append(row)
            fresh += called
            if on_row is not None:
                on_row(row)

        await asyncio.gather(*(one(c, q, r) for c, q, r in todo))
    order = {(c.model, q.id, r): i for i, (c, q, r) in enumerate(planned)}
    rows = sorted([*done.values(), *new], key=lambda x: order[x.key])
    stats = stats_from_trigger_rows(rows, [c.model for c in clients])
    summary = RunSummary(
        run_id=run_id, timestamp=utc_now(), tool_version=__version__, skill_name=skill.name,
        skill_version=skill.version, models=[c.model for c in clients], runs_per_case=runs, n_cases=0,
        params=plan.params.to_json(), n_results=len(rows), triggers=stats,
    )  # fmt: skip
    write_json_atomic(run_dir / "summary.json", summary.to_dict())
    return TriggerResult(run_dir, rows, stats, source, fresh_calls=fresh, skipped=len(planned) - len(todo))


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
    from upskill_hub.evals.api import _clients_for, _close_all, _RunPrices

    async def go() -> TriggerResult:
        clients = _clients_for(model_specs, base_url, timeout=timeout, max_retries=max_retries)
        opened = [c for c in clients if not any(c is s for s in model_specs)]
        cache = ResponseCache(cache_dir or default_cache_dir()) if use_cache else None
        try:
            return await run_triggers_async(skill, clients, cache=cache, cost_fn=_RunPrices(), **kwargs)  # type: ignore[arg-type]
        finally:
            await _close_all(opened)

    return asyncio.run(go())
