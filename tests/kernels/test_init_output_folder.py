"""``kernels init --output`` takes only a new or empty folder (issue 48, Build rule 1).

The project is swapped into place whole, so whatever stood at ``--output`` would be replaced:
a symlink there (to a folder of the user's, or dangling) was removed and a real folder put in
its place. Now it is refused in one line, and the link stays.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_runner import run_cli  # noqa: E402


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_named_as_output_is_refused_and_kept(
    tmp_path: Path, capsys, monkeypatch, dangling: bool
) -> None:
    target = tmp_path / "shared-folder"
    if not dangling:
        target.mkdir()
    link = tmp_path / "proj"
    link.symlink_to(target)
    code, _out, err = run_cli(["kernels", "init", "my-op", "--output", str(link)], capsys, monkeypatch)
    assert code == 1 and err.startswith("Error: ") and len(err.strip().splitlines()) == 1, err
    assert "--output" in err and "is not a folder (it is a symlink)" in err, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert not target.exists() if dangling else list(target.iterdir()) == []


def test_a_folder_holding_a_file_is_refused_naming_the_file(tmp_path: Path, capsys, monkeypatch) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("keep")
    code, _out, err = run_cli(["kernels", "init", "my-op", "--output", str(proj)], capsys, monkeypatch)
    assert (
        code == 1 and "kernels init did not make (notes.txt)" in err and len(err.strip().splitlines()) == 1
    ), err
    assert [p.name for p in proj.iterdir()] == ["notes.txt"] and (proj / "notes.txt").read_text() == "keep"


def test_an_empty_folder_is_taken(tmp_path: Path, capsys, monkeypatch) -> None:
    (tmp_path / "proj").mkdir()
    code, _out, err = run_cli(
        ["kernels", "init", "my-op", "--output", str(tmp_path / "proj")], capsys, monkeypatch
    )
    assert code == 0, err
    assert (tmp_path / "proj" / "build.toml").is_file()
