"""Memory bombs through test cases (issue 33, class 3): every budget is checked where cases are
parsed, so ``skills validate``, ``pull``, ``triggers --library``, the Space's loader and
``eval`` all refuse in one line before building a single prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from upskill_hub.cases import CasesError, budgets, load_meta_text, parse_meta
from upskill_hub.skill import load_skill

SKILL_MD = "---\nname: bomb\ndescription: Answer questions about attached notes. Use when notes are attached.\n---\n# Bomb\n\nRead the notes.\n"


def _skill(tmp_path: Path, files: dict[str, int]) -> Path:
    """A skill folder with ``evals/files/<name>`` of the given sizes (bytes of text)."""
    root = tmp_path / "bomb"
    (root / "evals" / "files").mkdir(parents=True)
    (root / "SKILL.md").write_text(SKILL_MD)
    for name, size in files.items():
        (root / "evals" / "files" / name).write_text("n" * size)
    return root


def _evals(*file_lists: list[str]) -> dict:
    return {
        "evals": [
            {"id": i + 1, "prompt": f"q{i}", "files": fl, "assertions": ["ok"]}
            for i, fl in enumerate(file_lists)
        ]
    }


def _refusal(data: dict, base: Path) -> str:
    with pytest.raises(CasesError) as info:
        parse_meta(data, base)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_a_long_list_of_one_file_is_refused_before_any_read(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"big.txt": 200_000})
    text = _refusal(_evals(["evals/files/big.txt"] * 5_000), root)
    assert text.startswith("evals[0].files: lists 5,000 files; a case may list at most 64")
    assert "UPSKILL_CASE_MAX_FILES" in text


def test_a_file_listed_twice_is_attached_once(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"notes.txt": 10})
    os.symlink("notes.txt", root / "evals" / "files" / "alias.txt")  # the same file, another name
    meta = parse_meta(
        _evals(["evals/files/notes.txt", "evals/files/notes.txt", "evals/files/alias.txt"]), root
    )
    assert meta.cases[0].input.count("nnnnnnnnnn") == 1


def test_attached_bytes_per_case_are_capped(tmp_path: Path) -> None:
    root = _skill(tmp_path, {f"f{i}.txt": 200_000 for i in range(8)})
    text = _refusal(_evals([f"evals/files/f{i}.txt" for i in range(8)]), root)
    assert (
        text.startswith("evals[0].files: attaches ") and "a case may attach at most 1,048,576 bytes" in text
    )
    assert "UPSKILL_CASE_ATTACH_MAX_KB=1024" in text


def test_attached_bytes_per_tests_file_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budgets, "CASES_ATTACH_MAX_BYTES", 1024 * 1024)
    root = _skill(tmp_path, {"shared.txt": 200_000})
    # One shared file, six cases: each case's prompt holds its own copy (1.2 MB in all).
    text = _refusal(_evals(*[["evals/files/shared.txt"]] * 6), root)
    assert text.startswith("evals[5].files: brings the input files attached by all cases to 1,200,000 bytes")
    assert "at most 1,048,576 bytes (UPSKILL_CASES_ATTACH_MAX_MB=1;" in text


def test_a_file_over_the_cap_names_the_real_limit_and_variable(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"big.txt": 300_000})
    text = _refusal(_evals(["evals/files/big.txt"]), root)
    assert "is 300,000 bytes; an attached file may be at most 262,144 bytes" in text
    assert "UPSKILL_EVAL_FILE_MAX_KB=256" in text and "0 MB" not in text and "UPSKILL_MAX_FILE_MB" not in text


def test_the_file_cap_is_an_environment_variable(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"big.txt": 300_000})
    (root / "evals" / "evals.json").write_text(json.dumps(_evals(["evals/files/big.txt"])))
    code = "import sys; from upskill_hub.skill import load_skill; r = load_skill(sys.argv[1]); print(r.ok, len(r.skill.meta.cases))"
    env = {**os.environ, "UPSKILL_EVAL_FILE_MAX_KB": "400"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ["True", "1"], out.stderr


def test_too_many_cases_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = {"input": "q", "assert": [{"type": "is-json"}]}
    text = _refusal({"schema_version": 1, "cases": [case] * 10_001}, tmp_path)
    assert (
        text
        == "cases: holds 10,001 cases; a tests file may hold at most 10,000 (raise UPSKILL_MAX_CASES to allow more)"
    )
    ev = {"prompt": "q", "assertions": ["ok"], "should_trigger": False}
    assert "holds 10,001 cases" in _refusal({"evals": [ev] * 10_001}, tmp_path)


def test_workspace_and_context_files_count_too(tmp_path: Path) -> None:
    many = {f"f{i}.txt": "x" for i in range(65)}
    case = {"input": "q", "assert": [{"type": "is-json"}], "files": many}
    assert "cases[0].files: lists 65 files" in _refusal({"schema_version": 1, "cases": [case]}, tmp_path)
    upskill = {"input": "q", "expected": {"contains": "x"}, "context": {"files": many}}
    assert "cases[0].context.files: lists 65 files" in _refusal({"cases": [upskill]}, tmp_path)


def test_validate_reports_a_bomb_as_one_problem(tmp_path: Path) -> None:
    root = _skill(tmp_path, {f"f{i}.txt": 200_000 for i in range(8)})
    bomb = _evals(*[[f"evals/files/f{i}.txt" for i in range(8)]] * 3)
    (root / "evals" / "evals.json").write_text(json.dumps(bomb))
    res = load_skill(root)
    assert not res.ok and len(res.errors) == 1
    assert "evals/evals.json: evals[0].files" in str(res.errors[0]) and "at most 1,048,576 bytes" in str(
        res.errors[0]
    )


def test_skill_meta_json_in_the_evals_shape_is_bounded_too() -> None:
    # skill_meta.json holds no folder to read from: the first listed file is refused, the list first.
    data = json.dumps(_evals(["evals/files/big.txt"] * 12_000))
    with pytest.raises(CasesError, match="lists 12,000 files"):
        load_meta_text(data)
