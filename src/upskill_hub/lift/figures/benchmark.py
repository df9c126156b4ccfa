"""Benchmark figures of a run: ``benchmark.json`` as skill-creator computes it, and upskill-hub's own spread.

Two different figures carry a "pass rate" here, so they are named apart everywhere:

* **pass rate** (skill-creator's, in ``benchmark.json``): per answer, the share of its
  expectations (assertions) passed; ``run_summary`` gives mean, sample stddev, min and max
  over *every eval x run entry* of a configuration, exactly as skill-creator's
  ``scripts/aggregate_benchmark.py`` computes them (followed at
  :data:`upskill_hub.rundir.skill_creator.ANCHOR`): mean = sum / n, stddev = sqrt(sum of
  squared deviations / (n - 1)) (0 for one entry), each rounded to 4 decimals; ``delta`` is
  the first configuration's mean minus the second's (rounded means), as signed strings
  (``+.2f``, ``+.1f`` s, ``+.0f`` tokens). Time and tokens per answer are summarised the same way.
* **cases fully passed** (upskill-hub's, in ``summary.json`` as :class:`BenchmarkStats`,
  the report and the Space): per repeat, the share of cases whose assertions all passed;
  its spread is over the N repeats.

``benchmark.json`` follows skill-creator's ``references/schemas.md``: ``runs[]`` holds one
entry per answer, with-skill configurations first (configurations sorted by name, as
aggregate_benchmark.py discovers them), ``configuration`` ``with_skill`` /
``without_skill``, or ``<model>-with_skill`` / ``<model>-without_skill`` when a run measured
several model x mode groups (one configuration per group: never pooled), ``run_number`` =
repeat + 1. A failed call is listed with ``errors: 1`` and left out of ``run_summary``; an
answer without assertions counts 1 when it passed, else 0; a time or token count the answer
did not report counts 0, with a note. ``upskill-hub runs export --skill-creator`` writes
the same entries as a workspace aggregate_benchmark.py and the viewer read
(:mod:`upskill_hub.rundir.skill_creator`).
"""

from __future__ import annotations

import math
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
from upskill_hub.rundir.skill_creator import ANCHOR, configuration

#: upskill-hub's own figures per repeat, as (BenchmarkStats prefix, name, delta format).
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
            "assertion_rate": mean_or_none(
                [r.assertions_passed / r.assertions_total for r in answers if r.assertions_total]
            ),
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
    stats = BenchmarkStats(
        model=model, condition=condition, mode=mode, agent=agent, runs=len(figures["pass_rate"])
    )
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
        per = {
            c: condition_benchmark(key, c, groups[key][c])
            for c in ("baseline", "with_skill")
            if c in groups[key]
        }
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
#: skill-creator's summary figures: (``runs[].result`` key, delta format).
SKILL_CREATOR_FIGURES = (("pass_rate", "+.2f"), ("time_seconds", "+.1f"), ("tokens", "+.0f"))


def _r4(x: float | None) -> float:
    """A figure as skill-creator stores it: rounded to 4 decimals; 0 where not measured (its viewer needs numbers)."""
    return 0.0 if x is None else round(float(x), 4)


