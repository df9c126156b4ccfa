"""The tune and library routing run folders under an output folder, for ``upskill-hub runs``.

They share ``upskill-runs/`` with eval runs but hold other files (``tune-plan.json``,
``routing-plan.json``), so the eval history does not list them; without this, ``runs``
said "No runs" over a folder full of them. Each is summed up in one line: what it was
about and where it ended (or that it is unfinished and resumes with ``--resume``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util.percent import interval, pct
from upskill_hub.errors import UpskillError
from upskill_hub.rundir.routing_rows import read_routing
from upskill_hub.rundir.trigger_rows import read_run_json
from upskill_hub.triggering import routing_run, tune_run


@dataclass(frozen=True)
class DescriptionRun:
    """One tune or routing run folder, summed up."""

    run_id: str
    kind: str  # "tune" | "routing"
    subject: str  # the skill tuned, or the library routed
    models: str
    result: str  # one line; "unfinished (--resume)" when it never ended


def _json(path: Path) -> dict[str, Any] | None:
    """A run-folder JSON file read like every other (no symlink, no FIFO wait, capped); None when unusable."""
    try:
        data = read_run_json(path)
    except UpskillError:
        return None
    return data if isinstance(data, dict) else None


def _present(path: Path) -> bool:
    """Whether ``path`` names anything at all (a FIFO or a symlink too), without opening it."""
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


def _tune(folder: Path, plan: dict[str, Any]) -> DescriptionRun:
    result = _json(folder / tune_run.RESULT_FILE)
    line = "unfinished (--resume)"
    try:
        if result is not None:
            cands = result["candidates"]
            on = "train" if result.get("winner_chosen_on") == "train" else "held_out"  # --held-out 0
            before, after = (
                cands[0][on]["accuracy"],
                cands[int(result["winner"])][on]["accuracy"],
            )
            what = "held-out accuracy" if on == "held_out" else "train accuracy (not held out)"
            line = f"{what} {pct(before)} -> {pct(after)}" + (
                ", written" if result.get("written") else ""
            )
    except (KeyError, IndexError, TypeError, ValueError):
        line = "unreadable tune_result.json"
    return DescriptionRun(
        folder.name, "tune", str(plan.get("skill_name", "?")), str(plan.get("model", "?")), line
    )


def _routing(folder: Path, plan: dict[str, Any]) -> DescriptionRun:
    models = ", ".join(map(str, plan.get("models") or [])) or "?"
    try:
        found = read_routing(folder)
    except UpskillError:
        found = None
        line = "unreadable routing.json"
    else:
        line = "unfinished (--resume)"
    if found is not None:
        line = "; ".join(
            f"routing accuracy {pct(r.accuracy)} {interval(r.accuracy_ci_low, r.accuracy_ci_high)}, "
            f"{len(r.stealing)} stealing pair(s)"
            for r in found[2]
        )
    return DescriptionRun(folder.name, "routing", str(plan.get("library", "?")), models, line)


def description_runs(root: str | Path) -> list[DescriptionRun]:
    """Tune and routing runs directly under ``root`` (or ``root`` itself), by run id."""
    root = Path(root)
    folders = [root] if any(_present(root / f) for f in (tune_run.PLAN_FILE, routing_run.PLAN_FILE)) else sorted(
        p for p in root.iterdir() if p.is_dir() and not p.is_symlink()
    )  # fmt: skip
    out = []
    for folder in folders:
        if (plan := _json(folder / tune_run.PLAN_FILE)) is not None:
            out.append(_tune(folder, plan))
        elif (plan := _json(folder / routing_run.PLAN_FILE)) is not None:
            out.append(_routing(folder, plan))
        else:  # a plan that is there but cannot be read is named, not skipped in silence
            for kind, name in (("tune", tune_run.PLAN_FILE), ("routing", routing_run.PLAN_FILE)):
                if _present(folder / name):
                    out.append(DescriptionRun(folder.name, kind, "?", "?", f"unreadable {name}"))
                    break
    return out
