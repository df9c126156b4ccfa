"""Charts for the Space as inline SVG and HTML, drawn from numbers already computed.

Why not matplotlib PNGs: an image costs a file, a request and ~0.3 s of drawing per
figure on a small CPU, shows an empty frame with a broken-image icon until it exists,
and its text cannot be read by a screen reader or a test. These charts are a few
kilobytes of markup, appear with the data in one response, and say in words what will
appear when there is nothing to draw yet.

Every number comes from :mod:`upskill_hub.space.aggregate` (Wilson intervals of
:func:`upskill_hub.lift.figures.intervals.wilson_bounds`, paired lift intervals of
:func:`upskill_hub.lift.figures.intervals.paired_lift`); nothing here recomputes a statistic.
Every text placed in the markup goes through :func:`html.escape`: model and skill names
come from whoever pushed the dataset.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from upskill_hub._util.percent import points

#: Colours: baseline grey, with-skill orange (the CLI's plots use the same pair).
BASELINE = "#9aa5b1"
WITH_SKILL = "#ff9d00"
POSITIVE = (26, 152, 80)
NEGATIVE = (215, 48, 39)
#: Chart geometry in px: model labels, plot area, value labels (fits half of a 1280-px page).
LEFT, WIDTH, RIGHT = 140, 340, 70
#: Lift (as a fraction) at which the heat map's colour is fully saturated.
SATURATION = 0.5


@dataclass(frozen=True)
class Interval:
    """A value with its 95% interval; any of them may be NaN (not measured)."""

    value: float
    low: float
    high: float

    @property
    def measured(self) -> bool:
        return _finite(self.value)

    @property
    def crosses_zero(self) -> bool:
        """True when the interval does not exclude zero (or is unknown): no conclusion."""
        return not (_finite(self.low) and _finite(self.high)) or self.low <= 0 <= self.high


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def empty(message: str) -> str:
    """The empty state of a chart or panel: a sentence saying what will appear there."""
    return f'<p class="uh-empty">{html.escape(message)}</p>'


def _pp(x: float) -> str:
    return points(x, unit="")


def lift_text(iv: Interval) -> str:
    """``+25 pts [+5, +45]`` (or ``–``), the same text as the tables and the CLI's report."""
    if not iv.measured:
        return "–"
    bounded = _finite(iv.low) and _finite(iv.high)
    return points(iv.value, iv.low if bounded else None, iv.high if bounded else None)


def _label(text: str, n: int = 28) -> str:
    """``text`` in at most ``n`` characters, cut in the middle: a model id's start names the family
    and its end the size or quantisation, and two models of a library usually differ in one of them."""
    if len(text) <= n:
        return text
    head = (n - 1) // 3
    return text[:head] + "…" + text[len(text) - (n - 1 - head) :]


