"""Helpers for the push/pull tests: small skill folders and eval run folders on disk.

Run folders are written the way the eval runner writes them (``run.json``,
``results.jsonl`` with one :class:`ResultRow` per line, ``summary.json``), from real
schema objects, so the tests exercise the same reading code real runs go through.
"""

from __future__ import annotations

import json
from pathlib import Path

from upskill_hub.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE
from upskill_hub.rundir.schema import ConditionStats, LiftStats, ResultRow, RunSummary
from upskill_hub.skill import Skill, load_skill

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_SKILLS = REPO_ROOT / "skills"


def write_skill(
    root: Path, name: str = "tiny-skill", *, body: str = "Say hello politely.\n", extra=None
) -> Path:
    """A valid skill folder ``root/name`` with a reference file (and ``extra`` files)."""
    folder = root / name
    files = {"references/notes.md": b"# Notes\n\nSome detail.\n"}
    files.update(extra or {})
    skill = Skill.create(
        name, f"Use when testing {name}.", body, extra_frontmatter={"license": "Apache-2.0"}, files=files
    )
    skill.write(folder, overwrite=True)
    return folder


def shipped_skill() -> Path | None:
    """One of the skills shipped in ``skills/`` when present (another engineer writes them)."""
    if not SHIPPED_SKILLS.is_dir():
        return None
    for folder in sorted(SHIPPED_SKILLS.iterdir()):
        if (folder / "SKILL.md").is_file() and load_skill(folder).ok:
            return folder
    return None


def make_rows(
    run_id: str, skill: Skill, n_cases: int = 3, models=("model-a",), output: str = "ok"
) -> list[ResultRow]:
    rows = []
    for model in models:
        for cond in ("baseline", "with_skill"):
            for i in range(n_cases):
                passed = cond == "with_skill" or i == 0
                rows.append(
                    ResultRow(
                        run_id=run_id,
                        timestamp="2026-11-21T10:00:00Z",
                        tool_version="0.1.0",
                        skill_name=skill.name,
                        skill_version=skill.version,
                        model=model,
                        provider="openai-compatible",
                        params=json.dumps({"temperature": 0}),
                        condition=cond,
                        case_id=f"case-{i}",
                        repeat=0,
                        passed=passed,
                        assertions_passed=1 if passed else 0,
                        assertions_total=1,
                        assertion_details=json.dumps([{"type": "contains", "passed": passed}]),
                        output=f"{output} {i}",
                        input_tokens=100 + i,
                        output_tokens=20,
                        cached_tokens=0,
                        latency_s=0.5,
                        cost_usd=None,
                        error=None,
                    )
                )
    return rows


def make_summary(run_id: str, skill: Skill, rows: list[ResultRow], timestamp: str) -> RunSummary:
    models = sorted({r.model for r in rows})
    conds = []
    lifts = []
    for m in models:
        rates = {}
        for cond in ("baseline", "with_skill"):
            sel = [r for r in rows if r.model == m and r.condition == cond]
            passed = sum(1 for r in sel if r.passed)
            rates[cond] = passed / len(sel)
            conds.append(
                ConditionStats(
                    model=m, condition=cond, n=len(sel), passed=passed, errors=0, pass_rate=rates[cond],
                    ci_low=max(0.0, rates[cond] - 0.3), ci_high=min(1.0, rates[cond] + 0.2),
                    mean_assertions=rates[cond], mean_input_tokens=101.0, mean_output_tokens=20.0,
                    mean_total_tokens=1200.0 if cond == "baseline" else 900.0, mean_latency_s=0.5,
                    total_cost_usd=None, pass_at_k={"1": rates[cond]},
                )
            )  # fmt: skip
        lift = rates["with_skill"] - rates["baseline"]
        lifts.append(
            LiftStats(
                model=m, lift=lift, ci_low=lift - 0.25, ci_high=min(1.0, lift + 0.1), p_value=0.03,
                n_cases=len({r.case_id for r in rows}), method="paired bootstrap (10000 resamples)",
                token_savings=300.0, conclusive=True,
            )
        )  # fmt: skip
    return RunSummary(
        run_id=run_id, timestamp=timestamp, tool_version="0.1.0", skill_name=skill.name,
        skill_version=skill.version, models=models, runs_per_case=1, n_cases=len({r.case_id for r in rows}),
        conditions=conds, lifts=lifts, params=json.dumps({"temperature": 0}),
    )  # fmt: skip


def write_run(
    root: Path,
    run_id: str,
    skill_dir: Path,
    *,
    n_cases: int = 3,
    models=("model-a",),
    output: str = "ok",
    timestamp: str = "2026-11-21T10:00:00Z",
    summary: bool = True,
) -> Path:
    """An eval run folder ``root/run_id`` for the skill at ``skill_dir``."""
    skill = load_skill(skill_dir).skill
    assert skill is not None
    folder = root / run_id
    folder.mkdir(parents=True, exist_ok=True)
    rows = make_rows(run_id, skill, n_cases, models, output)
    (folder / RUN_FILE).write_text(
        json.dumps(
            {
                "run_id": run_id,
                "skill_name": skill.name,
                "skill_version": skill.version,
                "models": list(models),
            }
        ),
        encoding="utf-8",
    )
    with (folder / RESULTS_FILE).open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r.to_dict()) + "\n")
    if summary:
        s = make_summary(run_id, skill, rows, timestamp)
        (folder / SUMMARY_FILE).write_text(json.dumps(s.to_dict(), indent=2), encoding="utf-8")
    return folder


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative POSIX path."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }
