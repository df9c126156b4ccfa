"""``skills install --dest DIR`` never replaces a folder of the user's without ``--force``
(issue 48, Build rule 1: install targets).

A regression guard for behaviour users rely on: ``DIR/<name>/`` already there (here a folder of
the user's own, not an install) is refused in one line naming ``--force``, and every file in it
stays as it was.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_runner import run_cli  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_an_existing_folder_at_the_install_target_is_refused_and_kept(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    dest = tmp_path / "agent-skills"
    mine = dest / "hf-dataset-card"
    mine.mkdir(parents=True)
    (mine / "my-notes.md").write_text("my own notes")
    src = REPO_ROOT / "skills" / "hf-dataset-card"
    code, _out, err = run_cli(["skills", "install", str(src), "--dest", str(dest)], capsys, monkeypatch)
    errors = [
        line for line in err.splitlines() if line.startswith("Error: ")
    ]  # (a scanner note may precede it)
    assert code == 1 and len(errors) == 1 and "--force" in errors[0] and "Traceback" not in err, err
    assert [p.name for p in mine.iterdir()] == ["my-notes.md"]
    assert (mine / "my-notes.md").read_text() == "my own notes"
