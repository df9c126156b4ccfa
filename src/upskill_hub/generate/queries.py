"""``triggers --generate-queries N``: a teacher writes trigger queries for skills that have none.

Half the set should trigger the skill, half should not; the should-not half is meant to be
near misses: requests that share the skill's words but need something else. What the
teacher wrote is checked, not trusted:

* **leaks**: a should-trigger query that *names the skill* (its catalog name, e.g.
  ``hf-cli`` as written, or ``pdf skill``) or *quotes its description* (a run of
  :data:`QUOTE_WORDS` consecutive words of it) gives the answer away; it is dropped and the
  drop counted (:attr:`QuerySet.dropped`), never silently kept;
* **near misses**: a should-not query is one when it shares a word (3+ letters, not a common
  word) with the skill's name or description (:attr:`QuerySet.near_misses`); at least half
  of the should-not queries must be;
* **shape**: JSON ``{"queries": [{"query", "should_trigger"}]}``, no empty or over-long
  query, no query given twice with both labels; duplicates dropped; enough of each kind left.

An unusable answer goes back to the teacher with its problems; after the retries the error
is one line naming the skill, and nothing is written. The sets go to the run folder
(``generated-queries.json``) and, with ``--write``, into each skill's skill_meta.json
(``triggers``, atomically, the rest of the file kept).

For ``triggers DIR --library --generate-queries N`` (:func:`route_library`), every valid
skill without queries gets a set, and the library is routed: from a scratch copy holding
the generated queries, or from the folder itself once ``--write`` put them there.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from upskill_hub._util.fsutil import write_json_atomic
from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import UpskillError
from upskill_hub.generate.cases import check_count, open_teacher, run_sync, write_meta_list
from upskill_hub.generate.teacher import Progress, Teacher, extract_json_answer
from upskill_hub.models.base import GenerationParams, ModelClient
from upskill_hub.session.clients import close_all
from upskill_hub.skill import META_FILE, Skill, require_skill

#: The run folder's file of the generated queries.
GENERATED_QUERIES_FILE = "generated-queries.json"
#: Most queries one skill's set may ask for.
MAX_GENERATED_QUERIES = 200
#: Longest query accepted (characters): a trigger query is one user request.
MAX_QUERY_CHARS = 600
#: A should-trigger query holding this many consecutive words of the description quotes it.
QUOTE_WORDS = 6
#: How much of the skill's body the teacher sees (characters).
MAX_BODY_CHARS = 6000
#: Teacher calls at once when a library needs many sets.
LIBRARY_CONCURRENCY = 8
QUERIES_PARAMS = GenerationParams(temperature=0.0, max_tokens=4096)

QUERIES_SYSTEM_PROMPT = """\
You write trigger-eval queries for an Agent Skill: realistic requests a user would send to an \
AI agent whose catalog lists many skills by name and description. The eval checks whether \
the agent loads this skill exactly when it should.

- should_trigger true: requests this skill is needed for, varied in wording, length and \
detail, phrased as a user would (concrete files, names, numbers). Never name the skill and \
never copy phrases from its description: the request must be recognisable by what it needs.
- should_trigger false: near misses. Each shares words and topic with the skill (the same \
file types, tools or domain) but needs something else: an adjacent task, another tool, a \
question the skill does not cover. Not unrelated requests.

