"""Output that is not a terminal is never wrapped or truncated; listings have --json.

The one exception (cli/_output.py): prose that made 1,700-character table rows (a skill's
description in ``skills list``) goes under its row's line, wrapped between words at 80.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LONG = " ".join(f"word{i}" for i in range(120))  # ~900 characters, far past 80 columns


def run_cli(*args: str) -> subprocess.CompletedProcess:
    # stdout/stderr are pipes here, exactly as in `upskill-hub ... | grep` or `> file`
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "upskill_hub.cli.app", *args], capture_output=True, text=True, env=env, timeout=120
    )


def long_skill(root: Path, name: str = "long-skill-with-a-name-that-is-not-short") -> Path:
    folder = root / "deeply" / "nested" / "folder" / "for" / "a" / "long" / "path" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {LONG}\n---\n\n# T\n\nBody {LONG}\n")
    return folder


def test_validate_prints_each_verdict_on_one_line(tmp_path: Path) -> None:
    folder = long_skill(tmp_path)
    proc = run_cli("skills", "validate", str(folder))
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith(f"✓ {folder} (long-skill-with-a-name-that-is-not-short ")


def _words_whole(text: str) -> str:
    """``text``'s words in order, whatever the line breaks between them."""
    return " ".join(w for w in text.split() if w.startswith("word"))


def test_list_fits_80_columns_and_keeps_words_and_descriptions_whole(tmp_path: Path) -> None:
    folder = long_skill(tmp_path)
    proc = run_cli("skills", "list", str(folder.parent))
    assert proc.returncode == 0, proc.stderr
    # Issue 37: piped, the table made lines of 1,700 characters; now the description fits 80
    # (the title and the skill's line are records: a long path in them stays whole).
    title, *rest = proc.stdout.splitlines()
    assert title == f"Skills in {folder.parent} (1 skill)"
    described = [ln for ln in rest if ln.startswith("    ")]
    assert len(described) > 5 and max(len(ln) for ln in described) <= 80, proc.stdout
    rows = [ln for ln in proc.stdout.splitlines() if "long-skill-with-a-name-that-is-not-short" in ln]
    assert len(rows) == 1 and "0 tests" in rows[0], proc.stdout  # `grep NAME` finds the skill's line
    assert _words_whole(proc.stdout) == LONG  # wrapped between words, nothing cut
    assert not any(ln.endswith(" ") for ln in proc.stdout.splitlines())
    data = json.loads(run_cli("skills", "list", str(folder.parent), "--json").stdout)
    assert data[0]["description"] == LONG and data[0]["path"] == folder.name


def test_show_prints_the_whole_description_and_body(tmp_path: Path) -> None:
    folder = long_skill(tmp_path)
    proc = run_cli("skills", "show", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert any(LONG in ln for ln in proc.stdout.splitlines())
    assert f"Body {LONG}" in proc.stdout.splitlines()


def test_runs_has_json(tmp_path: Path) -> None:
    proc = run_cli("runs", str(tmp_path), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
