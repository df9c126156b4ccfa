"""Hostile artifacts: each is a bounded one-line note, never a hang, a traceback or a read
outside the workspace, and each test shows that its bound is what stops the attack."""

from __future__ import annotations

import os
import sys
import time

import pytest
from _artifact_files import make_docx, make_xlsx, many_pages_pdf, pdf_bytes, zip_bomb

from upskill_hub.artifacts import (
    ChangedFile,
    ChangeSet,
    budgets,
    change_set,
    render_changes,
    render_one,
    safeio,
)
from upskill_hub.artifacts import render as render_mod
from upskill_hub.artifacts.kinds import sniff


def _one(root, rel, **kw):
    return render_one(root, rel, **kw)


def _assert_one_line(note: str) -> None:
    assert note and "\n" not in note and "Traceback" not in note and len(note) < 400


def test_a_zip_bomb_named_xlsx_is_refused_from_its_directory(tmp_path, monkeypatch):
    zip_bomb(tmp_path / "report.xlsx", inflated_mb=200)  # 200 MB of zeros in ~200 KB
    t0 = time.monotonic()
    r = _one(tmp_path, "report.xlsx")
    assert time.monotonic() - t0 < 5
    _assert_one_line(r.note)
    assert r.kind == "xlsx" and r.text == ""
    assert r.note == "declares 209.7 MB+ uncompressed, over the 100.0 MB limit (a zip bomb?); not opened"
    monkeypatch.setattr(budgets, "MAX_ZIP_BYTES", 10**12)
    assert "over the 200x limit (a zip bomb?)" in _one(tmp_path, "report.xlsx").note  # the ratio check catches it too
    monkeypatch.setattr(budgets, "MAX_ZIP_RATIO", 10.0**9)
    opened = _one(tmp_path, "report.xlsx")  # without both bounds openpyxl inflates it
    assert "zip bomb" not in opened.note and opened.note.startswith("not readable as xlsx")


def test_a_2_gb_sparse_file_is_refused_by_its_size(tmp_path, monkeypatch):
    big = tmp_path / "big.xlsx"
    with open(big, "wb") as f:
        f.write(b"PK\x03\x04")
        f.truncate(2 * 1024**3)  # 2 GiB, nothing written: a read would take seconds and all memory
    zeros = tmp_path / "zeros.txt"
    with open(zeros, "wb") as f:
        f.truncate(2 * 1024**3)
    after = {"big.xlsx": "size:x", "zeros.txt": "size:y"}
    cs = change_set(tmp_path, {}, after)
    assert [(f.kind, f.size) for f in cs.files] == [("xlsx", 2 * 1024**3), ("binary", 2 * 1024**3)]
    t0 = time.monotonic()
    rendered = {r.path: r for r in render_changes(tmp_path, cs)}
    assert time.monotonic() - t0 < 2
    assert rendered["big.xlsx"].note == "2.1 GB, over the 20.0 MB rendering limit; not read"
    assert rendered["zeros.txt"].note == "binary file, 2.1 GB: not rendered"
    # The size check is the bound: a 30 MB one under a raised limit is read and handed to the reader.
    with open(tmp_path / "mid.xlsx", "wb") as f:
        f.write(b"PK\x03\x04")
        f.truncate(30 * 10**6)
    monkeypatch.setattr(budgets, "MAX_FILE_BYTES", 50 * 10**6)
    assert _one(tmp_path, "mid.xlsx").note.startswith("not a readable zip archive")


def test_a_pdf_with_100000_pages_reads_the_first_pages_only(tmp_path, monkeypatch):
    (tmp_path / "huge.pdf").write_bytes(many_pages_pdf(100_000))
    (tmp_path / "claims.pdf").write_bytes(pdf_bytes(["only page"], claimed=100_000))
    t0 = time.monotonic()
    huge, claims = _one(tmp_path, "huge.pdf"), _one(tmp_path, "claims.pdf")
    assert time.monotonic() - t0 < 15
    assert huge.text.count("## page") == budgets.MAX_PAGES == 50
    assert huge.text.splitlines()[-1] == "… truncated: 99950 more pages (read 50 of 100000 declared)"
    assert claims.text.splitlines()[-1] == "… truncated: 99999 more pages (read 1 of 100000 declared)"
    # Without the page and character bounds, the time bound stops it: a one-line note, no hang.
    monkeypatch.setattr(budgets, "MAX_PAGES", 10**9)
    monkeypatch.setattr(budgets, "MAX_FILE_CHARS", 10**9)
    monkeypatch.setattr(budgets, "FILE_TIMEOUT_S", 0.5)
    unbounded = _one(tmp_path, "huge.pdf")
    assert unbounded.note == "not rendered: took over 0.5 s (stopped)"


