"""Library routing: which skill does a model load for each skill's queries, among all of them?

``triggers DIR --library`` sends every skill's should-trigger queries to a model whose
catalog holds the whole library, and records one :class:`TriggerRow` per call whose
``skill_name`` is the skill the query belongs to and whose ``loaded`` lists what the model
loaded. From those rows this module computes:

* the confusion matrix: the query's skill (rows) against the skill loaded *first*
  (columns), with ``none`` when the model loaded nothing. The first load is the routing
  decision; a model that loads two skills has already chosen before it reads either;
* per skill: recall (its skill was loaded at all) and routing accuracy (it was loaded
  first), each with the 95% Wilson interval of :mod:`upskill_hub.evals.stats`, and the
  library's overall routing accuracy;
* the pairs of skills that steal each other's queries, named, with example queries: the
  thing to fix (merge the two, or make their descriptions say where one ends);
* a heat-map PNG of the matrix (row shares, counts written in the cells).

Rows whose call failed (``triggered`` is ``None``) count nowhere: an error is not a routing.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import UpskillError
from upskill_hub.evals.schema import TriggerRow
from upskill_hub.evals.stats import wilson_interval

NONE = "none"
ROUTING_PNG = "routing.png"
#: The run folder's routing reports (one per model), written by ``triggers --library``; push
#: turns them into the run's ``routing`` shard.
ROUTING_FILE = "routing.json"
#: A pair steals when this many of one's queries went to the other (either way, together) ...
MIN_STOLEN = 2
#: ... or when this share of either skill's queries went to the other.
MIN_STOLEN_SHARE = 0.2
#: Example queries listed per direction of a stealing pair.
EXAMPLES = 3


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


def first_loaded(row: TriggerRow, library: set[str]) -> str:
    """The skill ``row``'s model loaded first, among ``library``; ``none`` if it loaded none of them."""
    try:
        loaded = json.loads(row.loaded or "[]")
    except ValueError:
        loaded = []
    for name in loaded if isinstance(loaded, list) else []:
        if name in library:
            return str(name)
    return NONE


def _was_loaded(row: TriggerRow) -> bool:
    try:
        loaded = json.loads(row.loaded or "[]")
    except ValueError:
        return False
    return isinstance(loaded, list) and row.skill_name in loaded


def routing_report(rows: list[TriggerRow], skills: list[str], model: str) -> RoutingReport:
    """The confusion matrix, per-skill figures and stealing pairs of ``model``'s ``rows``."""
    check_library_names(skills)
    library = set(skills)
    columns = [*skills, NONE]
    col = {name: j for j, name in enumerate(columns)}
    matrix = [[0] * len(columns) for _ in skills]
    loaded_at_all: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    examples: dict[tuple[str, str], list[str]] = defaultdict(list)
    mine = [r for r in rows if r.model == model and r.should_trigger and r.skill_name in library]
    for r in mine:
        if r.triggered is None or r.error is not None:
            errors[r.skill_name] += 1
            continue
        got = first_loaded(r, library)
        matrix[skills.index(r.skill_name)][col[got]] += 1
        loaded_at_all[r.skill_name] += _was_loaded(r)
        if got not in (r.skill_name, NONE) and r.query not in examples[(r.skill_name, got)]:
            examples[(r.skill_name, got)].append(r.query)
    per_skill = []
    for i, name in enumerate(skills):
        n = sum(matrix[i])
        routed = matrix[i][i]
        rlo, rhi = wilson_interval(loaded_at_all[name], n)
        alo, ahi = wilson_interval(routed, n)
        per_skill.append(
            SkillRouting(
                skill=name, n=n, loaded=loaded_at_all[name], recall=loaded_at_all[name] / n if n else None,
                recall_ci_low=rlo, recall_ci_high=rhi, routed=routed, accuracy=routed / n if n else None,
                accuracy_ci_low=alo, accuracy_ci_high=ahi, errors=errors[name],
            )
        )  # fmt: skip
    total = sum(p.n for p in per_skill)
    right = sum(p.routed for p in per_skill)
    lo, hi = wilson_interval(right, total)
    return RoutingReport(
        model=model, skills=list(skills), matrix=matrix, per_skill=per_skill, n=total, routed=right,
        accuracy=right / total if total else None, accuracy_ci_low=lo, accuracy_ci_high=hi,
        stealing=stealing_pairs(skills, matrix, examples), errors=sum(errors.values()),
    )  # fmt: skip


