"""Issue 36, item 3 (part): ``triggers DIR --library`` over a library holding one invalid skill.

Published libraries hold one now and then: anthropics/skills' ``claude-api`` has a
1,068-character description, over the spec's 1,024. Before, that one skill stopped the whole
library; now it is left out of the catalog with one warning naming it, and the rest route.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "triggering"))
from test_routing_run import KEY, LIBRARY, MODEL, answer, write_library  # noqa: E402

from upskill_hub.testing.llm_server import running_llm_server  # noqa: E402

#: The shape of anthropics/skills' claude-api: a valid folder whose description is 1,068 characters.
LONG_DESCRIPTION = ("Build apps with the Claude API and SDKs. " * 27)[:1068].strip()


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


def _library_with_an_invalid_skill(root: Path) -> Path:
    lib = write_library(root)
    bad = lib / "claude-api"
    bad.mkdir()
    (bad / "SKILL.md").write_text(f"---\nname: claude-api\ndescription: {LONG_DESCRIPTION}\n---\n# Claude API\n\nCall it.\n")
    (bad / "skill_meta.json").write_text(json.dumps(
        {"schema_version": 1, "triggers": [{"id": "q0", "query": "call the Claude API", "should_trigger": True}]}
    ))  # fmt: skip
    return lib


def test_one_invalid_skill_is_one_warning_and_the_rest_route(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    assert len(LONG_DESCRIPTION) > 1024
    lib = _library_with_an_invalid_skill(tmp_path / "lib")
    with running_llm_server(answer) as srv:
        args = ["triggers", str(lib), "--library", "-m", MODEL, "--base-url", srv.openai_base_url,
                "-o", str(tmp_path / "out")]  # fmt: skip
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        assert len(srv.completion_requests) == 15  # the five valid skills' queries, none of claude-api's
        assert all("claude-api" not in r.system for r in srv.completion_requests)
        code_j, out_j, err_j = run_cli([*args, "--resume", "--json"], capsys, monkeypatch)
        assert code_j == 0, err_j
    warnings = [ln for ln in err.splitlines() if "claude-api" in ln]
    assert len(warnings) == 1 and warnings[0].startswith("Warning: skipped the invalid skill 'claude-api'"), err
    assert "1024" in warnings[0] or "1,024" in warnings[0]
    assert "claude-api" not in out
    # The other five route exactly as they do without it.
    assert "library routing accuracy 67% (10/15) [42%, 85%]" in out
    assert "Stealing pair: csv-cleaner <-> csv-to-json" in out
    data = json.loads(out_j)
    assert data["reports"][0]["skills"] == list(LIBRARY)
    (skipped,) = data["skipped"]
    assert (skipped["name"], skipped["folder"]) == ("claude-api", "claude-api")
    (run_dir,) = (tmp_path / "out").iterdir()
    plan = json.loads((run_dir / "routing-plan.json").read_text())
    assert [s["name"] for s in plan["skipped"]] == ["claude-api"]


def test_a_library_left_with_one_valid_skill_names_the_invalid_ones(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    lib = _library_with_an_invalid_skill(tmp_path / "lib")
    for name in list(LIBRARY)[1:]:
        for f in (lib / name).iterdir():
            f.unlink()
        (lib / name).rmdir()
    with running_llm_server(answer) as srv:
        cases = [(["triggers", str(lib), "--library", "-m", MODEL, "--base-url", srv.openai_base_url,
                   "-o", str(tmp_path / "out")], "at least two skills to route between, found 1 (1 invalid")]  # fmt: skip
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.completion_requests == []