def lift_chart(rows: Sequence[tuple[str, Interval]], *, title: str = "Lift by model (95% interval)") -> str:
    """Dot-and-whisker chart of lift per model on a -100..+100 pts axis, zero marked.

    Green when the interval is above zero, red when below, grey when it crosses zero
    (the data cannot tell a difference).
    """
    rows = [(m, iv) for m, iv in rows if iv.measured]
    if not rows:
        return empty(
            "No lift yet: it appears once a model has answered the cases with and without the skill."
        )
    left, width, row_h, top = LEFT, WIDTH, 26, 30
    height = top + row_h * len(rows) + 24

    def x(v: float) -> float:
        return left + (max(-1.0, min(1.0, v)) + 1) / 2 * width

    parts = [
        f'<svg class="uh-chart" role="img" aria-label="{html.escape(title)}" viewBox="0 0 {left + width + RIGHT} {height}"'
        f' width="{left + width + RIGHT}" height="{height}" xmlns="http://www.w3.org/2000/svg" font-size="13">',
        f'<text x="4" y="16" font-weight="600">{html.escape(title)}</text>',
    ]
    for tick in (-1, -0.5, 0, 0.5, 1):
        tx = x(tick)
        stroke = "#444" if tick == 0 else "#ddd"
        parts.append(
            f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{height - 20}" stroke="{stroke}"/>'
        )
        parts.append(
            f'<text x="{tx:.1f}" y="{height - 6}" text-anchor="middle" fill="#666">{_pp(tick)}</text>'
        )
    for i, (model, iv) in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        colour = "#888" if iv.crosses_zero else ("#1a9850" if iv.value > 0 else "#d73027")
        parts.append(
            f'<text x="{left - 8}" y="{cy + 4:.1f}" text-anchor="end">{html.escape(_label(model, 20))}</text>'
        )
        if _finite(iv.low) and _finite(iv.high):
            x1, x2 = x(iv.low), x(iv.high)
            parts.append(
                f'<line x1="{x1:.1f}" y1="{cy:.1f}" x2="{x2:.1f}" y2="{cy:.1f}" stroke="{colour}" stroke-width="2"/>'
            )
            for xe in (x1, x2):
                parts.append(
                    f'<line x1="{xe:.1f}" y1="{cy - 5:.1f}" x2="{xe:.1f}" y2="{cy + 5:.1f}" stroke="{colour}" stroke-width="2"/>'
                )
        parts.append(
            f'<circle cx="{x(iv.value):.1f}" cy="{cy:.1f}" r="5" fill="{colour}"><title>{html.escape(model)}: {html.escape(lift_text(iv))}</title></circle>'
        )
        parts.append(
            f'<text x="{left + width + 8}" y="{cy + 4:.1f}">{html.escape(lift_text(iv).split(" [")[0])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def pass_rate_chart(
    rows: Sequence[tuple[str, Interval | None, Interval | None]], *, title: str = "Pass rate (95% interval)"
) -> str:
    """Per model two horizontal bars, baseline and with skill, with Wilson whiskers (0..100%)."""
    rows = [r for r in rows if (r[1] and r[1].measured) or (r[2] and r[2].measured)]
    if not rows:
        return empty("No pass rates yet: they appear once a model has answered the skill's test cases.")
    left, width, bar_h, gap, top = LEFT, WIDTH, 12, 10, 30
    group_h = 2 * bar_h + gap
    height = top + group_h * len(rows) + 24

    def x(v: float) -> float:
        return left + max(0.0, min(1.0, v)) * width

    parts = [
        f'<svg class="uh-chart" role="img" aria-label="{html.escape(title)}" viewBox="0 0 {left + width + RIGHT} {height}"'
        f' width="{left + width + RIGHT}" height="{height}" xmlns="http://www.w3.org/2000/svg" font-size="13">',
        f'<text x="4" y="16" font-weight="600">{html.escape(title)}</text>',
        f'<rect x="{left + width - 110}" y="6" width="10" height="10" fill="{BASELINE}"/>'
        f'<text x="{left + width - 96}" y="15">baseline</text>'
        f'<rect x="{left + width - 20}" y="6" width="10" height="10" fill="{WITH_SKILL}"/>'
        f'<text x="{left + width - 6}" y="15">with skill</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        tx = x(tick)
        parts.append(
            f'<line x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{height - 20}" stroke="#e5e5e5"/>'
        )
        parts.append(
            f'<text x="{tx:.1f}" y="{height - 6}" text-anchor="middle" fill="#666">{tick:.0%}</text>'
        )
    for i, (model, base, skill) in enumerate(rows):
        y0 = top + group_h * i
        parts.append(
            f'<text x="{left - 8}" y="{y0 + bar_h + 4}" text-anchor="end">{html.escape(_label(model, 20))}</text>'
        )
        for j, (iv, colour, name) in enumerate(
            ((base, BASELINE, "baseline"), (skill, WITH_SKILL, "with skill"))
        ):
            if iv is None or not iv.measured:
                continue
            y = y0 + j * bar_h
            tip = f"{model} {name}: {iv.value:.0%}" + (
                f" [{iv.low:.0%}, {iv.high:.0%}]" if _finite(iv.low) and _finite(iv.high) else ""
            )
            parts.append(
                f'<rect x="{left}" y="{y}" width="{x(iv.value) - left:.1f}" height="{bar_h - 1}" fill="{colour}"><title>{html.escape(tip)}</title></rect>'
            )
            if _finite(iv.low) and _finite(iv.high):
                cy = y + (bar_h - 1) / 2
                parts.append(
                    f'<line x1="{x(iv.low):.1f}" y1="{cy:.1f}" x2="{x(iv.high):.1f}" y2="{cy:.1f}" stroke="#333"/>'
                )
            parts.append(
                f'<text x="{left + width + 8}" y="{y + bar_h - 2}" fill="#333">{iv.value:.0%}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def lift_colour(lift: float) -> str:
    """Background for a heat-map cell: white at 0, green up to +SATURATION, red down to -SATURATION."""
    if not _finite(lift):
        return "#f4f4f4"
    t = max(-1.0, min(1.0, lift / SATURATION))
    r, g, b = POSITIVE if t > 0 else NEGATIVE
    a = abs(t)
    mix = (round(255 + (c - 255) * a) for c in (r, g, b))
    return "#{:02x}{:02x}{:02x}".format(*mix)


def heatmap(models: Sequence[str], rows: Sequence[tuple[str, Sequence[Interval]]], *, note: str = "") -> str:
    """Skills x models table of lift: colour = lift, hatched and marked ``?`` when the interval crosses zero."""
    if not rows or not models:
        return empty(
            "No lifts to compare yet: the heat map fills in once skills have results for at least one model."
        )
    head = "".join(f'<th title="{html.escape(m)}">{html.escape(_label(m, 22))}</th>' for m in models)
    body = []
    for skill, cells in rows:
        tds = []
        for model, iv in zip(models, cells, strict=True):
            if not iv.measured:
                tds.append('<td class="uh-na" title="not measured">–</td>')
                continue
            unsure = iv.crosses_zero
            cls = "uh-cell uh-unsure" if unsure else "uh-cell"
            tip = f"{skill} on {model}: {lift_text(iv)}" + (
                " (interval crosses zero: no clear effect)" if unsure else ""
            )
            ci = f"[{_pp(iv.low)}, {_pp(iv.high)}]" if _finite(iv.low) and _finite(iv.high) else ""
            ink = "#fff" if abs(iv.value) >= 0.6 * SATURATION else "#111"  # readable on a strong colour
            tds.append(
                f'<td class="{cls}" style="background-color:{lift_colour(iv.value)};color:{ink}" title="{html.escape(tip)}">'
                f"<b>{_pp(iv.value)}</b>{'?' if unsure else ''}<small>{ci}</small></td>"
            )
        body.append(
            f'<tr><th scope="row" title="{html.escape(skill)}">{html.escape(skill)}</th>{"".join(tds)}</tr>'
        )
    legend = (
        '<p class="uh-legend">Lift in percentage points (with skill minus baseline), 95% interval in brackets. '
        f'<span class="uh-swatch" style="background:{lift_colour(SATURATION)}"></span> helps '
        f'<span class="uh-swatch" style="background:{lift_colour(-SATURATION)}"></span> hurts '
        '<span class="uh-swatch uh-unsure"></span> hatched and <b>?</b> = the interval crosses zero (no clear effect).'
        + (f" {html.escape(note)}" if note else "")
        + "</p>"
    )
    return (
        f'<div class="uh-heatmap-wrap"><table class="uh-heatmap"><thead><tr><th>skill</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{legend}"
    )


def progress_bar(done: int, total: int) -> str:
    """A bar with ``done / total calls`` under it (total 0 = not started yet)."""
    if not total:
        return empty("Starting: listing the calls to make…")
    pct = max(0.0, min(100.0, 100.0 * done / total))
    return (
        f'<div class="uh-progress" role="progressbar" aria-valuenow="{int(done)}" aria-valuemin="0"'
        f' aria-valuemax="{int(total)}"><div style="width:{pct:.1f}%"></div></div>'
        f'<p class="uh-progress-text">{int(done)} / {int(total)} calls done</p>'
    )


#: Styles for the markup above; passed to ``launch(css=...)`` (Gradio 6 takes CSS there).
CSS = """
.uh-empty { color: var(--body-text-color-subdued); font-style: italic; padding: 12px 4px; margin: 0; }
.uh-chart { max-width: 100%; height: auto; }
.uh-heatmap-wrap { overflow-x: auto; max-height: 560px; overflow-y: auto; }
.uh-heatmap { border-collapse: collapse; font-size: 13px; }
.uh-heatmap th, .uh-heatmap td { border: 1px solid #e3e3e3; padding: 3px 8px; white-space: nowrap; }
.uh-heatmap thead th { position: sticky; top: 0; background: var(--background-fill-primary); z-index: 1; }
.uh-heatmap tbody th { text-align: left; font-weight: 500; max-width: 240px; overflow: hidden; text-overflow: ellipsis; }
.uh-cell { text-align: center; color: #111; min-width: 84px; }
.uh-cell small { display: block; font-size: 10px; color: inherit; }
.uh-unsure { background-image: repeating-linear-gradient(45deg, rgba(0,0,0,.10) 0 3px, transparent 3px 7px); }
.uh-na { color: #999; text-align: center; background: #f7f7f7; }
.uh-legend { font-size: 12px; color: var(--body-text-color-subdued); }
.uh-swatch { display: inline-block; width: 14px; height: 10px; border: 1px solid #ccc; vertical-align: middle; }
.uh-answers { border-collapse: collapse; width: 100%; table-layout: fixed; font-size: 13px; }
.uh-answers th, .uh-answers td { border: 1px solid #e3e3e3; padding: 6px; vertical-align: top; text-align: left; }
.uh-answers pre { white-space: pre-wrap; word-break: break-word; max-height: 220px; overflow: auto; margin: 4px 0;
  font-size: 12px; background: var(--background-fill-secondary); padding: 4px; }
.uh-pass { background: #eaf7ee; }
.uh-fail { background: #fdecea; }
.uh-badge { font-weight: 600; }
.uh-evidence { margin: 2px 0 0 0; padding-left: 16px; font-size: 12px; }
/* Browse table on a phone: the key columns only (results, triggers and description are on the
   skill page), in a smaller font, so nothing scrolls sideways. Gradio draws the header as <th
   data-heading=i> and the rows as <div data-col=i> (a virtual list: rows keep one line). */
@media (max-width: 640px) {
  #skills-table th[data-heading="6"], #skills-table th[data-heading="7"], #skills-table th[data-heading="8"],
  #skills-table .body-cell[data-col="6"], #skills-table .body-cell[data-col="7"],
  #skills-table .body-cell[data-col="8"] { display: none !important; }
  #skills-table table { table-layout: fixed; width: 100% !important; }
  #skills-table .virtual-body { width: 100% !important; }
  #skills-table th, #skills-table .body-cell { min-width: 0 !important; max-width: none !important; }
  #skills-table th[data-heading="0"], #skills-table .body-cell[data-col="0"] { width: 22% !important; flex: 0 0 22% !important; }
  #skills-table th[data-heading="1"], #skills-table .body-cell[data-col="1"] { width: 29% !important; flex: 0 0 29% !important; }
  #skills-table th[data-heading="2"], #skills-table .body-cell[data-col="2"] { width: 15% !important; flex: 0 0 15% !important; }
  #skills-table th[data-heading="3"], #skills-table .body-cell[data-col="3"] { width: 8% !important; flex: 0 0 8% !important; }
  #skills-table th[data-heading="4"], #skills-table .body-cell[data-col="4"] { width: 10% !important; flex: 0 0 10% !important; }
  /* security stays on a phone: a critical skill is marked on every view */
  #skills-table th[data-heading="5"], #skills-table .body-cell[data-col="5"] { width: 16% !important; flex: 0 0 16% !important; }
  #skills-table .body-cell, #skills-table th { font-size: 11px; padding-left: 3px !important; padding-right: 3px !important; }
  #skills-table th .header { white-space: normal !important; }
  #skills-table .cell-menu-button { display: none; }
}
/* Gradio's Markdown wraps with overflow-wrap: anywhere, so a narrow table column breaks words
   mid-way ("non-discriminatin/g"); break-word wraps between words and only breaks a word too long
   for a line of its own (a long regex). */
.md table td, .md table th, .prose table td, .prose table th { overflow-wrap: break-word; word-break: normal; }
.uh-progress { height: 10px; background: #eee; border-radius: 5px; overflow: hidden; margin: 4px 0 8px; }
.uh-progress > div { height: 100%; background: #ff9d00; }
"""
