"""``tune`` against hostile run folders, a changing SKILL.md and a hostile teacher (issue 33).

Class 4: tune's run files are never followed through a symlink (``tune_result.json``,
``tune.jsonl``), a FIFO is refused instead of hanging, and a run folder that is itself a
symlink is not resumed outside ``--output``. Class 5: ``--write`` refuses a SKILL.md that
changed during the run, never copies an outside file in, keeps a symlinked SKILL.md a
symlink, and refuses read-only and unreplaceable files in one line. Class 9: a teacher's
description with control characters is a rejected candidate, never written.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import pytest
from test_tune_run import GOOD, MODEL, TEACHER, VAGUE, ScriptedTeacher, write_skill

from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import UpskillError
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering.tune import HISTORY_FILE, tune_description
from upskill_hub.triggering.tune_run import RESULT_FILE, run_tune, write_description

QUERIES = [TriggerQuery(f"p{i}", f"convert sheet {i} to json", True) for i in range(6)] + [
    TriggerQuery(f"n{i}", f"a haiku about autumn {i}", False) for i in range(6)
]


def _scorer(description: str, queries: list[TriggerQuery], runs: int) -> list[TriggerRow]:
    """Loads the skill when the description mentions JSON: the original never does."""
    hit = "json" in description.lower()
    return [
        TriggerRow(
            "r",
            "t",
            "v",
            "s",
            "1",
            "m",
            "p",
            "{}",
            q.id,
            q.query,
            q.should_trigger,
            k,
            hit and q.should_trigger,
        )  # fmt: skip
        for q in queries
        for k in range(runs)
    ]


def _teacher(*proposals: str):
    answers = list(proposals)

    def teach(_description: str, _wrong: list, iteration: int) -> str:
        return answers[min(iteration, len(answers)) - 1]

    return teach


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "test-0123456789abcdefghijklmnop")
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


# --------------------------------------------------------------------------- class 4: run files
def test_a_symlinked_tune_result_is_replaced_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / RESULT_FILE).symlink_to(outside)
    tune_description(VAGUE, QUERIES, _scorer, _teacher(GOOD), run_dir=run_dir, iterations=1, runs=1)
    assert outside.read_text() == "keep me\n"
    assert (
        not (run_dir / RESULT_FILE).is_symlink()
        and json.loads((run_dir / RESULT_FILE).read_text())["winner"] == 1
    )


def test_a_symlinked_history_is_refused_on_resume_and_the_outside_file_kept(tmp_path: Path) -> None:
    outside = tmp_path / "precious.jsonl"
    outside.write_text("")  # an empty history: the run would start by appending to it
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / HISTORY_FILE).symlink_to(outside)
    with pytest.raises(UpskillError, match="is a symlink"):
        tune_description(VAGUE, QUERIES, _scorer, _teacher(GOOD), run_dir=run_dir, iterations=1, runs=1)
    assert outside.read_text() == ""


def test_a_fifo_history_is_refused_without_blocking(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.mkfifo(run_dir / HISTORY_FILE)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            tune_description(VAGUE, QUERIES, _scorer, _teacher(GOOD), run_dir=run_dir, iterations=1, runs=1)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)  # a blocked open() cannot be cancelled
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "tune blocked on a FIFO"
    assert isinstance(outcome[0], UpskillError) and "FIFO" in str(outcome[0])


def test_a_history_step_of_the_wrong_type_is_one_line_naming_it(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tune_description(
        VAGUE, QUERIES, _scorer, _teacher("nope " * 5, GOOD), run_dir=run_dir, iterations=1, runs=1
    )
    lines = (run_dir / HISTORY_FILE).read_text().splitlines()
    step = json.loads(lines[-1])
    lines[-1] = json.dumps({**step, "description": ["a", "list"]})
    (run_dir / HISTORY_FILE).write_text("\n".join(lines) + "\n")
    with pytest.raises(UpskillError, match=rf"{HISTORY_FILE}.*line {len(lines)} is not a tune step"):
        tune_description(VAGUE, QUERIES, _scorer, _teacher(GOOD), run_dir=run_dir, iterations=2, runs=1)


def test_a_symlinked_run_folder_is_not_resumed_outside_output(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    out = tmp_path / "out"
    with running_llm_server(ScriptedTeacher([GOOD])) as srv:
        kw = dict(teacher=TEACHER, base_url=srv.openai_base_url, runs=1, iterations=1, distractors="none",
                  output_dir=out)  # fmt: skip
        first = run_tune(skill, MODEL, **kw)
        elsewhere = tmp_path / "elsewhere"
        first.run_dir.rename(elsewhere)
        (out / first.run_dir.name).symlink_to(elsewhere, target_is_directory=True)
        (elsewhere / RESULT_FILE).unlink()
        before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
        with pytest.raises(UpskillError):
            run_tune(skill, MODEL, resume=True, **kw)
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


# --------------------------------------------------------------------------- class 5: --write
def _tuned(tmp_path: Path, skill: Path, *, on_step=None, proposals=(GOOD,)):
    with running_llm_server(ScriptedTeacher(list(proposals))) as srv:
        return run_tune(skill, MODEL, teacher=TEACHER, base_url=srv.openai_base_url, runs=1, iterations=1,
                        distractors="none", output_dir=tmp_path / "out", write=True, on_step=on_step)  # fmt: skip


def test_an_edit_during_the_run_is_not_overwritten(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    md = skill / "SKILL.md"

    def edit(_message: str) -> None:
        md.write_text(md.read_text().replace("Read the header row first.", "Someone else's edit."))

    with pytest.raises(UpskillError, match="changed by someone else during the run; run tune again") as err:
        _tuned(tmp_path, skill, on_step=edit)
    assert "\n" not in str(err.value) and "tune_result.json" in str(err.value)
    assert "Someone else's edit." in md.read_text() and VAGUE in md.read_text()


def test_a_swap_for_an_outside_symlink_mid_run_copies_nothing_in(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    md = skill / "SKILL.md"
    secret = tmp_path / "secret.md"
    secret.write_text(md.read_text().replace("Read the header row first.", "TOP SECRET"))

    def swap(_message: str) -> None:
        if not md.is_symlink():
            md.unlink()
            md.symlink_to(secret)

    with pytest.raises(UpskillError, match="changed during the run"):
        _tuned(tmp_path, skill, on_step=swap)
    assert md.is_symlink() and "TOP SECRET" in secret.read_text() and VAGUE in secret.read_text()


def test_a_symlinked_skill_md_inside_the_repo_stays_a_symlink(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    skill = write_skill(repo / "skills")
    shared = repo / "shared" / "SKILL.md"
    shared.parent.mkdir()
    (skill / "SKILL.md").rename(shared)
    (skill / "SKILL.md").symlink_to(os.path.relpath(shared, skill))
    run = _tuned(tmp_path, skill)
    assert run.written
    assert (
        (skill / "SKILL.md").is_symlink() and GOOD in shared.read_text() and VAGUE not in shared.read_text()
    )


def test_a_symlinked_skill_md_leaving_the_repo_is_refused_before_any_call(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    outside = tmp_path / "outside.md"
    outside.write_bytes((skill / "SKILL.md").read_bytes())
    _relinked(skill / "SKILL.md", outside)
    with pytest.raises(UpskillError, match="outside"):  # the loader refuses it first
        _tuned(tmp_path, skill)
    assert VAGUE in outside.read_text() and (skill / "SKILL.md").is_symlink()
    assert not (tmp_path / "out").exists()


def _relinked(md: Path, target: Path) -> Path:
    md.unlink()
    md.symlink_to(target)
    return md


def test_a_read_only_skill_md_is_refused_in_one_line(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    md = skill / "SKILL.md"
    md.chmod(0o444)
    before = md.read_bytes()
    with pytest.raises(UpskillError, match="is read-only") as err:
        _tuned(tmp_path, skill)
    assert "\n" not in str(err.value)
    assert md.read_bytes() == before and (md.stat().st_mode & 0o777) == 0o444
    assert not (tmp_path / "out").exists()  # refused before the run began: no call spent


def test_an_unreplaceable_skill_md_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An immutable file (chattr +i) makes the rename fail with EPERM, even for root."""
    skill = write_skill(tmp_path / "skills")
    md = skill / "SKILL.md"
    before = md.read_bytes()
    real_replace = os.replace

    def refuse(src, dst, *a, **kw):
        if Path(dst) == md:
            raise PermissionError(errno.EPERM, "Operation not permitted", str(dst))
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(UpskillError, match="cannot be replaced: Operation not permitted"):
        write_description(md, GOOD)
    assert (
        md.read_bytes() == before and [p.name for p in skill.iterdir() if p.name.startswith(".SKILL")] == []
    )


