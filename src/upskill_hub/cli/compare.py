"""``eval --compare SRC [--fail-on-regression]``: the new lift next to the reference run's.

The CI mode of ``eval``: a pull request that touches ``skills/`` re-runs the eval and
compares it with the latest published run (or a run folder); with ``--fail-on-regression``
the job fails, in one line naming the skill, the model and both lifts, when the lift went
down by more than noise (the paired test of :mod:`upskill_hub.evals.compare`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from upskill_hub.errors import UpskillError
from upskill_hub.evals.compare import LiftChange, compare_runs
from upskill_hub.evals.schema import ResultRow

#: Columns of ``eval --compare --format agent``.
COMPARE_HEADERS = [
    "skill", "model", "lift_then", "lift_now", "change", "change_ci_low", "change_ci_high", "p_value",
    "n_cases", "regression", "run_id", "reference",
]


@dataclass
class Comparison:
    """The new run against its reference, ready to print."""

    run_id: str
    reference_id: str
    reference_source: str
    level: float
    changes: list[LiftChange]

    def rows(self) -> list[dict[str, Any]]:
        return [
            {**c.to_dict(), "run_id": self.run_id, "reference": f"{self.reference_id} ({self.reference_source})"}
            for c in self.changes
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference_run": self.reference_id,
            "reference_source": self.reference_source,
            "level": self.level,
            "models": [c.to_dict() for c in self.changes],
        }


def check_options(compare: str | None, fail_on_regression: bool, level: float) -> None:
    """Refuse contradictory options before any model call."""
    if fail_on_regression and not compare:
        raise UpskillError("--fail-on-regression needs --compare OWNER/NAME[@REV] or --compare RUN_DIR")
    if not 0.5 <= level < 1:
        raise UpskillError(f"--level must be between 0.5 and 1 (e.g. 0.95), not {level}")
    if compare and not Path(compare).is_dir():
        repo = compare.partition("@")[0]
        if repo.count("/") != 1 or repo.startswith((".", "/", "~")):
            raise UpskillError(f"--compare {compare!r}: no such run folder, and not a Hub repo OWNER/NAME[@REV]")


def compare_with(source: str, run_id: str, rows: list[ResultRow], level: float) -> Comparison:
    """Load the reference run named by ``source`` and compare ``rows`` with it."""
    from upskill_hub.hub.published_runs import load_reference

    skill = next((r.skill_name for r in rows), "")
    models = list(dict.fromkeys(r.model for r in rows))
    ref = load_reference(source, skill, models)
    return Comparison(run_id, ref.run_id, ref.source, level, compare_runs(ref.rows, rows, level=level))


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:+.0f}"


def _frac(x: float | None) -> str:
    return "?" if x is None else f"{x:+.2f}"


def _with_ci(x: float | None, lo: float | None, hi: float | None) -> str:
    return "–" if x is None else f"{_pct(x)} [{_pct(lo)},{_pct(hi)}]"


def render(comp: Comparison, console: Console) -> None:
    """A table of lift then and now with intervals, and the change with its paired test."""
    pct = f"{comp.level * 100:g}%"
    t = Table(
        title=f"Lift compared with {comp.reference_id} ({comp.reference_source})",
        caption=f"lift in points [{pct} CI]; change: paired over shared cases; regression: change CI below 0",
    )
    for col in ("model", "then", "now", "change", "p", "cases", "verdict"):
        t.add_column(col, justify="left" if col in ("model", "verdict") else "right")
    for c in comp.changes:
        verdict = "[red]regression[/]" if c.regression else "ok"
        t.add_row(
            c.model,
            _with_ci(c.lift_then, c.then_ci_low, c.then_ci_high),
            _with_ci(c.lift_now, c.now_ci_low, c.now_ci_high),
            _with_ci(c.change, c.change_ci_low, c.change_ci_high),
            "–" if c.p_value is None else f"{c.p_value:.2g}",
            str(c.n_cases),
            verdict,
        )
    console.print(t)


def check_regressions(comp: Comparison) -> None:
    """Raise one line naming the first regression (skill, model, both lifts), or nothing."""
    usable = [c for c in comp.changes if c.n_cases]
    if not usable:
        raise UpskillError(
            f"cannot compare with {comp.reference_id} ({comp.reference_source}): no model and test case in common"
        )
    bad = [c for c in usable if c.regression]
    if not bad:
        return
    c = bad[0]
    more = f" (and {len(bad) - 1} more model(s))" if len(bad) > 1 else ""
    raise UpskillError(
        f"regression: skill {c.skill} on {c.model}: lift {_frac(c.lift_then)} -> {_frac(c.lift_now)} "
        f"(change {_frac(c.change)} [{_frac(c.change_ci_low)}, {_frac(c.change_ci_high)}] at {comp.level * 100:g}%, "
        f"p={c.p_value:.2g}) vs {comp.reference_id} ({comp.reference_source}){more}"
    )
