"""``pull`` onto a disk that fills up, and files too big to pull (issue 29, classes 2 and 4)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from small_fs import small_fs
from test_push_support import folder_bytes, write_skill

from upskill_hub._util import limits
from upskill_hub.errors import UpskillError
from upskill_hub.hub.pull import pull
from upskill_hub.hub.push import push

CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]


def test_disk_full_during_pull_is_one_line_and_a_rerun_completes(hub_server, hub_repo_id, tmp_path):
    big = bytes(range(256)) * 400  # 100 KB that tmpfs cannot compress away
    skill_dir = write_skill(tmp_path / "src", extra={"references/big.bin": big})
    push([skill_dir], hub_repo_id)
    with small_fs(tmp_path / "small", "40k") as (mnt, grow):
        out = mnt / "skills"
        proc = subprocess.run([*CLI, "pull", hub_repo_id, "-o", str(out)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error:"), proc.stderr
        assert "the disk is full" in lines[0] and "Traceback" not in proc.stderr
        assert not out.exists() or list(out.iterdir()) == []  # nothing half-written
        grow()
        proc = subprocess.run([*CLI, "pull", hub_repo_id, "-o", str(out)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert folder_bytes(out / skill_dir.name) == folder_bytes(skill_dir)


def test_a_file_over_the_size_cap_is_refused_before_download(hub_server, hub_repo_id, tmp_path, monkeypatch):
    skill_dir = write_skill(tmp_path / "src", extra={"references/big.bin": b"x" * 3_000_000})
    push([skill_dir], hub_repo_id)
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 2_000_000)
    hub_server.clear_requests()
    with pytest.raises(UpskillError, match="big.bin.*3.0 MB; files over 2 MB") as exc:
        pull(hub_repo_id, out_dir=tmp_path / "out")
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "out").exists()
    assert not [r for r in hub_server.requests if "big.bin" in r.path and "/resolve/" in r.path]
