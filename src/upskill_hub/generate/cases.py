"""``eval --generate-tests N``: a teacher writes test cases for a skill that has none.

The cases are validated before anything is written (the checks of ``skill_meta.json``, plus:
only answer checks, never a shell ``command``, a workspace file or an ``llm-rubric`` that
would need a judge; no input files; no empty, duplicate or over-long request). An unusable
answer goes back to the teacher with its problems (:class:`~upskill_hub.generate.teacher.Teacher`);
after the retries the error is one line naming the skill, and nothing is written.

Where they go: ``generated-tests.json`` in the run folder (``skill_meta.json``'s shape, so
``eval --tests RUN/generated-tests.json`` runs them again or finishes the run with
``--resume``), and the skill's own ``skill_meta.json`` only with ``--write``
(:func:`write_meta_list`: atomic, every other key of the file kept).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from upskill_hub import models
from upskill_hub._util.boundedread import read_json_file
from upskill_hub._util.fsutil import FileRefused, write_json_atomic
from upskill_hub.cases import Case, CasesError, parse_meta
from upskill_hub.cases.schema import SCHEMA_VERSION
from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.generate.teacher import (
    TEACHER_TESTS_PARAMS,
    TESTS_SYSTEM_PROMPT,
    Progress,
    Teacher,
    parse_cases,
    render_skill_files,
)
from upskill_hub.models.base import ModelClient
from upskill_hub.session.clients import close_all
from upskill_hub.skill import META_FILE, SKILL_FILE, Skill, require_skill

#: The run folder's file of the generated cases.
GENERATED_TESTS_FILE = "generated-tests.json"
#: Most cases one ``--generate-tests`` asks for (each is a teacher-written request and checks).
MAX_GENERATED_CASES = 100
#: Longest generated request accepted (characters).
MAX_INPUT_CHARS = 4000
#: How much of the skill's files the teacher is shown (characters); past it, SKILL.md alone, cut.
MAX_SKILL_CHARS = 60_000
#: The checks a generated case may use: graded on the answer alone, no judge, nothing run.
ANSWER_CHECKS = frozenset(
    {"contains", "icontains", "contains-any", "not-contains", "regex", "starts-with", "equals", "is-json", "json-schema"}
)
#: Largest skill_meta.json :func:`write_meta_list` reads back before replacing it.
MAX_META_BYTES = 8 * 1024 * 1024


def run_sync(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run the coroutine ``make()`` returns, from sync code (in a worker thread inside a running loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def check_count(option: str, n: int, most: int) -> None:
    if not 1 <= n <= most:
        raise OptionError(option.lstrip("-").replace("-", "_"), n, f"must be between 1 and {most}, got {n}")


def open_teacher(spec: str | ModelClient | None, base_url: str | None, say: Progress) -> tuple[Teacher, ModelClient | None]:
    """The teacher (default: generate's, :data:`models.spec.DEFAULT_TEACHER`) and the client opened here
    (``None`` when the caller passed a client: it stays the caller's to close)."""
    spec = spec or models.spec.DEFAULT_TEACHER
    if not isinstance(spec, str):
        return Teacher(spec, f"{spec.provider}:{spec.model}", say), None
    client = models.create_client(models.preflight(spec, base_url=base_url), timeout=300.0)
    return Teacher(client, spec, say), client


def skill_text(skill: Skill) -> str:
    """The skill's text files as the teacher sees them (never skill_meta.json), within :data:`MAX_SKILL_CHARS`."""
    text = render_skill_files(skill)
    if len(text) <= MAX_SKILL_CHARS:
        return text
    md = skill.skill_md_text[: MAX_SKILL_CHARS - 100]
    return f'<file path="{SKILL_FILE}">\n{md}\n[... cut]\n</file>'


def tests_request(skill: Skill, n: int) -> str:
    return (
        f"The skill below is called {skill.name!r}: {skill.description}\n\n{skill_text(skill)}\n\n"
        f"Write exactly {n} test cases with distinct ids and distinct requests that a model WITH this "
        "skill's knowledge passes and a model without it is likely to fail. Use only the listed answer "
        "checks, no input files."
    )


def check_generated_cases(cases: Sequence[Case], n: int) -> tuple[list[Case] | None, list[str]]:
    """The first ``n`` cases, every one in the train split, or the problems that make them unusable."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    for c in cases:
        bad = sorted({a.type for a in c.asserts} - ANSWER_CHECKS)
        if bad:
            problems.append(f"case {c.id!r}: check type(s) {', '.join(bad)} not allowed; use {', '.join(sorted(ANSWER_CHECKS))}")
        if c.files:
            problems.append(f"case {c.id!r}: no input files; put what the request needs in its text")
        if len(c.input) > MAX_INPUT_CHARS:
            problems.append(f"case {c.id!r}: the request is {len(c.input)} characters; at most {MAX_INPUT_CHARS}")
        key = " ".join(c.input.split()).casefold()
        if key in seen:
            problems.append(f"case {c.id!r} repeats the request of case {seen[key]!r}")
        seen.setdefault(key, c.id)
    if problems:
        return None, problems
    return [replace(c, split="train") for c in cases[:n]], []


def parse_generated_cases(text: str, n: int) -> tuple[list[Case] | None, list[str]]:
    """A teacher answer read as ``n`` test cases (at least half as many accepted)."""
    cases, problems = parse_cases(text, min_cases=max(1, math.ceil(n / 2)))
    if cases is None:
        return None, problems
    return check_generated_cases(cases, n)


async def generate_cases_async(skill: Skill, n: int, teacher: Teacher) -> list[Case]:
    """``n`` test cases for ``skill`` from ``teacher`` (asked again on unusable output)."""
    return await teacher.ask(
        TESTS_SYSTEM_PROMPT, tests_request(skill, n), TEACHER_TESTS_PARAMS,
        lambda text: parse_generated_cases(text, n), f"test cases for skill {skill.name!r}",
    )  # fmt: skip


def write_meta_list(skill_dir: Path, key: str, items: Sequence[Any]) -> Path:
    """Set ``key`` (``cases`` or ``triggers``) of ``skill_dir``'s skill_meta.json, atomically.

    Every other key is kept as it was; a missing file is created (schema 1). The new content
    is checked as skill_meta.json is read before it replaces the old one.
    """
    path = Path(skill_dir) / META_FILE
    data: Any = {"schema_version": SCHEMA_VERSION}
    if os.path.lexists(path):
        if path.is_symlink():
            raise UpskillError(f"{path} is a symlink; not replaced (write the cases yourself)")
        try:
            data = read_json_file(path, MAX_META_BYTES)
        except FileRefused as exc:
            raise UpskillError(f"{path} {exc.problem}; nothing written") from None
        if isinstance(data, list):  # a plain list of cases
            data = {"cases": data}
        if not isinstance(data, dict):
            raise UpskillError(f"{path}: not a JSON object; nothing written")
    if key == "cases" and not data.get("tests"):
        data.pop("tests", None)  # upskill's empty "tests": ours replaces it
    data[key] = [x.to_dict() for x in items]
    try:
        parse_meta(data, Path(skill_dir))
    except CasesError as exc:
        raise UpskillError(f"{path}: would not read back ({exc.field}: {exc.message}); nothing written") from None
    write_json_atomic(path, data)
    return path


@dataclass
class GeneratedTests:
    """Cases a teacher wrote for one skill, and where they were written."""

    skill: Skill
    cases: list[Case]
    teacher: str
    written: Path | None = None  # the skill's skill_meta.json, with --write
    saved: list[Path] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """``generated-tests.json``: skill_meta.json's shape, so ``--tests`` reads it back."""
        return {
            "schema_version": SCHEMA_VERSION,
            "generated_by": {"tool": "upskill-hub eval --generate-tests", "teacher": self.teacher,
                             "skill": self.skill.name, "skill_version": self.skill.version},
            "cases": [c.to_dict() for c in self.cases],
        }  # fmt: skip

    def save(self, run_dir: str | Path, say: Progress | None = None) -> Path:
        """Write ``generated-tests.json`` into the run folder (atomically) and say where."""
        path = Path(run_dir) / GENERATED_TESTS_FILE
        write_json_atomic(path, self.record())
        self.saved.append(path)
        if say is not None:
            kept = f"; also in {self.written}" if self.written else f"; {self.skill.name}'s {META_FILE} unchanged (--write keeps them)"
            say(f"The {len(self.cases)} generated test cases: {path}{kept}")
        return path


def generate_tests(
    skill: Skill | str | Path, n: int, *, teacher: str | ModelClient | None = None, base_url: str | None = None,
    write: bool = False, say: Progress | None = None,
) -> GeneratedTests:  # fmt: skip
    """A teacher writes ``n`` test cases for ``skill``; with ``write`` they go into its skill_meta.json."""
    say = say or (lambda _m: None)
    check_count("--generate-tests", n, MAX_GENERATED_CASES)
    if not isinstance(skill, Skill):
        skill = require_skill(skill)
    if write and skill.path is None:
        raise UpskillError("--write needs the skill's folder")
    coach, opened = open_teacher(teacher, base_url, say)
    say(f"Generating {n} test cases for {skill.name} with {coach.label}...")

    async def go() -> list[Case]:
        try:
            return await generate_cases_async(skill, n, coach)
        finally:
            await close_all([opened] if opened is not None else [])

    cases = run_sync(go)
    written = write_meta_list(skill.path, "cases", cases) if write and skill.path is not None else None
    if written is not None:
        skill = require_skill(skill.path)
    return GeneratedTests(skill, cases, coach.label, written)


def tests_for_eval(
    skill: Path | None, n: int | None, *, teacher: str | None = None, write: bool = False, base_url: str | None = None,
    models_: Sequence[str] = (), refused: dict[str, object] | None = None, say: Progress | None = None,
) -> GeneratedTests | None:  # fmt: skip
    """``eval``'s ``--generate-tests N`` / ``--teacher`` / ``--write``: the cases to run, or ``None``.

    ``None`` without the option, and for a skill that has test cases already (they are
    used; a line says so). ``refused``: eval options that cannot go with it, by flag.
    """
    say = say or (lambda _m: None)
    if n is None:
        given = [f for f, v in (("--write", write), ("--teacher", teacher)) if v]
        if given:
            raise UpskillError(f"{' and '.join(given)} go with --generate-tests N (cases written by a teacher)")
        return None
    given = [k for k, v in (refused or {}).items() if v]
    if "--resume" in given:
        raise UpskillError(
            "--generate-tests asks the teacher again: to finish a run of generated cases, pass "
            f"--tests RUN_DIR/{GENERATED_TESTS_FILE} --resume (or generate with --write, then --resume)"
        )
    if given:
        raise UpskillError(f"--generate-tests cannot be combined with {', '.join(given)}")
    if skill is None:
        raise UpskillError("--generate-tests needs a skill folder")
    check_count("--generate-tests", n, MAX_GENERATED_CASES)
    found = require_skill(skill)
    if found.meta.cases:
        say(f"{found.name} has {len(found.meta.cases)} test cases already: they are used, none generated")
        return None
    for spec in models_:  # a bad --model fails before the teacher is paid
        models.preflight(spec, base_url=base_url)
    return generate_tests(found, n, teacher=teacher, base_url=base_url, write=write, say=say)
