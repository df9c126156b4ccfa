"""``upskill-hub tune`` on real models: the loop of :mod:`upskill_hub.evals.tune`, wired up.

The scorer puts each candidate description in the catalog in place of the skill's own
(the distractors stay as they are) and sends the queries through a
:class:`~upskill_hub.evals.trigger_session.TriggerSession`; the teacher is a
:class:`~upskill_hub.evals.tune.ModelTeacher` (by default the model ``generate`` uses).
Both go through the response cache, so a resumed run pays only for calls it never made.

A run lives in ``<output>/<stamp>-<skill>-tune-<hex>/``: ``tune-plan.json`` (what was asked,
to find the run again with ``resume``), ``tune.jsonl`` (one line per finished step) and
``tune_result.json``. ``write=True`` rewrites only the frontmatter's description in
SKILL.md (:func:`upskill_hub.descriptions.replace_description`), and only when a
candidate beat the original on held-out queries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from upskill_hub._util.fsutil import read_text_capped, write_json_atomic, write_text_atomic
from upskill_hub.cases import TriggerQuery
from upskill_hub.descriptions import replace_description
from upskill_hub.errors import UpskillError
from upskill_hub.evals.catalog import Catalog, CatalogSkill
from upskill_hub.evals.schema import TriggerRow
from upskill_hub.evals.trigger_session import Call, TriggerSession
from upskill_hub.evals.triggers import open_run_dir, resolve_queries
from upskill_hub.evals.tune import (
    DEFAULT_HELD_OUT,
    DEFAULT_ITERATIONS,
    DEFAULT_RUNS,
    ModelTeacher,
    TuneResult,
    tune_description,
)
from upskill_hub.models.spec import DEFAULT_TEACHER
from upskill_hub.skill import Skill, require_skill, skill_md_name

PLAN_FILE = "tune-plan.json"
RESULT_FILE = "tune_result.json"


@dataclass
class TuneRun:
    """A finished tune run: where it lives, what it found, and whether SKILL.md changed."""

    run_dir: Path
    result: TuneResult
    source: str  # where the queries came from, one line
    model: str
    teacher: str
    skill_md: Path | None  # the file --write rewrites (None without --write)
    written: bool = False
    fresh_calls: int = 0


def _catalog_with(skill: Skill, others: list[Skill], description: str) -> Catalog:
    """The catalog the model sees, with ``description`` as the skill's own."""
    mine = dataclasses.replace(CatalogSkill.from_skill(skill), description=description)
    return Catalog((mine, *(CatalogSkill.from_skill(o) for o in others)))


def _fingerprint(payload: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]




def run_tune(
    skill: Skill | str | Path,
    model: str,
    *,
    teacher: str | None = None,
    base_url: str | None = None,
    teacher_base_url: str | None = None,
    iterations: int = DEFAULT_ITERATIONS,
    runs: int = DEFAULT_RUNS,
    seed: int = 0,
    held_out: float = DEFAULT_HELD_OUT,
    triggers_file: str | Path | None = None,
    distractors: str | Path | None = None,
    output_dir: str | Path = "upskill-runs",
    resume: bool = False,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    concurrency: int | None = None,
    write: bool = False,
    on_step: Callable[[str], None] | None = None,
    on_row: Callable[[TriggerRow], None] | None = None,
) -> TuneRun:
    """Tune ``skill``'s description for ``model``; see the module docstring.

    Everything is checked (the skill, the queries, both model specs) before the first call.
    """
    from upskill_hub.evals.api import _clients_for, load_distractors

    if isinstance(skill, (str, Path)):
        skill = require_skill(skill)
    if iterations < 0 or runs < 1:
        raise UpskillError("--iterations must be 0 or more and --runs 1 or more")
    skill_md = _skill_md(skill) if write else None
    others = load_distractors(distractors, skill.name)
    queries, source = resolve_queries(skill, others, triggers_file)
    teacher_spec = teacher or DEFAULT_TEACHER
    session = TriggerSession([model], base_url=base_url, use_cache=use_cache, cache_dir=cache_dir, concurrency=concurrency)
    try:
        (teacher_client,) = _clients_for([teacher_spec], teacher_base_url or base_url, timeout=120.0, max_retries=4)
    except BaseException:
        session.close()
        raise
    (client,) = session.clients
    body = skill.body.strip()
    coach = ModelTeacher(teacher_client, skill.name, body_excerpt=body[:2000], cache=session.cache, label=teacher_spec)
    try:
        fp = _fingerprint({
            "skill": skill.name, "description": skill.description, "model": [client.provider, client.endpoint, client.model],
            "teacher": [teacher_client.provider, teacher_client.endpoint, teacher_client.model],
            "catalog": [[o.name, o.description] for o in others], "queries": [q.to_dict() for q in queries],
            "runs": runs, "seed": seed, "held_out": held_out,
        })  # fmt: skip
        run_dir = open_run_dir(
            output_dir, fp, PLAN_FILE, f"{skill.name}-tune", "tune", resume=resume,
            plan={"skill_name": skill.name, "skill_path": str(skill.path or ""), "model": client.model,
                  "teacher": teacher_client.model, "source": source, "runs": runs, "seed": seed,
                  "held_out": held_out, "catalog": [skill.name, *(o.name for o in others)]},
        )  # fmt: skip
        run_id = run_dir.name

        def scorer(description: str, subset: list[TriggerQuery], n: int) -> list[TriggerRow]:
            calls = [Call(client.model, skill, q, k) for k in range(n) for q in subset]
            return session.send(_catalog_with(skill, others, description), calls, run_id, on_row=on_row)

        result = tune_description(
            skill.description, queries, scorer, coach, run_dir=run_dir, iterations=iterations, runs=runs,
            seed=seed, held_out=held_out, on_step=on_step,
        )  # fmt: skip
    finally:
        coach.close()
        session.close()
    run = TuneRun(run_dir, result, source, client.model, teacher_client.model, skill_md, fresh_calls=session.fresh_calls)
    if skill_md is not None and result.winner.index != 0:
        write_description(skill_md, result.winner.description)
        run.written = True
    data = {**result.to_dict(), "model": run.model, "teacher": run.teacher, "written": run.written}
    write_json_atomic(run_dir / RESULT_FILE, data)
    return run


def _skill_md(skill: Skill) -> Path:
    name = skill_md_name(skill.path) if skill.path is not None else None
    if name is None:
        raise UpskillError(f"skill {skill.name!r} has no SKILL.md on disk to write the description into")
    return skill.path / name


def write_description(skill_md: Path, description: str) -> None:
    """Replace the frontmatter description of ``skill_md`` in place; every other byte stays.

    Read and written as bytes of UTF-8 text with the line endings it has (no newline
    translation), atomically: a failure leaves the file as it was.
    """
    import stat

    text = read_text_capped(skill_md)
    mode = stat.S_IMODE(skill_md.stat().st_mode)
    write_text_atomic(skill_md, replace_description(text, description), mode=mode)
