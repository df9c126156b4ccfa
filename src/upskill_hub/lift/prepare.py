"""Before the first call: check an eval's options, cases and models, and build its plan.

Shared by :func:`upskill_hub.lift.api.run_eval_async` and the Jobs launcher, which plans a
run here and runs it elsewhere: both must plan the very same calls with the very same
fingerprint, and bad input must fail here, as one line, before anything is written or paid.
"""

from __future__ import annotations

import os
import re
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
    check_cases(the_cases, bool(model_specs), o)
    wanted = needs_judge(the_cases)
    gen = generation_params(o.params)
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
                raise UpskillError(
                    "llm-rubric assertions need a judge: pass --judge MODEL (agents cannot judge)"
                )
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


def check_cases(cases: list[Case], models: bool, o: EvalOptions) -> None:
    """What a run's options refuse in its cases (a judge needed, a workspace, tool calls), in one line.

    Also called for every skill of an agent-skills-eval project before its first skill runs,
    so a refusal in the last skill does not come after the first ones were paid for.
    """
    if o.judge is None and requires_explicit_judge(cases):
        raise UpskillError(
            "these tests grade natural-language assertions (agentskills.io evals.json or upskill judge "
            "criteria): pass --judge MODEL to grade them (they are never skipped)"
        )
    _check_workspace_cases(cases, models, bool(o.agents), o.harness, tuple(o.modes or ("inject",)))


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
                raise UpskillError(
                    f"case {c.id!r}: 'command' checks are refused here (they run shell commands)"
                )
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


#: agent-skills-eval's config file at the root of a project (darkrishabh/agent-skills-eval,
#: followed at commit b60eebe3c6edaa917a284e13b9b0e9fa00f1c957: ``src/config.ts``,
#: ``src/discover.ts``, ``src/cli.ts``). ``eval ROOT`` reads it when ROOT holds one.
SKILLS_EVAL_CONFIG = "agent-skills-eval.yaml"
#: Folders agent-skills-eval's discovery never enters.
_SKIPPED_DIRS = frozenset({"node_modules", ".git", "dist", ".next"})
#: Folders visited while looking for skills under a root, at most (a bounded walk).
MAX_ROOT_DIRS = 10_000
#: Keys that only shape agent-skills-eval's own artifacts and logs: read, checked, not used
#: (upskill-hub writes its run folders and its report); named in one note.
_OUTPUT_ONLY_KEYS = ("layout", "report", "logging")
_KNOWN_KEYS = frozenset({
    "root", "workspace", "baseline", "target", "judge", "baseUrl", "apiKeyEnv", "include", "exclude",
    "concurrency", "strict", "targetParams", "judgeParams", *_OUTPUT_ONLY_KEYS,
})  # fmt: skip
#: The hosts whose API takes the user's OPENAI_API_KEY (agent-skills-eval's default apiKeyEnv).
_OPENAI_HOSTS = frozenset({"api.openai.com"})


@dataclass(frozen=True)
class SkillsEvalRoot:
    """An agent-skills-eval project: its ``agent-skills-eval.yaml`` read into upskill-hub's terms.

    Built by :func:`load_skills_eval_root` before any call; every key is honoured, read
    without effect on the figures (``layout``, ``report``, ``logging``: see :attr:`notes`), or
    refused in one line.
    """

    config: Path
    #: The skill folders to run, as agent-skills-eval finds them: SKILL.md folders under
    #: ``root`` that hold ``evals/evals.json``, filtered by ``include``/``exclude``, in path order.
    skills: tuple[Path, ...]
    #: Model and judge specs (``target``/``judge`` served at ``baseUrl``), None when absent.
    target: str | None
    judge: str | None
    #: agent-skills-eval runs the no-skill baseline only with ``baseline: true``.
    baseline: bool
    concurrency: int | None
    #: Where run folders go (``workspace``), None when absent.
    workspace: Path | None
    #: ``targetParams`` as generation parameters.
    params: dict[str, Any]
    strict: bool
    notes: tuple[str, ...] = ()


def find_skills_eval_config(root: Path) -> Path | None:
    """``root/agent-skills-eval.yaml`` when ``root`` is an agent-skills-eval project folder."""
    p = Path(root) / SKILLS_EVAL_CONFIG
    return p if p.is_file() else None


