"""The generate loop: :func:`_run` lists its steps, each a function below it in the order it runs;
then what the loop measures (pass rates, failing train cases) and writes (the skill, generation.json)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from upskill_hub import models
from upskill_hub._util.percent import pct, points
from upskill_hub._util.redact import redact
from upskill_hub.cases import Case, SkillMeta
from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.generate.teacher import Failure, Progress, Teacher, refine_request, skill_request
from upskill_hub.models.base import ModelClient
from upskill_hub.session.clients import close_all
from upskill_hub.skill import META_FILE, SKILL_FILE, Skill, name_problem, require_skill

DEFAULT_TEACHER = models.spec.DEFAULT_TEACHER
DEFAULT_ATTEMPTS = 3
DEFAULT_NUM_CASES = 8
HOLDOUT_FRACTION = 0.25


@dataclass
class GenerateOptions:
    """Everything ``generate`` needs beyond the task (CLI flags map one to one)."""

    source: str | Path | None = None
    teacher: str | ModelClient = DEFAULT_TEACHER
    test_model: str | ModelClient | None = None
    eval_models: Sequence[str | ModelClient] = ()
    attempts: int = DEFAULT_ATTEMPTS
    num_cases: int = DEFAULT_NUM_CASES
    output_dir: str | Path = "skills"
    name: str | None = None
    force: bool = False
    runs: int = 1
    runs_dir: str | Path = "upskill-runs"
    base_url: str | None = None
    eval_base_url: str | None = None
    use_cache: bool = True
    cache_dir: str | Path | None = None
    concurrency: int | None = None
    trace_budget_tokens: int | None = None
    #: Eval progress hooks, passed to :func:`run_eval_async` (``on_start(total, done)``, ``on_row(row)``).
    on_eval_start: Callable[[int, int], None] | None = None
    on_eval_row: Callable[[Any], None] | None = None


@dataclass
class ModelScore:
    """Pass rates of one eval model on one set of cases."""

    model: str
    baseline: float | None
    with_skill: float | None
    n_cases: int
    errors: int = 0

    @property
    def lift(self) -> float | None:
        if self.baseline is None or self.with_skill is None:
            return None
        return self.with_skill - self.baseline

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "baseline": self.baseline,
            "with_skill": self.with_skill,
            "lift": self.lift,
            "n_cases": self.n_cases,
            "errors": self.errors,
        }


@dataclass
class Attempt:
    """One evaluated version of the skill (train cases only)."""

    number: int
    skill_version: str
    scores: list[ModelScore]
    run_dir: Path | None = None
    failures: int = 0

    @property
    def mean_with_skill(self) -> float:
        vals = [s.with_skill for s in self.scores if s.with_skill is not None]
        return sum(vals) / len(vals) if vals else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.number,
            "skill_version": self.skill_version,
            "failing_cases": self.failures,
            "run_dir": str(self.run_dir) if self.run_dir else None,
            "scores": [s.to_dict() for s in self.scores],
        }


@dataclass
class GenerateResult:
    """What :func:`generate_skill` produced and measured."""

    skill: Skill
    path: Path
    attempts: list[Attempt]
    best_attempt: int
    holdout: list[ModelScore] | None
    n_train: int
    n_holdout: int
    teacher: str
    report_path: Path | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.skill.name,
            "description": self.skill.description,
            "version": self.skill.version,
            "path": str(self.path),
            "teacher": self.teacher,
            "token_estimate": self.skill.token_estimate,
            "n_train_cases": self.n_train,
            "n_holdout_cases": self.n_holdout,
            "best_attempt": self.best_attempt,
            "attempts": [a.to_dict() for a in self.attempts],
            "holdout": [s.to_dict() for s in self.holdout] if self.holdout is not None else None,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class _Generation:
    """One generation under way: what its steps share (the task, the options, the models, the source)."""

    task: str
    opts: GenerateOptions
    say: Progress
    teacher: Teacher
    tester: Teacher
    eval_specs: list[str | ModelClient]
    base: Skill | None  # the skill being improved (--from a skill folder)
    trace_text: str | None  # the trace to learn from (--from a trace file), rendered
    trace_note: str

    async def evaluate(
        self, skill: Skill, cases: list[Case], *, include_baseline: bool
    ) -> tuple[Any, list[ModelScore]]:
        """One eval run of ``skill`` on ``cases`` with the eval models (no plots), and its scores."""
        from upskill_hub.lift.api import run_eval_async
        from upskill_hub.lift.prepare import EvalOptions

        opts = self.opts
        eval_opts = EvalOptions(
            runs=opts.runs, output_dir=opts.runs_dir, use_cache=opts.use_cache, cache_dir=opts.cache_dir,
            concurrency=opts.concurrency, base_url=opts.eval_base_url, plots=False,
            on_start=opts.on_eval_start, on_row=opts.on_eval_row, cases=cases, include_baseline=include_baseline,
        )  # fmt: skip
        result = await run_eval_async(skill, self.eval_specs, eval_opts)
        return result, score_rows(result.rows, result.summary.models, {c.id for c in cases})


def _spec_label(spec: str | ModelClient) -> str:
    return spec if isinstance(spec, str) else f"{spec.provider}:{spec.model}"


def _open_client(spec: str | ModelClient, base_url: str | None, created: list[ModelClient]) -> ModelClient:
    """A client passed in as is; a spec opened as a client, added to ``created`` (we close those)."""
    if not isinstance(spec, str):
        return spec
    client = models.create_client(models.preflight(spec, base_url=base_url), timeout=300.0)
    created.append(client)
    return client


async def generate_skill_async(
    task: str, options: GenerateOptions, progress: Progress | None = None
) -> GenerateResult:
    """Generate, test, evaluate and refine a skill; write it to ``output_dir/<name>/``."""
    say: Progress = progress or (lambda _msg: None)
    opts = options
    task = " ".join((task or "").split())
    _check_options(task, opts)
    # Read the source first: a bad path or trace fails before any model is touched.
    base, trace_text, trace_note = _read_source(opts, say)
    name = opts.name or (base.name if base is not None else None)
    if name is not None:
        check_dest(Path(opts.output_dir) / name, opts.force)

    teacher_label = _spec_label(opts.teacher)
    test_spec = opts.test_model if opts.test_model is not None else opts.teacher
    test_label = _spec_label(test_spec)
    eval_specs = list(opts.eval_models) or [opts.teacher]
    if not opts.eval_models and opts.eval_base_url is None:
        # Evaluating on the teacher itself: reach it where the teacher is reached.
        opts = replace(opts, eval_base_url=opts.base_url)
    # Fail fast on every model spec (unknown spec, missing key, unreachable URL).
    for s in eval_specs:
        if isinstance(s, str):
            models.preflight(s, base_url=opts.eval_base_url)
    created: list[ModelClient] = []
    teacher = tester = Teacher(_open_client(opts.teacher, opts.base_url, created), teacher_label, say)
    if test_label != teacher_label:
        tester = Teacher(_open_client(test_spec, opts.base_url, created), test_label, say)
    gen = _Generation(task, opts, say, teacher, tester, eval_specs, base, trace_text, trace_note)
    try:
        return await _run(gen, name)
    finally:
        await close_all(created)  # only the clients we opened; callers own the ones they passed in


def _check_options(task: str, opts: GenerateOptions) -> None:
    if not task:
        raise UpskillError(
            "give a task: what the skill should teach (e.g. 'write CUDA kernels with kernel-builder')"
        )
    if opts.attempts < 1:
        raise OptionError("attempts", opts.attempts, f"must be at least 1, got {opts.attempts}")
    if opts.num_cases < 1:
        raise OptionError("num_cases", opts.num_cases, f"must be at least 1, got {opts.num_cases}")
    if opts.name is not None and name_problem(opts.name):
        raise OptionError("name", opts.name, f"{opts.name!r}: {name_problem(opts.name)}")


def _read_source(opts: GenerateOptions, say: Progress) -> tuple[Skill | None, str | None, str]:
    """``--from``: a skill folder (or SKILL.md) to improve, else a trace to learn from, rendered."""
    if opts.source is None:
        return None, None, ""
    src = Path(opts.source)
    if src.is_dir() or src.name == SKILL_FILE:
        if src.is_dir() and not (src / SKILL_FILE).is_file():
            raise UpskillError(
                f"{src} is a folder without SKILL.md; --from takes a skill folder or a trace file"
            )
        return require_skill(src), None, ""
    from upskill_hub.traces import DEFAULT_BUDGET_TOKENS, load_trace, render_trace

    trace = load_trace(src)
    budget = opts.trace_budget_tokens or DEFAULT_BUDGET_TOKENS
    trace_text = render_trace(trace, budget)
    trace_note = f"{trace.format}, {len(trace.events)} events, {trace.n_errors} marked as errors"
    say(f"Read trace {src} ({trace_note})")
    return None, trace_text, trace_note


async def _run(gen: _Generation, name: str | None) -> GenerateResult:
    """The steps of one generation, in order (only the last one writes anything)."""
    draft = await _draft_skill(gen, name)
    dest = Path(gen.opts.output_dir) / draft.name
    check_dest(dest, gen.opts.force)
    cases = await _test_cases(gen, draft)
    train, holdout = _split_cases(cases, gen.say)
    meta = _generation_meta(gen, cases)
    attempts, skills = await _evaluate_and_refine(gen, _with_meta(draft, meta), meta, train)
    best_i, notes = _pick_best(attempts)
    holdout_scores, holdout_dir = await _score_holdout(gen, skills[best_i], holdout)
    result = GenerateResult(
        skills[best_i], dest, attempts, best_i + 1, holdout_scores, len(train), len(holdout), gen.teacher.label,
        notes=notes,
    )  # fmt: skip
    # generation.json goes beside the last eval run: the holdout's, else the best attempt's
    return write_result(result, holdout_dir if holdout else attempts[best_i].run_dir, gen.opts.force)


async def _draft_skill(gen: _Generation, name: str | None) -> Skill:
    """1. The teacher writes the skill: from the task, a trace, or the skill being improved."""
    gen.say(f"{'Improving' if gen.base is not None else 'Generating'} skill with {gen.teacher.label}...")
    request = skill_request(gen.task, trace_text=gen.trace_text, trace_note=gen.trace_note, base=gen.base)
    return await gen.teacher.ask_skill(request, name=name, base=gen.base, what="a skill")


async def _test_cases(gen: _Generation, draft: Skill) -> list[Case]:
    """2. The test cases, marked train or holdout: the improved skill's own if enough, else new ones."""
    existing = list(gen.base.meta.cases) if gen.base is not None else []
    if len(existing) >= min(gen.opts.num_cases, 2):
        cases = existing if any(c.split == "holdout" for c in existing) else assign_holdout(existing)
        gen.say(f"Using the {len(cases)} test cases of {gen.base.name if gen.base else draft.name}")
        return cases
    gen.say(f"Generating test cases with {gen.tester.label}...")
    return assign_holdout(await gen.tester.ask_cases(gen.task, draft, gen.opts.num_cases))