def skill_creator_stats(values: Sequence[float]) -> dict[str, float]:
    """Mean, sample stddev, min and max of ``values``, each rounded to 4 decimals (all 0 for none),
    with aggregate_benchmark.py's arithmetic (sum / n; n - 1 divisor; 0 for one value)."""
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1)) if n > 1 else 0.0
    return {
        "mean": round(mean, 4),
        "stddev": round(sd, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def run_summary_block(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """skill-creator's ``run_summary`` over ``runs[]`` entries: per configuration (sorted by
    name, so ``with_skill`` first), the stats of every answered entry; then ``delta``, the
    first configuration's means minus the second's (minus 0 when there is one)."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        if not e["result"]["errors"]:
            by[e["configuration"]].append(e["result"])
    block: dict[str, Any] = {
        config: {
            name: skill_creator_stats([float(r[name]) for r in by[config]])
            for name, _ in SKILL_CREATOR_FIGURES
        }
        for config in sorted(by)
    }
    configs = list(block)
    first = block[configs[0]] if configs else {}
    second = block[configs[1]] if len(configs) > 1 else {}
    block["delta"] = {
        name: format(first.get(name, {}).get("mean", 0) - second.get(name, {}).get("mean", 0), fmt)
        for name, fmt in SKILL_CREATOR_FIGURES
    }
    return block


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
        {
            "text": assertion_text(d),
            "passed": d.get("passed") is True,
            "evidence": str(d.get("evidence") or "")[:EVIDENCE_CHARS],
        }
        for d in row_details(row) or []
    ]


def answer_share(row: ResultRow) -> float:
    """skill-creator's per-answer pass rate: expectations passed / expectations, rounded to 4
    decimals; an answered case without assertions counts 1 when it passed, else 0."""
    if row.assertions_total:
        return round(row.assertions_passed / row.assertions_total, 4)
    return 1.0 if row.passed else 0.0


def row_configuration(row: ResultRow, several: bool) -> str:
    """The configuration of ``row``'s answer: one per condition, and per model x mode when there are several."""
    return configuration(row.condition, label(group_key(row)) if several else None)


def run_entry(row: ResultRow, ids: dict[str, int], several: bool) -> dict[str, Any]:
    """One answer as a ``runs[]`` entry; a failed call is an entry with ``errors: 1`` and a note."""
    answered = _answered(row)
    total = row.assertions_total if answered else 0
    passed = row.assertions_passed if answered else 0
    key = group_key(row)
    return {
        "eval_id": ids.get(row.case_id, 0),
        "eval_name": f"{row.case_id} · {label(key)}" if several else row.case_id,
        "configuration": row_configuration(row, several),
        "run_number": row.repeat + 1,
        "result": {
            "pass_rate": answer_share(row) if answered else 0.0,
            "passed": passed,
            "failed": total - passed,
            "total": total,
            "time_seconds": _r4(row.latency_s) if answered else 0.0,
            "tokens": int(_tokens(row) or 0) if answered else 0,
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


def ordered_rows(rows: Sequence[ResultRow], case_ids: Sequence[str] = ()) -> list[ResultRow]:
    """``rows`` in ``runs[]`` order: configuration (sorted by name: with skill first), eval id, run."""
    ids = eval_ids(list(case_ids) or list(dict.fromkeys(r.case_id for r in rows)))
    several = len({group_key(r) for r in rows}) > 1
    return sorted(rows, key=lambda r: (row_configuration(r, several), ids.get(r.case_id, 0), r.repeat))


def workspace_answers(rows: Sequence[ResultRow], case_ids: Sequence[str] = ()) -> list[str | None]:
    """Each ``runs[]`` entry's answer text (``None`` for a failed call), for the exported workspace."""
    return [r.output if _answered(r) else None for r in ordered_rows(rows, case_ids)]


def unmeasured_notes(rows: Sequence[ResultRow], several: bool) -> list[str]:
    """One note per configuration whose answers did not all report a time or token count:
    ``benchmark.json`` must hold a number there, so it counts 0 and says so here."""
    missing: dict[str, list[str]] = {}
    for r in rows:
        if not _answered(r):
            continue
        gaps = missing.setdefault(row_configuration(r, several), [])
        if r.latency_s is None and "time_seconds" not in gaps:
            gaps.append("time_seconds")
        if _tokens(r) is None and "tokens" not in gaps:
            gaps.append("tokens")
    return [
        f"{config}: {', '.join(gaps)} not reported by some answers; counted as 0"
        for config, gaps in sorted(missing.items())
        if gaps
    ]


def document_notes(rows: Sequence[ResultRow], audit: AuditResult, several: bool) -> list[str]:
    """``notes``: what the pass rate is, the assertion analysis, failed calls, unmeasured figures."""
    notes = [
        "pass_rate: per answer, the share of its expectations passed (skill-creator's definition); "
        "upskill-hub's cases fully passed per repeat are in summary.json and the report"
    ]
    notes += benchmark_notes(audit.flags)
    if audit.flags == [] and audit.checked:
        notes.append(
            f"assertion analysis: none of {count(audit.checked, 'assertion')} is non-discriminating, always failing or flaky"
        )
    if audit.unreadable:
        notes.append(
            f"{count(audit.unreadable, 'answer')} had unreadable assertion details and were left out of the analysis"
        )
    notes += unmeasured_notes(rows, several)
    failed = sum(1 for r in rows if not _answered(r))
    if failed:
        notes.append(f"{count(failed, 'call')} failed and are left out of the figures (errors: 1 in runs[])")
    return notes


def benchmark_document(
    summary: RunSummary,
    rows: Sequence[ResultRow],
    case_ids: Sequence[str],
    audit: AuditResult,
    skill_path: str = "",
) -> dict[str, Any]:
    """``benchmark.json`` of a run, in skill-creator's schema (see the module docstring)."""
    ids = eval_ids(list(case_ids) or list(dict.fromkeys(r.case_id for r in rows)))
    several = len({group_key(r) for r in rows}) > 1
    entries = [run_entry(r, ids, several) for r in ordered_rows(rows, case_ids)]
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
            "follows": ANCHOR,
        },
        "runs": entries,
        "run_summary": run_summary_block(entries),
        "notes": document_notes(rows, audit, several),
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


_ROW_NAMES = {
    "pass_rate": "Cases fully passed",
    "assertion_rate": "Assertions passed",
    "latency_s": "Time per answer",
    "tokens": "Tokens per answer",
}


def _sc_cell(stat: dict[str, float], name: str) -> str:
    """One ``run_summary`` figure as ``mean ± stddev (min–max)``."""
    mean, sd, lo, hi = (stat[p] for p in ("mean", "stddev", "min", "max"))
    if name == "pass_rate":
        return f"{mean * 100:.0f}% ± {sd * 100:.0f}% ({lo * 100:.0f}–{hi * 100:.0f}%)"
    if name == "time_seconds":
        return f"{mean:.1f}s ± {sd:.1f}s ({lo:.1f}–{hi:.1f}s)"
    return f"{mean:.0f} ± {sd:.0f} ({lo:.0f}–{hi:.0f})"


def _grouped(stats: Sequence[BenchmarkStats]) -> dict[GroupKey, list[BenchmarkStats]]:
    out: dict[GroupKey, list[BenchmarkStats]] = {}
    for s in stats:
        out.setdefault((s.model, s.mode, s.agent), []).append(s)
    return out


def benchmark_markdown(doc: dict[str, Any], summary: RunSummary) -> str:
    """``benchmark.md``: skill-creator's table (``run_summary``), then upskill-hub's cases fully
    passed per repeat (one table per model x mode), then the notes."""
    meta = doc["metadata"]
    rs = doc["run_summary"]
    configs = [c for c in rs if c != "delta"]
    lines = [
        f"# Skill benchmark: {summary.skill_name} v{summary.skill_version}",
        "",
        f"**Run**: {summary.run_id}  ",
        f"**Date**: {meta['timestamp']}  ",
        f"**Cases**: {len(meta['evals_run'])} ({count(summary.runs_per_case, 'run')} each per configuration)",
        "",
        "## Pass rate (skill-creator's benchmark.json)",
        "",
        "Per answer: share of its expectations passed; mean ± sample stddev (min–max) over every "
        f"case x run. Delta: {configs[0] if configs else '–'} minus {configs[1] if len(configs) > 1 else '0'}.",
        "",
        "| Configuration | Pass rate | Time | Tokens |",
        "|---|---|---|---|",
    ]
    for c in configs:
        lines.append(f"| {c} | " + " | ".join(_sc_cell(rs[c][n], n) for n, _ in SKILL_CREATOR_FIGURES) + " |")
    d = rs["delta"]
    lines.append(f"| delta | {d['pass_rate']} | {d['time_seconds']}s | {d['tokens']} |")
    lines += [
        "",
        "## Cases fully passed (upskill-hub, per repeat)",
        "",
        "Per repeat of every case: share of cases whose assertions all passed, mean share of assertions "
        "passed, time and tokens per answer; mean ± sample stddev (min–max) over repeats. "
        "Delta: with skill minus without.",
    ]
    for key, stats in _grouped(summary.benchmark or []).items():
        by = {s.condition: s for s in stats}
        skill, base = by.get("with_skill"), by.get("baseline")
        lines += [
            "",
            f"### {label(key)}",
            "",
            "| Metric | With skill | Without skill | Delta |",
            "|---|---|---|---|",
        ]
        for name, _, _ in METRICS:
            lines.append(
                f"| {_ROW_NAMES[name]} | {figure_cell(skill, name)} | {figure_cell(base, name)} | {delta_cell(skill, name)} |"
            )
    if doc["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"


def benchmark_files(
    summary: RunSummary, rows: Sequence[ResultRow], case_ids: Sequence[str], audit: AuditResult
) -> tuple[dict[str, Any], str]:
    """``benchmark.json``'s document and ``benchmark.md``'s text (:func:`upskill_hub.rundir.write_benchmark` writes them)."""
    doc = benchmark_document(summary, rows, case_ids, audit)
    return doc, benchmark_markdown(doc, summary)
