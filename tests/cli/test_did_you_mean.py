"""A mistyped skill path ends its one-line error with "did you mean 'PATH'?" (issue 48, item 13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub._util import suggest

GOOD = "---\nname: hf-dataset-card\ndescription: Use for demos.\n---\n\n# Demo\n\nSteps.\n"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    skill = tmp_path / "skills" / "hf-dataset-card"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(GOOD)
    (tmp_path / "skills" / "hub-kernels").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        ["skills", "validate", "skils/hf-dataset-card"],  # the parent folder mistyped
        ["eval", "skills/hf-datset-card"],  # the skill folder mistyped
        ["push", "skils/hf-datset-card", "--repo", "me/skills"],  # both
    ],
)
def test_a_typo_suggests_the_close_skill_folder(args: list[str], tree: Path, capsys, monkeypatch) -> None:
    code, _out, err = run_cli(args, capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert "does not exist" in lines[0] and lines[0].endswith("did you mean 'skills/hf-dataset-card'?"), err


def test_an_absolute_path_keeps_its_form_and_nothing_close_gets_no_guess(
    tree: Path, capsys, monkeypatch
) -> None:
    code, _out, err = run_cli(
        ["skills", "validate", str(tree / "skils" / "hf-dataset-card")], capsys, monkeypatch
    )
    assert code == 1 and err.strip().endswith(f"did you mean '{tree / 'skills' / 'hf-dataset-card'}'?"), err
    code, _out, err = run_cli(["skills", "validate", "skills/zzz-unrelated"], capsys, monkeypatch)
    assert code == 1 and "does not exist" in err and "did you mean" not in err, err


def test_only_a_bounded_number_of_entries_is_compared(tree: Path, monkeypatch) -> None:
    """A folder of any size is not listed whole: past MAX_ENTRIES, a close name is not seen."""
    many = tree / "many"
    many.mkdir()
    for i in range(50):
        (many / f"other-{i:03d}").mkdir()
    monkeypatch.setattr(suggest, "MAX_ENTRIES", 10)
    calls: list[int] = []
    real = suggest._entries

    def counting(folder: Path) -> list[str]:
        got = real(folder)
        calls.append(len(got))
        return got

    monkeypatch.setattr(suggest, "_entries", counting)
    suggest.close_path("many/other-x")
    assert calls and max(calls) <= 10
