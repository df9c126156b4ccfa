"""Where a trigger run's queries come from, and how many one run may send.

Queries come from a ``--triggers`` file (skill-creator's trigger eval set: a JSON list of
``{"query", "should_trigger"}``), else ``triggers`` in skill_meta.json, else the skill's case
inputs (should trigger) and the distractors' case inputs (should not). A plan over
:data:`MAX_TRIGGER_QUERIES` queries or :data:`MAX_TRIGGER_CALLS` calls is refused in one line
before any call or folder is made.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from upskill_hub._util import limits
from upskill_hub._util.boundedread import read_json_file
from upskill_hub._util.fsutil import FileRefused
from upskill_hub._util.sizes import exact_size
from upskill_hub.cases import CasesError, TriggerQuery, parse_triggers
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.skill import Skill

#: Largest ``--triggers`` file read (MB): a 100,000-query eval set is about 15 MB.
MAX_TRIGGERS_FILE_BYTES = int(limits.env_number("UPSKILL_MAX_TRIGGERS_MB", 32) * 1_000_000)
#: Most queries one trigger or routing run sends (from any source); each is a model call per
#: model and repeat, so more is a budget mistake, not an eval.
MAX_TRIGGER_QUERIES = limits.env_int("UPSKILL_MAX_TRIGGER_QUERIES", 100_000)
#: Most calls one run plans: queries x models x ``--runs``.
MAX_TRIGGER_CALLS = limits.env_int("UPSKILL_MAX_TRIGGER_CALLS", 1_000_000)


def check_plan_size(n_queries: int, models: int, runs: int, where: str) -> None:
    """Refuse a plan over :data:`MAX_TRIGGER_QUERIES` queries or :data:`MAX_TRIGGER_CALLS` calls, in one line."""
    if n_queries > MAX_TRIGGER_QUERIES:
        raise UpskillError(
            f"{where}: {n_queries:,} trigger queries; a run sends at most {MAX_TRIGGER_QUERIES:,} "
            "(split the set, or raise UPSKILL_MAX_TRIGGER_QUERIES)"
        )
    calls = n_queries * models * runs
    if calls > MAX_TRIGGER_CALLS:
        raise UpskillError(
            f"{where}: {n_queries:,} queries x {models} model(s) x {runs:,} run(s) = {calls:,} calls; a run makes at "
            f"most {MAX_TRIGGER_CALLS:,} (lower --runs, or raise UPSKILL_MAX_TRIGGER_CALLS)"
        )


def _query_id(prefix: str, text: str) -> str:
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def read_triggers_file(path: Path) -> list[TriggerQuery]:
    """The queries of a ``--triggers`` file, read with :func:`read_json_file` (no FIFO, device or
    file over :data:`MAX_TRIGGERS_FILE_BYTES`; counted before a query is built)."""
    try:
        raw = read_json_file(path, MAX_TRIGGERS_FILE_BYTES)
    except FileRefused as exc:
        problem = exc.problem
        if "files over" in problem:  # name the limit that applies here
            size = problem.split(";")[0]
            problem = f"{size}; trigger files over {exact_size(MAX_TRIGGERS_FILE_BYTES)} are not read (UPSKILL_MAX_TRIGGERS_MB)"
        raise PathError(path, problem, kind="triggers file") from None
    if isinstance(raw, list) and len(raw) > MAX_TRIGGER_QUERIES:
        raise PathError(
            path, f"holds {len(raw):,} queries; a run sends at most {MAX_TRIGGER_QUERIES:,} (UPSKILL_MAX_TRIGGER_QUERIES)",
            kind="triggers file",
        )  # fmt: skip
    try:
        queries = parse_triggers(raw, where="triggers")
    except CasesError as exc:
        raise PathError(path, exc.message, kind="triggers file", field=exc.field) from None
    if not queries:
        raise PathError(path, "holds no queries", kind="triggers file")
    return queries


def resolve_queries(
    skill: Skill, distractors: Sequence[Skill], triggers_file: str | Path | None
) -> tuple[list[TriggerQuery], str]:
    """The queries to send and one line saying where they came from (at most :data:`MAX_TRIGGER_QUERIES`)."""
    if triggers_file is not None:
        path = Path(triggers_file)
        queries = read_triggers_file(path)
        return queries, f"{len(queries)} trigger queries from {path}"
    if skill.meta.triggers:
        qs = list(skill.meta.triggers)
        check_plan_size(len(qs), 1, 1, f"{skill.name}'s skill_meta.json")
        return qs, f"{len(qs)} trigger queries from {skill.name}'s skill_meta.json"
    should = [TriggerQuery(_query_id("case", c.input), c.input, True) for c in skill.meta.cases]
    n_not = sum(len(d.meta.cases) for d in distractors)
    check_plan_size(len(should) + n_not, 1, 1, f"{skill.name}'s cases and the distractors' cases")
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
