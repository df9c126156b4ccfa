"""A trigger run's routing reports, as the run folder holds them: ``routing.json``, its rows.

``triggers DIR --library`` writes one report per model (:mod:`upskill_hub.triggering.routing`
computes them); push turns them into the run's ``routing`` shard, pull and the Space read
them back. Every field is checked when read, since a run folder may come from anywhere.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub._util.fsutil import write_json_atomic
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.rundir.trigger_rows import read_run_json

NONE = "none"


#: The run folder's routing reports (one per model), written by ``triggers --library``; push
#: turns them into the run's ``routing`` shard.
ROUTING_FILE = "routing.json"


@dataclass
class SkillRouting:
    """One skill's queries: how often it was loaded at all, and how often first."""

    skill: str
    n: int  # answered queries of this skill
    loaded: int  # its skill was loaded (at any position)
    recall: float | None
    recall_ci_low: float | None
    recall_ci_high: float | None
    routed: int  # its skill was loaded first
    accuracy: float | None
    accuracy_ci_low: float | None
    accuracy_ci_high: float | None
    errors: int = 0


@dataclass
class StealingPair:
    """Two skills whose queries go to each other, with the queries that did."""

    a: str
    b: str
    a_to_b: int  # queries of ``a`` that loaded ``b`` first
    b_to_a: int
    share_a_to_b: float  # of ``a``'s answered queries
    share_b_to_a: float
    examples_a_to_b: list[str] = field(default_factory=list)
    examples_b_to_a: list[str] = field(default_factory=list)


@dataclass
class RoutingReport:
    """Everything ``triggers --library`` prints and pushes for one model."""

    model: str
    skills: list[str]  # matrix rows, in order; the columns are these plus ``none``
    matrix: list[list[int]]  # matrix[i][j]: queries of skills[i] whose first load was columns[j]
    per_skill: list[SkillRouting]
    n: int
    routed: int
    accuracy: float | None
    accuracy_ci_low: float | None
    accuracy_ci_high: float | None
    stealing: list[StealingPair]
    errors: int = 0

    @property
    def columns(self) -> list[str]:
        return [*self.skills, NONE]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "columns": self.columns}


def check_library_names(skills: list[str]) -> None:
    """Refuse a library whose names would make two matrix columns read the same: a skill
    named ``none`` (the column of queries that loaded nothing) or a name given twice."""
    if NONE in skills:
        raise UpskillError(
            f"a skill is named {NONE!r}, like the routing matrix's column for queries that loaded no skill; rename it"
        )
    seen: set[str] = set()
    for name in skills:
        if name in seen:
            raise UpskillError(f"two skills are named {name!r}; a routing matrix needs one column per skill")
        seen.add(name)


@dataclass
class RoutingRow:
    """One cell of a model's confusion matrix: the ``routing`` config's row.

    Long form, so ``datasets`` and the viewer can filter it; each row carries its skill's
    recall and routing accuracy with their intervals (the same on every cell of a row).
    """

    run_id: str
    timestamp: str
    model: str
    skill: str  # the skill the queries were written for
    loaded: str  # the skill loaded first, or "none"
    count: int
    n: int  # the skill's answered queries
    recall: float | None
    recall_ci_low: float | None
    recall_ci_high: float | None
    accuracy: float | None
    accuracy_ci_low: float | None
    accuracy_ci_high: float | None


def routing_records(report: RoutingReport, run_id: str, timestamp: str) -> list[RoutingRow]:
    """The ``routing`` rows of one model's report (skills x columns cells)."""
    by_skill = {p.skill: p for p in report.per_skill}
    out = []
    for i, skill in enumerate(report.skills):
        p = by_skill[skill]
        for j, got in enumerate(report.columns):
            out.append(
                RoutingRow(
                    run_id=run_id, timestamp=timestamp, model=report.model, skill=skill, loaded=got,
                    count=report.matrix[i][j], n=p.n, recall=p.recall, recall_ci_low=p.recall_ci_low,
                    recall_ci_high=p.recall_ci_high, accuracy=p.accuracy, accuracy_ci_low=p.accuracy_ci_low,
                    accuracy_ci_high=p.accuracy_ci_high,
                )
            )  # fmt: skip
    return out


