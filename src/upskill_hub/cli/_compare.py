"""``eval --compare SRC [--fail-on-regression]``: the new lift next to the reference run's.

The CI mode of ``eval``: a pull request that touches ``skills/`` re-runs the eval and
compares it with the latest published run (or a run folder); with ``--fail-on-regression``
the job fails, in one line naming the skill, the model and both lifts, when the lift went
down by more than noise (the paired test of :mod:`upskill_hub.lift.compare`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from upskill_hub._util.percent import points
from upskill_hub.errors import UpskillError
from upskill_hub.lift.compare import LiftChange, compare_runs
from upskill_hub.rundir.schema import ResultRow, TriggerStats

#: Columns of ``eval --compare --format agent``.
COMPARE_HEADERS = [
    "skill", "model", "lift_then", "lift_now", "change", "change_ci_low", "change_ci_high", "p_value",
    "n_cases", "regression", "run_id", "reference", "mode",
]


@dataclass
class Comparison:
    """The new run against its reference, ready to print."""

    run_id: str
    reference_id: str
    reference_source: str
    level: float
    changes: list[LiftChange]
    #: Trigger figures per model in the reference run and in the new one (catalog mode).
    triggers_then: list[TriggerStats] = field(default_factory=list)
    triggers_now: list[TriggerStats] = field(default_factory=list)
    #: The reference run's rows (``--max-token-increase`` and the scenario scores read them).
    reference_rows: list[ResultRow] = field(default_factory=list, repr=False)

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
            "triggers_then": [asdict(t) for t in self.triggers_then],
            "triggers_now": [asdict(t) for t in self.triggers_now],
        }


def check_options(compare: str | None, fail_on_regression: bool, level: float) -> None:
    """Refuse contradictory options before any model call."""
    if fail_on_regression and not compare:
        raise UpskillError("--fail-on-regression needs --compare (OWNER/NAME[@REV] or RUN_DIR) or --against OLD")
    if not 0.5 <= level < 1:
        raise UpskillError(f"--level must be between 0.5 and 1 (e.g. 0.95), not {level}")
    if compare and not Path(compare).is_dir():
        repo = compare.partition("@")[0]
        if repo.count("/") != 1 or repo.startswith((".", "/", "~")):
            raise UpskillError(f"--compare {compare!r}: no such run folder, and not a Hub repo OWNER/NAME[@REV]")


def compare_with(
    source: str, run_id: str, rows: list[ResultRow], level: float, triggers: list[TriggerStats] | None = None
) -> Comparison:
    """Load the reference run named by ``source`` and compare ``rows`` (and ``triggers``) with it."""
    from upskill_hub.hub.published_runs import load_reference

    skill = next((r.skill_name for r in rows), "")
    models = list(dict.fromkeys(r.model for r in rows))
    ref = load_reference(source, skill, models)
    changes = compare_runs(ref.rows, rows, level=level)
    return Comparison(run_id, ref.run_id, ref.source, level, changes, ref.triggers, list(triggers or []), ref.rows)


def scenario_sources(source: str, scenarios: list[Any]) -> dict[tuple[str, Path], str]:
    """``--compare`` with ``--scenarios``: each scenario skill's reference, found before any call.

    A Hub repo serves every skill (its latest published run of each); a run folder serves
    the one skill it measured; a folder of run folders (an earlier ``--output``) serves
    each scenario skill with its latest finished run there, of the same scenario when the
    run recorded one.
    """
    from upskill_hub import rundir
    from upskill_hub.lift.scenario_ci import latest_run_of
    from upskill_hub.skill import require_skill

    folder = Path(source)
    one_run = folder.is_dir() and any(
        (folder / f).exists() for f in (rundir.RESULTS_FILE, rundir.RUN_FILE, rundir.SUMMARY_FILE)
    )
    out: dict[tuple[str, Path], str] = {}
    for sc in scenarios:
        for skill_dir in sc.skills:
            if not folder.is_dir():
                out[(sc.id, skill_dir)] = source
                continue
            name = require_skill(skill_dir).name
            found = folder if one_run else latest_run_of(folder, name, sc.id)
            if one_run and _run_skill(folder) not in (None, name):
                raise UpskillError(
                    f"--compare {source}: that run is of skill {_run_skill(folder)!r}, not {name!r} (scenario {sc.id})"
                )
            if found is None:
                raise UpskillError(f"--compare {source}: no finished run of skill {name!r} (scenario {sc.id}) in that folder")
            out[(sc.id, skill_dir)] = str(found)
    return out


def _run_skill(run_dir: Path) -> str | None:
    """The skill a run folder measured, by its summary (``None`` when it has none to read)."""
    from upskill_hub import rundir

    try:
        data = rundir.read_run_json(run_dir / rundir.SUMMARY_FILE)
    except (UpskillError, OSError):
        return None
    return data.get("skill_name") if isinstance(data, dict) else None


def _frac(x: float | None) -> str:
    return "?" if x is None else f"{x:+.2f}"


def _with_ci(x: float | None, lo: float | None, hi: float | None) -> str:
    return points(x, lo, hi, unit="", compact=True)


def render(comp: Comparison, console: Console) -> None:
    """A table of lift then and now with intervals, and the change with its paired test."""
    pct = f"{comp.level * 100:g}%"
    t = Table(
        title=f"Lift compared with {comp.reference_id} ({comp.reference_source})",
        caption=f"lift in points [{pct} CI]; change: paired over shared cases; regression: change CI below 0",
    )
    for col in ("model", "mode", "then", "now", "change", "p", "cases", "verdict"):
        t.add_column(col, justify="left" if col in ("model", "mode", "verdict") else "right")
    for c in comp.changes:
        verdict = "[red]regression[/]" if c.regression else "ok"
        t.add_row(
            c.model,
            c.mode,
            _with_ci(c.lift_then, c.then_ci_low, c.then_ci_high),
            _with_ci(c.lift_now, c.now_ci_low, c.now_ci_high),
            _with_ci(c.change, c.change_ci_low, c.change_ci_high),
            "–" if c.p_value is None else f"{c.p_value:.2g}",
            str(c.n_cases),
            verdict,
        )
    console.print(t)
    if comp.triggers_then or comp.triggers_now:
        console.print(_triggers_table(comp))


def _rate(x: float | None, lo: float | None, hi: float | None) -> str:
    return "–" if x is None else f"{x * 100:.0f}% [{(lo or 0) * 100:.0f}–{(hi or 0) * 100:.0f}]"


def _triggers_table(comp: Comparison) -> Table:
    """Trigger recall and false-trigger rate then and now, per model (Wilson intervals)."""
    then = {t.model: t for t in comp.triggers_then}
    now = {t.model: t for t in comp.triggers_now}
    t = Table(
        title=f"Triggering compared with {comp.reference_id}",
        caption="recall: loaded when it should; false: loaded when it should not; [95% Wilson CI]",
    )
    for col in ("model", "recall then", "recall now", "false then", "false now"):
        t.add_column(col, justify="left" if col == "model" else "right")
    for m in dict.fromkeys([*now, *then]):
        a, b = then.get(m), now.get(m)
        t.add_row(
            m,
            _rate(a.recall, a.recall_ci_low, a.recall_ci_high) if a else "–",
            _rate(b.recall, b.recall_ci_low, b.recall_ci_high) if b else "–",
            _rate(a.false_trigger_rate, a.fpr_ci_low, a.fpr_ci_high) if a else "–",
            _rate(b.false_trigger_rate, b.fpr_ci_low, b.fpr_ci_high) if b else "–",
        )
    return t


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
    where = "" if c.mode == "inject" else f" ({c.mode} mode)"
    raise UpskillError(
        f"regression: skill {c.skill} on {c.model}{where}: lift {_frac(c.lift_then)} -> {_frac(c.lift_now)} "
        f"(change {_frac(c.change)} [{_frac(c.change_ci_low)}, {_frac(c.change_ci_high)}] at {comp.level * 100:g}%, "
        f"p={c.p_value:.2g}) vs {comp.reference_id} ({comp.reference_source}){more}"
    )
