"""Benchmark figures of a run: the spread over its repeats, and ``benchmark.json`` / ``benchmark.md``.

The intervals of :mod:`.stats` say how sure a pass rate is; skill authors also ask how
much one repeat of the whole case set differs from the next, and they read that in
skill-creator's ``benchmark.json`` (mean ± stddev, min and max per configuration, and the
with-minus-without delta), which its viewer opens. This module computes those figures
from the rows, stores them in the summary (:class:`BenchmarkStats`, so ``runs`` and the
Space show them) and writes both files into the run folder.

Definitions (per model x mode (x agent) x condition; only answered calls count):

* run ``i`` is repeat ``i`` of every case (``--runs N`` gives N runs);
* its **pass rate** is the share of cases passed in that repeat (a case passes when all
  its assertions pass), its **assertion rate** the mean share of assertions passed per
  answer, its **time** and **tokens** the mean latency and total tokens per answer;
* **stddev** is the sample standard deviation (divisor n - 1; 0 for one run), exactly as
  skill-creator's ``scripts/aggregate_benchmark.py`` computes it;
* the **delta** is with-skill mean minus baseline mean.

``benchmark.json`` follows skill-creator's ``references/schemas.md``: ``runs[]`` holds one
entry per answer (eval = case, ``configuration`` ``with_skill`` / ``without_skill``,
``run_number`` = repeat + 1) whose ``result.pass_rate`` is the share of that answer's
assertions passed, as skill-creator's grader computes it; ``run_summary`` holds the first
model x mode's figures as defined above, and ``groups`` (an addition the viewer ignores)
every model x mode's. Values are rounded to 4 decimals and deltas are signed strings, as
skill-creator writes them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from upskill_hub import __version__
from upskill_hub._util.percent import count, points
from upskill_hub.lift.figures.assertion_audit import AuditResult, assertion_text, benchmark_notes, row_details
from upskill_hub.lift.figures.stats import mean_or_none
from upskill_hub.rundir.schema import BenchmarkStats, ResultRow, RunSummary

#: skill-creator's configuration names (its viewer groups and colours by these exact strings).
CONFIGURATION = {"with_skill": "with_skill", "baseline": "without_skill"}
#: The four figures, as (BenchmarkStats prefix, benchmark.json name, delta format).
METRICS = (
    ("pass_rate", "pass_rate", "+.2f"),
    ("assertion_rate", "assertion_pass_rate", "+.2f"),
    ("latency_s", "time_seconds", "+.1f"),
    ("tokens", "tokens", "+.0f"),
)
#: Longest evidence kept per expectation in ``benchmark.json`` (the rows keep all of it).
EVIDENCE_CHARS = 500

#: ``(model, mode, agent)``: one measurement; catalog answers are never pooled with injected ones.
GroupKey = tuple[str, str, "str | None"]


@dataclass(frozen=True)
class Spread:
    """Mean, sample standard deviation, min and max of a few values."""

    mean: float
    stddev: float
    min: float
    max: float


def spread(values: Sequence[float]) -> Spread | None:
    """The spread of ``values`` (``None`` for none); stddev divides by n - 1, 0 for one value."""
    if not values:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return Spread(statistics.fmean(values), sd, min(values), max(values))


def _answered(row: ResultRow) -> bool:
    return row.error is None and row.passed is not None


def _tokens(row: ResultRow) -> float | None:
    if row.tokens_unavailable or (row.input_tokens is None and row.output_tokens is None):
        return None
    return float((row.input_tokens or 0) + (row.output_tokens or 0))


def per_run_figures(rows: Sequence[ResultRow]) -> dict[str, list[float]]:
    """Each figure's value per run (repeat), in repeat order; a run without the figure is left out.

    ``rows`` are one model x mode x condition's. A repeat whose calls all failed has no
    pass rate (it is not a 0% run), and one whose answers report no tokens has no token figure.
    """
    by_repeat: dict[int, list[ResultRow]] = defaultdict(list)
    for r in rows:
        if _answered(r):
            by_repeat[r.repeat].append(r)
    out: dict[str, list[float]] = {name: [] for name, _, _ in METRICS}
    for rep in sorted(by_repeat):
        answers = by_repeat[rep]
        values = {
            "pass_rate": mean_or_none([1.0 if r.passed else 0.0 for r in answers]),
            "assertion_rate": mean_or_none([r.assertions_passed / r.assertions_total for r in answers if r.assertions_total]),
            "latency_s": mean_or_none([r.latency_s for r in answers if r.latency_s is not None]),
            "tokens": mean_or_none([t for r in answers if (t := _tokens(r)) is not None]),
        }
        for name, value in values.items():
            if value is not None:
                out[name].append(value)
    return out


def condition_benchmark(key: GroupKey, condition: str, rows: Sequence[ResultRow]) -> BenchmarkStats:
    """The spread of each figure over the runs of one model x mode x condition."""
    model, mode, agent = key
    figures = per_run_figures(rows)
    stats = BenchmarkStats(model=model, condition=condition, mode=mode, agent=agent, runs=len(figures["pass_rate"]))
    for name, _, _ in METRICS:
        s = spread(figures[name])
        if s is not None:
            for part in ("mean", "stddev", "min", "max"):
                setattr(stats, f"{name}_{part}", getattr(s, part))
    return stats


def _set_deltas(base: BenchmarkStats, skill: BenchmarkStats) -> None:
    for name, _, _ in METRICS:
        a, b = getattr(skill, f"{name}_mean"), getattr(base, f"{name}_mean")
        setattr(skill, f"delta_{name}", None if a is None or b is None else a - b)


def group_key(row: ResultRow) -> GroupKey:
    return (row.model, row.mode, row.agent)


def benchmark_stats(rows: Sequence[ResultRow], models: Sequence[str]) -> list[BenchmarkStats]:
    """Per model (in ``models`` order) x mode x agent: baseline then with-skill figures, deltas on the latter."""
    groups: dict[GroupKey, dict[str, list[ResultRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[group_key(r)][r.condition].append(r)
    order = {m: i for i, m in enumerate(models)}
    out: list[BenchmarkStats] = []
    for key in sorted(groups, key=lambda k: (order.get(k[0], len(order)), k[0])):
        per = {c: condition_benchmark(key, c, groups[key][c]) for c in ("baseline", "with_skill") if c in groups[key]}
        if len(per) == 2:
            _set_deltas(per["baseline"], per["with_skill"])
        out += per.values()
    return out


def add_figures(summary: RunSummary, rows: Sequence[ResultRow], audit: AuditResult) -> None:
    """Store the benchmark figures and the assertion analysis in ``summary`` (its newer fields)."""
    summary.benchmark = benchmark_stats(rows, summary.models)
    summary.assertion_flags = audit.flags
    summary.assertions_checked = audit.checked


# --------------------------------------------------------------------------- benchmark.json
def _r4(x: float | None) -> float:
    """A figure as skill-creator stores it: rounded to 4 decimals; 0 where not measured (its viewer needs numbers)."""
    return 0.0 if x is None else round(float(x), 4)


def _stats_block(st: BenchmarkStats) -> dict[str, Any]:
    return {
        out: {part: _r4(getattr(st, f"{name}_{part}")) for part in ("mean", "stddev", "min", "max")}
        for name, out, _ in METRICS
    }


def _delta_block(skill: BenchmarkStats) -> dict[str, str]:
    """Signed strings as skill-creator writes them; a figure not measured counts as 0 there (see the notes)."""
    return {out: format(getattr(skill, f"delta_{name}") or 0.0, fmt) for name, out, fmt in METRICS}


def unmeasured_notes(stats: Sequence[BenchmarkStats]) -> list[str]:
    """One note per figure an answered condition could not measure (no latency, no token counts):
    ``benchmark.json`` must hold a number there, so it holds 0 and says so here."""
    notes = []
    for st in stats:
        missing = [out for name, out, _ in METRICS if st.runs and getattr(st, f"{name}_mean") is None]
        if missing:
            who = f"{label((st.model, st.mode, st.agent))} {CONFIGURATION.get(st.condition, st.condition)}"
            notes.append(f"{who}: {', '.join(missing)} not reported by the answers; shown as 0")
    return notes


def run_summary_block(stats: Sequence[BenchmarkStats]) -> dict[str, Any]:
    """skill-creator's ``run_summary`` for one model x mode: per configuration, then ``delta``."""
    by = {s.condition: s for s in stats}
    block: dict[str, Any] = {CONFIGURATION[c]: _stats_block(by[c]) for c in ("with_skill", "baseline") if c in by}
    if "with_skill" in by and "baseline" in by:
        block["delta"] = _delta_block(by["with_skill"])
    return block


