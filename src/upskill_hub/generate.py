"""Generate a skill with a teacher model: write it, write its tests, evaluate, refine.

The loop (what ``upskill-hub generate`` runs)::

    task (+ trace | existing skill) --teacher--> SKILL.md (+ references/)
                                    --test model--> test cases (skill_meta.json schema)
    cases --split--> train (refinement sees these)  |  holdout (never shown to the teacher)
    repeat up to N attempts:
        evaluate the skill on the train cases (with_skill vs baseline, via upskill_hub.lift)
        all pass -> stop; else the teacher revises the skill from the failing train cases
    evaluate the best skill on the holdout cases -> the honest score
    write the skill atomically to OUT/<name>/

Why a holdout: refinement optimises the skill against its failures, so the train score
goes up by construction; only cases the teacher never saw say whether the skill helps.
The refine prompt is built from train rows only, and the skill files shown to the teacher
never include ``skill_meta.json`` (which holds the holdout inputs).

Teacher output is parsed defensively (``<file path=...>`` blocks, a fenced block, or bare
frontmatter for skills; a JSON object or fenced JSON for tests) and validated with the
same code as ``skills validate``; a malformed answer is sent back with the problems for
another try, and after the retries a one-line :class:`UpskillError` says what was wrong.
Nothing is written until the end, and then atomically: never a half skill.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import math
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from upskill_hub._util import safejson
from upskill_hub._util.percent import pct, points
from upskill_hub._util.redact import redact
from upskill_hub.cases import Case, CasesError, SkillMeta, parse_meta
from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.models import spec as _spec
from upskill_hub.models.base import GenerationParams, Message, ModelCallError, ModelClient
from upskill_hub.skill import (
    META_FILE,
    RESOURCE_DIRS,
    SKILL_FILE,
    SPEC_KEYS,
    FrontmatterError,
    Skill,
    load_skill,
    name_problem,
    split_frontmatter,
)

DEFAULT_TEACHER = _spec.DEFAULT_TEACHER
DEFAULT_ATTEMPTS = 3
DEFAULT_NUM_CASES = 8
HOLDOUT_FRACTION = 0.25
#: Extra tries when the teacher's answer cannot be parsed or is not a valid skill / test set.
FORMAT_RETRIES = 2
TEACHER_SKILL_PARAMS = GenerationParams(temperature=0.0, max_tokens=8192)
TEACHER_TESTS_PARAMS = GenerationParams(temperature=0.0, max_tokens=4096)
#: How many failing cases (and how much of each answer) a refine prompt shows.
MAX_FAILURES_SHOWN = 8
MAX_ANSWER_CHARS = 1500

Progress = Callable[[str], None]

SKILL_SYSTEM_PROMPT = """\
You write Agent Skills: folders of instructions that another AI agent loads into its context \
to do a kind of task better. A skill is SKILL.md (YAML frontmatter + Markdown body) plus optional \
reference files.

Rules (the Agent Skills specification):
- Frontmatter keys: name (1-64 characters: lowercase a-z, 0-9 and single hyphens, no leading or \
trailing hyphen; it is also the folder name), description (1-1024 characters saying what the skill \
does AND when to use it, with the terms a user would mention), optional license, optional metadata \
(a map of string to string). No other keys.
- Body: concise and actionable. The workflow step by step; the exact commands, configuration, \
code and values that work; the facts a capable model would not know or would get wrong (names, \
versions, numbers, formats); pitfalls and how to check the result. Concrete examples beat prose. \
Skip generic advice the agent already knows. Stay under 500 lines; put long details in \
references/<topic>.md files and point to them from the body.

