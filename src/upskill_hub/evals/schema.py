"""The shape of eval results, shared by the runner, reports, the Hub dataset and the Space.

On disk a run is a folder ``<output>/<run_id>/`` holding:

* ``run.json``       the plan: run id, skill name/version, models, conditions, runs, params;
* ``results.jsonl``  one :class:`ResultRow` per line, appended as each call finishes;
* ``summary.json``   the :class:`RunSummary` (written when the run ends);
* plots (``pass_rate.png``, ``tokens.png``, ``report.html``).

Column names here are the column names of the ``results`` and ``runs`` configs on the Hub.
Nested data (generation parameters, assertion details) is stored as JSON text so the
parquet schema stays flat and the dataset viewer shows it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

CONDITIONS = ("baseline", "with_skill")

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"


@dataclass
class ResultRow:
    """One model call of an eval run."""

    run_id: str
    timestamp: str  # ISO 8601, UTC
    tool_version: str
    skill_name: str
    skill_version: str
    model: str  # the model id sent to the provider
    provider: str  # anthropic | openai | openai-compatible | hf | local | ...
    params: str  # JSON text: temperature, max_tokens, seed, ...
    condition: str  # "with_skill" | "baseline"
    case_id: str
    repeat: int
    passed: bool | None  # None when the call failed (see ``error``)
    assertions_passed: int
    assertions_total: int
    assertion_details: str  # JSON text: [{"type", "passed", "evidence", ...}]
    output: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    error: str | None = None
    cached: bool = False
    split: str = "train"
    finish_reason: str | None = None

    @property
    def key(self) -> tuple[str, str, str, int]:
        """Identity of a planned call inside a run (used for resume and de-duplication)."""
        return (self.model, self.condition, self.case_id, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultRow:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def result_arrow_schema():  # -> pyarrow.Schema
    """Arrow schema of the ``results`` table (one column per :class:`ResultRow` field)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("run_id", pa.string()),
            ("timestamp", pa.string()),
            ("tool_version", pa.string()),
            ("skill_name", pa.string()),
            ("skill_version", pa.string()),
            ("model", pa.string()),
            ("provider", pa.string()),
            ("params", pa.string()),
            ("condition", pa.string()),
            ("case_id", pa.string()),
            ("repeat", pa.int32()),
            ("passed", pa.bool_()),
            ("assertions_passed", pa.int32()),
            ("assertions_total", pa.int32()),
            ("assertion_details", pa.string()),
            ("output", pa.string()),
            ("input_tokens", pa.int64()),
            ("output_tokens", pa.int64()),
            ("cached_tokens", pa.int64()),
            ("latency_s", pa.float64()),
            ("cost_usd", pa.float64()),
            ("error", pa.string()),
            ("cached", pa.bool_()),
            ("split", pa.string()),
            ("finish_reason", pa.string()),
        ]
    )


@dataclass
class ConditionStats:
    """Aggregates for one model x condition."""

    model: str
    condition: str
    n: int  # answered calls (errors excluded)
    passed: int
    errors: int
    pass_rate: float | None
    ci_low: float | None
    ci_high: float | None
    mean_assertions: float | None  # mean fraction of assertions passed
    mean_input_tokens: float | None
    mean_output_tokens: float | None
    mean_total_tokens: float | None
    mean_latency_s: float | None
    total_cost_usd: float | None
    pass_at_k: dict[str, float] = field(default_factory=dict)
    cached_calls: int = 0


@dataclass
class LiftStats:
    """with_skill minus baseline for one model, paired over cases."""

    model: str
    lift: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_cases: int
    method: str  # how ci_low/ci_high and p_value were computed (see evals/paired.py)
    token_savings: float | None  # baseline mean total tokens minus with-skill mean
    conclusive: bool
    note: str = ""


@dataclass
class RunSummary:
    """What a run found; stored as ``summary.json`` and in the ``runs`` config on the Hub."""

    run_id: str
    timestamp: str
    tool_version: str
    skill_name: str
    skill_version: str
    models: list[str]
    runs_per_case: int
    n_cases: int
    conditions: list[ConditionStats]
    lifts: list[LiftStats]
    judge_model: str | None = None
    params: str = "{}"
    holdout: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        d = dict(data)
        d["conditions"] = [ConditionStats(**c) for c in d.get("conditions", [])]
        d["lifts"] = [LiftStats(**x) for x in d.get("lifts", [])]
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def read_results(run_dir: str | Path) -> list[ResultRow]:
    """Rows of a run folder; a torn last line (from a killed run) is ignored."""
    path = Path(run_dir) / RESULTS_FILE
    rows: list[ResultRow] = []
    if not path.exists():
        return rows
    with path.open("r", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(ResultRow.from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
    return rows


def read_summary(run_dir: str | Path) -> RunSummary | None:
    path = Path(run_dir) / SUMMARY_FILE
    if not path.exists():
        return None
    return RunSummary.from_dict(json.loads(path.read_text(encoding="utf-8")))