def _grouped(stats: Sequence[BenchmarkStats]) -> dict[GroupKey, list[BenchmarkStats]]:
    out: dict[GroupKey, list[BenchmarkStats]] = {}
    for s in stats:
        out.setdefault((s.model, s.mode, s.agent), []).append(s)
    return out


def eval_ids(case_ids: Sequence[str]) -> dict[str, int]:
    """skill-creator's integer eval ids: the case ids themselves when all are integers
    (an ``evals.json`` read back), else each case's position from 1."""
    if case_ids and all(c.isdigit() for c in case_ids) and len({int(c) for c in case_ids}) == len(case_ids):
        return {c: int(c) for c in case_ids}
    return {c: i + 1 for i, c in enumerate(case_ids)}


def label(key: GroupKey) -> str:
    """``model``, or ``model (catalog)`` / ``model (claude-code)`` for the other modes."""
    model, mode, agent = key
    return model if mode == "inject" else f"{model} ({agent or mode})"


def _expectations(row: ResultRow) -> list[dict[str, Any]]:
    return [
        {"text": assertion_text(d), "passed": d.get("passed") is True, "evidence": str(d.get("evidence") or "")[:EVIDENCE_CHARS]}
        for d in row_details(row) or []
    ]


def run_entry(row: ResultRow, ids: dict[str, int], several: bool) -> dict[str, Any]:
    """One answer as a ``runs[]`` entry; a failed call is an entry with ``errors: 1`` and a note."""
    answered = _answered(row)
    total = row.assertions_total if answered else 0
    passed = row.assertions_passed if answered else 0
    key = group_key(row)
    return {
        "eval_id": ids.get(row.case_id, 0),
        "eval_name": f"{row.case_id} · {label(key)}" if several else row.case_id,
        "configuration": CONFIGURATION.get(row.condition, row.condition),
        "run_number": row.repeat + 1,
        "result": {
            "pass_rate": round(passed / total, 4) if total else 0.0,
            "passed": passed,
            "failed": total - passed,
            "total": total,
            "time_seconds": _r4(row.latency_s),
            "tokens": int(_tokens(row) or 0),
            "tool_calls": row.tool_calls or 0,
            "errors": 0 if answered else 1,
        },
        "expectations": _expectations(row) if answered else [],
        "notes": [] if answered else [f"the call failed: {str(row.error)[:300]}"],
        # upskill-hub's own keys (the viewer reads only the ones above)
        "case_id": row.case_id,
        "model": row.model,
        "mode": row.mode,
        "agent": row.agent,
        "case_passed": bool(row.passed) if answered else None,
    }


