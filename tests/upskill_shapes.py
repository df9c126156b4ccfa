"""upskill's file shapes, rebuilt from its published pydantic schema (``upskill.models``).

upskill itself is not a dependency, so the tests reproduce the parts of its models that
decide what lands on disk: a saved skill's ``skill_meta.json`` (``{"metadata", "tests"}``)
and a ``TestCaseSuite`` dump (``{"cases"}``), where every optional field is written out,
``null`` included. Files made with these models are what upskill users bring along.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ExpectedSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    contains: list[str]

    @field_validator("contains", mode="before")
    @classmethod
    def _one_or_many(cls, value: str | list[str]) -> list[str]:
        return [value] if isinstance(value, str) else value


class TestCaseContext(BaseModel):
    __test__ = False
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str] | None = None


class TestCase(BaseModel):
    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")
    input: str
    context: TestCaseContext | None = None
    expected: ExpectedSpec
    output_file: str | None = None
    validator: str | None = None
    validator_config: dict[str, str | int | float | bool] | None = None


class TestCaseSuite(BaseModel):
    __test__ = False
    model_config = ConfigDict(extra="forbid")
    cases: list[TestCase] = Field(default_factory=list)


class SkillMetadata(BaseModel):
    version: str = "1.0"
    generated_by: str | None = None
    generated_at: datetime | None = None
    source_task: str | None = None
    test_pass_rate: float | None = None
    license: str | None = None
    compatibility: str | None = None


def save_upskill_skill(dest: Path, name: str, description: str, body: str, tests: list[TestCase]) -> Path:
    """Write a skill folder the way upskill's ``Skill.save`` lays it out."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}")
    meta = SkillMetadata(
        generated_by="sonnet",
        generated_at=datetime(2026, 1, 22, 13, 10, tzinfo=UTC),
        source_task=description,
        test_pass_rate=1.0,
    )
    data = {"metadata": meta.model_dump(mode="json"), "tests": [t.model_dump(mode="json") for t in tests]}
    (dest / "skill_meta.json").write_text(json.dumps(data, indent=2, default=str))
    return dest


class ConversationStats(BaseModel):
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class RunMetadata(BaseModel):
    model: str
    task: str
    batch_id: str
    run_number: int
    timestamp: datetime


class RunResult(BaseModel):
    metadata: RunMetadata
    stats: ConversationStats = Field(default_factory=ConversationStats)
    passed: bool = False
    assertions_passed: int = 0
    assertions_total: int = 0
    error_message: str | None = None
    session_id: str | None = None
    session_history_file: str | None = None
    run_type: str = "with_skill"
    skill_name: str | None = None


class BatchSummary(BaseModel):
    batch_id: str
    model: str
    task: str
    total_runs: int
    passed_runs: int
    results: list[RunResult] = Field(default_factory=list)


def save_upskill_batch(runs_dir: Path, batch_id: str, outcomes: list[tuple[str, bool, int]], *,
                       summary: bool = True) -> Path:
    """Write ``runs_dir/batch_id/`` as upskill's run logger does: one (run_type, passed, tokens) per run."""
    folder = runs_dir / batch_id
    results = []
    for i, (run_type, passed, tokens) in enumerate(outcomes, start=1):
        meta = RunMetadata(model="kimi", task="write a good pr", batch_id=batch_id, run_number=i,
                           timestamp=datetime(2026, 1, 22, 13, 10, i, tzinfo=UTC))
        result = RunResult(metadata=meta, stats=ConversationStats(total_tokens=tokens), passed=passed,
                           assertions_passed=5 if passed else 2, assertions_total=5, run_type=run_type,
                           skill_name="write-good-pr")
        run_dir = folder / f"run_{i}"
        run_dir.mkdir(parents=True)
        (run_dir / "run_metadata.json").write_text(meta.model_dump_json(indent=2))
        (run_dir / "run_result.json").write_text(result.model_dump_json(indent=2))
        results.append(result)
    if summary:
        batch = BatchSummary(batch_id=batch_id, model="kimi", task="write a good pr", total_runs=len(results),
                             passed_runs=sum(r.passed for r in results), results=results)
        (folder / "batch_summary.json").write_text(batch.model_dump_json(indent=2))
    return folder