Reply with one JSON object in a ```json block:
{"queries": [{"query": "the request", "should_trigger": true}, \
{"query": "a near miss", "should_trigger": false}]}
"""

#: Words too common to make a should-not query a near miss.
_COMMON = frozenset(
    ["the", "and", "for", "with", "use", "you", "your", "are", "can", "not", "but", "all", "any", "was", "has", "how", "who", "why", "one", "new", "get", "its", "our", "out", "off", "this", "that", "these", "those", "what", "when", "where", "which", "will", "would", "could", "should", "about", "into", "from", "have", "been", "more", "most", "some", "such", "than", "then", "them", "they", "their", "there", "here", "also", "just", "like", "make", "need", "only", "over", "very", "each", "other", "using", "user", "users", "want", "help", "task", "tasks", "skill", "skills", "file", "files", "work", "working"]
)


def content_words(text: str) -> set[str]:
    """Words of 3+ letters or digits, lower case, not common ones."""
    return {w for w in re.findall(r"[a-z0-9]{3,}", text.lower()) if w not in _COMMON and not w.isdigit()}


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def names_skill(query: str, name: str) -> bool:
    """``query`` writes the catalog name (``hf-cli``; a one-word name only as ``pdf skill`` / ``skill pdf``)."""
    low = query.lower()
    n = re.escape(name.lower())
    if "-" in name and re.search(rf"(?<![a-z0-9-]){n}(?![a-z0-9-])", low):
        return True
    return bool(re.search(rf"(?<![a-z0-9-]){n}\W+skill\b|\bskill\W+{n}(?![a-z0-9-])", low))


def quotes_description(query: str, description: str, k: int = QUOTE_WORDS) -> bool:
    """``query`` holds ``k`` consecutive words of ``description`` (all of it when shorter)."""
    desc, q = _tokens(description), _tokens(query)
    k = min(k, len(desc))
    if k == 0 or len(q) < k:
        return False
    runs = {tuple(desc[i : i + k]) for i in range(len(desc) - k + 1)}
    return any(tuple(q[i : i + k]) in runs for i in range(len(q) - k + 1))


def leak_reason(query: str, skill: Skill) -> str | None:
    if names_skill(query, skill.name):
        return "names the skill"
    if quotes_description(query, skill.description):
        return "quotes the description"
    return None


@dataclass
class QuerySet:
    """One skill's generated queries, the near misses among its should-not ones, and what was dropped."""

    skill: str
    queries: list[TriggerQuery]
    near_misses: list[str] = field(default_factory=list)  # ids
    dropped: list[dict[str, str]] = field(default_factory=list)  # leaking should-trigger queries

    @property
    def n_should(self) -> int:
        return sum(q.should_trigger for q in self.queries)

    def rows(self) -> list[dict[str, Any]]:
        """The queries as skill-creator's trigger eval set (``--triggers`` reads it), near misses marked."""
        return [{**q.to_dict(), **({"near_miss": True} if q.id in self.near_misses else {})} for q in self.queries]

    def line(self) -> str:
        neg = len(self.queries) - self.n_should
        leak = (
            f"; {len(self.dropped)} leaking should-trigger quer{'y' if len(self.dropped) == 1 else 'ies'} dropped "
            f"({', '.join(sorted({d['why'] for d in self.dropped}))})"
            if self.dropped else ""
        )  # fmt: skip
        return (
            f"{self.skill}: {len(self.queries)} generated trigger queries ({self.n_should} should trigger, "
            f"{neg} should not, {len(self.near_misses)} of them near misses){leak}"
        )


def _qid(kind: str, text: str) -> str:
    return f"gen-{kind}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _items(data: Any) -> tuple[list[tuple[str, bool]] | None, list[str]]:
    """``(query, should_trigger)`` pairs from the teacher's JSON, or the problems."""
    raw = data.get("queries") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        return None, ['reply with {"queries": [{"query": "...", "should_trigger": true|false}, ...]}']
    if not raw:
        return None, ["the list of queries is empty"]
    out, problems = [], []
    for i, item in enumerate(raw):
        where = f"queries[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: must be an object with 'query' and 'should_trigger'")
            continue
        text, should = item.get("query"), item.get("should_trigger")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}.query: must be a non-empty string")
        elif len(text) > MAX_QUERY_CHARS:
            problems.append(f"{where}.query: {len(text)} characters; one request, at most {MAX_QUERY_CHARS}")
        if not isinstance(should, bool):
            problems.append(f"{where}.should_trigger: must be true or false")
        if not problems:
            out.append((" ".join(text.split()), should))
    return (None, problems) if problems else (out, [])


def parse_queries(text: str, skill: Skill, n: int) -> tuple[QuerySet | None, list[str]]:
    """A teacher answer read as ``skill``'s query set of ``n`` (see the module docstring)."""
    data = extract_json_answer(text)
    if data is None:
        return None, ['no JSON found: reply with {"queries": [...]} in a ```json block']
    items, problems = _items(data)
    if items is None:
        return None, problems
    label: dict[str, bool] = {}
    unique: list[tuple[str, bool]] = []  # duplicates dropped, the first spelling kept
    for q, should in items:
        key = q.casefold()
        if label.get(key, should) != should:
            return None, [f"the query {q!r} is given both as should-trigger and as should-not"]
        if key not in label:
            unique.append((q, should))
        label[key] = should
    want_pos = math.ceil(n / 2)
    want_neg = n - want_pos
    dropped, pos, neg = [], [], []
    for q, should in unique:
        why = leak_reason(q, skill) if should else None
        if why:
            dropped.append({"query": q, "why": why})
        elif should:
            pos.append(q)
        else:
            neg.append(q)
    pos, neg = pos[:want_pos], neg[:want_neg]
    theirs = content_words(f"{skill.name.replace('-', ' ')} {skill.description}")
    near = [q for q in neg if content_words(q) & theirs]
    problems = []
    if len(pos) < max(1, math.ceil(want_pos / 2)):
        leaks = f" ({len(dropped)} dropped: they named the skill or quoted its description)" if dropped else ""
        problems.append(f"{len(pos)} usable should-trigger queries{leaks}; write {want_pos}")
    if len(neg) < math.ceil(want_neg / 2):
        problems.append(f"{len(neg)} distinct should-not queries; write {want_neg}")
    elif want_neg and len(near) < max(1, math.ceil(len(neg) / 2)):
        problems.append(
            f"only {len(near)} of the {len(neg)} should-not queries share a word with the skill's name or "
            "description: write near misses (same words and topic, another need)"
        )
    if problems:
        return None, problems
    queries = [TriggerQuery(_qid("should", q), q, True) for q in pos] + [TriggerQuery(_qid("not", q), q, False) for q in neg]
    near_ids = [x.id for x in queries if not x.should_trigger and x.query in near]
    return QuerySet(skill.name, queries, near_ids, dropped), []


