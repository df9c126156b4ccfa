"""Library routing: which skill does a model load for each skill's queries, among all of them?

``triggers DIR --library`` sends every skill's should-trigger queries to a model whose
catalog holds the whole library, and records one :class:`TriggerRow` per call whose
``skill_name`` is the skill the query belongs to and whose ``loaded`` lists what the model
loaded. From those rows this module computes:

* the confusion matrix: the query's skill (rows) against the skill loaded *first*
  (columns), with ``none`` when the model loaded nothing. The first load is the routing
  decision; a model that loads two skills has already chosen before it reads either;
* per skill: recall (its skill was loaded at all) and routing accuracy (it was loaded
  first), each with the 95% Wilson interval of :mod:`upskill_hub.lift.figures.stats`, and the
  library's overall routing accuracy;
* the pairs of skills that steal each other's queries, named, with example queries: the
  thing to fix (merge the two, or make their descriptions say where one ends);
* a heat-map PNG of the matrix (row shares, counts written in the cells).

Rows whose call failed (``triggered`` is ``None``) count nowhere: an error is not a routing.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from upskill_hub.cases import TriggerQuery
from upskill_hub.lift.figures.intervals import wilson_interval
from upskill_hub.rundir.routing_rows import (
    NONE,
    RoutingReport,
    SkillRouting,
    StealingPair,
    check_library_names,
    write_routing,
)
from upskill_hub.rundir.schema import TriggerRow

ROUTING_PNG = "routing.png"
#: A pair steals when this many of one's queries went to the other (either way, together) ...
MIN_STOLEN = 2
#: ... or when this share of either skill's queries went to the other.
MIN_STOLEN_SHARE = 0.2
#: Example queries listed per direction of a stealing pair.
EXAMPLES = 3


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

    from upskill_hub.lift.plots import _plt

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
    from upskill_hub.rundir.trigger_rows import (
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