def _want(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(what)


def _count(v: object, what: str) -> int:
    _want(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        f"{what} must be a whole number, at least 0",
    )
    return v  # type: ignore[return-value]


def _share_or_none(v: object, what: str) -> float | None:
    if v is None:
        return None
    _want(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1,
          f"{what} must be a share from 0 to 1 or null")  # fmt: skip
    return float(v)  # type: ignore[arg-type]


def _text(v: object, what: str) -> str:
    _want(isinstance(v, str), f"{what} must be text")
    return v  # type: ignore[return-value]


def _fields(cls: type, p: object, what: str) -> dict[str, Any]:
    _want(isinstance(p, dict), f"{what} must be an object")
    return {k: v for k, v in p.items() if k in cls.__dataclass_fields__}  # type: ignore[union-attr]


_SHARES = ("recall", "recall_ci_low", "recall_ci_high", "accuracy", "accuracy_ci_low", "accuracy_ci_high")


def report_from_dict(data: dict[str, Any]) -> RoutingReport:
    """A report read back from ``routing.json``, every field checked (unknown keys ignored).

    Types are exact and numbers finite: counts are whole numbers, shares lie in [0, 1], skill
    names are unique text and none is named ``none``; the matrix has one row per skill and one
    column per skill plus ``none``. Anything else is a ``ValueError`` naming the field.
    """
    _want(isinstance(data, dict), "a report must be an object")
    skills = data.get("skills")
    _want(
        isinstance(skills, list) and all(isinstance(x, str) and x for x in skills),
        "'skills' must be a list of names",
    )
    try:
        check_library_names(skills)
    except UpskillError as exc:
        raise ValueError(str(exc)) from None
    matrix = data.get("matrix")
    _want(isinstance(matrix, list) and len(matrix) == len(skills), "the matrix does not match its skills")
    for i, row in enumerate(matrix):
        _want(isinstance(row, list) and len(row) == len(skills) + 1, "the matrix does not match its skills")
        for j, v in enumerate(row):
            _count(v, f"matrix[{i}][{j}]")
    per = []
    for i, p in enumerate(_list(data.get("per_skill"), "'per_skill'")):
        f = _fields(SkillRouting, p, f"per_skill[{i}]")
        for k in ("n", "loaded", "routed", "errors"):
            if k in f or k != "errors":
                f[k] = _count(f.get(k), f"per_skill[{i}].{k}")
        for k in _SHARES:
            f[k] = _share_or_none(f.get(k), f"per_skill[{i}].{k}")
        _want(f.get("skill") in skills, f"per_skill[{i}].skill must be one of the skills")
        per.append(SkillRouting(**f))
    _want([p.skill for p in per] == skills, "'per_skill' must list the skills in order")
    steal = []
    for i, p in enumerate(_list(data.get("stealing") or [], "'stealing'")):
        f = _fields(StealingPair, p, f"stealing[{i}]")
        _want(f.get("a") in skills and f.get("b") in skills, f"stealing[{i}] must name two of the skills")
        for k in ("a_to_b", "b_to_a"):
            f[k] = _count(f.get(k), f"stealing[{i}].{k}")
        for k in ("share_a_to_b", "share_b_to_a"):
            v = _share_or_none(f.get(k), f"stealing[{i}].{k}")
            _want(v is not None, f"stealing[{i}].{k} must be a share from 0 to 1")
        for k in ("examples_a_to_b", "examples_b_to_a"):
            ex = _list(f.get(k, []), f"stealing[{i}].{k}")
            _want(all(isinstance(x, str) for x in ex), f"stealing[{i}].{k} must be a list of queries")
        steal.append(StealingPair(**f))
    keep = _fields(RoutingReport, data, "a report")
    keep.pop("per_skill", None)
    keep.pop("stealing", None)
    keep["model"] = _text(keep.get("model"), "'model'")
    for k in ("n", "routed"):
        keep[k] = _count(keep.get(k), f"'{k}'")
    keep["errors"] = _count(keep.get("errors", 0), "'errors'")
    for k in ("accuracy", "accuracy_ci_low", "accuracy_ci_high"):
        keep[k] = _share_or_none(keep.get(k), f"'{k}'")
    return RoutingReport(**keep, per_skill=per, stealing=steal)


def _list(v: object, what: str) -> list[Any]:
    _want(isinstance(v, list), f"{what} must be a list")
    return v  # type: ignore[return-value]


def write_routing(run_dir: Path, reports: list[RoutingReport], run_id: str, timestamp: str) -> Path:
    """``routing.json`` in ``run_dir``: the reports and the run they belong to."""
    path = Path(run_dir) / ROUTING_FILE
    write_json_atomic(
        path, {"run_id": run_id, "timestamp": timestamp, "reports": [r.to_dict() for r in reports]}
    )
    return path


def read_routing(run_dir: Path) -> tuple[str, str, list[RoutingReport]] | None:
    """``(run_id, timestamp, reports)`` from ``run_dir/routing.json``; ``None`` without one.

    Read like every run-folder file (:func:`~upskill_hub.rundir.trigger_rows.read_run_json`:
    no symlink, no FIFO wait, capped) and checked field by field (:func:`report_from_dict`).
    """
    path = Path(run_dir) / ROUTING_FILE
    try:
        os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        pass  # the reader says what is wrong
    data = read_run_json(path)
    try:
        _want(isinstance(data, dict), "not a JSON object")
        run_id, timestamp = _text(data.get("run_id"), "'run_id'"), _text(data.get("timestamp"), "'timestamp'")
        reports = [report_from_dict(r) for r in _list(data.get("reports"), "'reports'")]
        return run_id, timestamp, reports
    except (ValueError, TypeError) as exc:
        raise PathError(
            path, f"not a routing report ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        ) from None
