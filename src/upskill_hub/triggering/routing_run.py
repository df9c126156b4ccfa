"""``upskill-hub triggers DIR --library`` on real models: every skill's queries against the whole library.

The figures are :mod:`upskill_hub.triggering.routing`'s; this module finds the library's skills
and their queries, owns the run folder and sends the calls through a
:class:`~upskill_hub.triggering.trigger_session.TriggerSession` (concurrently, cached).

A run lives in ``<output>/<stamp>-<library>-routing-<hex>/``: ``routing-plan.json`` (to find
it again with ``resume``), ``triggers.jsonl`` (one row per answered call, written as it
lands), ``routing.json`` and the heat map(s). ``upskill-hub push --results`` publishes it as
the ``routing`` config (and its rows in ``triggers``).

A skill of the library that does not pass the spec's checks (a description over 1,024
characters, a name that does not match its folder) is left out of the catalog and named
once (:class:`SkippedSkill`, ``on_skip`` and ``routing-plan.json``), as published libraries
hold one now and then; the rest are routed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub import __version__
from upskill_hub._util.timestamps import utc_now
from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.lift.runner import BASE_SYSTEM_PROMPT
from upskill_hub.rundir.routing_rows import RoutingReport, check_library_names
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.rundir.trigger_rows import read_run_json
from upskill_hub.session.catalog import Catalog
from upskill_hub.skill import Skill, find_skills, load_skill, skill_md_name, skills_in
from upskill_hub.triggering.routing import ROUTING_PNG, RoutingCall, run_library_routing
from upskill_hub.triggering.trigger_queries import check_plan_size, resolve_queries
from upskill_hub.triggering.trigger_session import Call, TriggerSession
from upskill_hub.triggering.triggers import check_run_options, open_run_dir

PLAN_FILE = "routing-plan.json"


@dataclass(frozen=True)
class SkippedSkill:
    """A library skill left out of the catalog: its name (its folder's when none reads), its
    folder, and the first problem that makes it invalid."""

    name: str
    folder: str
    reason: str

    def line(self) -> str:
        where = "" if self.folder == self.name else f" in {self.folder}"
        return f"skipped the invalid skill {self.name!r}{where} ({self.reason}); the other skills are routed"


@dataclass
class RoutingRun:
    """A finished library routing run."""

    run_dir: Path
    reports: list[RoutingReport]
    skills: list[str]
    n_queries: int
    no_queries: list[str] = field(default_factory=list)  # in the catalog, but nothing to route
    fresh_calls: int = 0
    skipped: list[SkippedSkill] = field(default_factory=list)  # invalid: left out of the catalog

    @property
    def plots(self) -> list[Path]:
        if len(self.reports) == 1:
            return [self.run_dir / ROUTING_PNG]
        return [self.run_dir / f"routing-{i + 1}.png" for i in range(len(self.reports))]


def library_skills(source: str | Path) -> tuple[list[Skill], list[SkippedSkill]]:
    """The valid skills under ``source`` (found as ``skills list`` finds them) and the invalid ones, named.

    ``source`` that is itself a skill is that one skill (invalid: its error). Two valid skills
    of one name are an error naming both folders: a catalog holds each name once.
    """
    root = Path(source)
    if not root.is_dir() or skill_md_name(root) is not None:
        return skills_in(root), []
    folders = find_skills(root)
    if not folders:
        raise UpskillError(f"{root}: no skills found (no SKILL.md in it or its subfolders)")
    skills: list[Skill] = []
    skipped: list[SkippedSkill] = []
    seen: dict[str, str] = {}
    for folder in folders:
        rel = folder.relative_to(root).as_posix()
        res = load_skill(folder)
        if not res.ok or res.skill is None:
            first = res.errors[0] if res.errors else None
            why = "could not be read" if first is None else first.message
            if first is not None and first.field and first.field != first.path:
                why = f"{first.field}: {why}"
            more = f"; and {len(res.errors) - 1} more problem(s)" if len(res.errors) > 1 else ""
            name = res.skill.name if res.skill is not None and res.skill.name else folder.name
            skipped.append(SkippedSkill(name, rel, f"{why}{more}"))
            continue
        if res.skill.name in seen:
            raise UpskillError(
                f"{root}: two skills named {res.skill.name!r}: {seen[res.skill.name]} and {rel}; a catalog "
                "holds each name once (remove or rename one)"
            )
        seen[res.skill.name] = rel
        skills.append(res.skill)
    return skills, skipped

    @property
    def plots(self) -> list[Path]:
        if len(self.reports) == 1:
            return [self.run_dir / ROUTING_PNG]
        return [self.run_dir / f"routing-{i + 1}.png" for i in range(len(self.reports))]


def library_queries(skills: Sequence[Skill]) -> tuple[dict[str, list[TriggerQuery]], list[str]]:
    """Each skill's should-trigger queries (``triggers`` in skill_meta.json, else its cases).

    Should-not queries are left out: in a library every query is some skill's, and the
    matrix's ``none`` column already shows queries that loaded nothing. A skill without
    queries stays in the catalog (it can still take others' queries) and is named apart.
    """
    library: dict[str, list[TriggerQuery]] = {}
    empty = []
    for s in skills:
        # A skill with neither triggers nor cases has nothing to route; any other refusal
        # (too many queries) is the user's to see, not an empty row.
        queries = resolve_queries(s, [], None)[0] if (s.meta.triggers or s.meta.cases) else []
        library[s.name] = [q for q in queries if q.should_trigger]
        if not library[s.name]:
            empty.append(s.name)
    return library, empty


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:40] or "library"


def run_routing(
    source: str | Path,
    model_specs: Sequence[str],
    *,
    label: str | None = None,
    base_url: str | None = None,
    runs: int = 1,
    output_dir: str | Path = "upskill-runs",
    resume: bool = False,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    concurrency: int | None = None,
    on_row: Callable[[TriggerRow], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
    on_skip: Callable[[SkippedSkill], None] | None = None,
) -> RoutingRun:
    """Route every skill's queries under ``source`` (a local folder) on each model.

    ``label`` names the library in the run id (default: the folder's name); ``on_plan``
    hears how many calls are left to make before the first one goes out; ``on_skip`` hears
    each invalid skill left out of the catalog, once, before any call.
    """
    check_run_options(runs=runs, concurrency=concurrency)
    skills, skipped = library_skills(source)
    if len(skills) < 2:
        invalid = f" ({len(skipped)} invalid skill(s) left out; first: {skipped[0].reason})" if skipped else ""
        raise UpskillError(
            f"{source}: a library needs at least two skills to route between, found {len(skills)}{invalid}"
        )
    for s in skipped:
        if on_skip is not None:
            on_skip(s)
    check_library_names([s.name for s in skills])
    library, empty = library_queries(skills)
    check_plan_size(sum(len(v) for v in library.values()), len(model_specs), runs, f"{source}")
    if len(empty) == len(skills):
        raise UpskillError(f"{source}: no skill has trigger queries or test cases to route")
    catalog = Catalog.of(list(skills))
    by_name = {s.name: s for s in skills}
    with TriggerSession(model_specs, base_url=base_url, use_cache=use_cache, cache_dir=cache_dir,
                        concurrency=concurrency) as session:  # fmt: skip
        fp = hashlib.sha256(json.dumps({
            "system": catalog.system_prompt(BASE_SYSTEM_PROMPT),
            "models": [[c.provider, c.endpoint, c.model] for c in session.clients],
            "queries": {k: [q.to_dict() for q in v] for k, v in library.items()}, "runs": runs,
        }, sort_keys=True).encode()).hexdigest()[:16]  # fmt: skip
        run_dir = open_run_dir(
            output_dir, fp, PLAN_FILE, f"{_slug(label or Path(source).resolve().name)}-routing", "routing",
            resume=resume, plan={"timestamp": utc_now(), "tool_version": __version__, "library": label or str(source),
                                 "models": session.models, "skills": list(library), "runs": runs,
                                 "skipped": [dataclasses.asdict(s) for s in skipped]},
        )  # fmt: skip
        run_id = run_dir.name
        plan = read_run_json(run_dir / PLAN_FILE)
        if not isinstance(plan, dict):
            raise PathError(run_dir / PLAN_FILE, "is not a JSON object", kind="routing plan")

        def ask_many(calls: list[RoutingCall], emit: Callable[[TriggerRow], None]) -> None:
            if on_plan is not None:
                on_plan(len(calls))
            todo = [Call(m, by_name[s], q, k) for m, s, q, k in calls]
            session.send(catalog, todo, run_id, on_row=emit)

        reports = run_library_routing(
            library, session.models, ask_many, run_dir, run_id=run_id, timestamp=str(plan.get("timestamp") or utc_now()),
            runs=runs, on_row=on_row,
        )  # fmt: skip
        fresh = session.fresh_calls
    n = sum(len(v) for v in library.values())
    return RoutingRun(run_dir, reports, list(library), n, empty, fresh_calls=fresh, skipped=skipped)
