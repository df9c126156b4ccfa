"""PNG and HTML plots of a run, written next to its results.

``pass_rate.png``: pass rate per model, baseline vs with-skill, with 95% Wilson intervals.
``tokens.png``: mean input/output tokens per model and condition.
``report.html``: a self-contained page (plots embedded as base64, tables as HTML) that opens
anywhere, including from a Hub dataset repo, with no JavaScript or network access. It ends
with every answer, per case, model and condition, with each assertion's verdict and evidence:
why a case failed is read there, not only in ``results.jsonl``. An answer is a stranger's
text: escaped (HTML and terminal controls) and cut to :data:`ANSWER_CHARS`.
matplotlib is imported lazily with the Agg backend (no display needed).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from upskill_hub._util.percent import points, rate
from upskill_hub._util.printable import escape_controls
from upskill_hub.lift.figures.assertion_audit import assertion_text, row_details
from upskill_hub.lift.figures.benchmark import EVIDENCE_CHARS, label
from upskill_hub.lift.figures.stats import error_bars
from upskill_hub.rundir.schema import ResultRow, RunSummary

PASS_RATE_PNG = "pass_rate.png"
TOKENS_PNG = "tokens.png"
REPORT_HTML = "report.html"

_COLORS = {"baseline": "#9aa5b1", "with_skill": "#ff9d00"}
#: Characters of one answer shown in the report (the rest is cut, and says so; results.jsonl has all).
ANSWER_CHARS = 4000
#: Answers listed in the report; a bigger run lists the first ones and says how many more.
MAX_ANSWERS = 1000
#: Assertions listed per answer.
MAX_ASSERTIONS = 30


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _grouped(summary: RunSummary):
    models = summary.models
    by = {(c.model, c.condition): c for c in summary.conditions}
    conds = [k for k in ("baseline", "with_skill") if any((m, k) in by for m in models)]
    return models, conds, by


def plot_pass_rate(summary: RunSummary, path: Path) -> Path:
    plt = _plt()
    models, conds, by = _grouped(summary)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.8 * len(models) + 2), 3.6), dpi=100)
    width = 0.8 / max(1, len(conds))
    for j, cond in enumerate(conds):
        xs, ys, rate, low, high = [], [], [], [], []
        for i, m in enumerate(models):
            c = by.get((m, cond))
            if c is None or c.pass_rate is None:
                continue  # not run, or every call failed: no bar rather than a fake 0%
            xs.append(i + (j - (len(conds) - 1) / 2) * width)
            rate.append(c.pass_rate)
            low.append(np.nan if c.ci_low is None else c.ci_low)
            high.append(np.nan if c.ci_high is None else c.ci_high)
        below, above = error_bars(rate, low, high)
        ys = [100 * x for x in rate]
        ax.bar(xs, ys, width * 0.95, yerr=[100 * below, 100 * above], capsize=4, color=_COLORS[cond],
               label=cond.replace("_", " "))
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models, rotation=15, ha="right", fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("pass rate (%) with 95% CI")
    ax.set_title(f"{summary.skill_name}: pass rate", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_tokens(summary: RunSummary, path: Path) -> Path:
    plt = _plt()
    models, conds, by = _grouped(summary)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.8 * len(models) + 2), 3.6), dpi=100)
    width = 0.8 / max(1, len(conds))
    for j, cond in enumerate(conds):
        xs, inp, out = [], [], []
        for i, m in enumerate(models):
            c = by.get((m, cond))
            if c is None:
                continue
            xs.append(i + (j - (len(conds) - 1) / 2) * width)
            inp.append(c.mean_input_tokens or 0)
            out.append(c.mean_output_tokens or 0)
        ax.bar(xs, inp, width * 0.95, color=_COLORS[cond], alpha=0.55, label=f"{cond.replace('_', ' ')} input")
        ax.bar(xs, out, width * 0.95, bottom=inp, color=_COLORS[cond], label=f"{cond.replace('_', ' ')} output")
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models, rotation=15, ha="right", fontsize=8)
    ax.set_ylabel("mean tokens per call")
    ax.set_title(f"{summary.skill_name}: tokens", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _e(text: str) -> str:
    """Untrusted text as HTML: terminal controls and bidi marks made visible, then HTML-escaped."""
    return html.escape(escape_controls(text))


def _cut(text: str, limit: int) -> str:
    """``text`` escaped, at most ``limit`` characters of it, with a note of what was left out."""
    if len(text) <= limit:
        return _e(text)
    return f"{_e(text[:limit])}\n<i>… cut: {len(text) - limit} more characters (in results.jsonl)</i>"


def _verdicts(row: ResultRow) -> str:
    """Each assertion of an answer: ✓/✗, what it checks, and its evidence."""
    details = row_details(row)
    if details is None:
        return "<p><i>assertion details unreadable (see results.jsonl)</i></p>"
    items = []
    for d in details[:MAX_ASSERTIONS]:
        ok = d.get("passed") is True
        evidence = str(d.get("evidence") or "")
        items.append(
            f'<li class="{"pass" if ok else "fail"}">{"✓ pass" if ok else "✗ fail"}: <code>{_e(assertion_text(d))}</code>'
            + (f" — {_cut(evidence, EVIDENCE_CHARS)}" if evidence else "")
            + "</li>"
        )
    if len(details) > MAX_ASSERTIONS:
        items.append(f"<li>… {len(details) - MAX_ASSERTIONS} more assertion(s) in results.jsonl</li>")
    return f"<ul>{''.join(items)}</ul>" if items else ""


def _answer(row: ResultRow) -> str:
    """One answer: its verdict, the assertions' verdicts and the answer text (or the error)."""
    head = f"{_e(label((row.model, row.mode, row.agent)))} · {_e(row.condition.replace('_', ' '))}"
    if row.repeat:
        head += f" · run {row.repeat + 1}"
    if row.error is not None or row.passed is None:
        why = _cut(row.error or "no verdict", ANSWER_CHARS)
        return f'<details open><summary><b class="err">ERROR</b> {head}</summary><pre>{why}</pre></details>'
    verdict = '<b class="pass">PASS</b>' if row.passed else '<b class="fail">FAIL</b>'
    score = f" ({row.assertions_passed}/{row.assertions_total} assertions)"
    return (
        f"<details{'' if row.passed else ' open'}><summary>{verdict} {head}{score}</summary>"
        f"{_verdicts(row)}<pre>{_cut(row.output, ANSWER_CHARS)}</pre></details>"
    )


