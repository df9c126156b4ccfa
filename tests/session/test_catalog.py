"""Catalog mode's tools and loop: what the model can load and read, and every refusal."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from upskill_hub.models.base import Completion, ToolCall, Usage
from upskill_hub.session import catalog as catalog_mod
from upskill_hub.session.catalog import Catalog, run_catalog_conversation
from upskill_hub.skill import Skill, require_skill

BODY = "# PDF tables\n\nRead references/tables.md before extracting.\n"


def _skill(root: Path, name: str = "pdf", description: str = "Extract tables from PDF files.") -> Path:
    path = Skill.create(name, description, BODY).write(root / name)
    (path / "references").mkdir()
    (path / "references" / "tables.md").write_text("Use camelot.\n")
    return path


@pytest.fixture
def cat(tmp_path: Path) -> Catalog:
    pdf = _skill(tmp_path / "skills")
    other = _skill(tmp_path / "skills", "csv", "Clean CSV files.")
    (pdf / "references" / "blob.bin").write_bytes(b"ab\0cd")
    (pdf / "references" / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (pdf / "references" / "big.md").write_text("x" * (catalog_mod.MAX_FILE_BYTES + 1))
    cat = Catalog.of([require_skill(pdf), require_skill(other)])
    # Written after loading (the loader itself refuses a symlink out): the tool serves only
    # what the loader listed, so it is not there for the model.
    (tmp_path / "secret.txt").write_text("TOKEN=abc\n")
    os.symlink(tmp_path / "secret.txt", pdf / "references" / "leak.md")
    return cat


def _call(cat: Catalog, tool: str, **args: object) -> tuple[str, str | None]:
    try:
        return cat.run_tool(ToolCall("c1", tool, dict(args)))
    except catalog_mod.ToolRefusal as exc:
        return "error: " + str(exc), None


def test_system_prompt_has_the_catalog_block(cat: Catalog) -> None:
    prompt = cat.system_prompt("Base.")
    assert prompt.startswith("Base.\n<available_skills>\n<skill>\n<name>pdf</name>\n")
    assert "<description>Extract tables from PDF files.</description>" in prompt
    assert "<location>skills/pdf/SKILL.md</location>" in prompt
    assert "load_skill" in prompt
    assert "<name>pdf</name>" not in cat.without("pdf").system_prompt("Base.")


def test_load_skill_returns_body_without_frontmatter(cat: Catalog) -> None:
    text, did = _call(cat, "load_skill", name="pdf")
    assert text.strip() == BODY.strip() and "description:" not in text and did == "load:pdf"
    text, did = _call(cat, "load_skill", name="nope")
    assert did is None and text.startswith("error: no skill named 'nope'; available: pdf, csv")


def test_read_skill_file_serves_text_inside_the_skill(cat: Catalog) -> None:
    assert _call(cat, "read_skill_file", name="pdf", path="references/tables.md") == (
        "Use camelot.\n",
        "read:pdf/references/tables.md",
    )


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../csv/SKILL.md", "without '..'"),
        ("references/../../secret.txt", "without '..'"),
        ("/etc/passwd", "without '..'"),
        ("references/leak.md", "no file 'references/leak.md'"),
        ("references/blob.bin", "binary"),
        ("references/latin1.md", "not UTF-8"),
        ("references/big.md", "over the 64 KB limit per file read (UPSKILL_SKILL_FILE_MAX_BYTES)"),
    ],
)
def test_read_skill_file_refusals_are_one_line(cat: Catalog, path: str, why: str) -> None:
    text, did = _call(cat, "read_skill_file", name="pdf", path=path)
    assert did is None and text.startswith("error: ") and why in text and "\n" not in text
    assert "TOKEN" not in text


def test_wrong_path_answers_with_the_file_list(cat: Catalog) -> None:
    text, did = _call(cat, "read_skill_file", name="pdf", path="references/nope.md")
    assert did is None and "files: SKILL.md, references/big.md" in text and "references/tables.md" in text


def test_loop_goes_on_after_a_refusal_and_sums_usage(cat: Catalog) -> None:
    script = [
        [ToolCall("a", "load_skill", {"name": "pdf"})],
        [ToolCall("b", "read_skill_file", {"name": "pdf", "path": "../csv/SKILL.md"})],
        [ToolCall("c", "read_skill_file", {"name": "pdf", "path": "references/tables.md"})],
        [],
    ]
    seen = []

    async def complete(messages, tools):
        seen.append(messages)
        calls = script[len(seen) - 1]
        return Completion("done" if not calls else "", Usage(10, 2), 0.5, tool_calls=tuple(calls)), False

    out = asyncio.run(run_catalog_conversation(complete, "Extract tables", cat))
    assert out.text == "done" and out.turns == 4 and out.tool_calls == 3
    assert out.loaded == ["pdf"] and out.files_read == ["pdf/references/tables.md"]
    assert out.usage == Usage(40, 8, None) and out.latency_s == 2.0 and out.stopped is None
    refusal = seen[2][-1]
    assert refusal.role == "tool" and refusal.is_error and refusal.content.startswith("error: refused")


def test_loop_stops_at_max_turns_and_token_cap(cat: Catalog) -> None:
    async def forever(messages, tools):
        return Completion("", Usage(100, 1), tool_calls=(ToolCall("x", "load_skill", {"name": "csv"}),)), True

    out = asyncio.run(run_catalog_conversation(forever, "q", cat, max_turns=3))
    assert out.turns == 3 and out.stopped == "max_turns" and out.cached
    out = asyncio.run(run_catalog_conversation(forever, "q", cat, max_turns=50, token_cap=250))
    assert out.turns == 3 and out.stopped == "token_cap"
