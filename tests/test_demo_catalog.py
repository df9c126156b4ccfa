"""The demo's catalog-mode sentence: the measured trigger rate, said plainly (a 0 included)."""

from __future__ import annotations

import json
from pathlib import Path

from upskill_hub.demo import trigger_sentence
from upskill_hub.lift.figures.stats import trigger_stats


def _summary(tmp_path: Path, should: list[bool]) -> Path:
    stats = trigger_stats("SmolLM2-135M", should, [])
    (tmp_path / "summary.json").write_text(json.dumps({"triggers": [stats.__dict__]}))
    return tmp_path


def test_never_triggered_is_said_plainly_with_the_rate(tmp_path: Path) -> None:
    line = trigger_sentence(_summary(tmp_path, [False] * 4), "hf-dataset-card")
    assert "loaded hf-dataset-card by itself in 0 of 4 answers" in line
    assert "0%" in line and "[0%, 49%]" in line and "it never triggered" in line


def test_some_triggers_are_reported_without_the_caveat(tmp_path: Path) -> None:
    line = trigger_sentence(_summary(tmp_path, [True, False]), "x")
    assert "1 of 2 answers" in line and "50%" in line and "never" not in line