def load_skills_eval_root(path: Path, *, models_given: bool = False) -> SkillsEvalRoot:
    """Read, check and resolve an ``agent-skills-eval.yaml``; a problem is one :class:`UpskillError` line.

    Paths (``root``, ``workspace``) are taken relative to the file's folder (agent-skills-eval
    takes them relative to the working folder, which is that folder when run as its README
    shows) and must stay inside it: a config from someone else's repository writes nowhere else.
    ``models_given``: ``--model`` replaces ``target``, so a ``target`` is then not required.
    """
    from upskill_hub._util import safeyaml
    from upskill_hub._util.fsutil import FileRefused, read_capped
    from upskill_hub._util.limits import MAX_CONFIG_BYTES
    from upskill_hub.cases import dialects

    shown = str(path)
    try:
        text = read_capped(path, MAX_CONFIG_BYTES).decode("utf-8-sig")
        raw = safeyaml.load(text) if text.strip() else {}
    except FileRefused as exc:
        raise UpskillError(f"{shown}: {exc.problem}") from None
    except UnicodeDecodeError:
        raise UpskillError(f"{shown}: not valid UTF-8") from None
    except Exception as exc:  # yaml.YAMLError and its limits: one line, no traceback
        first = " ".join(str(exc).split())[:200]
        raise UpskillError(f"{shown}: not valid YAML ({first})") from None
    if not isinstance(raw, dict):
        raise UpskillError(f"{shown}: must be a mapping of agent-skills-eval options")

    def bad(key: str, why: str) -> UpskillError:
        return UpskillError(f"{shown}: {key}: {why}")

    unknown = [k for k in raw if k not in _KNOWN_KEYS]
    if unknown:
        name = " ".join(str(unknown[0]).split())[:60]
        raise bad(
            repr(name), f"not an option upskill-hub can honour (it reads {', '.join(sorted(_KNOWN_KEYS))})"
        )

    def text_of(key: str) -> str | None:
        v = raw.get(key)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise bad(key, "must be a non-empty string")
        return v

    def flag(key: str) -> bool | None:
        v = raw.get(key)
        if v is not None and not isinstance(v, bool):
            raise bad(key, "must be true or false")
        return v

    def globs(key: str) -> list[str]:
        v = raw.get(key)
        if v is None:
            return []
        if not isinstance(v, list) or not all(isinstance(g, str) and g for g in v) or len(v) > 256:
            raise bad(key, "must be a list of (at most 256) glob strings")
        return v

    folder = path.absolute().parent

    def inside(key: str, default: str | None) -> Path | None:
        rel = text_of(key) or default
        if rel is None:
            return None
        p = Path(os.path.normpath(folder / rel))
        if p != folder and folder not in p.parents:
            raise bad(key, f"{rel!r} leaves the folder of {SKILLS_EVAL_CONFIG}; give a path inside it")
        return p

    root = inside("root", ".")
    workspace = inside("workspace", None)
    _check_output_only(raw, bad)
    concurrency = raw.get("concurrency")
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise bad("concurrency", "must be a whole number of at least 1")
    try:
        params = dialects.strict_params(raw.get("targetParams"), "targetParams")
    except CasesError as exc:
        raise UpskillError(f"{shown}: {exc.field}: {exc.message}") from None
    judge_params = raw.get("judgeParams") or {}
    if not isinstance(judge_params, dict) or any(
        k != "temperature" or v != 0 or isinstance(v, bool) for k, v in judge_params.items()
    ):
        raise bad(
            "judgeParams",
            "the judge always runs at temperature 0 here; only {temperature: 0} can be honoured",
        )
    target, judge = text_of("target"), text_of("judge")
    base_url, key_env = text_of("baseUrl"), text_of("apiKeyEnv")
    if target is None and not models_given:
        raise bad("target", "missing: name the target model here or pass --model")
    target_spec = _served(target, base_url, key_env, bad) if target else None
    judge_spec = _served(judge, base_url, key_env, bad) if judge else target_spec
    assert root is not None
    if not root.is_dir():
        raise bad("root", f"{text_of('root') or '.'!r} is not a folder")
    skills = discover_skills_eval_skills(root, globs("include"), globs("exclude"))
    if not skills:
        raise UpskillError(f"{shown}: no skill with evals/evals.json under {root} (after include/exclude)")
    used = [k for k in _OUTPUT_ONLY_KEYS if k in raw]
    notes = (
        (f"{shown}: {', '.join(used)} shape agent-skills-eval's own artifacts and logs; "
         "upskill-hub writes its run folders and report instead",) if used else ()
    )  # fmt: skip
    return SkillsEvalRoot(
        config=path, skills=tuple(skills), target=target_spec, judge=judge_spec,
        baseline=bool(flag("baseline")), concurrency=concurrency, workspace=workspace, params=params,
        strict=bool(flag("strict")), notes=notes,
    )  # fmt: skip