def assign_holdout(cases: Sequence[Case], fraction: float = HOLDOUT_FRACTION) -> list[Case]:
    """Mark a deterministic ~``fraction`` of cases ``holdout`` (at least one once there are 3).

    Cases are ranked by a hash of their id, not their position, so the teacher's ordering
    (often easy to hard) does not decide which ones are held out.
    """
    n = len(cases)
    k = 0 if n < 3 else max(1, round(n * fraction))
    ranked = sorted(range(n), key=lambda i: hashlib.sha256(cases[i].id.encode()).hexdigest())
    held = set(ranked[:k])
    return [replace(c, split="holdout" if i in held else "train") for i, c in enumerate(cases)]


def _split_cases(cases: list[Case], say: Progress) -> tuple[list[Case], list[Case]]:
    """3. The train cases (refinement sees them) and the holdout cases (never shown to the teacher)."""
    train = [c for c in cases if c.split != "holdout"]
    holdout = [c for c in cases if c.split == "holdout"]
    if not train:
        raise UpskillError(
            "every test case is in the holdout split; at least one train case is needed to refine"
        )
    say(f"  {len(train)} train case(s), {len(holdout)} held out (never shown to the teacher)")
    return train, holdout


def _generation_meta(gen: _Generation, cases: list[Case]) -> SkillMeta:
    """4. The skill_meta.json every version carries: the cases, and how the skill was generated."""
    extra = dict(gen.base.meta.extra) if gen.base is not None else {}
    extra["generated_by"] = {
        "tool": "upskill-hub generate",
        "task": redact(gen.task),
        "teacher": gen.teacher.label,
        "test_model": gen.tester.label,
    }
    return SkillMeta(cases=cases, extra=extra)