def queries_request(skill: Skill, n: int) -> str:
    body = skill.body if len(skill.body) <= MAX_BODY_CHARS else skill.body[:MAX_BODY_CHARS] + "\n[... cut]"
    pos = math.ceil(n / 2)
    return (
        f'<skill name="{skill.name}">\n<description>{skill.description}</description>\n'
        f"<instructions>\n{body.strip()}\n</instructions>\n</skill>\n\n"
        f"Write {n} distinct queries: {pos} that should trigger this skill and {n - pos} near misses that "
        "should not."
    )


async def generate_queries_async(skill: Skill, n: int, teacher: Teacher) -> QuerySet:
    """``n`` trigger queries for ``skill`` from ``teacher`` (asked again on unusable output)."""
    return await teacher.ask(
        QUERIES_SYSTEM_PROMPT, queries_request(skill, n), QUERIES_PARAMS,
        lambda text: parse_queries(text, skill, n), f"trigger queries for skill {skill.name!r}",
    )  # fmt: skip


def generate_query_sets(
    skills: Sequence[Skill], n: int, *, teacher: str | ModelClient | None = None, base_url: str | None = None,
    say: Progress | None = None,
) -> tuple[dict[str, QuerySet], str]:  # fmt: skip
    """A set of ``n`` for each skill (:data:`LIBRARY_CONCURRENCY` teacher calls at once) and the teacher's label.

    All or nothing: the first skill whose set stays unusable fails the whole call.
    """
    say = say or (lambda _m: None)
    check_count("--generate-queries", n, MAX_GENERATED_QUERIES)
    coach, opened = open_teacher(teacher, base_url, say)
    gate = asyncio.Semaphore(LIBRARY_CONCURRENCY)

    async def one(s: Skill) -> QuerySet:
        async with gate:
            return await generate_queries_async(s, n, coach)

    async def go() -> list[QuerySet]:
        try:
            return list(await asyncio.gather(*(one(s) for s in skills)))
        finally:
            await close_all([opened] if opened is not None else [])

    sets = run_sync(go)
    for qs in sets:
        say(qs.line())
    return {qs.skill: qs for qs in sets}, coach.label


def record(sets: dict[str, QuerySet], teacher: str, n: int) -> dict[str, Any]:
    return {
        "generated_by": {"tool": "upskill-hub triggers --generate-queries", "teacher": teacher, "queries_per_skill": n},
        "skills": {k: {"queries": v.rows(), "dropped_leaks": v.dropped} for k, v in sets.items()},
    }


@dataclass
class GeneratedQueries:
    """One skill's generated set, the skill to run it on (its queries in place) and where it was written."""

    skill: Skill
    queries: QuerySet
    teacher: str
    n: int
    written: Path | None = None

    def save(self, run_dir: str | Path, say: Progress | None = None) -> Path:
        """``generated-queries.json`` in the run folder: the set as ``--triggers`` reads it."""
        path = Path(run_dir) / GENERATED_QUERIES_FILE
        write_json_atomic(path, self.queries.rows())
        if say is not None:
            kept = f"; also in {self.written}" if self.written else f"; {META_FILE} unchanged (--write keeps them)"
            say(f"Generated queries (teacher {self.teacher}): {path}{kept}")
        return path


