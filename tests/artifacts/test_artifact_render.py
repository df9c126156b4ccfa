"""Rendering changed files for graders with the well-kept readers of each format: what a
judge or ``file-contains`` reads for a spreadsheet, a document, a deck, a PDF, an image."""

from __future__ import annotations

import json

from _artifact_files import make_docx, make_pdf, make_pptx, make_xlsx, pdf_bytes, with_cached_value

from upskill_hub.artifacts import (
    ChangedFile,
    ChangeSet,
    budgets,
    change_set,
    judge_section,
    render_changes,
    write_rendered,
)
from upskill_hub.artifacts.formats import render_pdf, render_xlsx
from upskill_hub.artifacts.kinds import sniff


def _render(root, *paths, **kw):
    files = []
    for rel in paths:
        data = (root / rel).read_bytes()
        files.append(ChangedFile(rel, "created", sniff(rel, data[:8192]), len(data), None))
    cs = ChangeSet(files)
    return cs, {r.path: r for r in render_changes(root, cs, **kw)}


def test_a_spreadsheet_shows_every_sheet_cell_formula_and_cached_value(tmp_path):
    make_xlsx(tmp_path / "plain.xlsx")
    with_cached_value(make_xlsx(tmp_path / "excel.xlsx"), "B10", "SUM(B2:B9)", "360")
    make_xlsx(tmp_path / "typed.xlsx", total=42)
    _, r = _render(tmp_path, "plain.xlsx", "excel.xlsx", "typed.xlsx")
    plain = r["plain.xlsx"].text
    assert plain.startswith("## sheet 'Sales'\nA1: Region\nB1: Amount\nA2: R1\nB2: 10\n")
    assert "A10: Total\nB10: =SUM(B2:B9) (no cached value)\n## sheet 'Notes'\nA1: made by the agent" in plain
    assert "360" not in plain  # a formula is never evaluated: no cached value, no number
    assert "B10: =SUM(B2:B9) (cached value: 360)" in r["excel.xlsx"].text  # what the saving app computed
    assert "B10: 42\n" in r["typed.xlsx"].text + "\n" and "SUM" not in r["typed.xlsx"].text


def test_a_document_shows_paragraphs_and_tables_in_order(tmp_path):
    make_docx(tmp_path / "report.docx")
    _, r = _render(tmp_path, "report.docx")
    assert r["report.docx"].text == (
        "[Heading 1] Quarterly report\nFigures by region follow.\n[table]\n"
        "| Region | Amount |\n| North | 120 |\n| Total | =SUM(B2:B9) |"
    )


