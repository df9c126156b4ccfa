"""Terminal rendering of a run: a Rich table like upskill's, plus baseline vs with-skill bars.

Rendering only: every number comes from :class:`RunSummary` (see ``stats.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from upskill_hub._util.percent import count, interval, pct, points
from upskill_hub.rundir.schema import (
    BenchmarkStats,
    ConditionStats,
    LiftStats,
    ResultRow,
    RunSummary,
    TriggerRow,
    TriggerStats,
)
from upskill_hub.session.transcript import Transcript

BAR_WIDTH = 30


def _rate_cell(c: ConditionStats | None) -> str:
    if c is None or c.pass_rate is None:
        return "–"
    return f"{pct(c.pass_rate)} ({c.passed}/{c.n})\n{interval(c.ci_low, c.ci_high)}"


def _lift_cell(x: LiftStats | None) -> Text:
    if x is None or x.lift is None:
        return Text("–")
    style = "green" if x.conclusive and x.lift > 0 else "red" if x.conclusive and x.lift < 0 else "yellow"
    txt = points(x.lift, x.ci_low, x.ci_high, sep="\n", compact=True)
    if x.p_value is not None:
        txt += f"\np={x.p_value:.2g}"
    return Text(txt, style=style)


def summary_table(summary: RunSummary) -> Table:
    """Model | baseline pass rate | with-skill pass rate | assertions | tokens | lift."""
    by = {(c.model, c.mode, c.condition): c for c in summary.conditions}
    lifts = {(x.model, x.mode): x for x in summary.lifts}
    has_base = any(c.condition == "baseline" for c in summary.conditions)
    modes = list(dict.fromkeys(c.mode for c in summary.conditions)) or ["inject"]
    # One row per model x mode: a catalog lift sits right under the same model's inject lift.
    show_mode = modes != ["inject"]
    methods = sorted({x.method for x in summary.lifts if x.lift is not None})
    t = Table(
        title=f"{summary.skill_name} v{summary.skill_version} — {count(summary.n_cases, 'case')} × {count(summary.runs_per_case, 'run')}",
        title_style="bold",
        caption="pass rate [95% Wilson CI]; assertions and tokens: mean per call, baseline → with skill; "
        "lift: with skill − baseline, paired over cases [95% CI"
        + (f": {'; '.join(methods)}]" if methods else "]"),
    )
    t.add_column("model")
    if show_mode:
        t.add_column("mode")
    if has_base:
        t.add_column("baseline", justify="right")
    t.add_column("with skill", justify="right")
    t.add_column("assertions", justify="right")
    t.add_column("tokens", justify="right")
    if has_base:
        t.add_column("lift", justify="right", no_wrap=True)
    t.add_column("errors", justify="right")
    for m, mode in [(m, mode) for m in summary.models for mode in modes]:
        b, s = by.get((m, mode, "baseline")), by.get((m, mode, "with_skill"))
        if b is None and s is None:
            continue

        def fmt(attr: str, c_b: ConditionStats | None = b, c_s: ConditionStats | None = s) -> str:
            vals = []
            for c in ([c_b] if has_base else []) + [c_s]:
                v = getattr(c, attr) if c is not None else None
                vals.append("–" if v is None else (f"{v * 100:.0f}%" if attr == "mean_assertions" else f"{v:.0f}"))
            return " → ".join(vals)

        errors = sum(c.errors for c in (b, s) if c is not None)
        cells: list[str | Text] = [m] + ([mode] if show_mode else [])
        if has_base:
            cells.append(_rate_cell(b))
        cells += [_rate_cell(s), fmt("mean_assertions"), fmt("mean_total_tokens")]
        if has_base:
            cells.append(_lift_cell(lifts.get((m, mode))))
        cells.append(str(errors) if errors else "0")
        t.add_row(*cells)
    return t


def bars(summary: RunSummary) -> Group:
    """Horizontal bars of pass rate: baseline (grey) vs with skill (orange) per model."""
    lines: list[Text] = []
    by = {(c.model, c.mode, c.condition): c for c in summary.conditions}
    modes = list(dict.fromkeys(c.mode for c in summary.conditions))
    for m, mode in [(m, mode) for m in summary.models for mode in modes]:
        if not any((m, mode, cond) in by for cond in ("baseline", "with_skill")):
            continue
        lines.append(Text(m if modes == ["inject"] else f"{m} ({mode})", style="bold"))
        for cond, style in (("baseline", "grey58"), ("with_skill", "dark_orange")):
            c = by.get((m, mode, cond))
            if c is None:
                continue
            rate = c.pass_rate or 0.0
            n = round(rate * BAR_WIDTH)
            line = Text(f"  {cond.replace('_', ' '):<11}")
            line.append("█" * n, style=style)
            line.append("░" * (BAR_WIDTH - n), style="grey23")
            line.append(f" {pct(c.pass_rate)}")
            lines.append(line)
    return Group(*lines)


def notes(summary: RunSummary) -> list[str]:
    """Plain-language caveats: inconclusive lifts, errors, cached answers."""
    out = []
    for x in summary.lifts:
        who = x.model if x.mode == "inject" else f"{x.model} ({x.mode})"
        if not x.conclusive and x.note:
            out.append(f"{who}: not conclusive — {x.note}")
        elif x.conclusive and x.lift is not None:
            out.append(f"{who}: the skill changes the pass rate by {points(x.lift, unit='points')} (p = {x.p_value:.2g})")
        if x.token_savings is not None and x.token_savings != 0:
            word = "saves" if x.token_savings > 0 else "costs"
            out.append(f"{who}: the skill {word} {abs(x.token_savings):.0f} tokens per call on average")
    cached = sum(c.cached_calls for c in summary.conditions)
    if cached:
        out.append(f"{cached} answer(s) came from the response cache (use --no-cache for fresh calls)")
    return out


def _share(k: int, n: int, rate: float | None, lo: float | None, hi: float | None) -> str:
    if rate is None:
        return "–"
    return f"{pct(rate)} ({k}/{n})\n{interval(lo, hi)}"


def trigger_table(stats: list[TriggerStats], title: str = "skill loading (catalog mode)") -> Table:
    """Model | recall | false-trigger rate | precision | F1 (rates with 95% Wilson intervals)."""
    t = Table(
        title=title,
        title_style="bold",
        caption="recall: should-trigger queries that loaded the skill; false triggers: should-not queries "
        "that did [95% Wilson CI]",
    )
    for col in ("model", "recall", "false triggers", "precision", "F1", "errors"):
        t.add_column(col, justify="left" if col == "model" else "right")
    for st in stats:
        t.add_row(
            st.model,
            _share(st.triggered_should, st.n_should, st.recall, st.recall_ci_low, st.recall_ci_high),
            _share(st.triggered_should_not, st.n_should_not, st.false_trigger_rate, st.fpr_ci_low, st.fpr_ci_high),
            "–" if st.precision is None else f"{st.precision:.2f}",
            "–" if st.f1 is None else f"{st.f1:.2f}",
            str(st.errors),
        )
    return t


def print_trigger_report(
    skill_name: str, stats: list[TriggerStats], wrong: list[TriggerRow], console: Console, run_dir: str | None = None
) -> None:
    """The ``triggers`` command's report: the figures, then every query that went wrong."""
    console.print(trigger_table(stats, title=f"{skill_name}: does the description trigger?"))
    for r in wrong:
        what = "missed (should trigger)" if r.should_trigger else "false trigger (should not)"
        console.print(f"• {r.model}: {what}: {r.query[:160]!r}", highlight=False, markup=False)
    if run_dir:
        console.print(f"Results: {run_dir}", highlight=False)