def queries_for_triggers(
    skill: Path, n: int | None, *, teacher: str | None = None, write: bool = False, base_url: str | None = None,
    triggers_file: Path | None = None, resume: bool = False, say: Progress | None = None,
) -> GeneratedQueries | None:  # fmt: skip
    """``triggers``' ``--generate-queries N`` for one skill: its generated set, or ``None``.

    ``None`` without the option, and for a skill that has trigger queries in skill_meta.json
    (they are used; a line says so). The set is not written to the skill unless ``write``.
    """
    say = say or (lambda _m: None)
    if not _wanted(n, write, teacher):
        return None
    if triggers_file is not None:
        raise UpskillError("--generate-queries writes the queries itself: drop --triggers")
    if resume:
        raise UpskillError(
            "--generate-queries asks the teacher again: to finish a run of generated queries, pass "
            f"--triggers RUN_DIR/{GENERATED_QUERIES_FILE} --resume (or generate with --write, then --resume)"
        )
    assert n is not None
    found = require_skill(skill)
    if found.meta.triggers:
        say(f"{found.name} has {len(found.meta.triggers)} trigger queries already: they are used, none generated")
        return None
    sets, label = generate_query_sets([found], n, teacher=teacher, base_url=base_url, say=say)
    qs = sets[found.name]
    if write:
        written = write_meta_list(Path(skill), "triggers", qs.queries)
        return GeneratedQueries(require_skill(skill), qs, label, n, written)
    return GeneratedQueries(replace(found, meta=replace(found.meta, triggers=list(qs.queries))), qs, label, n)


def _wanted(n: int | None, write: bool, teacher: str | None) -> bool:
    if n is None:
        given = [f for f, v in (("--write", write), ("--teacher", teacher)) if v]
        if given:
            raise UpskillError(f"{' and '.join(given)} go with --generate-queries N (queries written by a teacher)")
        return False
    check_count("--generate-queries", n, MAX_GENERATED_QUERIES)
    return True


def route_library(
    source: str | Path, model_specs: Sequence[str], *, generate: int | None = None, teacher: str | None = None,
    write: bool = False, from_hub: bool = False, say: Progress | None = None, **routing: Any,
) -> Any:  # fmt: skip
    """``triggers DIR --library [--generate-queries N]``: :func:`run_routing`, after a teacher wrote
    queries for every valid skill that has none (``routing``: run_routing's keyword arguments)."""
    from upskill_hub.triggering.routing_run import library_queries, library_skills, run_routing

    say = say or (lambda _m: None)
    if not _wanted(generate, write, teacher):
        return run_routing(source, model_specs, **routing)
    assert generate is not None
    if write and from_hub:
        raise UpskillError("--write saves into the skills' folders; a Hub library is read from a scratch copy: pull it first")
    skills, _skipped = library_skills(source)
    _, empty = library_queries(skills) if len(skills) >= 2 else ({}, [])
    if not empty:  # nothing to generate (or too few skills: run_routing says so)
        return run_routing(source, model_specs, **routing)
    todo = [s for s in skills if s.name in empty]
    say(f"Generating {generate} trigger queries for each of {len(todo)} skill(s) without any...")
    sets, label = generate_query_sets(todo, generate, teacher=teacher, base_url=routing.get("base_url"), say=say)
    root = Path(source)
    if write:
        for s in todo:
            write_meta_list(Path(s.path or root / s.name), "triggers", sets[s.name].queries)
        run = run_routing(source, model_specs, **routing)
    else:
        routing.setdefault("label", root.resolve().name)
        with tempfile.TemporaryDirectory(prefix="upskill-generated-library-") as tmp:
            copy = Path(tmp) / root.name
            try:
                shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
            except (OSError, shutil.Error) as exc:
                raise UpskillError(f"{root}: cannot copy the library to route it with generated queries ({exc})") from None
            for s in todo:
                rel = Path(s.path).resolve().relative_to(root.resolve()) if s.path else Path(s.name)
                write_meta_list(copy / rel, "triggers", sets[s.name].queries)
            run = run_routing(copy, model_specs, **routing)
    write_json_atomic(Path(run.run_dir) / GENERATED_QUERIES_FILE, record(sets, label, generate))
    where = ", and into each skill's skill_meta.json" if write else f" (the skills' {META_FILE} unchanged; --write keeps them)"
    say(f"Generated queries: {Path(run.run_dir) / GENERATED_QUERIES_FILE}{where}")
    return run
