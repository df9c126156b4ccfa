"""What a ``tune`` run shows: the terminal table of every candidate, and ``tune_report.md``.

Rendering only: every number comes from :class:`~upskill_hub.triggering.tune.Figures`.
Every scored candidate is a row, in the order tried, the winner starred; rejected
proposals are counted under the table and listed in the report. A run tuned on every
query (``--held-out 0``) has no held-out columns, and both the table and the report say
in words that its score is not a held-out score.

Descriptions, queries and reasons are user or model content: the terminal gets them as
:class:`~rich.text.Text` (a ``[`` is never markup), the Markdown report puts descriptions
in fenced blocks longer than any backtick run they hold and escapes the rest.

The run is passed in duck-typed (:class:`ShownRun`), so this module never imports
:mod:`upskill_hub.triggering.tune_run`, which imports it to write the report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.table import Table
from rich.text import Text

from upskill_hub._util.percent import pct
from upskill_hub.lift.report import _share  # the trigger table's cell: 62% (5/8) / [31%, 86%]
from upskill_hub.triggering.tune import NOT_HELD_OUT, WINNER_RULE, Candidate, Figures, TuneResult

REPORT_FILE = "tune_report.md"
#: Characters of a candidate's text shown in its terminal table cell (the report has it whole).
CELL_CHARS = 80


class ShownRun(Protocol):
    """What rendering needs of a :class:`~upskill_hub.triggering.tune_run.TuneRun`."""

    run_dir: Path
    result: TuneResult
    source: str
    model: str
    teacher: str
    skill_md: Path | None
    written: bool
    seeded: bool


def label(c: Candidate, *, seeded: bool = False) -> str:
    """``original`` (``seed (--description)``) or ``candidate N (iteration I)``."""
    if c.index == 0:
        return "seed (--description)" if seeded else "original"
    return f"candidate {c.index} (iteration {c.iteration})"


def _accuracy(f: Figures) -> str:
    right = f.triggered_should + f.n_should_not - f.triggered_should_not
    return "–" if f.accuracy is None else f"{pct(f.accuracy)} ({right}/{f.n_should + f.n_should_not})"


def _cells(f: Figures, *, one_line: bool = False) -> list[str]:
    cells = [
        _share(f.triggered_should, f.n_should, f.recall, f.recall_ci_low, f.recall_ci_high),
        _share(f.triggered_should_not, f.n_should_not, f.false_trigger_rate, f.fpr_ci_low, f.fpr_ci_high),
    ]
    return [c.replace("\n", " ") for c in cells] if one_line else cells


def _short(text: str, limit: int = CELL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- terminal
def tune_table(run: ShownRun) -> Table:
    """Every candidate scored, in order, the winner starred: train and held-out figures, 95% Wilson CIs."""
    res = run.result
    held = not res.all_queries
    title = f"{run.model}: does the description trigger? (teacher {run.teacher})"
    t = Table(title=title + ("" if held else " — no held-out queries"), title_style="bold")
    if held:
        t.caption = (
            f"train: the {len(res.train_ids)} queries whose failures the teacher saw; held-out: the "
            f"{len(res.held_ids)} it never saw. Repeats pooled, [95% Wilson CI]. Winner ★ on held-out: "
            f"{WINNER_RULE} (threshold {res.threshold:g})."
        )
    else:
        t.caption = (
            f"train: all {len(res.train_ids)} queries, every one seen by the teacher. Repeats pooled, "
            f"[95% Wilson CI]. Winner ★ on train: {WINNER_RULE} (threshold {res.threshold:g}). NOT a held-out score."
        )
    cols = ["description", "train recall", "train false triggers", "train accuracy"]
    if held:
        cols += ["held-out recall", "held-out false triggers", "held-out accuracy"]
    for col in [*cols, "chars"]:
        t.add_column(col, justify="left" if col == "description" else "right")
    for c in res.candidates:
        star = " ★" if c.index == res.winner.index else ""
        name = Text.assemble((label(c, seeded=run.seeded) + star, "bold" if star else ""), "\n",
                             (_short(c.description), "dim"))  # fmt: skip
        cells = [*_cells(c.train), pct(c.train.accuracy)]
        if held:
            cells += [*_cells(c.held_out), pct(c.held_out.accuracy)]
        t.add_row(name, *cells, str(len(c.description)))
    return t


def print_tune_report(run: ShownRun, console: Console) -> None:
    """The table, the starting and winning texts, what was rejected, what happened to SKILL.md."""
    res = run.result
    console.print(tune_table(run))
    if res.all_queries:
        console.print(Text(f"Not a held-out score: {NOT_HELD_OUT}.", style="bold yellow"))
    console.print(Text.assemble(("before: ", "bold"), res.original.description))
    if res.winner.index != 0:
        console.print(Text.assemble(("after:  ", "bold"), res.winner.description))
    scored = len(res.candidates) - 1
    line = f"{scored} candidate(s) scored, {len(res.rejected)} proposal(s) rejected"
    if res.rejected:
        reasons = sorted({str(r.get("reason")) for r in res.rejected})
        line += " (" + "; ".join(reasons)[:300] + ")"
    console.print(Text(line))
    start = "the --description seed" if run.seeded else "the original description"
    on = "on held-out queries" if not res.all_queries else "on the queries the teacher saw"
    if res.winner.index == 0:
        console.print(Text(f"{start[0].upper()}{start[1:]} stays best {on}; SKILL.md is unchanged."))
    elif run.written:
        console.print(
            Text(f"Wrote the new description into {run.skill_md} (only its frontmatter description changed).")
        )
    else:
        console.print(Text("Run again with --write to put the new description into SKILL.md."))
    console.print(Text(f"Report of every iteration: {run.run_dir / REPORT_FILE}"))
    console.print(Text(f"Run folder: {run.run_dir}"))


# --------------------------------------------------------------------------- markdown
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~])")


def md_text(text: str) -> str:
    """``text`` as inert inline Markdown: one line, specials backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def md_block(text: str) -> str:
    """``text`` in a fenced block that nothing inside can close."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{text}\n{fence}"


def markdown_report(run: ShownRun) -> str:
    """``tune_report.md``: the run in a few lines, a table of every candidate, then each iteration."""
    res = run.result
    held = not res.all_queries
    win = res.winner
    lines = [
        f"# tune: {md_text(run.run_dir.name)}",
        "",
        f"- model: {md_text(run.model)}; teacher: {md_text(run.teacher)}",
        f"- queries: {md_text(run.source)}",
    ]
    if held:
        lines.append(f"- split: {len(res.train_ids)} train queries (the teacher saw their failures), "
                     f"{len(res.held_ids)} held-out (never shown to the teacher)")  # fmt: skip
    else:
        lines.append(f"- split: none, all {len(res.train_ids)} queries in train")
        lines += ["", f"> **Not a held-out score.** {md_text(NOT_HELD_OUT[0].upper() + NOT_HELD_OUT[1:])}."]
    lines += [
        "",
        f"Winner: **{md_text(label(win, seeded=run.seeded))}**, chosen on "
        f"{'held-out' if held else 'train'}: {WINNER_RULE} (threshold {res.threshold:g}). "
        + _skill_md_line(run),
        "",
    ]
    head = ["candidate", "iteration", "train accuracy", "train recall", "train false triggers"]
    if held:
        head += ["held-out accuracy", "held-out recall", "held-out false triggers"]
    head += ["chars", "winner"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in res.candidates:
        row = [
            md_text(label(c, seeded=run.seeded)),
            str(c.iteration),
            _accuracy(c.train),
            *_cells(c.train, one_line=True),
        ]
        if held:
            row += [_accuracy(c.held_out), *_cells(c.held_out, one_line=True)]
        row += [str(len(c.description)), "★" if c.index == win.index else ""]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    events: list[tuple[int, int, list[str]]] = []
    for c in res.candidates:
        star = " ★ winner" if c.index == win.index else ""
        body = [f"## Iteration {c.iteration}: {md_text(label(c, seeded=run.seeded))}{star}", "",
                f"- train: accuracy {_accuracy(c.train)}; recall {_cells(c.train, one_line=True)[0]}; "
                f"false triggers {_cells(c.train, one_line=True)[1]}"]  # fmt: skip
        if held:
            body.append(f"- held-out: accuracy {_accuracy(c.held_out)}; recall {_cells(c.held_out, one_line=True)[0]}; "
                        f"false triggers {_cells(c.held_out, one_line=True)[1]}")  # fmt: skip
        else:
            body.append("- held-out: none (--held-out 0); the train figures are not a held-out score")
        body += [f"- {len(c.description)} characters", "", md_block(c.description), ""]
        events.append((c.iteration, 0, body))
    for r in res.rejected:
        it = int(r.get("iteration") or 0)
        body = [f"## Iteration {it}: proposal rejected, not scored", "", f"- why: {md_text(r.get('reason', ''))}",
                "", md_block(str(r.get("description") or "")), ""]  # fmt: skip
        events.append((it, 1, body))
    for _, _, body in sorted(events, key=lambda e: (e[0], e[1])):
        lines += body
    return "\n".join(lines).rstrip("\n") + "\n"


def _skill_md_line(run: ShownRun) -> str:
    if run.written:
        return "It was written into SKILL.md (only the frontmatter description changed)."
    if run.result.winner.index == 0:
        return "SKILL.md is unchanged."
    return "SKILL.md is unchanged (run again with --write to put the winner in)."