def stealing_pairs(
    skills: list[str], matrix: list[list[int]], examples: dict[tuple[str, str], list[str]]
) -> list[StealingPair]:
    """The pairs whose queries cross (see :data:`MIN_STOLEN`), most stolen first."""
    out = []
    for i, a in enumerate(skills):
        for j in range(i + 1, len(skills)):
            b = skills[j]
            ab, ba = matrix[i][j], matrix[j][i]
            na, nb = sum(matrix[i]), sum(matrix[j])
            sab, sba = (ab / na if na else 0.0), (ba / nb if nb else 0.0)
            if ab + ba and (ab + ba >= MIN_STOLEN or max(sab, sba) >= MIN_STOLEN_SHARE):
                out.append(
                    StealingPair(
                        a=a, b=b, a_to_b=ab, b_to_a=ba, share_a_to_b=sab, share_b_to_a=sba,
                        examples_a_to_b=examples.get((a, b), [])[:EXAMPLES],
                        examples_b_to_a=examples.get((b, a), [])[:EXAMPLES],
                    )
                )  # fmt: skip
    return sorted(out, key=lambda p: (-(p.a_to_b + p.b_to_a), p.a, p.b))


def plot_routing(report: RoutingReport, path: Path) -> Path:
    """A heat map of the matrix: each row's shares as colour, the counts written in the cells."""
    import numpy as np

    from upskill_hub.evals.plots import _plt

    plt = _plt()
    counts = np.array(report.matrix, dtype=float).reshape(len(report.skills), len(report.columns))
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    size = max(4.0, 0.7 * len(report.columns) + 2.5)
    fig, ax = plt.subplots(figsize=(size, max(3.0, 0.6 * len(report.skills) + 2)), dpi=100)
    im = ax.imshow(shares, cmap="Oranges", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(report.columns)), labels=report.columns, rotation=45, ha="right")
    ax.set_yticks(range(len(report.skills)), labels=report.skills)
    ax.set_xlabel("skill loaded first")
    ax.set_ylabel("query written for")
    for i in range(counts.shape[0]):
        for j in range(counts.shape[1]):
            if counts[i, j]:
                ax.text(j, i, f"{int(counts[i, j])}", ha="center", va="center",
                        color="white" if shares[i, j] > 0.6 else "black", fontsize=9)  # fmt: skip
    acc = "–" if report.accuracy is None else f"{report.accuracy:.0%}"
    ax.set_title(f"Routing on {report.model}: {acc} of {report.n} queries to their own skill", fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="share of the row's queries")
    fig.tight_layout()
    path = Path(path)
    # Rendered in memory, then written atomically: a symlink planted as routing.png in a
    # resumed run folder is replaced, never written through.
    import io

    from upskill_hub._util.fsutil import write_bytes_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    write_bytes_atomic(path, buf.getvalue())
    return path


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
    from upskill_hub._util.fsutil import write_json_atomic

    path = Path(run_dir) / ROUTING_FILE
    write_json_atomic(
        path, {"run_id": run_id, "timestamp": timestamp, "reports": [r.to_dict() for r in reports]}
    )
    return path


def read_routing(run_dir: Path) -> tuple[str, str, list[RoutingReport]] | None:
    """``(run_id, timestamp, reports)`` from ``run_dir/routing.json``; ``None`` without one.

    Read like every run-folder file (:func:`~upskill_hub.evals.trigger_rows.read_run_json`:
    no symlink, no FIFO wait, capped) and checked field by field (:func:`report_from_dict`).
    """
    from upskill_hub.errors import PathError
    from upskill_hub.evals.trigger_rows import read_run_json

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


