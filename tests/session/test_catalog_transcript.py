"""Catalog mode records its own loop's tool calls: the transcript its rows keep and its checks read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from upskill_hub.cases.schema import Assertion
from upskill_hub.lift.grading.transcript_checks import Activity, check_transcript, judge_summary
from upskill_hub.models.base import Completion, ToolCall, Usage
from upskill_hub.session import transcript as transcript_mod
from upskill_hub.session.catalog import Catalog, run_catalog_conversation
from upskill_hub.skill import Skill, require_skill

BODY = "# PDF tables\n\nRead references/tables.md before extracting. Key: sk-live-0123456789abcdefghij\n"


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    path = Skill.create("pdf", "Extract tables from PDF files.", BODY).write(tmp_path / "skills" / "pdf")
    (path / "references").mkdir()
    (path / "references" / "tables.md").write_text("Use camelot.\n")
    other = Skill.create("csv", "Clean CSV files.", "# CSV\n").write(tmp_path / "skills" / "csv")
    return Catalog.of([require_skill(path), require_skill(other)])


def _scripted(*turns: list[ToolCall]):
    seen: list[object] = []

    async def complete(messages, tools):
        seen.append(messages)
        calls = turns[len(seen) - 1] if len(seen) <= len(turns) else []
        return Completion("" if calls else "done", Usage(10, 2), 0.1, tool_calls=tuple(calls)), False

    return complete


def test_the_loop_records_each_call_in_order_with_its_result(cat: Catalog) -> None:
    complete = _scripted(
        [ToolCall("a", "load_skill", {"name": "pdf"}), ToolCall("b", "read_skill_file", {"name": "pdf", "path": "../x"})],
        [ToolCall("c", "read_skill_file", {"name": "pdf", "path": "references/tables.md"})],
        [ToolCall("d", "open_browser", {"url": "http://x"})],
    )  # fmt: skip
    out = asyncio.run(run_catalog_conversation(complete, "Extract tables", cat))
    t = out.transcript
    assert [(e.name, e.kind, json.loads(e.arguments), e.error) for e in t.events] == [
        ("load_skill", "skill", {"name": "pdf"}, False),
        ("read_skill_file", "read", {"name": "pdf", "path": "../x"}, True),
        ("read_skill_file", "read", {"name": "pdf", "path": "references/tables.md"}, False),
        ("open_browser", "other", {"url": "http://x"}, True),
    ]
    assert t.events[0].result.startswith("# PDF tables") and t.events[2].result == "Use camelot.\n"
    assert t.events[1].result.startswith("error: refused path '../x'")
    assert t.total == out.tool_calls == 4 and t.missing is None
    # The row's form masks secrets the skill body carries.
    row = json.loads(out.transcript_json())
    assert "sk-live-0123456789abcdefghij" not in json.dumps(row) and "***" in row["calls"][0]["result"]
    assert [c["name"] for c in row["calls"]] == ["load_skill", "read_skill_file", "read_skill_file", "open_browser"]
    # The checks read it with the loop's own loaded and read lists.
    activity = Activity(out.transcript, "pdf", out.loaded, [*out.files_read, "pdf/SKILL.md"])
    assert check_transcript(Assertion("tool-called", "load_skill", args="pdf"), activity).passed
    assert check_transcript(Assertion("skill-loaded"), activity).passed
    assert not check_transcript(Assertion("skill-loaded", "csv"), activity).passed
    assert check_transcript(Assertion("file-read", "references/tables.md"), activity).passed
    assert not check_transcript(Assertion("file-read", "x"), activity).passed
    assert judge_summary(out.transcript).splitlines()[0].startswith('1. load_skill {"name": "pdf"} -> # PDF tables')


def test_an_answer_without_tool_calls_has_an_empty_transcript(cat: Catalog) -> None:
    out = asyncio.run(run_catalog_conversation(_scripted(), "hello", cat))
    assert out.transcript.events == () and out.transcript.missing is None
    assert json.loads(out.transcript_json()) == {"calls": [], "total": 0}
    r = check_transcript(Assertion("tool-called", "load_skill"), Activity(out.transcript, "pdf"))
    assert not r.passed and r.evidence == "no call of 'load_skill' among 0 call(s)"


def test_a_long_conversation_keeps_a_bounded_transcript(cat: Catalog, monkeypatch) -> None:
    monkeypatch.setattr(transcript_mod, "MAX_CALLS", 5)
    turns = [[ToolCall(f"t{i}", "load_skill", {"name": "pdf" if i % 2 else "csv"})] for i in range(12)]
    out = asyncio.run(run_catalog_conversation(_scripted(*turns), "q", cat, max_turns=20))
    t = out.transcript
    assert (t.total, len(t.events), dict(t.dropped)) == (12, 5, {"load_skill": 7})
    assert json.loads(out.transcript_json())["cut"] == [
        "7 of 12 tool calls not kept (UPSKILL_TRANSCRIPT_MAX_CALLS=5)"
    ]
