"""The per-case answers view: pairing, the latest run, hostile outputs, long outputs."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from upskill_hub.space.answers import ANSWER_CHARS, answers_html


def _row(case, cond, output, passed, *, run="r1", ts="2026-01-01", repeat=0, error=None):
    details = json.dumps([{"type": "contains", "passed": passed, "evidence": f"checked {case}/{cond}"}])
    return {"run_id": run, "timestamp": ts, "case_id": case, "condition": cond, "repeat": repeat, "passed": passed,
            "error": error, "output": output, "assertion_details": details}  # fmt: skip


CASES = [{"id": "a", "input": "Say A."}, {"id": "b", "input": "Say B."}]


def test_side_by_side_with_evidence_and_latest_run():
    df = pd.DataFrame(
        [
            _row("a", "baseline", "old answer", False, run="r0", ts="2025-01-01"),
            _row("a", "baseline", "plain", False),
            _row("a", "with_skill", "AAA", True),
            _row("a", "with_skill", "AAA again", True, repeat=1),
            _row("b", "with_skill", None, None, error="rate limited"),
        ]
    )
    out = answers_html(CASES, df, "m")
    assert "old answer" not in out and "AAA again" not in out  # latest run, first repeat
    assert out.index("plain") < out.index("AAA")  # baseline left, with skill right
    assert "✗ contains: checked a/baseline" in out and "✓ contains: checked a/with_skill" in out
    assert "rate limited" in out and '<td class="uh-na">not run</td>' in out  # case b has no baseline
    assert out.count('class="uh-pass"') == 1 and out.count('class="uh-fail"') == 2


def test_hostile_and_long_outputs():
    long = "x" * (ANSWER_CHARS + 50)
    df = pd.DataFrame([_row("a", "baseline", "<script>alert(1)</script>", False), _row("a", "with_skill", long, True)])
    out = answers_html([{"id": "a", "input": "<b>hi</b>"}], df, "<m>")
    assert "<script" not in out and "&lt;script&gt;" in out and "<b>hi" not in out and "&lt;m&gt;" in out
    assert "x" * (ANSWER_CHARS + 1) not in out and "(50 more characters)" in out


def test_no_rows_says_what_will_appear():
    assert answers_html(CASES, None, "m").startswith('<p class="uh-empty">No answers from m yet')


def test_hostile_assertion_details_are_skipped_not_fatal():
    deep = _row("a", "baseline", "deep", False) | {"assertion_details": "[" * 50_000 + "]" * 50_000}
    junk = _row("a", "with_skill", "junk", True) | {"assertion_details": "{not json"}
    out = answers_html([{"id": "a", "input": "x"}], pd.DataFrame([deep, junk]), "m")
    assert "deep" in out and "junk" in out and "uh-evidence" not in out


def test_reading_answers_is_bounded_and_fails_in_one_line(space_repo, monkeypatch):
    from upskill_hub.errors import UpskillError
    from upskill_hub.space import answers, data

    lib = data.load_library(space_repo, token=None)
    rows = answers.answer_rows(lib, "greeting", "scripted-a")
    assert len(rows) == 6 and set(rows["condition"]) == {"baseline", "with_skill"}  # 3 cases x 2, outputs read
    assert answers.answer_rows(lib, "greeting", "no-such-model") is None
    monkeypatch.setattr(answers, "MAX_READ_BYTES", 100)  # a visitor's dataset with huge outputs
    with pytest.raises(UpskillError, match="decompresses to more than") as err:
        answers.answer_rows(lib, "greeting", "scripted-a")
    assert "\n" not in str(err.value)