def cases_html(rows: Sequence[ResultRow]) -> str:
    """The report's per-case section: each case's answers, by model and condition (failures open)."""
    if not rows:
        return ""
    shown = rows[:MAX_ANSWERS]
    by_case: dict[str, list[ResultRow]] = {}
    for row in shown:
        by_case.setdefault(row.case_id, []).append(row)
    parts = []
    for case_id, answers in by_case.items():
        answers = sorted(answers, key=lambda r: (r.model, r.mode, r.agent or "", r.condition, r.repeat))
        parts.append(f"<h3>case <code>{_e(case_id)}</code></h3>" + "".join(_answer(r) for r in answers))
    more = (
        f"<p>Showing {len(shown)} of {len(rows)} answers; the rest are in results.jsonl.</p>"
        if len(rows) > len(shown)
        else ""
    )
    return (
        "<h2>Answers per case</h2><p>Each answer with its assertions' verdicts and evidence; "
        f"answers longer than {ANSWER_CHARS} characters are cut (results.jsonl holds them whole).</p>"
        + "".join(parts)
        + more
    )


def render_html(summary: RunSummary, images: list[Path], answers: Sequence[ResultRow] = ()) -> str:
    e = html.escape
    rows = []
    for c in summary.conditions:
        rows.append(
            f"<tr><td>{e(c.model)}</td><td>{e(c.condition)}</td><td>{c.passed}/{c.n}</td>"
            f"<td>{rate(c.pass_rate, c.ci_low, c.ci_high)}</td>"
            f"<td>{'' if c.mean_total_tokens is None else f'{c.mean_total_tokens:.0f}'}</td>"
            f"<td>{c.errors}</td><td>{c.cached_calls}</td></tr>"
        )
    lifts = []
    for x in summary.lifts:
        lift = points(x.lift, x.ci_low, x.ci_high)
        p = "–" if x.p_value is None else f"{x.p_value:.3g}"
        lifts.append(
            f"<tr><td>{e(x.model)}</td><td>{lift}</td><td>{p}</td><td>{x.n_cases}</td>"
            f"<td>{'yes' if x.conclusive else 'no'}</td><td>{e(x.method)}</td><td>{e(x.note)}</td></tr>"
        )
    imgs = "".join(
        f'<img alt="{e(p.stem)}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
        for p in images
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(summary.skill_name)} — eval {e(summary.run_id)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}}table{{border-collapse:collapse;margin:1rem 0}}
td,th{{border:1px solid #ddd;padding:.3rem .6rem;text-align:left}}img{{max-width:48%;margin-right:1%}}
pre{{white-space:pre-wrap;background:#f6f8fa;padding:.5rem;max-height:30rem;overflow:auto}}
.pass{{color:#1a7f37}}.fail,.err{{color:#cf222e}}details{{margin:.3rem 0}}</style></head>
<body><h1>{e(summary.skill_name)} <small>v{e(summary.skill_version)}</small></h1>
<p>Run <code>{e(summary.run_id)}</code> · {summary.n_cases} cases × {summary.runs_per_case} run(s) ·
upskill-hub {e(summary.tool_version)} · params <code>{e(summary.params)}</code></p>
{imgs}
<h2>Pass rate per model and condition (95% Wilson interval)</h2>
<table><tr><th>model</th><th>condition</th><th>passed</th><th>pass rate [95% CI]</th><th>mean tokens</th>
<th>errors</th><th>cached</th></tr>{''.join(rows)}</table>
<h2>Lift (with skill − baseline, paired over cases)</h2>
<table><tr><th>model</th><th>lift [95% CI]</th><th>p</th><th>cases</th><th>conclusive</th><th>method</th><th>note</th></tr>
{''.join(lifts)}</table>
{cases_html(answers)}</body></html>
"""


def write_plots(run_dir: Path, summary: RunSummary, rows: Sequence[ResultRow] = ()) -> list[Path]:
    """Write the PNGs and the HTML report into ``run_dir``; return the paths written.

    ``rows`` (the run's answers) fill the report's per-case section."""
    run_dir = Path(run_dir)
    images = [plot_pass_rate(summary, run_dir / PASS_RATE_PNG), plot_tokens(summary, run_dir / TOKENS_PNG)]
    report = run_dir / REPORT_HTML
    report.write_text(render_html(summary, images, rows), encoding="utf-8")
    return [*images, report]
