"""Hostile entries in a skill folder or a run folder, through every command that reads one.

Issue 29, classes 2 and 6: a FIFO hung ``skills validate/show/install/list``, ``check``,
``push``, ``eval`` and ``runs``; a character device was read until MemoryError; a symlink
loop raised ``RuntimeError``; a non-UTF-8 name raised ``UnicodeEncodeError``; names with
bidi overrides or C1 controls were published; a 1 GiB sparse file was read, installed dense
and pushed. Each must now end quickly in an error that names the entry, change nothing,
and leave the tool usable.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from cli_runner import run_cli

GOOD = "---\nname: demo\ndescription: Use for demos.\n---\n\n# Demo\n\nSteps.\n"
META = '{"cases": [{"id": "c", "input": "hi", "assert": [{"type": "contains", "value": "x"}]}]}'


def _fifo(d: Path) -> str:
    os.mkfifo(d / "references" / "pipe.md")
    return "references/pipe.md"


def _chardev(d: Path) -> str:
    os.symlink("/dev/zero", d / "references" / "zero.md")  # a device reached through a link...
    os.mknod(d / "references" / "null.md", 0o600 | 0o020000, os.makedev(1, 3))  # ...and one in place
    return "references/"


def _loop(d: Path) -> str:
    os.symlink("b.md", d / "references" / "a.md")
    os.symlink("a.md", d / "references" / "b.md")
    return "references/a.md"


def _latin1(d: Path) -> str:
    os.close(os.open(os.fsencode(d / "references") + b"/caf\xe9.md", os.O_CREAT | os.O_WRONLY))
    return "references/caf\\xe9.md"


def _named(name: str, shown: str):
    def make(d: Path) -> str:
        (d / "references" / name).write_text("x")
        return f"references/{shown}"

    return make


def _sparse(d: Path) -> str:
    with open(d / "assets.bin", "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB, nothing on disk
    return "assets.bin"


ATTACKS = {
    "fifo": _fifo,
    "char-device": _chardev,
    "symlink-loop": _loop,
    "non-utf8-name": _latin1,
    "bidi-override": _named("evil\u202egpj.sh", "evil\\u202egpj.sh"),
    "c1-csi": _named("a\x9b2J.md", "a\\x9b2J.md"),
    "escape": _named("a\x1b[2J.md", "a\\x1b[2J.md"),
    "newline": _named("a\nb.md", "a\\nb.md"),
    "sparse-1GiB": _sparse,
}


def hostile_skill(root: Path, attack: str) -> tuple[Path, str]:
    d = root / "demo"
    (d / "references").mkdir(parents=True)
    (d / "SKILL.md").write_text(GOOD)
    (d / "skill_meta.json").write_text(META)
    return d, ATTACKS[attack](d)


def run_bounded(args: list[str], capsys, monkeypatch, budget_s: float = 60) -> tuple[int, str, str]:
    """The CLI in-process, failing (instead of hanging the suite) past ``budget_s``."""
    got: list = []
    t = threading.Thread(target=lambda: got.append(run_cli(args, capsys, monkeypatch)), daemon=True)
    t.start()
    t.join(budget_s)
    assert not t.is_alive(), f"{args[:2]} still running after {budget_s}s"
    return got[0]


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_every_command_names_the_hostile_entry_and_changes_nothing(attack, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "x" * 30)
    skill, shown = hostile_skill(tmp_path / "skills", attack)
    dest = tmp_path / "installed"
    commands = [
        ["skills", "validate", str(skill)],
        ["skills", "show", str(skill)],
        ["skills", "list", str(skill.parent)],
        ["skills", "install", str(skill), "--dest", str(dest)],
        ["check", str(skill.parent)],
        ["eval", str(skill), "--model", "openai:gpt-4.1-mini", "-o", str(tmp_path / "runs"), "--no-cache"],
        ["push", str(skill), "--repo", "user/never-created"],
    ]
    for args in commands:
        code, out, err = run_bounded(args, capsys, monkeypatch)
        text = out + err
        assert "Traceback" not in text, (args, text)
        assert shown in text, (args, shown, text)
        if args[:2] in (["skills", "validate"], ["skills", "install"]) or args[0] in ("eval", "push"):
            assert code == 1, (args, text)  # show, list and check report the problem in their output
        for line in text.splitlines():
            assert "\x1b" not in line and "\u202e" not in line and "\x9b" not in line
    assert not dest.exists() or not any(dest.iterdir())
    assert not (tmp_path / "runs").exists()
    # The tool is still usable: the same folder without the hostile entry validates.
    clean, _ = hostile_skill(tmp_path / "clean", "fifo")
    (clean / "references" / "pipe.md").unlink()
    assert run_bounded(["skills", "validate", str(clean)], capsys, monkeypatch)[0] == 0


@pytest.mark.parametrize("name", ["results.jsonl", "run.json", "summary.json"])
def test_runs_refuses_a_fifo_in_a_run_folder(name, tmp_path, capsys, monkeypatch):
    from upskill_hub import rundir
    from upskill_hub.rundir.schema import RunPlan

    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    if name != "run.json":
        rundir.write_plan(run, RunPlan(run_id="r1", created="2026-11-25T00:00:00Z", planned_calls=2))
    os.mkfifo(run / name)
    code, out, err = run_bounded(["runs", str(tmp_path / "runs")], capsys, monkeypatch)
    assert "Traceback" not in err
    if name == "summary.json":  # a damaged summary is recomputed from the rows, as before
        assert code == 0 and "Eval runs in" in out, err
        return
    assert f"{name}: is a FIFO (named pipe); only regular files are read" in err, err
    if name == "run.json":
        assert code == 1 and "No runs" not in err  # a damaged run is not "no runs"


def test_runs_with_a_corrupt_or_deep_run_json_says_so(tmp_path, capsys, monkeypatch):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    for text, why in (("{not json", "is not valid JSON"), ("[" * 100_000, "nests deeper than 64")):
        (run / "run.json").write_text(text)
        code, out, err = run_bounded(["runs", str(tmp_path / "runs")], capsys, monkeypatch)
        assert code == 1 and why in err and "No runs" not in err and "Traceback" not in err, err