def _with_meta(s: Skill, meta: SkillMeta) -> Skill:
    files = {k: v for k, v in s.files.items() if k not in (SKILL_FILE, META_FILE)}
    rest = {k: v for k, v in s.frontmatter.items() if k not in ("name", "description")}
    return Skill.create(s.name, s.description, s.body, extra_frontmatter=rest, meta=meta, files=files)


async def _evaluate_and_refine(
    gen: _Generation, skill: Skill, meta: SkillMeta, train: list[Case]
) -> tuple[list[Attempt], list[Skill]]:
    """5. Evaluate on the train cases; while some fail, the teacher revises the skill from them."""
    eval_labels = ", ".join(_spec_label(s) for s in gen.eval_specs)
    attempts: list[Attempt] = []
    skills: list[Skill] = []
    baseline: dict[str, float | None] = {}
    for n in range(1, gen.opts.attempts + 1):
        gen.say(f"Evaluating on {eval_labels}... (attempt {n})")
        result, scores = await gen.evaluate(skill, train, include_baseline=(n == 1))
        if n == 1:
            baseline = {s.model: s.baseline for s in scores}
            if all(s.with_skill is None for s in scores):
                first = next((r.error for r in result.rows if r.error), "no answers")
                raise UpskillError(f"every eval call failed (e.g. {first}); see {result.run_dir}")
        for s in scores:
            s.baseline = baseline.get(s.model)
        failures = failures_from_rows(result.rows, train)
        attempts.append(Attempt(n, skill.version, scores, result.run_dir, len(failures)))
        skills.append(skill)
        _say_scores(gen.say, scores)
        if not failures or n == gen.opts.attempts:
            break
        gen.say(f"Refining skill with {gen.teacher.label} ({len(failures)} failing train case(s))...")
        request = refine_request(gen.task, skill, failures)
        refined = await gen.teacher.ask_skill(request, name=skill.name, base=skill, what="a refined skill")
        skill = _with_meta(refined, meta)
    return attempts, skills