def test_a_deck_shows_slide_texts_and_notes_a_pdf_its_pages_an_image_its_size(tmp_path):
    from PIL import Image

    make_pptx(tmp_path / "deck.pptx")
    make_pdf(tmp_path / "out.pdf", ["Total (B10) =SUM(B2:B9)", "second page"])
    Image.new("RGB", (64, 32), "red").save(tmp_path / "chart.png")
    (tmp_path / "notes.md").write_text("café ✓\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    _, r = _render(tmp_path, "deck.pptx", "out.pdf", "chart.png", "notes.md", "latin1.txt")
    assert r["deck.pptx"].text == "## slide 1\nResults\nTotal: =SUM(B2:B9)\n[notes] say the total twice"
    assert r["out.pdf"].text == "PDF, 2 pages declared\n## page 1\nTotal (B10) =SUM(B2:B9)\n## page 2\nsecond page"
    assert r["chart.png"].text == "image: PNG, 64x32 pixels, mode RGB"
    assert r["notes.md"].text == "café ✓\n"  # text files as they are
    assert r["latin1.txt"].text == "caf\ufffd"  # UTF-8 with replacement, never an error


def test_every_cut_is_said(tmp_path, monkeypatch):
    lim = budgets.as_dict()
    many = pdf_bytes([f"page {i}" for i in range(300)])
    text = render_pdf(many, {**lim, "max_pages": 5})
    assert text.count("## page") == 5 and text.endswith("… truncated: 295 more pages (read 5 of 300 declared)")
    make_xlsx(tmp_path / "r.xlsx")
    data = (tmp_path / "r.xlsx").read_bytes()
    cells = render_xlsx(data, {**lim, "max_cells": 4})
    assert cells.endswith("… truncated: cells from Sales!A3 on not read (limit 4 cells)") and "B2: 10" in cells
    assert render_xlsx(data, {**lim, "max_sheets": 1}).endswith("… truncated: 1 more sheets")
    assert render_xlsx(data, {**lim, "max_file_chars": 30}).endswith("… truncated: 206 more characters")
    (tmp_path / "long.md").write_text("x" * 500)
    monkeypatch.setattr(budgets, "MAX_FILE_CHARS", 100)
    _, r = _render(tmp_path, "long.md")
    assert r["long.md"].text == "x" * 100 + "\n… truncated: 400 more bytes (file is 500 bytes)"


def test_rendered_text_is_masked_and_budgeted_for_the_judge_and_the_run_folder(tmp_path):
    key = "sk-test-artifacts-0123456789abcdef"
    (tmp_path / "a.md").write_text(f"token {key} and {'y' * 3000}")
    make_docx(tmp_path / "b.docx")
    cs, r = _render(tmp_path, "a.md", "b.docx", secrets=[key])
    assert key not in r["a.md"].text and "token *** and" in r["a.md"].text
    section = judge_section(cs, list(r.values()), max_chars=1000)
    assert section.startswith("=== a.md (created, text, 3.0 KB) ===\ntoken *** and yyy")
    assert "… truncated: 2" in section and "more characters" in section
    assert section.endswith("… truncated: 1 more changed files not shown (artifact budget 1000 characters)")
    assert len(section) < 1100
    assert judge_section(ChangeSet(), []) == ""  # nothing changed: no section at all
    write_rendered(tmp_path / "art", cs, list(r.values()), max_chars=500)
    listing = json.loads((tmp_path / "art" / "changes.json").read_text())
    assert [e["rendered"] for e in listing["files"]] == ["rendered/000-a.md.txt", "rendered/001-b.docx.txt"]
    kept = (tmp_path / "art" / "rendered" / "000-a.md.txt").read_text()
    assert key not in kept and "… truncated:" in kept and len(kept) < 600
    assert (tmp_path / "art" / "rendered" / "001-b.docx.txt").read_text().startswith("\n… truncated: 1")
    # A file named with the key, and a symlink pointing at it: masked in paths and notes too.
    (tmp_path / f"{key}.md").write_text("named after the key")
    (tmp_path / "k.lnk").symlink_to(f"/tmp/{key}")
    cs = change_set(tmp_path, {}, {f"{key}.md": "h", "k.lnk": f"symlink:/tmp/{key}"})
    rendered = render_changes(tmp_path, cs, secrets=[key])
    write_rendered(tmp_path / "art2", cs, rendered, secrets=[key])
    stored = "".join(p.name + p.read_text() for p in (tmp_path / "art2").rglob("*") if p.is_file())
    section = judge_section(cs, rendered, secrets=[key])
    assert "=== ***.md (created, text, 19 bytes) ===\nnamed after the key" in section
    for text in (stored, section, json.dumps(cs.masked([key]).to_dict())):
        assert key not in text and "***" in text


def test_a_broken_office_file_is_one_line(tmp_path):
    (tmp_path / "bad.xlsx").write_bytes(b"PK\x03\x04" + b"garbage" * 10)
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4\nnot really")
    _, r = _render(tmp_path, "bad.xlsx", "bad.pdf")
    for rendered in r.values():
        assert rendered.text == "" and "\n" not in rendered.note and "Traceback" not in rendered.note
    assert r["bad.xlsx"].note.startswith("not a readable zip archive")
    assert r["bad.pdf"].note.startswith("not readable as pdf: ")


def test_only_the_first_files_are_rendered_and_the_rest_say_so(tmp_path, monkeypatch):
    for i in range(4):
        (tmp_path / f"n{i}.md").write_text(f"note {i}")
    monkeypatch.setattr(budgets, "MAX_RENDERED", 2)
    cs, r = _render(tmp_path, *(f"n{i}.md" for i in range(4)))
    assert sorted(r) == ["n0.md", "n1.md"]
    section = judge_section(cs, list(r.values()))
    assert "=== n1.md (created, text, 6 bytes) ===\nnote 1" in section
    assert "=== n3.md (created, text, 6 bytes) ===\n(not rendered: only the first 2 changed files are rendered)" in section