def spread_lines(summary: RunSummary) -> list[str]:
    """Per model x mode, how much the pass rate moved between runs (``benchmark.json``'s figures).

    Only with several runs per case: one run has no spread to show.
    """
    if summary.runs_per_case < 2 or not summary.benchmark:
        return []
    from upskill_hub.lift.figures.benchmark import label

    out = []
    groups: dict[tuple, dict[str, BenchmarkStats]] = {}
    for b in summary.benchmark:
        groups.setdefault((b.model, b.mode, b.agent), {})[b.condition] = b
    for key, by in groups.items():
        parts = []
        for cond in ("baseline", "with_skill"):
            b = by.get(cond)
            if b is not None and b.pass_rate_mean is not None:
                parts.append(
                    f"{cond.replace('_', ' ')} {pct(b.pass_rate_mean)} ± {pct(b.pass_rate_stddev)} "
                    f"({pct(b.pass_rate_min)}–{pct(b.pass_rate_max)})"
                )
        if parts:
            out.append(f"{label(key)}: cases fully passed per run (mean ± stddev, min–max over {count(summary.runs_per_case, 'run')}): " + "; ".join(parts))
    return out


#: Distinct reasons a refused-reads note names (the rest are counted).
MAX_REFUSAL_REASONS = 3


def refused_read_lines(rows: Iterable[ResultRow]) -> list[str]:
    """How many ``read_skill_file`` calls were refused to the model, and why (catalog mode).

    A refused read is one tool error the conversation goes on from: the answer is graded as if
    the file did not exist. Without this line the only trace is in ``results.jsonl``.
    """
    reasons: Counter[str] = Counter()
    for row in rows:
        if not row.transcript:
            continue
        for event in Transcript.from_json(row.transcript).events:
            if event.name == "read_skill_file" and event.error and event.result:
                reasons[event.result.removeprefix("error: ")] += 1
    if not reasons:
        return []
    shown = [f"{why} ({count(n, 'time')})" for why, n in reasons.most_common(MAX_REFUSAL_REASONS)]
    if len(reasons) > MAX_REFUSAL_REASONS:
        shown.append(f"{len(reasons) - MAX_REFUSAL_REASONS} more reason(s) in results.jsonl")
    total = sum(reasons.values())
    head = f"{count(total, 'file read')} refused to the model (it answered without the file): "
    return [head + "; ".join(shown)]