def _pick_best(attempts: list[Attempt]) -> tuple[int, list[str]]:
    """6. The attempt with the best train score (the earliest on a tie), and a note when not the last."""
    best_i = max(range(len(attempts)), key=lambda i: (attempts[i].mean_with_skill, -i))
    if best_i != len(attempts) - 1:
        return best_i, [f"kept attempt {best_i + 1}: later refinements scored lower on the train cases"]
    return best_i, []


async def _score_holdout(
    gen: _Generation, best: Skill, holdout: list[Case]
) -> tuple[list[ModelScore] | None, Path | None]:
    """7. The honest score: the best skill on the cases the teacher never saw (and that run's folder)."""
    if not holdout:
        return None, None
    gen.say(f"Evaluating on {len(holdout)} held-out case(s)...")
    hres, scores = await gen.evaluate(best, holdout, include_baseline=True)
    _say_scores(gen.say, scores, lead="held-out ")
    return scores, hres.run_dir


def _say_scores(say: Progress, scores: list[ModelScore], lead: str = "") -> None:
    for s in scores:
        say(f"  {lead}" + format_score(s, prefix=f"{s.model}: " if len(scores) > 1 else ""))


def _rate(rows: Sequence[Any]) -> tuple[float | None, int]:
    answered = [r for r in rows if r.passed is not None]
    errors = sum(1 for r in rows if r.error)
    if not answered:
        return None, errors
    return sum(1 for r in answered if r.passed) / len(answered), errors


