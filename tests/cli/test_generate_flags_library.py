"""``triggers --generate-queries N`` from the command line, with ``--library`` too (issue 36).

Must show: ``triggers DIR --library --generate-queries N`` over 28 published skills
(anthropics/skills and huggingface/skills in shape, none shipping queries, ``claude-api``
invalid) with a scripted teacher gives a routing matrix, and the invalid skill is named in
one warning. The scripted server is both the teacher and the routed model.

These need the ``--generate-queries`` wiring of ``cli/triggers.py`` (/tmp/notes/generate-wiring.diff):
until it is applied they fail, marked strict xfail; remove the marks with the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_cli
from generate_fixtures.library import ANTHROPICS, HUGGINGFACE, INVALID, script, write_library

from upskill_hub.generate.queries import QUERIES_SYSTEM_PROMPT
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" "test-0123456789abcdefghijklmnop"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


def _flags(srv, out: Path) -> list[str]:
    return ["-m", f"openai-compatible:router@{srv.openai_base_url}", "--teacher",
            f"openai-compatible:teacher@{srv.openai_base_url}", "-o", str(out)]  # fmt: skip


def test_library_of_28_published_skills_without_queries_is_routed(tmp_path: Path, capsys, monkeypatch) -> None:
    lib = write_library(tmp_path / "lib")
    valid = sorted([*ANTHROPICS, *HUGGINGFACE])
    before = {p: p.read_bytes() for p in lib.rglob("*") if p.is_file()}
    with running_llm_server(script) as srv:
        args = ["triggers", str(lib), "--library", "--generate-queries", "4", *_flags(srv, tmp_path / "out"), "--json"]
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        teacher = [r for r in srv.completion_requests if r.system == QUERIES_SYSTEM_PROMPT]
        assert len(teacher) == 27  # one set per valid skill, none for the invalid one
        assert len(srv.completion_requests) == 27 + 27 * 2  # then each skill's 2 should-trigger queries
    warnings = [ln for ln in err.splitlines() if ln.startswith("Warning:")]
    assert len(warnings) == 1 and f"skipped the invalid skill {INVALID!r}" in warnings[0]
    assert "1068" in warnings[0] and [ln for ln in err.splitlines() if INVALID in ln] == warnings
    data = json.loads(out)
    (report,) = data["reports"]
    assert sorted(report["skills"]) == valid and len(report["matrix"]) == 27
    assert all(len(row) == 28 for row in report["matrix"])  # 27 skills and `none`
    assert sum(map(sum, report["matrix"])) == 54
    assert [s["name"] for s in data["skipped"]] == [INVALID]
    assert data["no_queries"] == []
    run_dir = Path(data["run_dir"])
    assert (run_dir / "routing.json").is_file() and (run_dir / "routing.png").is_file()
    saved = json.loads((run_dir / "generated-queries.json").read_text())
    assert sorted(saved["skills"]) == valid
    for name, entry in saved["skills"].items():
        should = [q for q in entry["queries"] if q["should_trigger"]]
        near = [q for q in entry["queries"] if q.get("near_miss")]
        assert len(should) == 2 and len(near) == 2, name
        assert [d["why"] for d in entry["dropped_leaks"]] == ["names the skill"], name
    assert "1 leaking should-trigger query dropped (names the skill)" in err
    # Without --write the library is untouched: queries were routed from a scratch copy.
    assert {p: p.read_bytes() for p in lib.rglob("*") if p.is_file()} == before


def test_library_write_puts_the_queries_in_each_skill_meta(tmp_path: Path, capsys, monkeypatch) -> None:
    lib = write_library(tmp_path / "lib")
    with running_llm_server(script) as srv:
        args = ["triggers", str(lib), "--library", "--generate-queries", "4", "--write", *_flags(srv, tmp_path / "out")]
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        assert "library routing accuracy" in out
        # The queries live in the skills now: routing again asks no teacher.
        srv.clear()
        code, out, err = run_cli([*args[:5], *args[6:]], capsys, monkeypatch)  # without --write
        assert code == 0, err
        assert not [r for r in srv.completion_requests if r.system == QUERIES_SYSTEM_PROMPT]
    meta = json.loads((lib / "huggingface" / "hf-cli" / "skill_meta.json").read_text())
    assert len(meta["triggers"]) == 4 and sum(q["should_trigger"] for q in meta["triggers"]) == 2
    assert not (lib / "anthropics" / INVALID / "skill_meta.json").exists()


def test_one_skill_generated_queries_are_run_and_kept_in_the_run_folder(tmp_path: Path, capsys, monkeypatch) -> None:
    lib = write_library(tmp_path / "lib")
    skill = lib / "huggingface" / "hf-cli"
    with running_llm_server(script) as srv:
        args = ["triggers", str(skill), "--generate-queries", "4", "--distractors", "none", *_flags(srv, tmp_path / "out"), "--json"]
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        (row,) = json.loads(out)
        run_dir = tmp_path / "out" / row["run_id"]
        # the saved set runs again as a --triggers file, and finishes the same run with --resume
        srv.clear()
        again = ["triggers", str(skill), "--triggers", str(run_dir / "generated-queries.json"), "--distractors", "none",
                 "-m", f"openai-compatible:router@{srv.openai_base_url}", "-o", str(tmp_path / "out"), "--resume"]  # fmt: skip
        code2, _out2, err2 = run_cli(again, capsys, monkeypatch)
        assert code2 == 0, err2
        assert srv.calls == 0
    assert row["queries_passed"] + row["queries_failed"] == 4
    saved = json.loads((run_dir / "generated-queries.json").read_text())
    assert [q["should_trigger"] for q in saved] == [True, True, False, False]
    assert not (skill / "skill_meta.json").exists()
    assert "hf-cli: 4 generated trigger queries (2 should trigger, 2 should not, 2 of them near misses); " \
           "1 leaking should-trigger query dropped (names the skill)" in err