# --------------------------------------------------------------------------- the run
#: ``ask(model, skill_name, query, repeat)``: send ``query`` to ``model`` with the whole
#: library in its catalog; one :class:`TriggerRow` whose ``skill_name`` is the query's skill.
Ask = Callable[[str, str, TriggerQuery, int], TriggerRow]
#: One routing call: ``(model, skill_name, query, repeat)``.
RoutingCall = tuple[str, str, TriggerQuery, int]
#: ``ask_many(calls, emit)``: answer every call, in any order and concurrently if it likes,
#: handing each row to ``emit`` as soon as it is answered.
AskMany = Callable[[list[RoutingCall], Callable[[TriggerRow], None]], None]


def one_at_a_time(ask: Ask) -> AskMany:
    """An :data:`AskMany` from a one-call :data:`Ask` (calls in order, one after another)."""

    def ask_many(calls: list[RoutingCall], emit: Callable[[TriggerRow], None]) -> None:
        for model, skill, q, k in calls:
            emit(ask(model, skill, q, k))

    return ask_many


def run_library_routing(
    library: dict[str, list[TriggerQuery]],
    models: list[str],
    ask_many: AskMany,
    run_dir: Path,
    *,
    run_id: str,
    timestamp: str,
    runs: int = 1,
    on_row: Callable[[TriggerRow], None] | None = None,
) -> list[RoutingReport]:
    """Every skill's should-trigger queries against the library, resumable; reports per model.

    Each answered call is appended to ``triggers.jsonl`` at once (flushed), so a run killed
    at any point resumes with the calls it has: rows already there (same model, query and
    repeat, no error) are not asked again, and a torn last line is dropped. Failed calls are
    asked again on resume. Writes ``routing.json`` and one heat map per model at the end.
    """
    from upskill_hub.evals.trigger_rows import (
        TRIGGERS_FILE,
        RowAppender,
        RowLines,
        RowResolver,
        parse_row_line,
    )

    check_library_names(list(library))
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / TRIGGERS_FILE
    # One row per call (a retry's answer replaces its failed attempt); failed calls are asked
    # again. Nothing is rewritten: rows are appended, a torn tail from a kill is cut first.
    resolver = RowResolver(path)
    lines = RowLines(path)
    for number, line in lines:
        row = parse_row_line(path, number, line)
        if row is not None:
            resolver.add(number, row)
    kept = [r for _, r in sorted(resolver.rows.values(), key=lambda x: x[0]) if r.error is None]
    done = {(r.model, r.skill_name, r.query_id, r.repeat) for r in kept}
    todo: list[RoutingCall] = [
        (model, skill, q, k)
        for model in models
        for skill, queries in library.items()
        for q in queries
        if q.should_trigger
        for k in range(runs)
        if (model, skill, q.id, k) not in done
    ]
    rows = list(kept)
    with RowAppender(path, trim_to=lines.complete_bytes if lines.torn else None, fsync=True) as out:

        def emit(row: TriggerRow) -> None:
            out.write(row)
            rows.append(row)
            if on_row is not None:
                on_row(row)

        if todo:
            ask_many(todo, emit)
    # The figures and example queries follow the plan's order, not the order calls landed in.
    order = {
        (m, s, q.id, k): i
        for i, (m, s, q, k) in enumerate(
            (m, s, q, k) for m in models for s, qs in library.items() for q in qs for k in range(runs)
        )
    }
    rows.sort(key=lambda r: order.get((r.model, r.skill_name, r.query_id, r.repeat), len(order)))
    names = list(library)
    reports = [routing_report(rows, names, m) for m in models]
    write_routing(run_dir, reports, run_id, timestamp)
    for i, report in enumerate(reports):
        plot_routing(report, run_dir / (ROUTING_PNG if len(reports) == 1 else f"routing-{i + 1}.png"))
    return reports