def test_a_reader_stuck_where_no_timer_reaches_is_killed(tmp_path, monkeypatch):
    make_xlsx(tmp_path / "a.xlsx")
    make_xlsx(tmp_path / "b.xlsx")
    stuck = "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(600)\n"
    monkeypatch.setattr(render_mod, "worker_argv", lambda: [sys.executable, "-c", stuck])
    monkeypatch.setattr(render_mod, "STARTUP_S", 0.5)
    monkeypatch.setattr(budgets, "FILE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(budgets, "ROW_TIMEOUT_S", 3.0)
    files = [ChangedFile(p, "created", "xlsx", 10, None) for p in ("a.xlsx", "b.xlsx")]
    t0 = time.monotonic()
    a, b = render_changes(tmp_path, ChangeSet(files))
    assert time.monotonic() - t0 < 6  # the row's 3 s, and the kills
    assert a.note == "not rendered: took over 0.5 s (stopped)"  # killed, then a fresh worker for b
    assert b.note in (a.note, "not rendered: the row's 3 s for rendering ran out")


def test_a_symlink_out_of_the_workspace_is_never_read(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    make_xlsx(outside / "secret.xlsx", total="TOP-SECRET")
    (outside / "notes.md").write_text("TOP-SECRET")
    ws = tmp_path / "ws"
    (ws / "out").mkdir(parents=True)
    (ws / "report.xlsx").symlink_to(outside / "secret.xlsx")
    (ws / "notes.md").symlink_to(outside / "notes.md")
    (ws / "dir").symlink_to(outside)
    after = {"report.xlsx": f"symlink:{outside / 'secret.xlsx'}", "notes.md": f"symlink:{outside / 'notes.md'}"}
    rendered = render_changes(ws, change_set(ws, {}, after))
    assert [r.note for r in rendered] == [
        f"symlink to {str(outside / 'notes.md')!r} (outside the workspace); not followed",
        f"symlink to {str(outside / 'secret.xlsx')!r} (outside the workspace); not followed",
    ]
    # Asked for by path (a file-contains target), no component of the path is followed either.
    for rel, why in (
        ("report.xlsx", "report.xlsx: is a symlink; not followed"),
        ("dir/secret.xlsx", "dir/secret.xlsx: dir/ is a symlink or not a folder; not followed"),
        ("../outside/notes.md", "../outside/notes.md: not a path inside the workspace"),
    ):
        r = _one(ws, rel)
        assert r.note == why and "TOP-SECRET" not in r.text
    # O_NOFOLLOW is what stops it: opened the ordinary way, the link leads to the secret.
    as_text = ChangeSet([ChangedFile("notes.md", "created", "text", 10, None)])  # (read in this process)
    assert render_changes(ws, as_text)[0].note == "notes.md: is a symlink; not followed"
    monkeypatch.setattr(safeio, "FILE_NOFOLLOW", safeio.FILE_NOFOLLOW & ~os.O_NOFOLLOW)
    assert render_changes(ws, as_text)[0].text == "TOP-SECRET"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "pipe.xlsx")
    assert _one(tmp_path, "pipe.xlsx").note == "pipe.xlsx: not a regular file; not read"
    assert sniff("pipe.xlsx", b"") == "text"  # (an empty head: nothing to go by)


def test_a_module_planted_beside_the_files_is_never_imported_by_the_reader(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    ws = tmp_path / "ws"
    (ws / "project").mkdir(parents=True)
    for folder in (ws, ws / "project"):  # the agent may write in its folder and the one above
        (folder / "openpyxl.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    make_xlsx(ws / "project" / "report.xlsx")
    monkeypatch.chdir(ws / "project")
    monkeypatch.setenv("PYTHONPATH", str(ws))
    r = _one(ws / "project", "report.xlsx")
    assert "B10: =SUM(B2:B9)" in r.text and not marker.exists()


def test_the_reader_runs_under_a_memory_limit_and_running_out_is_one_line(tmp_path, monkeypatch):
    make_xlsx(tmp_path / "r.xlsx")
    make_docx(tmp_path / "r.docx")
    assert "B10: =SUM(B2:B9)" in _one(tmp_path, "r.xlsx").text
    monkeypatch.setattr(budgets, "WORKER_MEMORY_BYTES", 30 * 10**6)  # less than importing a reader takes
    for name in ("r.xlsx", "r.docx"):
        starved = _one(tmp_path, name)  # how it runs out varies (MemoryError, a library not mapped…)
        _assert_one_line(starved.note)
        assert starved.text == "" and starved.note.startswith(("not rendered: ", "not readable as "))
