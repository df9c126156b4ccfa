"""``space deploy --out DIR`` never overwrites a folder it did not write (issue 48, Build rule 1).

It writes ``README.md``, ``app.py`` and ``requirements.txt``: names a user's own project folder
is likely to hold. A non-empty folder is taken only when it holds Space files written here
before (our ``requirements.txt`` header), like the checked-in ``space/`` that
``space deploy --out space --no-vendor`` refreshes; any other is refused in one line and
left as it was.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_runner import run_cli  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_users_folder_is_refused_in_one_line_and_left_as_it_was(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    mine = tmp_path / "my-project"
    mine.mkdir()
    (mine / "README.md").write_text("# my project\n")
    (mine / "app.py").write_text("print('mine')\n")
    before = _tree(mine)
    code, out, err = run_cli(["space", "deploy", "--out", str(mine), "--no-vendor"], capsys, monkeypatch)
    assert code == 1 and err.startswith("Error: ") and len(err.strip().splitlines()) == 1, err
    assert "--out" in err and "space deploy did not make (README.md, app.py)" in err, err
    assert "Wrote" not in out
    assert _tree(mine) == before


def test_a_symlink_named_as_out_is_refused_and_its_target_untouched(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    code, _out, err = run_cli(["space", "deploy", "--out", str(tmp_path / "link")], capsys, monkeypatch)
    assert code == 1 and "is not a folder (it is a symlink)" in err, err
    assert list(target.iterdir()) == []


def test_a_new_folder_then_the_same_folder_again_are_written(tmp_path: Path, capsys, monkeypatch) -> None:
    out_dir = tmp_path / "space-out"
    for _ in range(2):  # the second run rewrites its own files
        code, _out, err = run_cli(
            ["space", "deploy", "--out", str(out_dir), "--no-vendor"], capsys, monkeypatch
        )
        assert code == 0, err
    assert {"README.md", "app.py", "requirements.txt"} <= set(_tree(out_dir))


def test_the_checked_in_space_folder_is_refreshed_as_its_staleness_message_says(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    copy = tmp_path / "space"
    shutil.copytree(REPO_ROOT / "space", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    code, _out, err = run_cli(["space", "deploy", "--out", "space", "--no-vendor"], capsys, monkeypatch)
    assert code == 0, err