def score_rows(rows: Sequence[Any], models: Sequence[str], case_ids: set[str]) -> list[ModelScore]:
    """Pass rate per eval model and condition over the rows of ``case_ids``."""
    out = []
    for m in models:
        mine = [r for r in rows if r.model == m and r.case_id in case_ids]
        base, e1 = _rate([r for r in mine if r.condition == "baseline"])
        skill, e2 = _rate([r for r in mine if r.condition == "with_skill"])
        out.append(ModelScore(m, base, skill, len(case_ids), e1 + e2))
    return out


def failures_from_rows(rows: Sequence[Any], cases: Sequence[Case]) -> list[Failure]:
    """One :class:`Failure` per failing with-skill case (first failing row of each)."""
    by_id = {c.id: c for c in cases}
    seen: set[str] = set()
    out: list[Failure] = []
    for r in rows:
        if r.condition == "with_skill" and r.passed is False and r.case_id in by_id and r.case_id not in seen:
            seen.add(r.case_id)
            checks = []
            try:
                details = json.loads(r.assertion_details or "[]")
            except json.JSONDecodeError:
                details = []
            for d in details:
                if not d.get("passed"):
                    value = (
                        json.dumps(d.get("value"), ensure_ascii=False) if d.get("value") is not None else ""
                    )
                    checks.append(f"{d.get('type')} {value}: {d.get('evidence', '')}".strip())
            out.append(Failure(r.case_id, by_id[r.case_id].input, checks, r.output or ""))
    return out


def format_score(s: ModelScore, prefix: str = "") -> str:
    """``60% -> 95% (+35%)`` like upskill prints it."""
    if s.lift is None:
        return f"{prefix}with skill {pct(s.with_skill)} ({s.n_cases} cases)"
    return f"{prefix}{pct(s.baseline)} -> {pct(s.with_skill)} ({points(s.lift, unit='%')})"


def check_dest(dest: Path, force: bool) -> None:
    """Refuse, before any model call, a destination that is there, a dangling symlink included.

    ``lexists``: ``exists`` follows a symlink, so a link to nothing would be replaced without ``--force``.
    """
    if os.path.lexists(dest) and not force:
        raise UpskillError(
            f"{dest} already exists; pass --force to replace it (or -o/--name to write elsewhere)"
        )


def write_result(result: GenerateResult, report_dir: Path | None, force: bool) -> GenerateResult:
    """Write the skill atomically to ``result.path``, then ``generation.json`` into ``report_dir``."""
    check_dest(result.path, force)
    try:
        result.skill.write(result.path, overwrite=force)
    except FileExistsError:
        raise UpskillError(f"{result.path} already exists; pass --force to replace it") from None
    except OSError as exc:
        raise UpskillError(f"cannot write {result.path}: {exc.strerror or exc}") from None
    if report_dir is not None:
        report = Path(report_dir) / "generation.json"
        report.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
        result.report_path = report
    return result


def generate_skill(task: str, options: GenerateOptions, progress: Progress | None = None) -> GenerateResult:
    """Synchronous :func:`generate_skill_async` (safe inside a running loop: uses a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(generate_skill_async(task, options, progress))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(generate_skill_async(task, options, progress))).result()