def _check_output_only(raw: dict[str, Any], bad: Callable[[str, str], UpskillError]) -> None:
    """``layout``, ``report``, ``logging`` checked as agent-skills-eval checks them (then not used)."""
    if raw.get("layout") not in (None, "flat", "iteration"):
        raise bad("layout", 'must be "flat" or "iteration"')
    report = raw.get("report")
    if report is not None and not isinstance(report, (bool, dict)):
        raise bad("report", "must be true, false or a mapping (enabled, title, output)")
    logging = raw.get("logging")
    if logging is not None and not isinstance(logging, dict):
        raise bad("logging", "must be a mapping (format, verbose, color, snippetLength, file)")
    if isinstance(logging, dict) and logging.get("format") not in (None, "pretty", "jsonl", "silent"):
        raise bad("logging.format", 'must be "pretty", "jsonl", or "silent"')


def _served(
    model: str, base_url: str | None, key_env: str | None, bad: Callable[[str, str], UpskillError]
) -> str:
    """A model spec for agent-skills-eval's OpenAI-compatible provider: ``model`` at ``baseUrl``.

    The key goes where upskill-hub sends keys: OPENAI_API_KEY only to OpenAI's API, any other
    endpoint's from UPSKILL_API_KEY (so a config from someone else's repository cannot send the
    user's OpenAI key to its own server). An ``apiKeyEnv`` that would need otherwise is refused.
    """
    from urllib.parse import urlparse

    if any(c.isspace() for c in model):
        raise bad("target", f"model name {model[:60]!r} contains whitespace")
    if base_url is None:  # agent-skills-eval falls back on OPENAI_BASE_URL, as the openai SDK does
        openai = True
    else:
        parsed = urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise bad("baseUrl", f"{base_url[:80]!r} is not an http(s) URL")
        openai = parsed.hostname in _OPENAI_HOSTS
    wanted = "OPENAI_API_KEY" if openai else "UPSKILL_API_KEY"
    if key_env is not None and key_env != wanted:
        raise bad(
            "apiKeyEnv",
            f"{key_env[:60]!r} cannot be honoured: upskill-hub reads the key for "
            f"{'OpenAI' if openai else base_url[:80] if base_url else 'this endpoint'} from {wanted}; "
            "put it there and drop apiKeyEnv",
        )
    if openai:
        return f"openai:{model}"  # OpenAI's API (or OPENAI_BASE_URL, as agent-skills-eval reads it)
    return f"openai-compatible:{model}@{base_url}"


def discover_skills_eval_skills(root: Path, include: Sequence[str], exclude: Sequence[str]) -> list[Path]:
    """The skill folders agent-skills-eval's ``discoverSkills`` finds under ``root``, with evals.

    A folder holding SKILL.md is a skill (nothing under it is searched); ``node_modules``,
    ``.git``, ``dist`` and ``.next`` are skipped; ``include``/``exclude`` globs match the
    skill's path relative to ``root`` (``*`` within a segment, ``**`` across them); only
    skills with ``evals/evals.json`` run. Symlinked folders are not followed, and at most
    :data:`MAX_ROOT_DIRS` folders are visited.
    """
    inc = [_glob_re(g) for g in include]
    exc = [_glob_re(g) for g in exclude]
    found: list[tuple[str, Path]] = []
    stack, visited = [root], 0
    while stack:
        d = stack.pop()
        visited += 1
        if visited > MAX_ROOT_DIRS:
            raise UpskillError(
                f"{root}: more than {MAX_ROOT_DIRS:,} folders to search for skills; point root at the skills"
            )
        rel = d.relative_to(root).as_posix() if d != root else ""
        if (d / "SKILL.md").is_file():
            if any(r.fullmatch(rel) for r in exc) or (inc and not any(r.fullmatch(rel) for r in inc)):
                continue
            if (d / "evals" / "evals.json").is_file():
                found.append((rel, d))
            continue
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        stack.extend(
            Path(e.path) for e in reversed(entries)
            if e.name not in _SKIPPED_DIRS and e.is_dir(follow_symlinks=False)
        )  # fmt: skip
    return [p for _, p in sorted(found)]


def _glob_re(pattern: str) -> re.Pattern[str]:
    """agent-skills-eval's glob: ``**`` any characters, ``*`` any but ``/``, the rest literal."""
    parts = pattern.replace("\\", "/").split("**")
    return re.compile(".*".join("[^/]*".join(re.escape(s) for s in p.split("*")) for p in parts))
