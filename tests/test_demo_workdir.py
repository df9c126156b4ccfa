"""Issue 48, item 1: ``demo --workdir`` never deletes what it did not make.

The demo empties its scratch folder before each run. A folder holding anything the demo did
not make (no marker file) is refused in one line before a byte is written; an empty folder,
a new one, or one an earlier demo made (it carries the marker) is taken.
"""

from __future__ import annotations

import sys
from pathlib import Path

from upskill_hub.demo import WORKDIR_MARKER, Demo

sys.path.insert(0, str(Path(__file__).parent))
from cli_runner import run_cli  # noqa: E402


def test_a_folder_holding_a_file_is_refused_and_the_file_kept(tmp_path: Path, capsys, monkeypatch) -> None:
    work = tmp_path / "mine"
    work.mkdir()
    (work / "notes.txt").write_text("precious")
    code, out, err = run_cli(["demo", "--workdir", str(work), "--no-kernels", "--no-space"], capsys, monkeypatch)
    assert code == 1 and "Traceback" not in err, err
    assert err.startswith("Error: ") and len(err.strip().splitlines()) == 1, err
    assert "holds files the demo did not make (notes.txt)" in err, err
    assert out.strip() == "", out  # no step ran, no empty table
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt"]
    assert (work / "notes.txt").read_text() == "precious"


def test_a_file_named_as_the_workdir_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    try:
        Demo(target)._claim_workdir()
    except Exception as exc:  # noqa: BLE001 - the type and the words are what is checked
        assert type(exc).__name__ == "UpskillError" and "is not a folder" in str(exc)
    else:
        raise AssertionError("a file was taken as the scratch folder")
    assert target.read_text() == "x"


def test_a_new_an_empty_and_an_earlier_demos_folder_are_taken(tmp_path: Path) -> None:
    for work in (tmp_path / "new" / "deeper", tmp_path / "empty"):
        if work.name == "empty":
            work.mkdir()
        Demo(work)._claim_workdir()
        assert sorted(p.name for p in work.iterdir()) == [WORKDIR_MARKER]
    earlier = tmp_path / "empty"
    (earlier / "runs").mkdir()
    (earlier / "runs" / "old.json").write_text("{}")
    Demo(earlier)._claim_workdir()  # the marker says it is the demo's own: emptied, reused
    assert sorted(p.name for p in earlier.iterdir()) == [WORKDIR_MARKER]
