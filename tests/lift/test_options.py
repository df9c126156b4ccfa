"""EvalOptions travel as JSON (a Job bundle's ``options``) and come back as the same options."""

from __future__ import annotations

import json
from pathlib import Path

from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.models.base import GenerationParams


def test_portable_options_round_trip_through_json(tmp_path: Path):
    sent = EvalOptions(
        runs=3,
        include_baseline=False,
        concurrency=7,
        params=GenerationParams(temperature=0.5, max_tokens=99, stop=("END",)),
        timeout=12.5,
        max_retries=2,
        output_dir=tmp_path,  # not portable: paths belong to the machine
        on_row=print,  # nor hooks
    )
    data = json.loads(json.dumps(sent.to_dict()))
    assert set(data) == set(EvalOptions.PORTABLE)
    assert data["params"] == {"temperature": 0.5, "max_tokens": 99, "stop": ["END"]}
    back = EvalOptions.from_dict(data, cases=tmp_path / "cases.json", plots=False)
    assert (back.runs, back.include_baseline, back.concurrency, back.timeout, back.max_retries) == (
        3,
        False,
        7,
        12.5,
        2,
    )
    assert back.params == data["params"] and back.cases == tmp_path / "cases.json" and back.plots is False
    assert back.on_row is None and back.output_dir == EvalOptions().output_dir


def test_missing_values_take_the_defaults():
    back = EvalOptions.from_dict({})
    default = EvalOptions()
    assert (back.runs, back.timeout, back.max_retries, back.params) == (
        default.runs,
        default.timeout,
        default.max_retries,
        None,
    )
