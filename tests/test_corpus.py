"""The real-world corpus check: skills and kernel projects in the shapes people publish.

Nothing is fetched: the corpus is built here from small fixtures written in the shapes of
upskill's output (upskill_shapes), kernel-builder's examples (kernelbuilder_shapes) and
published skill collections (hidden .curated/.system folders, lowercase skill.md, Unicode
names). ``check_corpus`` and ``upskill-hub check`` must give each the verdict the tool
people already use gives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kernels"))

from kernelbuilder_shapes import LEGACY_V3, PROJECTS, write_project  # noqa: E402
from upskill_shapes import TestCase, save_upskill_skill  # noqa: E402

from upskill_hub.corpus import check_corpus, counts, find_items  # noqa: E402


def _skill(folder: Path, name: str, extra: str = "", file: str = "SKILL.md") -> None:
    folder.mkdir(parents=True)
    (folder / file).write_text(f"---\nname: {name}\ndescription: Use when testing.\n{extra}---\n\nSteps.\n")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    skills = root / "skills"
    save_upskill_skill(skills / "from-upskill", "from-upskill", "Made by upskill.", "Body\n",
                       [TestCase(input="q", expected={"contains": "a"})])
    _skill(skills / "数据-分析", "数据-分析")
    _skill(skills / "lowercase", "lowercase", file="skill.md")
    _skill(skills / ".curated" / "pdf", "pdf")
    _skill(skills / ".system" / "skill-creator", "skill-creator")
    _skill(skills / "typed-version", "typed-version", "metadata:\n  version: 1.0\n")
    _skill(skills / "duplicate", "duplicate", "description: again\n")
    (skills / ".git" / "objects").mkdir(parents=True)  # never searched
    kernels = root / "kernels"
    for name in PROJECTS:
        write_project(kernels, name)
    (kernels / "activation").mkdir()
    (kernels / "activation" / "build.toml").write_text(LEGACY_V3)
    return root


EXPECTED = {
    "skills/.curated/pdf": "ok",
    "skills/.system/skill-creator": "ok",
    "skills/duplicate": "error",
    "skills/from-upskill": "ok",
    "skills/lowercase": "warning",
    "skills/typed-version": "warning",
    "skills/数据-分析": "ok",
    "kernels/activation": "error",  # legacy v3: kernel-builder refuses it until migrated
    "kernels/relu": "ok",
    "kernels/relu-archs-subset": "warning",  # legacy v4 + dropped capabilities: builds
    "kernels/relu-invalid-capability": "error",  # kernel-builder's CI expects this failure
    "kernels/relu-torch-stable-abi": "warning",  # a backend without kernels: builds
    "kernels/relu-tvm-ffi": "ok",
    "kernels/silu-and-mul": "ok",
}


def test_every_item_gets_the_reference_tools_verdict(corpus: Path) -> None:
    verdicts = check_corpus([corpus])
    assert {v.path: v.status for v in verdicts} == EXPECTED
    by_path = {v.path: v for v in verdicts}
    assert by_path["skills/from-upskill"].tests == '1 test case from skill_meta.json (upskill skill_meta.json ("tests"))'
    assert "duplicate key 'description'" in by_path["skills/duplicate"].first
    assert "empty set of" in by_path["kernels/relu-invalid-capability"].first
    assert counts(verdicts) == {
        "skill": {"ok": 4, "warning": 2, "error": 1},
        "kernel": {"ok": 3, "warning": 2, "error": 2},
    }
    strict = {v.path: v.status for v in check_corpus([corpus], strict=True)}
    assert strict["skills/typed-version"] == "error"


def test_items_are_not_searched_inside_each_other(corpus: Path) -> None:
    inner = corpus / "kernels" / "relu" / "tests" / "fixture-skill"
    _skill(inner, "fixture-skill")
    assert all("fixture-skill" not in str(p) for _, p in find_items(corpus))


def test_cli_prints_one_row_per_item_and_fails_on_errors(corpus: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "upskill_hub.cli.app", "check", str(corpus)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    for path, status in EXPECTED.items():
        rows = [ln for ln in proc.stdout.splitlines() if f" {path} " in ln]
        assert len(rows) == 1, (path, proc.stdout)
        assert {"ok": "✓", "warning": "!", "error": "✗"}[status] in rows[0]
    assert proc.stdout.rstrip().endswith(
        "kernels: 3 ok, 2 with warnings, 2 failing; skills: 4 ok, 2 with warnings, 1 failing"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "upskill_hub.cli.app", "check", str(corpus / "skills" / ".curated"), "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["counts"] == {"skill": {"ok": 1, "warning": 0, "error": 0}}
    assert data["items"][0]["path"] == "pdf" and data["items"][0]["ok"] is True


def test_cli_refuses_a_path_that_is_not_a_folder(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "upskill_hub.cli.app", "check", str(tmp_path / "nope")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"Error: {tmp_path / 'nope'}: not a folder"]