# --------------------------------------------------------------------------- class 9: teacher text
@pytest.mark.parametrize("evil", ["\u202e", "\x1b[2J", "\x9b31m", "\x07", "\x7f"])
def test_a_teacher_description_with_control_characters_is_rejected(tmp_path: Path, evil: str) -> None:
    proposal = f"Convert JSON {evil}records. Use when someone wants JSON."
    res = tune_description(
        VAGUE, QUERIES, _scorer, _teacher(proposal), run_dir=tmp_path / "run", iterations=1, runs=1
    )
    assert len(res.candidates) == 1 and res.winner.index == 0
    (rejected,) = res.rejected
    assert f"U+{ord(evil[0]):04X}" in rejected["reason"] and evil[0] not in rejected["description"]
    stored = (tmp_path / "run" / RESULT_FILE).read_text() + (tmp_path / "run" / HISTORY_FILE).read_text()
    assert evil[0] not in stored


def test_the_writer_refuses_a_description_with_control_characters(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    md = skill / "SKILL.md"
    before = md.read_bytes()
    with pytest.raises(UpskillError, match="U[+]202E"):
        write_description(md, "Use when \u202egnp.exe")
    assert md.read_bytes() == before


# --------------------------------------------------------------------------- issue 45: a description alias
def _aliased(skill: Path) -> bytes:
    """SKILL.md whose description is a YAML alias (``description: *d``) of another key's value."""
    md = skill / "SKILL.md"
    md.write_text(md.read_text().replace(f"description: {VAGUE}", f"x-note: &d {VAGUE}\ndescription: *d"))
    assert "description: *d" in md.read_text()
    return md.read_bytes()


def test_write_with_a_description_alias_is_one_line_before_any_call(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from cli_runner import run_cli

    skill = write_skill(tmp_path / "skills")
    before = _aliased(skill)
    with running_llm_server(ScriptedTeacher([GOOD])) as srv:
        code, _out, err = run_cli(["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url",
                                   srv.openai_base_url, "--runs", "1", "--distractors", "none",
                                   "-o", str(tmp_path / "out"), "--write"], capsys, monkeypatch)  # fmt: skip
        assert srv.completion_requests == []  # refused before the run, not after it
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("Error: ") and "--write cannot replace its description alone" in err
    assert (skill / "SKILL.md").read_bytes() == before and not (tmp_path / "out").exists()


def test_a_frontmatter_error_raised_past_the_loader_is_an_upskill_error(tmp_path: Path) -> None:
    from upskill_hub.descriptions import replace_description

    text = _aliased(write_skill(tmp_path / "skills")).decode()
    with pytest.raises(UpskillError) as err:  # the rewrite parsed back: an undefined alias
        replace_description(text, GOOD)
    assert "\n" not in str(err.value)
