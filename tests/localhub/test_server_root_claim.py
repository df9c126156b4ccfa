"""`hub serve --root` never writes into, or sweeps, a folder that is not a local Hub store (issue 48)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from upskill_hub.errors import UpskillError
from upskill_hub.localhub.storage import STORE_MARKER
from upskill_hub.localhub.testing import running_server

LONG_AGO = time.time() - 24 * 3600


def _user_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A folder of the user's own with a ``tmp/`` holding a day-old file (what the sweep removed)."""
    folder = tmp_path / "my-project"
    old = folder / "tmp" / "old-file"
    old.parent.mkdir(parents=True)
    old.write_text("my notes")
    os.utime(old, (LONG_AGO, LONG_AGO))
    (folder / "notes.txt").write_text("keep me")
    return folder, old


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_serve_refuses_a_user_folder_as_root_and_deletes_nothing(tmp_path, monkeypatch):
    import uvicorn

    from upskill_hub.cli.app import app

    folder, old = _user_folder(tmp_path)
    before = _listing(folder)
    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets=None: served.append(server))
    result = CliRunner().invoke(app, ["hub", "serve", "--root", str(folder), "--port", "0"])
    assert result.exit_code == 1, result.output
    assert served == []
    text = str(result.exception)
    assert "\n" not in text and text.startswith(f"--root {folder} already exists and is not empty")
    assert "the local Hub did not make (notes.txt, tmp)" in text
    assert old.read_text() == "my notes"
    assert _listing(folder) == before  # no marker, no blobs/, nothing written


def test_serve_refusal_is_one_error_line_from_a_real_process(tmp_path):
    folder, old = _user_folder(tmp_path)
    cmd = [sys.executable, "-m", "upskill_hub.cli.app", "hub", "serve", "--root", str(folder), "--port", "0"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: --root"), proc.stderr
    assert "serving" not in proc.stderr
    assert old.read_text() == "my notes"


def test_the_library_server_refuses_a_user_folder_too(tmp_path):
    folder, old = _user_folder(tmp_path)
    with pytest.raises(UpskillError, match="already exists and is not empty"), running_server(folder):
        pass
    assert old.exists()
    assert not (folder / STORE_MARKER).exists()


def test_a_store_of_an_earlier_version_is_reused_and_only_its_own_leftovers_are_swept(tmp_path):
    from huggingface_hub import HfApi

    root = tmp_path / "hub"
    with running_server(root) as hub:
        HfApi(endpoint=hub.url, token="any").create_repo("user/kept", repo_type="dataset")
    (root / STORE_MARKER).unlink(missing_ok=True)  # as an earlier version left it: no marker
    abandoned = root / "tmp" / "upload-killed"
    abandoned.write_bytes(b"half an upload")
    foreign = root / "tmp" / "not-ours.txt"  # put there by someone else: not the store's to delete
    foreign.write_text("keep")
    for path in (abandoned, foreign):
        os.utime(path, (LONG_AGO, LONG_AGO))
    link = tmp_path / "hub-link"
    link.symlink_to(root)  # a root reached through a symlink is the same store
    with running_server(link) as hub:
        assert HfApi(endpoint=hub.url, token="any").repo_exists("user/kept", repo_type="dataset")
        assert not abandoned.exists()  # the store's own abandoned partial upload: swept
        assert foreign.read_text() == "keep"
        assert hub.sweeper.sweep() == []
    assert (root / STORE_MARKER).is_file()  # claimed now: recognised whatever is added later
