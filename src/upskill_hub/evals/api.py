"""The library entry point of an eval, used by the CLI, the Space, the demo and generation.

:func:`run_eval` validates everything first (skill, cases, model specs, API keys,
reachable endpoints, judge), so bad input is a one-line :class:`UpskillError` before any
model call and before a run folder exists. Then it runs the plan, writes the summary and
plots, and returns a :class:`RunResult`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from upskill_hub import __version__
from upskill_hub._util.fsutil import StorageError, storage_error
from upskill_hub._util.retry import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S
from upskill_hub._util.timestamps import utc_now
from upskill_hub.cases import WORKSPACE_TYPES, Case, CasesError, load_cases_file
from upskill_hub.errors import OptionError, PathError, UpskillError
from upskill_hub.evals import rundir
from upskill_hub.evals.assertions import needs_judge, requires_explicit_judge
from upskill_hub.evals.cache import ResponseCache, default_cache_dir
from upskill_hub.evals.catalog import DEFAULT_MAX_TURNS, Catalog
from upskill_hub.evals.harness import AgentClient, HarnessOptions, prepare_agents
from upskill_hub.evals.runner import EvalPlan, ExecStats, Runner, conditions_for, new_run_id
from upskill_hub.evals.schema import ResultRow, RunSummary
from upskill_hub.evals.stats import summarize_rows
from upskill_hub.models.base import GenerationParams, ModelClient
from upskill_hub.models.spec import ModelSpec
from upskill_hub.skill import Skill, find_skills, require_skill

DEFAULT_OUTPUT = Path("upskill-runs")


class ShardPart(Protocol):
    """One shard's part of a run planned elsewhere (:class:`upskill_hub.jobs.assign.ShardTarget`).

    A protocol, so the eval engine runs a shard without importing the Jobs package above it.
    """

    run_id: str
    created: str
    fingerprint: str
    index: int

    def owns(self, keys: Iterable[tuple[str, str, str, int]]) -> set[tuple[str, str, str, int]]: ...


@dataclass
class EvalOptions:
    """How to run an eval (everything but the skill and the models); see :func:`run_eval_async`.

    One typed object instead of sixteen keyword arguments: the CLI, the Space, ``generate``
    and the demo build it, a typo in a field name is an error at once, and a caller that
    runs several evals (``generate``'s refine loop) changes one field with ``replace``.
    """

    runs: int = 1
    cases: str | Path | Sequence[Case] | None = None
    include_baseline: bool = True
    concurrency: int | None = None
    output_dir: str | Path = DEFAULT_OUTPUT
    resume: bool = False
    use_cache: bool = True
    cache_dir: str | Path | None = None
    judge: str | ModelClient | None = None
    base_url: str | None = None
    params: GenerationParams | dict[str, Any] | None = None
    on_row: Callable[[ResultRow], None] | None = None
    on_start: Callable[[int, int], None] | None = None
    plots: bool = True
    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    #: Run only this shard's calls of a run planned elsewhere (a Hugging Face Job; see
    #: :mod:`upskill_hub.jobs.assign`): the plan must have the launcher's fingerprint.
    shard: ShardPart | None = None
    #: Agent CLIs to evaluate the skill in (``--agent``: ``claude-code[:MODEL]``, ``codex``,
    #: ``gemini``, ``opencode``, ``cmd:'TEMPLATE'``); see :mod:`upskill_hub.evals.harness`.
    agents: Sequence[str] = ()
    #: How agent calls run (timeout, ``--agent-env``, workspaces, ``command`` checks).
    harness: HarnessOptions = field(default_factory=HarnessOptions)
    #: How the skill reaches the models (``--mode``): ``inject`` (in the system prompt) and/or
    #: ``catalog`` (a skill catalog + load tools; see :mod:`upskill_hub.evals.catalog`).
    modes: Sequence[str] = ("inject",)
    #: ``catalog`` mode's other skills: a folder of skills, ``"none"``, or None for the shipped skills.
    distractors: str | Path | None = None
    #: ``catalog`` mode: model turns one answer may take.
    max_turns: int = DEFAULT_MAX_TURNS

    #: The fields that travel with a run planned on one machine and run on others (a
    #: Job bundle's ``options``): plain JSON values, no paths, hooks or client objects.
    PORTABLE = ("runs", "include_baseline", "concurrency", "params", "timeout", "max_retries")

    def to_dict(self) -> dict[str, Any]:
        """The :data:`PORTABLE` fields as JSON values (generation parameters as a dict)."""
        params = self.params.to_dict() if isinstance(self.params, GenerationParams) else self.params
        out: dict[str, Any] = {name: getattr(self, name) for name in self.PORTABLE}
        out["params"] = params
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], **fields: Any) -> EvalOptions:
        """Options from :meth:`to_dict`'s output, plus ``fields`` (cases, output folder, hooks...).

        A value missing from ``data`` takes the field's default; a value of the wrong type
        raises ``TypeError``/``ValueError`` for the caller to report.
        """
        defaults = cls()
        values: dict[str, Any] = {
            "runs": int(data.get("runs", defaults.runs)),
            "include_baseline": bool(data.get("include_baseline", defaults.include_baseline)),
            "concurrency": data.get("concurrency"),
            "params": data.get("params") or None,
            "timeout": float(data.get("timeout") or defaults.timeout),
            "max_retries": int(data.get("max_retries") or defaults.max_retries),
        }
        return cls(**{**values, **fields})


@dataclass
class RunResult:
    """What :func:`run_eval` returns."""

    run_dir: Path
    #: ``None`` only for one shard of a run on Jobs (``EvalOptions.shard``): a shard's numbers
    #: mean nothing alone, the launcher summarizes all shards together.
    summary: RunSummary | None
    rows: list[ResultRow]
    stats: ExecStats = field(default_factory=ExecStats)
    plots: list[Path] = field(default_factory=list)


def resolve_cases(skill: Skill, cases: str | Path | Sequence[Case] | None) -> list[Case]:
    """The cases to run: a tests file, explicit cases, or the skill's own ``skill_meta.json``."""
    if cases is None:
        found = list(skill.meta.cases)
        if not found:
            raise UpskillError(
                f"skill {skill.name!r} has no test cases in skill_meta.json; pass --tests FILE"
            )
        return found
    if isinstance(cases, (str, Path)):
        try:
            return list(load_cases_file(cases, base_dir=skill.path).cases)
        except CasesError as exc:
            inside = None if exc.field == str(Path(cases)) else exc.field
            raise PathError(cases, exc.message, kind="tests file", field=inside) from None
    found = list(cases)
    if not found:
        raise UpskillError("no test cases given")
    return found


def _make_params(params: GenerationParams | dict[str, Any] | None) -> GenerationParams:
    if params is None:
        return GenerationParams()
    if isinstance(params, GenerationParams):
        return params
    d = dict(params)
    if "stop" in d and d["stop"] is not None:
        d["stop"] = tuple(d["stop"])
    try:
        p = GenerationParams(**{k: v for k, v in d.items() if v is not None})
    except TypeError as exc:
        raise UpskillError(f"bad generation parameters: {exc}") from None
    if not 0 <= p.temperature <= 2:
        raise OptionError("temperature", p.temperature, f"must be between 0 and 2, got {p.temperature}")
    if p.max_tokens < 1:
        raise OptionError("max_tokens", p.max_tokens, f"must be at least 1, got {p.max_tokens}")
    return p


def _clients_for(
    specs: Sequence[str | ModelSpec | ModelClient],
    base_url: str | None,
    *,
    timeout: float,
    max_retries: int,
    connections: int | None = None,
) -> list[ModelClient]:
    """Parse every spec, then preflight each (key, endpoint, local install), then build clients.

    All specs parse before any preflight touches the network, and every check passes
    before any client exists, so bad input never costs a call.
    """
    from upskill_hub import models

    parsed = [models.parse_model_spec(s, base_url) if isinstance(s, str) else s for s in specs]
    checked = [p if isinstance(p, ModelClient) else models.preflight(p) for p in parsed]
    clients = [
        p
        if isinstance(p, ModelClient)
        else models.create_client(p, timeout=timeout, max_retries=max_retries, connections=connections)
        for p in checked
    ]
    seen: set[str] = set()
    for c in clients:
        if c.model in seen:
            raise UpskillError(f"model {c.model!r} given twice")
        seen.add(c.model)
    return clients


class _RunPrices:
    """Each model's :class:`~upskill_hub.models.pricing.Price`, looked up once per run.

    Looking a price up checks the user's price file (so edits apply at once); at hundreds
    of calls per second that check was a visible share of the runner's CPU. A run takes one
    snapshot instead, and a broken price file fails before the first call, as one line.
    """

    def __init__(self) -> None:
        self._prices: dict[tuple[str, str], Any] = {}

    def price(self, provider: str, model: str):  # -> Price | None
        key = (provider, model)
        if key not in self._prices:
            from upskill_hub.models.pricing import price_for

            self._prices[key] = price_for(model, provider=provider)
        return self._prices[key]

    def __call__(self, provider: str, model: str, usage: Any) -> float | None:
        from upskill_hub.models.pricing import FREE

        price = self.price(provider, model)
        if price is FREE:
            return 0.0
        return None if price is None else price.cost(usage)


def _label(c: ModelClient) -> str:
    return f"{c.provider}:{c.model}"


@dataclass
class PreparedEval:
    """A validated plan with its clients and judges, before any call (see :func:`prepare_eval`)."""

    plan: EvalPlan
    judges: dict[str | None, ModelClient]
    #: Clients built here (closed by :meth:`aclose`); clients passed in belong to the caller.
    opened: list[ModelClient]

    async def aclose(self) -> None:
        await _close_all(self.opened)


async def _close_all(clients: list[ModelClient]) -> None:
    for c in clients:
        with contextlib.suppress(Exception):  # closing must not hide the run's outcome
            await c.aclose()


async def prepare_eval(
    skill: Skill | str | Path,
    model_specs: Sequence[str | ModelSpec | ModelClient] = ("local",),
    options: EvalOptions | None = None,
) -> PreparedEval:
    """Validate everything and build the plan (run id still empty), the clients and the judges.

    Shared by :func:`run_eval_async` and the Jobs launcher, which plans a run here and runs
    it elsewhere: both must plan the very same calls with the very same fingerprint.
    """
    o = options or EvalOptions()
    runs, concurrency, judge, base_url = o.runs, o.concurrency, o.judge, o.base_url
    timeout, max_retries = o.timeout, o.max_retries
    if isinstance(skill, (str, Path)):
        skill = require_skill(skill)
    if runs < 1:
        raise OptionError("runs", runs, f"must be at least 1, got {runs}")
    if concurrency is not None and concurrency < 1:
        raise OptionError("concurrency", concurrency, f"must be at least 1, got {concurrency}")
    if not model_specs and not o.agents:
        model_specs = ("local",)
    the_cases = resolve_cases(skill, o.cases)
    if judge is None and requires_explicit_judge(the_cases):
        raise UpskillError(
            "these tests grade natural-language assertions (agentskills.io evals.json or upskill judge "
            "criteria): pass --judge MODEL to grade them (they are never skipped)"
        )
    gen = _make_params(o.params)
    _check_workspace_cases(the_cases, bool(model_specs), bool(o.agents), o.harness)
    if o.agents and o.shard is not None:
        raise UpskillError("agent CLIs run on this machine only: --agent cannot run on Hugging Face Jobs")
    agents = prepare_agents(list(o.agents), skill, o.harness) if o.agents else []
    modes = tuple(dict.fromkeys(o.modes or ("inject",)))
    bad = [m for m in modes if m not in MODEL_MODES]
    if bad:
        raise UpskillError(f"unknown --mode {bad[0]!r}; choose from {', '.join(MODEL_MODES)}")
    if o.max_turns < 1:
        raise UpskillError(f"--max-turns must be at least 1, got {o.max_turns}")
    catalog = build_catalog(skill, o.distractors) if "catalog" in modes else None

    clients = _clients_for(
        model_specs, base_url, timeout=timeout, max_retries=max_retries, connections=concurrency
    )
    judges: dict[str | None, ModelClient] = {}
    # Close only the clients built here; clients passed in belong to the caller.
    opened = [c for c in clients if not any(c is s for s in model_specs)]
    try:
        wanted = needs_judge(the_cases)
        judge_label = None
        if wanted:
            if judge is None and not clients:
                raise UpskillError("llm-rubric assertions need a judge: pass --judge MODEL (agents cannot judge)")
            default_judge = judge if judge is not None else clients[0]
            jspecs: dict[str | None, str | ModelClient] = {None: default_judge}
            jspecs.update({w: w for w in wanted if w is not None})
            for k, spec in jspecs.items():
                if isinstance(spec, ModelClient):
                    judges[k] = spec
                else:
                    (jc,) = _clients_for([spec], None, timeout=timeout, max_retries=max_retries)
                    judges[k] = jc
                    opened.append(jc)
            judge_label = _label(judges[None])
            if judge is None:
                print(f"note: llm-rubric judged by {judge_label} (set --judge to choose)", file=sys.stderr)
    except BaseException:
        await _close_all(opened)
        raise
    plan = EvalPlan(
        run_id="",
        skill_name=skill.name,
        skill_version=skill.version,
        skill_text=skill.prompt_text(),
        clients=[*clients, *agents],
        cases=the_cases,
        runs=runs,
        conditions=conditions_for(o.include_baseline),
        params=gen,
        judge_label=judge_label,
        modes=(modes if clients else ()) + (("harness",) if agents else ()),
        catalog=catalog,
        max_turns=o.max_turns,
    )
    return PreparedEval(plan, judges, opened)


#: The modes ``--mode`` takes for models (agent CLIs run in ``harness`` mode by themselves).
MODEL_MODES = ("inject", "catalog")


def shipped_skills_dir() -> Path | None:
    """The skills that ship with upskill-hub (package data, or the clone's ``skills/``), if present."""
    from upskill_hub.shipped import shipped_path

    try:
        return shipped_path("skills")
    except UpskillError:
        return None


def load_distractors(distractors: str | Path | None, skill_name: str) -> list[Skill]:
    """The catalog's other skills: every skill under ``distractors`` (default: the shipped
    ones; ``"none"``: no others), minus any named like the skill under test.

    An empty value is refused rather than read as ``Path("")``, the current folder (a
    script's unset variable must not put whatever lies there in the catalog), and so are
    two distractors of one name: the model loads skills by name, so one of them could never
    be loaded. Every front end (eval, triggers, tune) resolves distractors here.
    """
    if isinstance(distractors, str) and distractors.strip().lower() == "none":
        return []
    if isinstance(distractors, str) and not distractors.strip():
        raise OptionError(
            "distractors", distractors, "must name a folder of skills or 'none', not an empty value"
        )
    root = Path(distractors) if distractors is not None else shipped_skills_dir()
    if root is None:
        return []
    if not root.exists():
        raise PathError(root, "does not exist", kind="distractors folder")
    folders = find_skills(root)
    found = [require_skill(p) for p in folders]
    if distractors is not None and not found:
        raise PathError(root, "holds no skill folders (pass a folder of skills, or --distractors none)",
                        kind="distractors folder")  # fmt: skip
    seen: dict[str, Path] = {}
    for folder, s in zip(folders, found, strict=True):
        if s.name == skill_name:
            continue
        if s.name in seen:
            first, again = (f.relative_to(root).as_posix() or "." for f in (seen[s.name], folder))
            raise PathError(
                root, f"two skills named {s.name!r} ({first} and {again}): a model loads skills by name, "
                "so catalog names must be unique; remove or rename one", kind="distractors folder",
            )  # fmt: skip
        seen[s.name] = folder
    return [s for s in found if s.name != skill_name]


def build_catalog(skill: Skill, distractors: str | Path | None) -> Catalog:
    """The skill under test first, then the distractors (the baseline drops only the first)."""
    return Catalog.of([skill, *load_distractors(distractors, skill.name)])


def _check_workspace_cases(cases: list[Case], models: bool, agents: bool, harness: HarnessOptions) -> None:
    """Workspace checks need an agent's workspace; ``command`` checks may be switched off (the Space)."""
    for c in cases:
        for a in c.asserts:
            if a.type not in WORKSPACE_TYPES:
                continue
            if a.type == "command" and not harness.allow_commands:
                raise UpskillError(f"case {c.id!r}: 'command' checks are refused here (they run shell commands)")
            if models or not agents:
                raise UpskillError(
                    f"case {c.id!r}: '{a.type}' grades an agent's workspace; evaluate it with --agent only "
                    "(a --model call has no workspace)"
                )


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
    output = Path(o.output_dir)
    prepared = await prepare_eval(skill, model_specs, o)
    plan, judges = prepared.plan, prepared.judges
    only: set | None = None
    lock = contextlib.ExitStack()  # holds the run folder's lock while it is written
    try:
        # Prices are read before anything is written: a broken price file is a clean error.
        prices = _RunPrices()
        for c in plan.clients:
            if not isinstance(c, AgentClient):  # agents report their own cost, or none
                prices.price(c.provider, c.model)
        done: list[ResultRow] = []
        if o.shard is not None:
            run_dir, only = _shard_folder(plan, o.shard, output)
            lock.enter_context(rundir.run_lock(run_dir))
            done = rundir.compact_results(run_dir, only)
        elif o.resume:
            found = rundir.find_resumable(output, plan.fingerprint())
            if found is None:
                raise UpskillError(
                    f"no run in {output} matches this eval (same skill version, models, cases, runs and "
                    "parameters); run without --resume to start one"
                )
            run_dir = found
            stored = rundir.read_plan(run_dir)
            assert stored is not None  # find_resumable only returns folders with a plan
            plan.run_id = stored.run_id
            plan.created = stored.created or plan.created
            lock.enter_context(rundir.run_lock(run_dir))
            done = rundir.compact_results(run_dir, {c.key for c in plan.calls()})
        else:
            plan.run_id = new_run_id(plan.skill_name)
            run_dir = rundir.create_run(output, plan.record())
            lock.enter_context(rundir.run_lock(run_dir))

        cache = ResponseCache(o.cache_dir or default_cache_dir()) if o.use_cache else None
        runner = Runner(
            plan,
            run_dir,
            concurrency=o.concurrency,
            cache=cache,
            judges=judges,
            cost_fn=prices,
            on_row=o.on_row,
            only=only,
        )
        if o.on_start is not None:
            o.on_start(len(plan.calls()) if only is None else len(only), len(done))
        rows = await runner.execute(done)
        # Every row is in memory now: write the results shard, so push need not parse the JSON.
        rundir.write_results_parquet(run_dir, runner.written)

        summary = None if o.shard is not None else build_summary(plan, rows)
        if summary is not None:
            rundir.write_summary(run_dir, summary)
        written: list[Path] = []
        if o.plots and summary is not None:
            from upskill_hub.evals.plots import write_plots

            written = write_plots(run_dir, summary)
    except OSError as exc:  # the disk filled up, a file-size limit, a read-only folder (StorageError too)
        err = storage_error(exc)
        if err is None:
            raise
        raise _resumable(err) from None
    finally:
        lock.close()
        await prepared.aclose()
    return RunResult(run_dir=run_dir, summary=summary, rows=rows, stats=runner.stats, plots=written)


def _resumable(exc: StorageError) -> StorageError:
    """``exc`` telling how to go on: every answer already written is kept for ``--resume``."""
    if exc.errno == errno.EROFS:
        return exc
    return StorageError(exc.path, exc.errno, "then run the same eval with --resume: the answers already written are kept")


def _shard_folder(plan: EvalPlan, shard: ShardPart, output: Path) -> tuple[Path, set]:
    """The run folder of one shard of a run planned elsewhere, and the keys it owns.

    The plan rebuilt here must be the launcher's (same fingerprint), or the shard would
    answer a different experiment under the same run id.
    """
    if plan.fingerprint() != shard.fingerprint:
        raise UpskillError(
            f"shard {shard.index} of run {shard.run_id}: the plan rebuilt here differs from the launcher's "
            f"(fingerprint {plan.fingerprint()} != {shard.fingerprint}); run the same upskill-hub version"
        )
    plan.run_id, plan.created = shard.run_id, shard.created
    run_dir = rundir.create_run(output, plan.record(), exist_ok=True)
    return run_dir, shard.owns(c.key for c in plan.calls())


def build_summary(plan: EvalPlan, rows: list[ResultRow]) -> RunSummary:
    models = [c.model for c in plan.clients]
    conds, lifts = [], []
    for mode in dict.fromkeys(r.mode for r in rows):  # each mode's figures apart: inject lift beside catalog lift
        c, lf = summarize_rows([r for r in rows if r.mode == mode], models)
        for stat in [*c, *lf]:
            stat.mode = mode
        conds += c
        lifts += lf
    from upskill_hub.evals.triggers import stats_from_eval_rows

    return RunSummary(
        run_id=plan.run_id,
        timestamp=utc_now(),
        tool_version=__version__,
        skill_name=plan.skill_name,
        skill_version=plan.skill_version,
        models=models,
        runs_per_case=plan.runs,
        n_cases=len(plan.cases),
        conditions=conds,
        lifts=lifts,
        judge_model=plan.judge_label,
        params=plan.params.to_json(),
        n_results=len(rows),
        triggers=stats_from_eval_rows(rows, models),
    )


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