def document_notes(summary: RunSummary, rows: Sequence[ResultRow], audit: AuditResult) -> list[str]:
    """``notes``: the assertion analysis, failed calls, and which figures ``run_summary`` holds."""
    notes = benchmark_notes(audit.flags)
    if audit.flags == [] and audit.checked:
        notes.append(f"assertion analysis: none of {count(audit.checked, 'assertion')} is non-discriminating, always failing or flaky")
    if audit.unreadable:
        notes.append(f"{count(audit.unreadable, 'answer')} had unreadable assertion details and were left out of the analysis")
    notes += unmeasured_notes(summary.benchmark or [])
    failed = sum(1 for r in rows if not _answered(r))
    if failed:
        notes.append(f"{count(failed, 'call')} failed and are left out of the figures (errors: 1 in runs[])")
    groups = list(_grouped(summary.benchmark or []))
    if len(groups) > 1:
        notes.append(f"run_summary holds {label(groups[0])}'s figures; groups[] holds all {len(groups)} model x mode figures")
    return notes


def benchmark_document(
    summary: RunSummary, rows: Sequence[ResultRow], case_ids: Sequence[str], audit: AuditResult, skill_path: str = ""
) -> dict[str, Any]:
    """``benchmark.json`` of a run, in skill-creator's schema (see the module docstring)."""
    stats = summary.benchmark or []
    grouped = _grouped(stats)
    ids = eval_ids(list(case_ids) or list(dict.fromkeys(r.case_id for r in rows)))
    several = len({group_key(r) for r in rows}) > 1
    first = next(iter(grouped.values()), [])
    return {
        "metadata": {
            "skill_name": summary.skill_name,
            "skill_path": skill_path,
            "executor_model": ", ".join(summary.models),
            "analyzer_model": "none (figures and notes are counted from the rows)",
            "timestamp": summary.timestamp,
            "evals_run": sorted(set(ids.values())),
            "runs_per_configuration": summary.runs_per_case,
            "skill_version": summary.skill_version,
            "run_id": summary.run_id,
            "judge_model": summary.judge_model,
            "tool": f"upskill-hub {__version__}",
        },
        "runs": [run_entry(r, ids, several) for r in rows],
        "run_summary": run_summary_block(first),
        "groups": [
            {"model": k[0], "mode": k[1], "agent": k[2], "runs": max(s.runs for s in v), "run_summary": run_summary_block(v)}
            for k, v in grouped.items()
        ],
        "notes": document_notes(summary, rows, audit),
    }