Answer with the files only, each wrapped exactly like this (paths relative to the skill folder; \
only SKILL.md and files under references/, scripts/ or assets/):
<file path="SKILL.md">
---
name: example-skill
description: What it does. Use when ...
---
# Title
...
</file>
<file path="references/topic.md">
...
</file>
"""

TESTS_SYSTEM_PROMPT = """\
You write test cases that measure whether an AI assistant has the knowledge a skill teaches. \
Each case is a realistic, self-contained request a user would send (never mention "the skill") \
plus checks on the answer. A check must pass for a correct expert answer however it is phrased \
and fail for a plausible but generic or wrong answer: check specific facts, names, values, \
commands and API calls, not wording. Use a few small checks per case.

Assertion types: contains / icontains (a string or a list of strings that must all appear; \
icontains ignores case), contains-any (a list; one must appear), not-contains (a string or list \
that must not appear: use it for common mistakes), regex (a Python regular expression that must \
match), starts-with, equals, is-json (no value), json-schema (value: a JSON Schema). Do not use \
llm-rubric.

Reply with one JSON object in a ```json block:
{"cases": [{"id": "short-kebab-id", "input": "the request", \
"assert": [{"type": "contains", "value": "..."}]}]}
"""


# ----------------------------------------------------------------------------- results
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


# ----------------------------------------------------------------------------- parsing teacher output
_FILE_BLOCK_RE = re.compile(r"<file\s+path\s*=\s*[\"']([^\"'>]+)[\"']\s*>\n?(.*?)\n?[ \t]*</file>", re.DOTALL)
_FENCE_OPEN_RE = re.compile(r"^(`{3,}|~{3,})[ \t]*([\w+-]*)[ \t]*$")


def _outer_fenced(text: str) -> str | None:
    """The content of a fenced block that holds a whole SKILL.md (inner fences allowed).

    A SKILL.md usually contains code fences itself, so the block ends at the LAST line that
    closes the opening fence, not the first.
    """
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _FENCE_OPEN_RE.match(line.strip())
        if not m or m.group(2).lower() not in ("", "markdown", "md", "yaml"):
            continue
        nxt = next((ln for ln in lines[i + 1 :] if ln.strip()), "")
        if nxt.strip() != "---":
            continue
        fence = m.group(1)
        for j in range(len(lines) - 1, i, -1):
            if lines[j].strip() == fence:
                return "\n".join(lines[i + 1 : j])
    return None


