"""The change set: created, modified and deleted files against the staged state, from the
harness's own snapshots, with size, sha256 and kind; symlinks listed, never followed."""

from __future__ import annotations

import hashlib
import os

from _artifact_files import make_docx, make_pdf, make_xlsx

from upskill_hub.artifacts import budgets, change_set
from upskill_hub.lift.harness.workspace import Workspace


def _staged(tmp_path):
    ws = Workspace.create(tmp_path, "t-")
    ws.write_files([("kept.txt", "same\n"), ("edited.md", "v1\n"), ("gone.csv", "a,b\n")])
    ws.freeze()
    return ws


def _changes(ws):
    after = ws.snapshot()
    return change_set(ws.project, ws.before.files, after.files, identity=ws.project_id, cut=after.cut)


def test_created_modified_deleted_with_size_sha256_and_kind(tmp_path):
    ws = _staged(tmp_path)
    (ws.project / "edited.md").write_text("v2\n")
    (ws.project / "gone.csv").unlink()
    make_xlsx(ws.project / "out" / "report.xlsx")
    make_docx(ws.project / "out" / "report.docx")
    make_pdf(ws.project / "report.pdf", ["hello"])
    (ws.project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    (ws.project / "blob.bin").write_bytes(b"\0\1\2" * 100)
    cs = _changes(ws)
    got = {f.path: f for f in cs.files}
    assert [f.status for f in cs.files] == ["created"] * 5 + ["modified", "deleted"]  # created first
    assert "kept.txt" not in got  # an input file left as it was is no change
    assert {p: f.kind for p, f in got.items()} == {
        "out/report.xlsx": "xlsx", "out/report.docx": "docx", "report.pdf": "pdf", "logo.png": "image",
        "blob.bin": "binary", "edited.md": "text", "gone.csv": "text",
    }  # fmt: skip
    xlsx = got["out/report.xlsx"]
    data = (ws.project / "out" / "report.xlsx").read_bytes()
    assert (xlsx.size, xlsx.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert got["edited.md"].sha256 == hashlib.sha256(b"v2\n").hexdigest()
    gone = got["gone.csv"]
    assert gone.size is None and gone.sha256 == hashlib.sha256(b"a,b\n").hexdigest()  # the staged file's hash
    assert cs.to_dict()["files"][0] == {
        "path": "blob.bin", "status": "created", "kind": "binary", "size": 300,
        "sha256": hashlib.sha256(b"\0\1\2" * 100).hexdigest(),
    }  # fmt: skip


def test_symlinks_are_listed_with_their_target_and_never_followed(tmp_path):
    ws = _staged(tmp_path)
    secret = tmp_path / "secret.xlsx"
    make_xlsx(secret)
    (ws.project / "report.xlsx").symlink_to(secret)
    (ws.project / "alias.md").symlink_to("edited.md")
    got = {f.path: f for f in _changes(ws).files}
    out = got["report.xlsx"]
    assert out.kind == "symlink" and out.sha256 is None
    assert out.note == f"symlink to {str(secret)!r} (outside the workspace); not followed"
    assert got["alias.md"].note == "symlink to 'edited.md' (inside the workspace); not followed"


def test_a_file_the_cut_snapshot_missed_is_not_called_deleted(tmp_path):
    ws = _staged(tmp_path)
    after = {p: d for p, d in ws.snapshot().files.items() if p != "gone.csv"}  # as if the walk stopped early
    cs = change_set(ws.project, ws.before.files, after, identity=ws.project_id, cut=["stopped after 1 entries"])
    assert cs.files == [] and cs.cut == ["stopped after 1 entries"]
    (ws.project / "gone.csv").unlink()
    assert [f.status for f in change_set(ws.project, ws.before.files, after).files] == ["deleted"]


def test_the_listing_is_bounded_and_counts_the_rest(tmp_path, monkeypatch):
    ws = _staged(tmp_path)
    for i in range(30):
        (ws.project / f"f{i:02d}.txt").write_text(str(i))
    monkeypatch.setattr(budgets, "MAX_LISTED", 10)
    cs = _changes(ws)
    assert len(cs.files) == 10 and cs.omitted == 20
    monkeypatch.setattr(budgets, "MAX_LISTED", 1000)
    assert len(_changes(ws).files) == 30  # the bound is what cut it


def test_a_swapped_workspace_folder_is_not_opened(tmp_path):
    ws = _staged(tmp_path)
    (ws.project / "edited.md").write_text("v2\n")
    after = ws.snapshot()
    cs = change_set(ws.project, ws.before.files, after.files, identity=(0, 0))
    (f,) = [f for f in cs.files if f.path == "edited.md"]
    assert f.size is None and f.note == "the workspace folder was replaced; nothing in it is read"
    assert os.path.exists(ws.project / "edited.md")