# --------------------------------------------------------------------------- benchmark.md
def figure_cell(st: BenchmarkStats | None, name: str) -> str:
    """``62% ± 8% (50–70%)``: one figure's mean ± stddev (min–max); ``–`` where not measured."""
    if st is None or getattr(st, f"{name}_mean") is None:
        return "–"
    mean, sd, lo, hi = (getattr(st, f"{name}_{p}") for p in ("mean", "stddev", "min", "max"))
    if name in ("pass_rate", "assertion_rate"):
        return f"{mean * 100:.0f}% ± {sd * 100:.0f}% ({lo * 100:.0f}–{hi * 100:.0f}%)"
    if name == "latency_s":
        return f"{mean:.1f}s ± {sd:.1f}s ({lo:.1f}–{hi:.1f}s)"
    return f"{mean:.0f} ± {sd:.0f} ({lo:.0f}–{hi:.0f})"


def delta_cell(st: BenchmarkStats | None, name: str) -> str:
    """With-skill minus baseline mean: points for rates, seconds, tokens; ``–`` where not measured."""
    d = None if st is None else getattr(st, f"delta_{name}")
    if d is None:
        return "–"
    if name in ("pass_rate", "assertion_rate"):
        return points(d)
    return f"{d:+.1f}s" if name == "latency_s" else f"{d:+.0f}"


_ROW_NAMES = {"pass_rate": "Pass rate (cases)", "assertion_rate": "Assertion pass rate", "latency_s": "Time per answer", "tokens": "Tokens per answer"}


def benchmark_markdown(doc: dict[str, Any], summary: RunSummary) -> str:
    """``benchmark.md``: one table per model x mode (mean ± stddev (min–max) over runs), then the notes."""
    meta = doc["metadata"]
    lines = [
        f"# Skill benchmark: {summary.skill_name} v{summary.skill_version}",
        "",
        f"**Run**: {summary.run_id}  ",
        f"**Date**: {meta['timestamp']}  ",
        f"**Cases**: {len(meta['evals_run'])} ({count(summary.runs_per_case, 'run')} each per configuration)",
        "",
        "Per run (one repeat of every case): mean ± sample stddev (min–max). Pass rate: share of cases "
        "passed; time and tokens: mean per answer. Delta: with skill minus without.",
    ]
    for key, stats in _grouped(summary.benchmark or []).items():
        by = {s.condition: s for s in stats}
        skill, base = by.get("with_skill"), by.get("baseline")
        lines += ["", f"## {label(key)}", "", "| Metric | With skill | Without skill | Delta |", "|---|---|---|---|"]
        for name, _, _ in METRICS:
            lines.append(f"| {_ROW_NAMES[name]} | {figure_cell(skill, name)} | {figure_cell(base, name)} | {delta_cell(skill, name)} |")
    if doc["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"


def benchmark_files(
    summary: RunSummary, rows: Sequence[ResultRow], case_ids: Sequence[str], audit: AuditResult
) -> tuple[dict[str, Any], str]:
    """``benchmark.json``'s document and ``benchmark.md``'s text (:func:`upskill_hub.rundir.write_benchmark` writes them)."""
    doc = benchmark_document(summary, rows, case_ids, audit)
    return doc, benchmark_markdown(doc, summary)