def _bare_frontmatter(text: str) -> str | None:
    """SKILL.md text that starts at a ``---`` line followed (soon) by ``name:``."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "---" and any(ln.startswith("name:") for ln in lines[i + 1 : i + 6]):
            return "\n".join(lines[i:]).rstrip().removesuffix("```").rstrip() + "\n"
    return None


def extract_skill_files(text: str) -> dict[str, str]:
    """The files in a teacher answer: ``<file path>`` blocks, else one SKILL.md found loosely."""
    text = text.replace("\r\n", "\n")
    files: dict[str, str] = {}
    for m in _FILE_BLOCK_RE.finditer(text):
        path = m.group(1).strip().removeprefix("./")
        files[path] = m.group(2).strip("\n") + "\n"
    if files:
        return files
    found = _outer_fenced(text) or _bare_frontmatter(text)
    return {SKILL_FILE: found} if found else {}


def _slug(name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return re.sub(r"-{2,}", "-", s)[:64].strip("-")


def build_skill(
    files: dict[str, str],
    *,
    name: str | None = None,
    meta: SkillMeta | None = None,
    keep: dict[str, bytes] | None = None,
) -> tuple[Skill | None, list[str]]:
    """Turn teacher files into a validated :class:`Skill`, or return the problems found.

    ``name`` (from ``--name`` or the skill being improved) wins over the teacher's. A
    name that is only badly formatted is slugified; frontmatter keys outside the spec are
    dropped so the result passes ``skills validate --strict``. ``keep`` holds files the
    teacher never saw (binary assets of a skill being improved): they are carried over.
    A ``skill_meta.json`` in the answer is ignored: test cases come from the test step.
    """
    if SKILL_FILE not in files:
        return None, ['no SKILL.md found: wrap each file in <file path="...">...</file>']
    problems: list[str] = []
    extra_files: dict[str, bytes] = dict(keep or {})
    for rel, text in files.items():
        if rel in (SKILL_FILE, META_FILE):
            continue
        parts = rel.split("/")
        if (
            len(parts) < 2
            or parts[0] not in RESOURCE_DIRS
            or any(p in ("", ".", "..") for p in parts)
            or "\\" in rel
        ):
            problems.append(
                f"file {rel!r}: only SKILL.md and files under references/, scripts/ or assets/ are allowed"
            )
            continue
        extra_files[rel] = text.encode("utf-8")
    try:
        fm, body = split_frontmatter(files[SKILL_FILE])
    except FrontmatterError as exc:
        return None, problems + [f"SKILL.md: {exc.field}: {exc.message}"]
    fm = {k: v for k, v in fm.items() if k in SPEC_KEYS}
    if name is not None:
        fm["name"] = name
    elif isinstance(fm.get("name"), str) and name_problem(fm["name"]):
        fm["name"] = _slug(fm["name"])
    if not isinstance(fm.get("name"), str) or not fm.get("name"):
        return None, problems + ["SKILL.md: name: missing (required)"]
    if not isinstance(fm.get("description"), str) or not fm["description"].strip():
        return None, problems + ["SKILL.md: description: missing or empty (required)"]
    if not body.strip():
        problems.append("SKILL.md: body: no instructions after the frontmatter")
    if problems:
        return None, problems
    rest = {k: v for k, v in fm.items() if k not in ("name", "description")}
    try:
        skill = Skill.create(
            fm["name"], fm["description"].strip(), body, extra_frontmatter=rest, meta=meta, files=extra_files
        )
    except UpskillError as exc:  # unsafe path caught while rendering
        return None, [str(exc)]
    # Validate exactly as `skills validate --strict` would, in a scratch folder.
    with tempfile.TemporaryDirectory(prefix="upskill-gen-") as tmp:
        where = Path(tmp) / skill.name
        try:
            skill.write(where)
        except (UpskillError, OSError) as exc:
            return None, [f"cannot write the skill: {exc}"]
        res = load_skill(where, strict=True)
    errors = [f"{p.field}: {p.message}" for p in res.errors]
    if errors:
        return None, errors
    return skill, []


def _extract_json(text: str) -> Any:
    from upskill_hub.lift.assertions import extract_json

    found = extract_json(text)
    if found is not None:
        return found[0]
    start, end = text.find("{"), text.rfind("}")  # JSON with chatter around it, no fence
    if 0 <= start < end:
        try:
            # The teacher's answer is untrusted text: bounded nesting, like every JSON we parse.
            return safejson.loads(text[start : end + 1])
        except ValueError:  # JSONDecodeError or JSONTooDeep
            return None
    return None


def parse_cases(text: str, *, min_cases: int = 1) -> tuple[list[Case] | None, list[str]]:
    """Test cases from a teacher answer (our schema, upskill's, or a plain list)."""
    data = _extract_json(text)
    if data is None:
        return None, ['no JSON found: reply with {"cases": [...]} in a ```json block']
    try:
        meta = parse_meta(data)
    except CasesError as exc:
        return None, [f"{exc.field}: {exc.message}"]
    if len(meta.cases) < min_cases:
        return None, [f"only {len(meta.cases)} test case(s); write at least {min_cases}"]
    return meta.cases, []


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


# ----------------------------------------------------------------------------- prompts
def hidden_files(skill: Skill) -> dict[str, bytes]:
    """Files :func:`render_skill_files` cannot show the teacher (not UTF-8 text)."""
    out = {}
    for rel, data in skill.files.items():
        if rel in (SKILL_FILE, META_FILE):
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            out[rel] = data
    return out


def render_skill_files(skill: Skill) -> str:
    """The skill's text files in the ``<file>`` format. ``skill_meta.json`` is never included:
    it holds the test cases, and the holdout inputs must never reach the teacher."""
    parts = []
    for rel in sorted(skill.files, key=lambda r: (r != SKILL_FILE, r)):
        if rel == META_FILE:
            continue
        try:
            text = skill.files[rel].decode("utf-8")
        except UnicodeDecodeError:
            continue
        parts.append(f'<file path="{rel}">\n{text.rstrip()}\n</file>')
    return "\n".join(parts)


def skill_request(
    task: str, *, trace_text: str | None = None, trace_note: str = "", base: Skill | None = None
) -> str:
    """The first message to the teacher: from a task, a trace, or an existing skill."""
    if base is not None:
        return (
            f"Improve the existing skill below. Requested change: {task}\n\n"
            "Keep what already works and the same name; return every file of the improved skill "
            "(unchanged ones too).\n\n" + render_skill_files(base)
        )
    if trace_text is not None:
        return (
            f"Task: {task}\n\nBelow is an exported trace of an agent session working on this task "
            f"({trace_note}). Extract what made it succeed and what went wrong and was fixed, and write a "
            "skill so that a future agent gets it right the first time.\n\n"
            f"<trace>\n{trace_text}\n</trace>"
        )
    return f"Task: {task}\n\nWrite a skill that teaches an agent to do this task well."


def tests_request(task: str, skill: Skill, n: int) -> str:
    return (
        f"The skill is for this task: {task}\n\nThe skill:\n{render_skill_files(skill)}\n\n"
        f"Write exactly {n} test cases with distinct ids that a model WITH this knowledge passes and a "
        "model without it is likely to fail."
    )


@dataclass(frozen=True)
class Failure:
    """A train case the skill did not get the eval model to pass."""

    case_id: str
    input: str
    failed_checks: list[str]
    answer: str


def refine_request(task: str, skill: Skill, failures: Sequence[Failure]) -> str:
    """Ask for a revised skill from TRAIN failures only (callers never pass holdout rows)."""
    blocks = []
    for i, f in enumerate(failures[:MAX_FAILURES_SHOWN], start=1):
        checks = "\n".join(f"- {c}" for c in f.failed_checks) or "- (the call failed)"
        answer = f.answer if len(f.answer) <= MAX_ANSWER_CHARS else f.answer[:MAX_ANSWER_CHARS] + " [...]"
        blocks.append(
            f'<failure n="{i}">\nRequest: {f.input}\nFailed checks:\n{checks}\n'
            f"Answer given (with the skill):\n{answer}\n</failure>"
        )
    more = (
        f"\n({len(failures) - MAX_FAILURES_SHOWN} more failing cases not shown.)"
        if len(failures) > MAX_FAILURES_SHOWN
        else ""
    )
    return (
        f"Revise this skill (task: {task}). With it, an assistant still fails the checks below. "
        "Teach the underlying knowledge (facts, exact names, formats, commands) in general form so any "
        "similar request is answered correctly; do not copy the requests or tailor the skill to them. "
        "Keep the same name and everything that already works; return every file.\n\n"
        f"{render_skill_files(skill)}\n\nFailures:\n" + "\n".join(blocks) + more
    )


# ----------------------------------------------------------------------------- teacher calls
async def _ask(
    client: ModelClient,
    label: str,
    system: str,
    request: str,
    params: GenerationParams,
    parse: Callable[[str], tuple[Any, list[str]]],
    what: str,
    progress: Progress,
) -> Any:
    """Ask the teacher; on unusable output send the problems back, up to FORMAT_RETRIES times."""
    messages = [Message("user", request)]
    problems: list[str] = []
    for attempt in range(FORMAT_RETRIES + 1):
        try:
            completion = await client.complete(system, messages, params)
        except ModelCallError as exc:
            raise UpskillError(f"teacher model {label} failed while writing {what}: {exc}") from None
        result, problems = parse(completion.text)
        if result is not None:
            return result
        if attempt < FORMAT_RETRIES:
            progress(f"  teacher output unusable ({problems[0]}); asking again")
            messages += [
                Message("assistant", completion.text),
                Message(
                    "user",
                    "Your answer could not be used:\n"
                    + "\n".join(f"- {p}" for p in problems[:10])
                    + "\nAnswer again, in exactly the required format.",
                ),
            ]
    raise UpskillError(
        f"teacher model {label} did not return {what} in the required format after "
        f"{FORMAT_RETRIES + 1} tries: {problems[0] if problems else 'unusable output'}"
    )


# ----------------------------------------------------------------------------- scoring
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
        if (
            r.condition != "with_skill"
            or r.passed is not False
            or r.case_id in seen
            or r.case_id not in by_id
        ):
            continue
        seen.add(r.case_id)
        checks = []
        try:
            details = json.loads(r.assertion_details or "[]")
        except json.JSONDecodeError:
            details = []
        for d in details:
            if not d.get("passed"):
                value = json.dumps(d.get("value"), ensure_ascii=False) if d.get("value") is not None else ""
                checks.append(f"{d.get('type')} {value}: {d.get('evidence', '')}".strip())
        out.append(Failure(r.case_id, by_id[r.case_id].input, checks, r.output or ""))
    return out


# ----------------------------------------------------------------------------- the loop
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


def _spec_label(spec: str | ModelClient) -> str:
    return spec if isinstance(spec, str) else f"{spec.provider}:{spec.model}"


def _open_client(spec: str | ModelClient, base_url: str | None) -> ModelClient:
    if not isinstance(spec, str):
        return spec
    from upskill_hub import models

    parsed = models.preflight(spec, base_url=base_url)
    return models.create_client(parsed, timeout=300.0)


def _check_dest(dest: Path, force: bool) -> None:
    if dest.exists() and not force:
        raise UpskillError(
            f"{dest} already exists; pass --force to replace it (or -o/--name to write elsewhere)"
        )


async def generate_skill_async(
    task: str, options: GenerateOptions, progress: Progress | None = None
) -> GenerateResult:
    """Generate, test, evaluate and refine a skill; write it to ``output_dir/<name>/``."""
    say: Progress = progress or (lambda _msg: None)
    opts = options
    task = " ".join((task or "").split())
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
    out_dir = Path(opts.output_dir)

    # Read the source first: a bad path or trace fails before any model is touched.
    base: Skill | None = None
    trace_text: str | None = None
    trace_note = ""
    if opts.source is not None:
        src = Path(opts.source)
        if src.is_dir() or src.name == SKILL_FILE:
            from upskill_hub.skill import require_skill

            if src.is_dir() and not (src / SKILL_FILE).is_file():
                raise UpskillError(
                    f"{src} is a folder without SKILL.md; --from takes a skill folder or a trace file"
                )
            base = require_skill(src)
        else:
            from upskill_hub.traces import DEFAULT_BUDGET_TOKENS, load_trace, render_trace

            trace = load_trace(src)
            budget = opts.trace_budget_tokens or DEFAULT_BUDGET_TOKENS
            trace_text = render_trace(trace, budget)
            trace_note = f"{trace.format}, {len(trace.events)} events, {trace.n_errors} marked as errors"
            say(f"Read trace {src} ({trace_note})")
    name = opts.name or (base.name if base is not None else None)
    if name is not None:
        _check_dest(out_dir / name, opts.force)

    teacher_label = _spec_label(opts.teacher)
    test_spec = opts.test_model if opts.test_model is not None else opts.teacher
    test_label = _spec_label(test_spec)
    eval_specs = list(opts.eval_models) or [opts.teacher]
    if not opts.eval_models and opts.eval_base_url is None:
        # Evaluating on the teacher itself: reach it where the teacher is reached.
        opts = replace(opts, eval_base_url=opts.base_url)
    # Fail fast on every model spec (unknown spec, missing key, unreachable URL).
    if any(isinstance(s, str) for s in eval_specs):
        from upskill_hub import models

        for s in eval_specs:
            if isinstance(s, str):
                models.preflight(s, base_url=opts.eval_base_url)
    created: list[ModelClient] = []
    teacher = _open_client(opts.teacher, opts.base_url)
    if teacher is not opts.teacher:
        created.append(teacher)
    tester = teacher
    if test_label != teacher_label:
        tester = _open_client(test_spec, opts.base_url)
        if tester is not test_spec:
            created.append(tester)
    try:
        return await _run(
            task,
            opts,
            say,
            base,
            trace_text,
            trace_note,
            name,
            out_dir,
            teacher,
            teacher_label,
            tester,
            test_label,
            eval_specs,
        )
    finally:
        for c in created:  # only the clients we opened; callers own the ones they passed in
            with contextlib.suppress(Exception):
                await c.aclose()


async def _run(
    task: str,
    opts: GenerateOptions,
    say: Progress,
    base: Skill | None,
    trace_text: str | None,
    trace_note: str,
    name: str | None,
    out_dir: Path,
    teacher: ModelClient,
    teacher_label: str,
    tester: ModelClient,
    test_label: str,
    eval_specs: list[str | ModelClient],
) -> GenerateResult:
    from upskill_hub.lift.api import run_eval_async
    from upskill_hub.lift.prepare import EvalOptions

    # 1. the skill
    verb = "Improving" if base is not None else "Generating"
    say(f"{verb} skill with {teacher_label}...")
    request = skill_request(task, trace_text=trace_text, trace_note=trace_note, base=base)
    keep = hidden_files(base) if base is not None else {}
    draft: Skill = await _ask(
        teacher,
        teacher_label,
        SKILL_SYSTEM_PROMPT,
        request,
        TEACHER_SKILL_PARAMS,
        lambda text: build_skill(extract_skill_files(text), name=name, keep=keep),
        "a skill",
        say,
    )
    name = draft.name
    dest = out_dir / name
    _check_dest(dest, opts.force)

    # 2. the tests (kept from the skill being improved when it has enough)
    notes: list[str] = []
    existing = list(base.meta.cases) if base is not None else []
    if len(existing) >= min(opts.num_cases, 2):
        cases = existing if any(c.split == "holdout" for c in existing) else assign_holdout(existing)
        say(f"Using the {len(cases)} test cases of {base.name if base else name}")
    else:
        say(f"Generating test cases with {test_label}...")
        min_cases = max(1, math.ceil(opts.num_cases / 2))
        raw: list[Case] = await _ask(
            tester,
            test_label,
            TESTS_SYSTEM_PROMPT,
            tests_request(task, draft, opts.num_cases),
            TEACHER_TESTS_PARAMS,
            lambda text: parse_cases(text, min_cases=min_cases),
            "test cases",
            say,
        )
        cases = assign_holdout(raw)
    train = [c for c in cases if c.split != "holdout"]
    holdout = [c for c in cases if c.split == "holdout"]
    if not train:
        raise UpskillError(
            "every test case is in the holdout split; at least one train case is needed to refine"
        )
    say(f"  {len(train)} train case(s), {len(holdout)} held out (never shown to the teacher)")
    extra = dict(base.meta.extra) if base is not None else {}
    extra["generated_by"] = {
        "tool": "upskill-hub generate",
        "task": redact(task),
        "teacher": teacher_label,
        "test_model": test_label,
    }
    meta = SkillMeta(cases=cases, extra=extra)

    def with_meta(s: Skill) -> Skill:
        files = {k: v for k, v in s.files.items() if k not in (SKILL_FILE, META_FILE)}
        rest = {k: v for k, v in s.frontmatter.items() if k not in ("name", "description")}
        return Skill.create(s.name, s.description, s.body, extra_frontmatter=rest, meta=meta, files=files)

    skill = with_meta(draft)
    eval_opts = EvalOptions(
        runs=opts.runs,
        output_dir=opts.runs_dir,
        use_cache=opts.use_cache,
        cache_dir=opts.cache_dir,
        concurrency=opts.concurrency,
        base_url=opts.eval_base_url,
        plots=False,
        on_start=opts.on_eval_start,
        on_row=opts.on_eval_row,
    )
    eval_labels = ", ".join(_spec_label(s) for s in eval_specs)
    train_ids = {c.id for c in train}

    # 3. evaluate / refine on the train split only
    attempts: list[Attempt] = []
    skills: list[Skill] = []
    baseline: dict[str, float | None] = {}
    for n in range(1, opts.attempts + 1):
        say(f"Evaluating on {eval_labels}... (attempt {n})")
        result = await run_eval_async(
            skill, eval_specs, replace(eval_opts, cases=train, include_baseline=(n == 1))
        )
        models = result.summary.models
        scores = score_rows(result.rows, models, train_ids)
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
        for s in scores:
            say("  " + format_score(s, prefix=f"{s.model}: " if len(scores) > 1 else ""))
        if not failures:
            break
        if n == opts.attempts:
            break
        say(f"Refining skill with {teacher_label} ({len(failures)} failing train case(s))...")
        refined: Skill = await _ask(
            teacher,
            teacher_label,
            SKILL_SYSTEM_PROMPT,
            refine_request(task, skill, failures),
            TEACHER_SKILL_PARAMS,
            lambda text, keep=hidden_files(skill): build_skill(
                extract_skill_files(text), name=name, keep=keep
            ),
            "a refined skill",
            say,
        )
        skill = with_meta(refined)

    best_i = max(range(len(attempts)), key=lambda i: (attempts[i].mean_with_skill, -i))
    best = skills[best_i]
    if best_i != len(attempts) - 1:
        notes.append(f"kept attempt {best_i + 1}: later refinements scored lower on the train cases")

    # 4. the honest score: cases the teacher never saw
    holdout_scores: list[ModelScore] | None = None
    last_dir = attempts[best_i].run_dir
    if holdout:
        say(f"Evaluating on {len(holdout)} held-out case(s)...")
        hres = await run_eval_async(best, eval_specs, replace(eval_opts, cases=holdout, include_baseline=True))
        holdout_scores = score_rows(hres.rows, hres.summary.models, {c.id for c in holdout})
        last_dir = hres.run_dir
        for s in holdout_scores:
            say("  held-out " + format_score(s, prefix=f"{s.model}: " if len(holdout_scores) > 1 else ""))

    # 5. write atomically
    _check_dest(dest, opts.force)
    try:
        best.write(dest, overwrite=opts.force)
    except FileExistsError:
        raise UpskillError(f"{dest} already exists; pass --force to replace it") from None
    except OSError as exc:
        raise UpskillError(f"cannot write {dest}: {exc.strerror or exc}") from None
    gen = GenerateResult(
        best, dest, attempts, best_i + 1, holdout_scores, len(train), len(holdout), teacher_label, notes=notes
    )
    if last_dir is not None:
        report = Path(last_dir) / "generation.json"
        report.write_text(json.dumps(gen.to_dict(), indent=2) + "\n", encoding="utf-8")
        gen.report_path = report
    return gen


def format_score(s: ModelScore, prefix: str = "") -> str:
    """``60% -> 95% (+35%)`` like upskill prints it."""
    if s.lift is None:
        return f"{prefix}with skill {pct(s.with_skill)} ({s.n_cases} cases)"
    return f"{prefix}{pct(s.baseline)} -> {pct(s.with_skill)} ({points(s.lift, unit='%')})"


def generate_skill(task: str, options: GenerateOptions, progress: Progress | None = None) -> GenerateResult:
    """Synchronous :func:`generate_skill_async` (safe inside a running loop: uses a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(generate_skill_async(task, options, progress))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(generate_skill_async(task, options, progress))).result()
