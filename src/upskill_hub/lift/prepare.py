"""Before the first call: check an eval's options, cases and models, and build its plan.

Shared by :func:`upskill_hub.lift.api.run_eval_async` and the Jobs launcher, which plans a
run here and runs it elsewhere: both must plan the very same calls with the very same
fingerprint, and bad input must fail here, as one line, before anything is written or paid.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from upskill_hub._util.retry import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S
from upskill_hub.cases import WORKSPACE_TYPES, Case, CasesError, load_cases_file
from upskill_hub.errors import OptionError, PathError, UpskillError
from upskill_hub.lift.grading.assertions import needs_judge, requires_explicit_judge
from upskill_hub.lift.harness import HarnessOptions, prepare_agents
from upskill_hub.lift.runner import BASE_SYSTEM_PROMPT, EvalPlan, conditions_for
from upskill_hub.models.base import GenerationParams, ModelClient
from upskill_hub.models.spec import ModelSpec, parse_judge_spec
from upskill_hub.rundir.schema import ResultRow
from upskill_hub.session.catalog import DEFAULT_MAX_TURNS
from upskill_hub.session.clients import (
    RunPrices,
    build_catalogs,
    client_label,
    close_all,
    generation_params,
    open_clients,
)
from upskill_hub.skill import Skill, require_skill

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
    #: ``gemini``, ``opencode``, ``cmd:'TEMPLATE'``); see :mod:`upskill_hub.lift.harness`.
    agents: Sequence[str] = ()
    #: How agent calls run (timeout, ``--agent-env``, workspaces, ``command`` checks).
    harness: HarnessOptions = field(default_factory=HarnessOptions)
    #: How the skill reaches the models (``--mode``): ``inject`` (in the system prompt) and/or
    #: ``catalog`` (a skill catalog + load tools; see :mod:`upskill_hub.session.catalog`).
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


def resolve_cases(skill: Skill, cases: str | Path | Sequence[Case] | None) -> list[Case]:
    """The cases to run: a tests file, explicit cases, or the skill's own ``skill_meta.json``."""
    if cases is None:
        found = list(skill.meta.cases)
        if not found:
            raise UpskillError(
                f"skill {skill.name!r} has no test cases in skill_meta.json; pass --tests FILE"
            )
        _warn(skill.name, skill.meta.warnings)
        return found
    if isinstance(cases, (str, Path)):
        try:
            meta = load_cases_file(cases, base_dir=skill.path)
        except CasesError as exc:
            inside = None if exc.field == str(Path(cases)) else exc.field
            raise PathError(cases, exc.message, kind="tests file", field=inside) from None
        _warn(str(cases), meta.warnings)
        return list(meta.cases)
    found = list(cases)
    if not found:
        raise UpskillError("no test cases given")
    return found


def _warn(source: str, warnings: Sequence[str]) -> None:
    """What a tests file holds that is not used (an evals.json's unknown keys): one line each."""
    for w in warnings:
        print(f"warning: {source}: {w}", file=sys.stderr)


@dataclass
class PreparedEval:
    """A validated plan with its clients and judges, before any call (see :func:`prepare_eval`)."""

    plan: EvalPlan
    judges: dict[str | None, ModelClient]
    #: Clients built here (closed by :meth:`aclose`); clients passed in belong to the caller.
    opened: list[ModelClient]
    #: The run's price snapshot, read while preparing (:class:`~upskill_hub.session.clients.RunPrices`).
    prices: RunPrices

    async def aclose(self) -> None:
        await close_all(self.opened)


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
    wanted = needs_judge(the_cases)
    gen = generation_params(o.params)
    _check_workspace_cases(
        the_cases, bool(model_specs), bool(o.agents), o.harness, tuple(o.modes or ("inject",))
    )
    if o.agents and o.shard is not None:
        raise UpskillError("agent CLIs run on this machine only: --agent cannot run on Hugging Face Jobs")
    agents = prepare_agents(list(o.agents), skill, o.harness) if o.agents else []
    modes = tuple(dict.fromkeys(o.modes or ("inject",)))
    bad = [m for m in modes if m not in MODEL_MODES]
    if bad:
        raise UpskillError(f"unknown --mode {bad[0]!r}; choose from {', '.join(MODEL_MODES)}")
    if o.max_turns < 1:
        raise UpskillError(f"--max-turns must be at least 1, got {o.max_turns}")
    catalog = build_catalogs(skill, o.distractors, BASE_SYSTEM_PROMPT) if "catalog" in modes else None

    clients = open_clients(
        model_specs, base_url, timeout=timeout, max_retries=max_retries, connections=concurrency
    )
    judges: dict[str | None, ModelClient] = {}
    # Close only the clients built here; clients passed in belong to the caller.
    opened = [c for c in clients if not any(c is s for s in model_specs)]
    try:
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
                else:  # a judge's bare name is served by --base-url, as a model's is
                    judge_spec = parse_judge_spec(spec, base_url)
                    (jc,) = open_clients([judge_spec], None, timeout=timeout, max_retries=max_retries)
                    judges[k] = jc
                    opened.append(jc)
            judge_label = client_label(judges[None])
            if judge is None:
                print(f"note: llm-rubric judged by {judge_label} (set --judge to choose)", file=sys.stderr)
        # Prices are read before anything is written: a broken price file is a clean error.
        prices = RunPrices()
        for c in clients:  # agents report their own cost, or none
            prices.price(c.provider, c.model)
    except BaseException:
        await close_all(opened)
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
    return PreparedEval(plan, judges, opened, prices)


#: The modes ``--mode`` takes for models (agent CLIs run in ``harness`` mode by themselves).
MODEL_MODES = ("inject", "catalog")


def _check_workspace_cases(
    cases: list[Case], models: bool, agents: bool, harness: HarnessOptions, modes: Sequence[str] = ("inject",)
) -> None:
    """Workspace checks and input files that are not text need an agent's workspace; ``command``
    checks may be switched off (the Space). Transcript checks need tool calls: an agent, or a
    model in ``catalog`` mode (``modes``: the model modes of the run)."""
    from upskill_hub.cases.schema import TRANSCRIPT_TYPES

    for c in cases:
        for a in c.asserts:
            if a.type in TRANSCRIPT_TYPES and models and "inject" in modes:
                raise UpskillError(
                    f"case {c.id!r}: '{a.type}' grades the tool calls an answer made, and a --model call in "
                    "inject mode makes none; evaluate it with --agent or --mode catalog"
                )
            if a.type not in WORKSPACE_TYPES:
                continue
            if a.type == "command" and not harness.allow_commands:
                raise UpskillError(f"case {c.id!r}: 'command' checks are refused here (they run shell commands)")
            if models or not agents:
                raise UpskillError(
                    f"case {c.id!r}: '{a.type}' grades an agent's workspace; evaluate it with --agent only "
                    "(a --model call has no workspace)"
                )
        if models and c.binary_files:
            raise UpskillError(
                f"case {c.id!r}: input file {c.binary_files[0]!r} is not text, and a --model call sends text "
                "only; run this skill with --agent (the file is staged in the agent's workspace)"
            )
