"""The teacher: what it is told (never ``skill_meta.json``, never a holdout case), how it is asked
again until its answer is usable (:class:`Teacher`), and how its answers are read."""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util import safejson
from upskill_hub.cases import Case, CasesError, parse_meta
from upskill_hub.errors import UpskillError
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

#: Extra tries when the teacher's answer cannot be parsed or is not a valid skill / test set.
FORMAT_RETRIES = 2
TEACHER_SKILL_PARAMS = GenerationParams(temperature=0.0, max_tokens=8192)
TEACHER_TESTS_PARAMS = GenerationParams(temperature=0.0, max_tokens=4096)
#: How many failing cases (and how much of each answer) a refine prompt shows.
MAX_FAILURES_SHOWN = 8
MAX_ANSWER_CHARS = 1500

Progress = Callable[[str], None]
#: Reads a teacher answer: (the result, []), or (None, the problems to send back).
Parse = Callable[[str], tuple[Any, list[str]]]

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


# ----------------------------------------------------------------------------- what it is shown
def _utf8(data: bytes) -> str | None:
    """``data`` as text, or None where it is not UTF-8 (a binary asset the teacher cannot see)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def hidden_files(skill: Skill) -> dict[str, bytes]:
    """Files :func:`render_skill_files` cannot show the teacher (not UTF-8 text)."""
    return {
        rel: data
        for rel, data in skill.files.items()
        if rel not in (SKILL_FILE, META_FILE) and _utf8(data) is None
    }


def render_skill_files(skill: Skill) -> str:
    """The skill's text files in the ``<file>`` format. ``skill_meta.json`` is never included:
    it holds the test cases, and the holdout inputs must never reach the teacher."""
    parts = []
    for rel in sorted(skill.files, key=lambda r: (r != SKILL_FILE, r)):
        text = _utf8(skill.files[rel]) if rel != META_FILE else None
        if text is not None:
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


# ----------------------------------------------------------------------------- asking
@dataclass(frozen=True)
class Teacher:
    """A model that writes skills or test cases; ``label`` names it in messages and errors."""

    client: ModelClient
    label: str
    progress: Progress

    async def ask(self, system: str, request: str, params: GenerationParams, parse: Parse, what: str) -> Any:
        """Ask; on unusable output send the problems back, up to FORMAT_RETRIES times."""
        messages = [Message("user", request)]
        problems: list[str] = []
        for attempt in range(FORMAT_RETRIES + 1):
            try:
                completion = await self.client.complete(system, messages, params)
            except ModelCallError as exc:
                raise UpskillError(f"teacher model {self.label} failed while writing {what}: {exc}") from None
            result, problems = parse(completion.text)
            if result is not None:
                return result
            if attempt < FORMAT_RETRIES:
                self.progress(f"  teacher output unusable ({problems[0]}); asking again")
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
            f"teacher model {self.label} did not return {what} in the required format after "
            f"{FORMAT_RETRIES + 1} tries: {problems[0] if problems else 'unusable output'}"
        )

    async def ask_skill(self, request: str, *, name: str | None, base: Skill | None, what: str) -> Skill:
        """A skill, new or a revision of ``base`` (its binary files kept), read by :func:`build_skill`."""
        keep = hidden_files(base) if base is not None else {}
        return await self.ask(
            SKILL_SYSTEM_PROMPT, request, TEACHER_SKILL_PARAMS,
            lambda text: build_skill(extract_skill_files(text), name=name, keep=keep), what,
        )  # fmt: skip

    async def ask_cases(self, task: str, skill: Skill, n: int) -> list[Case]:
        """``n`` test cases for ``skill`` (an answer with at least half as many is used)."""
        return await self.ask(
            TESTS_SYSTEM_PROMPT, tests_request(task, skill, n), TEACHER_TESTS_PARAMS,
            lambda text: parse_cases(text, min_cases=max(1, math.ceil(n / 2))), "test cases",
        )  # fmt: skip


# ----------------------------------------------------------------------------- reading its answers
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
    files: dict[str, str], *, name: str | None = None, keep: dict[str, bytes] | None = None
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
            fm["name"], fm["description"].strip(), body, extra_frontmatter=rest, files=extra_files
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


def extract_json_answer(text: str) -> Any:
    """The JSON value in a teacher answer: a fenced or whole-answer JSON, else the outermost ``{...}``."""
    from upskill_hub.lift.grading.assertions import extract_json

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
    data = extract_json_answer(text)
    if data is None:
        return None, ['no JSON found: reply with {"cases": [...]} in a ```json block']
    try:
        meta = parse_meta(data)
    except CasesError as exc:
        return None, [f"{exc.field}: {exc.message}"]
    if len(meta.cases) < min_cases:
        return None, [f"only {len(meta.cases)} test case(s); write at least {min_cases}"]
    return meta.cases, []