def print_report(
    summary: RunSummary, console: Console, run_dir: str | None = None, rows: Iterable[ResultRow] = ()
) -> None:
    """The run's table, bars and notes; ``rows`` (the run's result rows) add what the summary
    does not hold, such as file reads refused to the model."""
    from upskill_hub.lift.figures.assertion_audit import summary_lines

    console.print(summary_table(summary))
    if summary.triggers:
        console.print(trigger_table(summary.triggers))
    console.print(bars(summary))
    for line in notes(summary) + spread_lines(summary) + refused_read_lines(rows):
        console.print(f"• {line}", highlight=False)
    audit = summary_lines(summary.assertion_flags, summary.assertions_checked)
    for line in audit:
        console.print(line if line.startswith("  ") else f"• {line}", highlight=False, markup=False)
    if run_dir:
        console.print(results_line(run_dir), highlight=False, markup=False, soft_wrap=True)


def results_line(run_dir: str) -> str:
    """``Results: DIR``, naming ``report.html`` when the run wrote one: the page to open to see
    each case's answers and why it failed (``--no-plots`` writes none)."""
    from pathlib import Path

    from upskill_hub.lift.plots import REPORT_HTML

    report = Path(run_dir) / REPORT_HTML
    if report.is_file():
        return f"Results: {run_dir} (open {report} for each case's answers and why it failed)"
    return f"Results: {run_dir}"


def _score(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def scenario_table(rows: list[dict], max_token_increase: float | None = None) -> Table:
    """upskill's CI table: hard and judge score apart, tokens, and the compared version's figures.

    ``rows`` are :func:`upskill_hub.lift.scenario_ci.score_table_rows`.
    """
    compared = any(r["compared_to"] for r in rows)
    gate = "" if max_token_increase is None else f"; over +{max_token_increase:g}% tokens fails"
    t = Table(
        title="Scenarios: hard score (verifiers) and judge score (criteria)",
        title_style="bold",
        caption="hard: verifier checks passed / graded; cases ok: answers passing every verifier; "
        "judge: mean share of criteria met per answer (0–1); no skill → skill; tokens: mean per answer"
        + ("; then: the compared version, with skill" + gate if compared else ""),
    )
    cols = ["scenario", "model", "hard", "cases ok", "judge", "tokens"]
    if compared:
        cols += ["hard then", "judge then", "tokens then", "tokens Δ", "status"]
    for col in cols:
        t.add_column(col, justify="left" if col in ("scenario", "model", "status") else "right")
    for r in rows:
        base = r["hard_baseline"] is not None or r["judge_baseline"] is not None

        def pair(b: float | None, s: float | None, has_base: bool = base) -> str:
            return f"{_score(b)} → {_score(s)}" if has_base else _score(s)

        cells: list[str | Text] = [
            Text(r["scenario"]), Text(r["model"]), pair(r["hard_baseline"], r["hard_score"]),
            "–" if r["case_success_rate"] is None else pct(r["case_success_rate"]),
            pair(r["judge_baseline"], r["judge_score"]),
            "–" if r["avg_tokens"] is None else f"{r['avg_tokens']:.1f}",
        ]  # fmt: skip
        if compared:
            change = r["token_change_pct"]
            over = max_token_increase is not None and change is not None and change > max_token_increase
            status = "–" if not r["compared_to"] else "[red]FAIL[/]" if over else "PASS"
            cells += [
                _score(r["hard_then"]), _score(r["judge_then"]),
                "–" if r["tokens_then"] is None else f"{r['tokens_then']:.1f}",
                "–" if change is None else f"{change:+.1f}%", status,
            ]  # fmt: skip
        t.add_row(*cells)
    return t
