"""Run folders holding catalog-mode rows and trigger rows, written from the schema dataclasses.

What the catalog runner and ``upskill-hub triggers`` write (issue 22): ``results.jsonl`` rows
with ``mode``, ``triggered``, ``loaded`` and ``files_read``; ``triggers.jsonl`` with one
:class:`TriggerRow` per query; ``summary.json`` whose ``triggers`` hold the figures per model.
Built here from the real dataclasses, so the publishing side is tested on the shapes the
writing side produces, and old-schema shards (the previous version's columns) for the
compatibility checks.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from upskill_hub.lift.figures.intervals import wilson_interval
from upskill_hub.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE
from upskill_hub.rundir.schema import (
    ConditionStats,
    LiftStats,
    ResultRow,
    RunSummary,
    TriggerRow,
    TriggerStats,
)
from upskill_hub.rundir.trigger_rows import TRIGGERS_FILE
from upskill_hub.skill import Skill, load_skill

#: The columns ``results`` and ``runs`` shards had before modes and triggers existed.
NEW_RESULT_COLUMNS = ("mode", "agent", "triggered", "loaded", "files_read", "turns", "tool_calls", "tokens_unavailable")


def write_skill(root: Path, name: str = "tiny-skill") -> Path:
    """A valid skill folder ``root/name`` with a reference file the catalog rows name."""
    skill = Skill.create(
        name, f"Use when testing {name}.", "Say hello politely.\n",
        extra_frontmatter={"license": "Apache-2.0"}, files={"references/notes.md": b"# Notes\n"},
    )  # fmt: skip
    skill.write(root / name, overwrite=True)
    return root / name


def catalog_rows(run_id: str, skill_name: str, skill_version: str, model: str, n_cases: int = 4) -> list[ResultRow]:
    """Inject and catalog rows for one model: catalog loads the skill on half the cases."""
    rows = []
    for mode in ("inject", "catalog"):
        for cond in ("baseline", "with_skill"):
            for i in range(n_cases):
                loaded = mode == "catalog" and cond == "with_skill" and i % 2 == 0
                passed = (cond == "with_skill" and (mode == "inject" or loaded)) or i == 0
                rows.append(
                    ResultRow(
                        run_id=run_id, timestamp="2026-11-24T10:00:00Z", tool_version="0.2.0",
                        skill_name=skill_name, skill_version=skill_version, model=model,
                        provider="openai-compatible", params="{}", condition=cond, case_id=f"case-{i}",
                        repeat=0, passed=passed, assertions_passed=int(passed), assertions_total=1,
                        assertion_details=json.dumps([{"type": "contains", "passed": passed}]),
                        output=f"answer {i}", input_tokens=100, output_tokens=20, cached_tokens=0,
                        latency_s=0.5, cost_usd=None, error=None, mode=mode,
                        triggered=None if mode == "inject" else loaded,
                        loaded=json.dumps([skill_name] if loaded else ["other-skill"] if i == 1 and mode == "catalog" else []),
                        files_read=json.dumps([f"{skill_name}/references/notes.md"] if loaded else []),
                        turns=None if mode == "inject" else (3 if loaded else 1),
                        tool_calls=None if mode == "inject" else (2 if loaded else 0),
                    )
                )  # fmt: skip
    return rows


def trigger_rows(run_id: str, skill_name: str, model: str, *, hits: int = 7, false_hits: int = 2) -> list[TriggerRow]:
    """10 should-trigger and 10 should-not queries; ``hits`` and ``false_hits`` of them load the skill."""
    rows = []
    for should in (True, False):
        for i in range(10):
            triggered = i < (hits if should else false_hits)
            rows.append(
                TriggerRow(
                    run_id=run_id, timestamp="2026-11-24T10:00:00Z", tool_version="0.2.0", skill_name=skill_name,
                    skill_version="v1", model=model, provider="openai-compatible", params="{}",
                    query_id=f"{'pos' if should else 'neg'}-{i}", query=f"query {'about' if should else 'off'} {i}",
                    should_trigger=should, repeat=0, triggered=triggered,
                    loaded=json.dumps([skill_name] if triggered else []), input_tokens=50, output_tokens=5,
                )
            )  # fmt: skip
    return rows


def trigger_stats(rows: list[TriggerRow], model: str) -> TriggerStats:
    """Recall and false-trigger rate with Wilson intervals, computed by hand for the fixtures."""
    pos = [r for r in rows if r.model == model and r.should_trigger and r.triggered is not None]
    neg = [r for r in rows if r.model == model and not r.should_trigger and r.triggered is not None]
    tp, fp = sum(bool(r.triggered) for r in pos), sum(bool(r.triggered) for r in neg)
    rlo, rhi = wilson_interval(tp, len(pos))
    flo, fhi = wilson_interval(fp, len(neg))
    recall, precision = tp / len(pos), (tp / (tp + fp) if tp + fp else None)
    f1 = 2 * precision * recall / (precision + recall) if precision else None
    return TriggerStats(
        model=model, n_should=len(pos), triggered_should=tp, recall=recall, recall_ci_low=rlo, recall_ci_high=rhi,
        n_should_not=len(neg), triggered_should_not=fp, false_trigger_rate=fp / len(neg), fpr_ci_low=flo,
        fpr_ci_high=fhi, precision=precision, f1=f1,
    )  # fmt: skip


def _conditions(
    rows: list[ResultRow], model: str, modes: tuple[str, ...] = ("inject", "catalog"), n_cases: int = 4
) -> tuple[list[ConditionStats], list[LiftStats]]:
    conds, lifts = [], []
    for mode in modes:
        rates = {}
        for cond in ("baseline", "with_skill"):
            sel = [r for r in rows if r.model == model and r.mode == mode and r.condition == cond]
            passed = sum(bool(r.passed) for r in sel)
            lo, hi = wilson_interval(passed, len(sel))
            rates[cond] = passed / len(sel)
            conds.append(
                ConditionStats(
                    model=model, condition=cond, n=len(sel), passed=passed, errors=0, pass_rate=rates[cond],
                    ci_low=lo, ci_high=hi, mean_assertions=rates[cond], mean_input_tokens=100.0,
                    mean_output_tokens=20.0, mean_total_tokens=120.0, mean_latency_s=0.5, total_cost_usd=None,
                    mode=mode,
                )
            )  # fmt: skip
        lift = rates["with_skill"] - rates["baseline"]
        lifts.append(
            LiftStats(
                model=model, lift=lift, ci_low=lift - 0.3, ci_high=min(1.0, lift + 0.2), p_value=0.2, n_cases=n_cases,
                method="paired", token_savings=0.0, conclusive=False, mode=mode,
            )
        )  # fmt: skip
    return conds, lifts


def write_catalog_run(
    root: Path,
    run_id: str,
    skill_dir: Path,
    *,
    models: tuple[str, ...] = ("model-a",),
    timestamp: str = "2026-11-24T10:00:00Z",
    results: bool = True,
    triggers: bool = True,
    hits: int = 7,
    false_hits: int = 2,
) -> Path:
    """A run folder with inject + catalog rows (``results``) and trigger rows (``triggers``)."""
    skill = load_skill(skill_dir).skill
    assert skill is not None
    folder = root / run_id
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[ResultRow] = []
    trows: list[TriggerRow] = []
    conds: list[ConditionStats] = []
    lifts: list[LiftStats] = []
    for m in models:
        if results:
            mine = catalog_rows(run_id, skill.name, skill.version, m)
            rows += mine
            c, x = _conditions(mine, m)
            conds, lifts = conds + c, lifts + x
        if triggers:
            trows += trigger_rows(run_id, skill.name, m, hits=hits, false_hits=false_hits)
    if results:
        plan = {"run_id": run_id, "skill_name": skill.name, "skill_version": skill.version,
                "models": [{"provider": "openai-compatible", "model": m} for m in models], "modes": ["inject", "catalog"], "created": timestamp}  # fmt: skip
        (folder / RUN_FILE).write_text(json.dumps(plan), encoding="utf-8")
        (folder / RESULTS_FILE).write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows), encoding="utf-8")
    if triggers:
        (folder / TRIGGERS_FILE).write_text("".join(json.dumps(r.to_dict()) + "\n" for r in trows), encoding="utf-8")
    summary = RunSummary(
        run_id=run_id, timestamp=timestamp, tool_version="0.2.0", skill_name=skill.name,
        skill_version=skill.version, models=list(models), runs_per_case=1, n_cases=4 if results else 0,
        conditions=conds, lifts=lifts, triggers=[trigger_stats(trows, m) for m in models] if triggers else [],
    )  # fmt: skip
    (folder / SUMMARY_FILE).write_text(json.dumps(summary.to_dict(), indent=2), encoding="utf-8")
    return folder


def make_rows(run_id: str, skill: Skill, n_cases: int = 3) -> list[ResultRow]:
    """Inject rows as the previous version wrote them (no mode): the skill helps on all but case 0."""
    return [
        ResultRow(
            run_id=run_id, timestamp="2026-11-01T10:00:00Z", tool_version="0.1.0", skill_name=skill.name,
            skill_version=skill.version, model="model-a", provider="openai-compatible", params="{}",
            condition=cond, case_id=f"case-{i}", repeat=0, passed=cond == "with_skill" or i == 0,
            assertions_passed=1, assertions_total=1, assertion_details="[]", output=f"old {i}",
        )  # fmt: skip
        for cond in ("baseline", "with_skill")
        for i in range(n_cases)
    ]


def make_summary(run_id: str, skill: Skill, rows: list[ResultRow], timestamp: str) -> RunSummary:
    """The summary of :func:`make_rows` (inject conditions and lift only)."""
    conds, lifts = _conditions(rows, "model-a", modes=("inject",), n_cases=len({r.case_id for r in rows}))
    return RunSummary(
        run_id=run_id, timestamp=timestamp, tool_version="0.1.0", skill_name=skill.name,
        skill_version=skill.version, models=["model-a"], runs_per_case=1, n_cases=len({r.case_id for r in rows}),
        conditions=conds, lifts=lifts,
    )  # fmt: skip


def old_results_table(rows: list[ResultRow]):  # -> pyarrow.Table
    """``rows`` as the previous version wrote its ``results`` shards: no mode or trigger columns."""
    import pyarrow as pa

    from upskill_hub.rundir import result_arrow_schema

    schema = result_arrow_schema()
    old = pa.schema([f for f in schema if f.name not in NEW_RESULT_COLUMNS])
    return pa.Table.from_pylist([{k: v for k, v in r.to_dict().items() if k in old.names} for r in rows], schema=old)


def old_runs_table(summary: RunSummary):  # -> pyarrow.Table
    """``summary`` as the previous version wrote its ``runs`` shard: no ``triggers``, no ``mode`` in structs."""
    import pyarrow as pa

    from upskill_hub.rundir import runs_arrow_schema, summary_record

    def drop_mode(t: Any) -> Any:
        if pa.types.is_list(t) and pa.types.is_struct(t.value_type):
            return pa.list_(pa.struct([f for f in t.value_type if f.name != "mode"]))
        return t

    schema = pa.schema([pa.field(f.name, drop_mode(f.type)) for f in runs_arrow_schema() if f.name != "triggers"])
    record = summary_record(replace(summary, triggers=[]))
    record.pop("triggers")
    for key in ("conditions", "lifts"):
        record[key] = [{k: v for k, v in c.items() if k != "mode"} for c in record[key]]
    return pa.Table.from_pylist([record], schema=schema)


OLD_CARD = """---
configs:
- config_name: results
  data_files:
  - split: train
    path: data/results/*.parquet
- config_name: runs
  data_files:
  - split: train
    path: data/runs/*.parquet
---

# old
"""


def _parquet(table) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def publish_old_run(repo_id: str, skill_dir: Path) -> list[dict]:
    """Commit a run the way the previous version pushed it: old columns, no features in the card."""
    from huggingface_hub import CommitOperationAdd, HfApi

    skill = load_skill(skill_dir).skill
    rows = make_rows("run-20261101-old", skill, n_cases=3)
    summary = make_summary("run-20261101-old", skill, rows, "2026-11-01T10:00:00Z")
    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset")
    api.create_commit(
        repo_id,
        [
            CommitOperationAdd("README.md", OLD_CARD.encode()),
            CommitOperationAdd("data/results/run-20261101-old.parquet", _parquet(old_results_table(rows))),
            CommitOperationAdd("data/runs/run-20261101-old.parquet", _parquet(old_runs_table(summary))),
        ],
        commit_message="a push by the previous version",
        repo_type="dataset",
    )
    return [r.to_dict() for r in rows]
