"""``upskill-hub tune`` on real models: the loop of :mod:`upskill_hub.triggering.tune`, wired up.

The scorer puts each candidate description in the catalog in place of the skill's own
(the distractors stay as they are) and sends the queries through a
:class:`~upskill_hub.triggering.trigger_session.TriggerSession`; the teacher is a
:class:`~upskill_hub.triggering.tune.ModelTeacher` (by default the model ``generate`` uses).
Both go through the response cache, so a resumed run pays only for calls it never made.

A run lives in ``<output>/<stamp>-<skill>-tune-<hex>/``: ``tune-plan.json`` (what was asked,
to find the run again with ``resume``), ``tune.jsonl`` (one line per finished step),
``tune_result.json`` (every candidate and the winner) and ``tune_report.md`` (each
iteration, for people: :mod:`upskill_hub.triggering.tune_report`). ``write=True`` rewrites
only the frontmatter's description in SKILL.md
(:func:`upskill_hub.descriptions.replace_description`), and only when a candidate beat
the description the loop started from (on held-out queries; on train with ``held_out=0``).

``description`` seeds the loop: the given text (from ``--description TEXT|@FILE``, read by
:func:`description_option`) is candidate 0 in place of SKILL.md's own description, and
SKILL.md is not read for it nor changed (unless ``write`` and a later candidate beat it).

``--write`` takes a run of minutes while others may work on the same skill, so SKILL.md
is guarded (:class:`SkillMdGuard`): its bytes are taken when the run begins and compared
when the winner is written; a change (an edit, a swap for a symlink, a new file) refuses
the write in one line, and the winner stays in ``tune_result.json``. A SKILL.md that is a
symlink to a file inside the skill's repository (plugin repositories share one SKILL.md
between agents this way, and the loader allows it) stays a symlink: its target is the
file rewritten, atomically. One pointing elsewhere, a read-only SKILL.md (no write
permission bit, so root is refused too) and one the system will not let us replace
(immutable, EPERM) are each refused in one line, before any call when it can be told.

A run folder resumed with ``--resume`` must be a real folder directly inside
``--output``: one that is a symlink (it would be resumed, and written, wherever it
points) is refused.

``threshold`` is each query's verdict (run_eval's rule, ``--threshold``, default 0.5): the
failures the teacher sees and the queries passed that pick the winner.

``agent`` (``--agent claude-code``, one CLI) scores each candidate inside an agent CLI instead
of a model, as skill-creator's run_loop does through ``claude -p``: every call is
``triggers --agent``'s (:mod:`upskill_hub.triggering.agent_triggers`: a throwaway workspace
with the candidate installed beside the distractors, triggered iff the transcript shows the
skill loaded, the harness cache), and the teacher is still a model.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util import limits
from upskill_hub._util.fsutil import (
    FileRefused,
    read_capped,
    shown_path,
    storage_error,
    write_bytes_atomic,
    write_json_atomic,
)
from upskill_hub.cases import TriggerQuery
from upskill_hub.descriptions import check_description, replace_description
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.models.spec import DEFAULT_TEACHER
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.session.catalog import Catalog, CatalogSkill
from upskill_hub.session.clients import load_distractors, open_clients
from upskill_hub.skill import Skill, repository_root, require_skill, skill_md_name
from upskill_hub.triggering.candidates import candidate_skill, read_description_arg
from upskill_hub.triggering.query_verdicts import DEFAULT_THRESHOLD, check_threshold
from upskill_hub.triggering.trigger_queries import resolve_queries
from upskill_hub.triggering.trigger_session import Call, TriggerSession
from upskill_hub.triggering.triggers import open_run_dir
from upskill_hub.triggering.tune import (
    DEFAULT_HELD_OUT,
    DEFAULT_ITERATIONS,
    DEFAULT_RUNS,
    RESULT_FILE,
    ModelTeacher,
    TuneResult,
    control_problem,
    tune_description,
)
from upskill_hub.triggering.tune_report import REPORT_FILE, markdown_report

PLAN_FILE = "tune-plan.json"


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
    seeded: bool = False  # candidate 0 came from --description, not SKILL.md

    @property
    def report(self) -> Path:
        """The Markdown report of the iterations, next to ``tune_result.json``."""
        return self.run_dir / REPORT_FILE


def description_option(value: str) -> str:
    """The description ``--description TEXT|@FILE`` names, checked; a one-line error otherwise.

    Read as ``triggers --description`` reads it (:func:`read_description_arg`: ``@FILE`` through
    the bounded reader, ``@@text`` for a literal ``@text``), then line breaks and runs of spaces
    become one space, as a folded YAML description reads.
    """
    text, _source = read_description_arg(value)
    return seed_description(text)


def seed_description(text: str) -> str:
    """``text`` as a seed of the loop: whitespace folded to single spaces, spec-checked, no controls."""
    if (why := control_problem(text)) is not None:
        raise UpskillError(f"--description {why}")
    try:
        return check_description(" ".join(text.split()))
    except UpskillError as exc:
        raise UpskillError(f"--description: {exc}") from None


def _catalog_with(skill: Skill, others: list[Skill], description: str) -> Catalog:
    """The catalog the model sees, with ``description`` as the skill's own."""
    mine = dataclasses.replace(CatalogSkill.from_skill(skill), description=description)
    return Catalog((mine, *(CatalogSkill.from_skill(o) for o in others)))


def _fingerprint(payload: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _inside_output(output_dir: str | Path, run_dir: Path) -> Path:
    """``run_dir`` when it is a real folder directly inside ``output_dir``, else a one-line refusal.

    ``--resume`` picks the run folder by its plan; a folder that is a symlink (or a plan
    found through one) would be resumed, and its files written, outside ``--output``.
    """
    try:
        st = os.lstat(run_dir)
    except OSError as exc:
        raise PathError(run_dir, f"cannot be read ({exc.strerror or exc})", kind="run folder") from None
    if stat.S_ISLNK(st.st_mode):
        raise PathError(run_dir, "is a symlink; a run folder is never resumed through one", kind="run folder")
    if not stat.S_ISDIR(st.st_mode) or run_dir.resolve().parent != Path(output_dir).resolve():
        raise PathError(run_dir, f"is not a folder inside {shown_path(output_dir)}", kind="run folder")
    return run_dir


def run_tune(
    skill: Skill | str | Path,
    model: str | None,
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
    description: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    agent: str | None = None,
    harness: Any = None,
    on_step: Callable[[str], None] | None = None,
    on_row: Callable[[TriggerRow], None] | None = None,
) -> TuneRun:
    """Tune ``skill``'s description for ``model`` (or inside the ``agent`` CLI); see the module docstring.

    Everything is checked (the skill, the queries, the model or agent, the teacher, the
    seed ``description``, ``threshold``) before the first call and before anything is written.
    ``harness`` (:class:`~upskill_hub.lift.harness.spec.HarnessOptions`) applies to ``agent`` only.
    """
    threshold = check_threshold(threshold)
    if (model is None) == (agent is None):
        raise UpskillError("tune needs one of --model (a model) or --agent (an agent CLI), not both")
    if description is not None:
        description = seed_description(description)
    if isinstance(skill, (str, Path)):
        skill = require_skill(skill)
    if iterations < 0 or runs < 1:
        raise UpskillError("--iterations must be 0 or more and --runs 1 or more")
    if not 0 <= held_out < 1:
        raise UpskillError(f"--held-out must be 0 (tune on every query) or between 0 and 1, not {held_out}")
    start = skill.description if description is None else description
    guard = SkillMdGuard.take(_skill_md(skill)) if write else None
    others = load_distractors(distractors, skill.name)
    queries, source = resolve_queries(skill, others, triggers_file)
    teacher_spec = teacher or DEFAULT_TEACHER
    if agent is not None:
        target: _Target = _AgentTarget(
            skill, others, agent, harness, use_cache, cache_dir, concurrency, on_row
        )
    else:
        target = _ModelTarget(skill, others, model or "", base_url, use_cache, cache_dir, concurrency, on_row)
    try:
        (teacher_client,) = open_clients(
            [teacher_spec], teacher_base_url or base_url, timeout=120.0, max_retries=4
        )
    except BaseException:
        target.close()
        raise
    coach = ModelTeacher(
        teacher_client, skill.name, skill_md=skill.skill_md_text, cache=target.cache, label=teacher_spec,
        threshold=threshold,
    )  # fmt: skip
    try:
        identity: dict[str, object] = {
            "skill": skill.name, "description": start, "model": target.identity,
            "teacher": [teacher_client.provider, teacher_client.endpoint, teacher_client.model],
            "catalog": [[o.name, o.description] for o in others], "queries": [q.to_dict() for q in queries],
            "runs": runs, "seed": seed, "held_out": held_out,
        }  # fmt: skip
        if threshold != DEFAULT_THRESHOLD:  # runs begun before --threshold (always 0.5) still resume
            identity["threshold"] = threshold
        run_dir = open_run_dir(
            output_dir, _fingerprint(identity), PLAN_FILE, f"{skill.name}-tune", "tune", resume=resume,
            plan={"skill_name": skill.name, "skill_path": str(skill.path or ""), "model": target.label,
                  "agent": agent is not None, "teacher": teacher_client.model, "source": source, "runs": runs,
                  "seed": seed, "held_out": held_out, "threshold": threshold,
                  "catalog": [skill.name, *(o.name for o in others)], "seed_description": description},
        )  # fmt: skip
        run_dir = _inside_output(output_dir, run_dir)
        result = tune_description(
            start, queries, target.scorer(run_dir), coach, run_dir=run_dir, iterations=iterations, runs=runs,
            seed=seed, held_out=held_out, threshold=threshold, on_step=on_step,
        )  # fmt: skip
    finally:
        coach.close()
        target.close()
    skill_md = guard.path if guard is not None else None
    run = TuneRun(run_dir, result, source, target.label, teacher_client.model, skill_md,
                  fresh_calls=target.fresh_calls, seeded=description is not None)  # fmt: skip
    data = {**result.to_dict(), "model": run.model, "teacher": run.teacher, "written": False,
            "agent": agent is not None,
            "started_from": "--description" if run.seeded else "SKILL.md", "report": REPORT_FILE}  # fmt: skip
    _save(run, data)  # the winner is kept even if SKILL.md refuses it
    if guard is not None and result.winner.index != 0:
        guard.write(result.winner.description, where=run_dir / RESULT_FILE)
        run.written = True
        _save(run, {**data, "written": True})
    return run


class _Target:
    """What candidates are scored on: a model (:class:`_ModelTarget`) or an agent CLI
    (:class:`_AgentTarget`). ``cache`` is the response cache the teacher shares."""

    label: str  # the row's model: the model id, or the agent label
    identity: list[str]  # what the plan's fingerprint holds of it
    cache: Any
    fresh_calls: int

    def scorer(self, run_dir: Path) -> Callable[[str, list[TriggerQuery], int], list[TriggerRow]]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _ModelTarget(_Target):
    """Trigger calls to a model, with the candidate in the catalog (``triggers``' calls)."""

    def __init__(self, skill: Skill, others: list[Skill], model: str, base_url: str | None, use_cache: bool,
                 cache_dir: str | Path | None, concurrency: int | None,
                 on_row: Callable[[TriggerRow], None] | None) -> None:  # fmt: skip
        self.session = TriggerSession(
            [model], base_url=base_url, use_cache=use_cache, cache_dir=cache_dir, concurrency=concurrency
        )
        (self.client,) = self.session.clients
        self.skill, self.others, self.on_row = skill, others, on_row
        self.label, self.cache = self.client.model, self.session.cache
        self.identity = [self.client.provider, self.client.endpoint, self.client.model]

    @property  # type: ignore[override]
    def fresh_calls(self) -> int:
        return self.session.fresh_calls

    def scorer(self, run_dir: Path) -> Callable[[str, list[TriggerQuery], int], list[TriggerRow]]:
        def score(description: str, subset: list[TriggerQuery], n: int) -> list[TriggerRow]:
            calls = [Call(self.client.model, self.skill, q, k) for k in range(n) for q in subset]
            catalog = _catalog_with(self.skill, self.others, description)
            return self.session.send(catalog, calls, run_dir.name, on_row=self.on_row)

        return score

    def close(self) -> None:
        self.session.close()


class _AgentTarget(_Target):
    """Trigger calls inside one agent CLI, each exactly as ``triggers --agent`` makes it
    (:func:`upskill_hub.triggering.agent_triggers._call`): the candidate installed beside the
    distractors in a throwaway workspace, the harness cache keyed on every installed version."""

    def __init__(self, skill: Skill, others: list[Skill], agent: str, harness: Any, use_cache: bool,
                 cache_dir: str | Path | None, concurrency: int | None,
                 on_row: Callable[[TriggerRow], None] | None) -> None:  # fmt: skip
        from upskill_hub.lift.harness.run import HarnessCache
        from upskill_hub.lift.harness.spec import HarnessOptions, prepare_agents
        from upskill_hub.session.cache import ResponseCache, default_cache_dir
        from upskill_hub.triggering.agent_triggers import check_agent_specs
        from upskill_hub.triggering.triggers import concurrency_of

        check_agent_specs([agent])
        (self.client,) = prepare_agents([agent], skill, harness or HarnessOptions())
        root = Path(cache_dir or default_cache_dir())
        self.harness_cache = HarnessCache(root) if use_cache else None
        self.cache = ResponseCache(root) if use_cache else None
        self.skill, self.others, self.on_row = skill, others, on_row
        self.workers = concurrency_of(self.client, concurrency)
        self.label = self.client.model
        self.identity = ["agent", self.client.provider, self.client.model]
        self.fresh_calls = 0

    def scorer(self, run_dir: Path) -> Callable[[str, list[TriggerQuery], int], list[TriggerRow]]:
        import asyncio

        from upskill_hub.triggering.agent_triggers import _call, _Setup
        from upskill_hub.triggering.triggers import run_workers

        def score(description: str, subset: list[TriggerQuery], n: int) -> list[TriggerRow]:
            cand = candidate_skill(self.skill, description)
            setup = _Setup(cand, (cand, *self.others), run_dir, run_dir.name, self.harness_cache)
            todo = iter([(q, k) for k in range(n) for q in subset])
            rows: list[TriggerRow] = []

            async def worker() -> None:
                for q, k in todo:  # shared by the workers: each call is taken once
                    row, ran = await _call(self.client, setup, q, k)
                    self.fresh_calls += ran
                    rows.append(row)
                    if self.on_row is not None:
                        self.on_row(row)

            asyncio.run(run_workers(worker() for _ in range(self.workers)))  # the first failure stops all
            return rows

        return score

    def close(self) -> None:
        return None


def _save(run: TuneRun, data: dict[str, object]) -> None:
    """``tune_result.json`` and, beside it, ``tune_report.md`` (both atomic)."""
    write_json_atomic(run.run_dir / RESULT_FILE, data)
    write_bytes_atomic(run.report, markdown_report(run).encode("utf-8"))


def _skill_md(skill: Skill) -> Path:
    name = skill_md_name(skill.path) if skill.path is not None else None
    if name is None:
        raise UpskillError(f"skill {skill.name!r} has no SKILL.md on disk to write the description into")
    return skill.path / name


def write_description(skill_md: Path, description: str) -> None:
    """Replace the frontmatter description of ``skill_md``; every other byte stays.

    Read and written as bytes of UTF-8 text with the line endings it has (no newline
    translation), atomically: a failure leaves the file as it was. The guards of
    :class:`SkillMdGuard` apply (symlinks, read-only, immutable, control characters).
    """
    SkillMdGuard.take(skill_md).write(description)


#: A description :meth:`SkillMdGuard.take` rewrites SKILL.md with (in memory only) to learn
#: before any call whether ``--write`` could put the winner there.
_PROBE = "A description that --write checks it can put in place. Use when checking."


def _refuse(path: Path, why: str) -> UpskillError:
    return UpskillError(f"{shown_path(path)}: {why}; SKILL.md was not changed")


@dataclass(frozen=True)
class SkillMdGuard:
    """SKILL.md as it was when a tune run began, to write the winner into only if unchanged.

    ``path`` is the SKILL.md the skill names; ``target`` the file actually rewritten (the
    same, or the in-repository file a symlinked SKILL.md points to); ``link`` the symlink's
    text (``None`` for a regular file), ``data`` the bytes read at the start.
    """

    path: Path
    target: Path
    link: str | None
    data: bytes

    @classmethod
    def take(cls, path: Path) -> SkillMdGuard:
        """Read ``path`` now; refuse at once what could never be written (before any call)."""
        link, target = cls._target(path)
        data = cls._read(target)
        guard = cls(path, target, link, data)
        guard._check_writable()
        guard._rewritten(_PROBE, after="run tune without --write")  # the loop may take minutes: fail now
        return guard

    def _rewritten(self, description: str, *, after: str) -> bytes:
        """SKILL.md as taken, with only its description replaced by ``description``.

        A description the rewrite cannot replace alone (a YAML alias such as
        ``description: *d``, a tag, a second key) is refused in one line ending with ``after``.
        """
        try:
            text = self.data.decode("utf-8")
        except UnicodeDecodeError:
            raise _refuse(self.path, "is not UTF-8 text") from None
        try:
            return replace_description(text, description).encode("utf-8")
        except UpskillError as exc:  # FrontmatterError too (the rewritten text did not parse back)
            why = f"--write cannot replace its description alone ({exc}); write it as plain text, or {after}"
            raise _refuse(self.path, why) from None

    @staticmethod
    def _target(path: Path) -> tuple[str | None, Path]:
        """``(symlink text or None, file to rewrite)``; a link leaving the repository is refused."""
        try:
            st = os.lstat(path)
        except OSError as exc:
            raise _refuse(path, f"cannot be read ({exc.strerror or exc})") from None
        if not stat.S_ISLNK(st.st_mode):
            if not stat.S_ISREG(st.st_mode):
                raise _refuse(path, "is not a regular file")
            return None, path
        link = os.readlink(path)
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise _refuse(path, "is a symlink that points to nothing (or loops)") from None
        repo = repository_root(path.parent)
        if not target.is_relative_to(repo):
            where = f"{shown_path(target)}, outside the repository {shown_path(repo)}"
            raise _refuse(path, f"is a symlink to {where}")
        return link, target

    @staticmethod
    def _read(target: Path) -> bytes:
        try:
            return read_capped(target, limits.MAX_FILE_BYTES, follow_symlinks=False)
        except FileRefused as exc:
            raise _refuse(target, exc.problem) from None

    def _check_writable(self) -> None:
        """A read-only SKILL.md (no owner write bit: refused for root too) is not replaced."""
        try:
            mode = os.lstat(self.target).st_mode
        except OSError as exc:
            raise _refuse(self.target, f"cannot be read ({exc.strerror or exc})") from None
        if not mode & stat.S_IWUSR or not os.access(self.target, os.W_OK):
            why = "is read-only; make it writable (chmod u+w) or run tune without --write"
            raise _refuse(self.target, why)

    def write(self, description: str, *, where: Path | None = None) -> None:
        """Put ``description`` into SKILL.md, atomically, if SKILL.md is still what it was.

        Refused in one line (nothing written) when SKILL.md changed since :meth:`take` (an
        edit, a swap for a symlink or for another file), became read-only, or cannot be
        replaced (immutable); and when ``description`` holds control characters.
        """
        keep = f"; the winner is in {shown_path(where)}" if where is not None else ""
        again = f"run tune again to tune the current text{keep}"
        if (why := control_problem(description)) is not None:
            raise _refuse(self.path, f"the new description {why}")
        try:
            link, target = self._target(self.path)
        except UpskillError:
            why = f"changed during the run (it is now a symlink or gone); {again}"
            raise _refuse(self.path, why) from None
        if (link, target) != (self.link, self.target):
            why = f"changed during the run (it was swapped for another file or link); {again}"
            raise _refuse(self.path, why)
        if self._read(target) != self.data:
            raise _refuse(self.path, f"was changed by someone else during the run; {again}")
        self._check_writable()
        new = self._rewritten(description, after=again)
        try:
            write_bytes_atomic(target, new, mode=stat.S_IMODE(os.lstat(target).st_mode))
        except UpskillError:  # a full or read-only disk: StorageError says what to do
            raise
        except OSError as exc:
            if (err := storage_error(exc, target)) is not None:
                raise err from None
            hint = " (is it immutable? see lsattr)" if exc.errno in (errno.EPERM, errno.EACCES) else ""
            raise _refuse(target, f"cannot be replaced: {exc.strerror or exc}{hint}") from None
