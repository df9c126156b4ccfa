"""Catalog mode against a hostile skill folder and a hostile server (issue 33, classes 2 and 7).

* ``read_skill_file`` serves the skill loader's file list and nothing else: ``.git/``,
  ignored litter and files written after loading are "no file" to the model, and the
  listing the model is shown is exactly what it can read.
* The loop's caps count locally: a server that reports no usage (or 0) cannot keep the
  conversation going for ``--max-turns`` turns of ever larger requests, and a turn of too
  many tool calls, tool results too large or a request too large end the call as an error
  row with one line, not a crash and not a 300 MB request.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.models.base import Completion, ToolCall, Usage
from upskill_hub.rundir import read_results
from upskill_hub.session import catalog as catalog_mod
from upskill_hub.session.catalog import Catalog, ToolRefusal, run_catalog_conversation
from upskill_hub.skill import Skill, require_skill
from upskill_hub.testing import llm_server
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
TOKEN = "ghp_" + "S3CRETt0ken0123456789abcdefghij"
CASES = [{"id": "q1", "input": "Please greet me warmly", "assert": [{"type": "contains", "value": "hello"}]}]


def _skill(root: Path, name: str = "greeter", body: str = "# Greeter\n\nSay hello.\n") -> Path:
    meta = parse_meta({"schema_version": 1, "cases": CASES})
    path = Skill.create(name, "Greet people warmly.", body, meta=meta).write(root / name)
    (path / "references").mkdir()
    (path / "references" / "style.md").write_text("Bow slightly.\n")
    return path


def _with_litter(path: Path) -> Path:
    """What a cloned or used skill folder carries besides the skill: the loader ignores all of it."""
    (path / ".git").mkdir()
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = https://x:{TOKEN}@github.com/o/r\n')
    (path / "__pycache__").mkdir()
    (path / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"TOKEN " + TOKEN.encode())
    (path / ".upskill-hub-install.json").write_text(json.dumps({"token": TOKEN}))
    (path / "references" / ".DS_Store").write_text(TOKEN)
    return path


def _read(cat: Catalog, path: str, name: str = "greeter") -> str:
    try:
        return cat.run_tool(ToolCall("c", "read_skill_file", {"name": name, "path": path}))[0]
    except ToolRefusal as exc:
        return "error: " + str(exc)


# --------------------------------------------------------------------------- class 2
@pytest.mark.parametrize(
    "path",
    [".git/config", "__pycache__/mod.cpython-311.pyc", ".upskill-hub-install.json", "references/.DS_Store"],
)
def test_read_skill_file_does_not_serve_what_the_loader_ignores(tmp_path: Path, path: str) -> None:
    skill = require_skill(_with_litter(_skill(tmp_path)))
    assert path not in skill.files
    text = _read(Catalog.of([skill]), path)
    assert text.startswith(f"error: no file {path!r} in skill greeter") and TOKEN not in text


def test_listing_and_reader_agree(tmp_path: Path) -> None:
    folder = _with_litter(_skill(tmp_path))
    skill = require_skill(folder)
    cat = Catalog.of([skill])
    # Written after loading: not in the loader's list, so not served (nor listed).
    (folder / "references" / "late.md").write_text(TOKEN)
    (tmp_path / "outside.txt").write_text(TOKEN)
    os.symlink(tmp_path / "outside.txt", folder / "references" / "link.md")
    listed = _read(cat, "nope.md").split("files: ", 1)[1].split(", ")
    assert sorted(listed) == sorted(skill.without_tests().files)
    for rel in listed:  # everything listed reads, with the bytes the loader read (its version)
        assert _read(cat, rel) == skill.files[rel].decode("utf-8")
    for rel in ("references/late.md", "references/link.md"):
        assert _read(cat, rel).startswith(f"error: no file {rel!r}")


def test_read_serves_the_loaded_bytes_not_a_later_swap(tmp_path: Path) -> None:
    folder = _skill(tmp_path)
    cat = Catalog.of([require_skill(folder)])
    style = folder / "references" / "style.md"
    style.unlink()
    (tmp_path / "secret.txt").write_text(TOKEN)
    os.symlink(tmp_path / "secret.txt", style)  # swapped for a link out after loading
    assert _read(cat, "references/style.md") == "Bow slightly.\n"


def test_catalog_refuses_two_skills_of_one_name(tmp_path: Path) -> None:
    a = require_skill(_skill(tmp_path / "a"))
    b = require_skill(_skill(tmp_path / "b"))
    with pytest.raises(Exception, match="two skills named 'greeter' in the catalog") as info:
        Catalog.of([a, b])
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- class 7 (unit)
def _forever(
    calls_per_turn: int, tool: str = "load_skill", args: dict[str, Any] | None = None, usage=Usage()
):
    """A model that never answers: every turn asks for ``calls_per_turn`` tool calls."""
    seen: list[int] = []

    async def complete(messages, tools):
        seen.append(len(messages))
        calls = tuple(
            ToolCall(f"c{len(seen)}-{i}", tool, args or {"name": "greeter"}) for i in range(calls_per_turn)
        )
        return Completion("", usage, 0.0, "tool_calls", tool_calls=calls), False

    return complete, seen


@pytest.mark.parametrize("usage", [Usage(), Usage(0, 0), Usage(1, 1)], ids=["none", "zero", "one"])
def test_token_cap_counts_locally_when_the_server_reports_nothing(tmp_path: Path, usage: Usage) -> None:
    big = "# Greeter\n\n" + "Say hello in the house style, every time. " * 500  # ~21 kB body
    cat = Catalog.of([require_skill(_skill(tmp_path, body=big))])
    complete, seen = _forever(1, usage=usage)
    out = asyncio.run(run_catalog_conversation(complete, "hi", cat, max_turns=40, token_cap=50_000))
    assert out.stopped == "token_cap" and out.error is None
    assert out.turns < 15, out.turns  # ~21 kB more per turn: 50k tokens are spent within a few turns
    assert out.counted_tokens >= 50_000


def test_plausible_server_counts_are_believed() -> None:
    assert catalog_mod.counted_tokens(900, 1000) == 900
    assert catalog_mod.counted_tokens(None, 1000) == 1000
    assert catalog_mod.counted_tokens(0, 1000) == 1000
    assert catalog_mod.counted_tokens(10, 1000) == 1000


def test_too_many_tool_calls_in_one_turn_end_the_call(tmp_path: Path) -> None:
    cat = Catalog.of([require_skill(_skill(tmp_path))])
    n = catalog_mod.MAX_TOOL_CALLS_PER_TURN + 1
    complete, seen = _forever(n)
    out = asyncio.run(run_catalog_conversation(complete, "hi", cat, max_turns=5))
    assert len(seen) == 1 and out.tool_calls == 0  # nothing served, no second request
    assert out.error is not None and f"asked for {n} tool calls in one turn" in out.error
    assert "UPSKILL_CATALOG_MAX_TOOL_CALLS" in out.error and "\n" not in out.error


def test_tool_output_bytes_are_capped_per_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _skill(tmp_path)
    (folder / "references" / "big.md").write_text("x" * 60_000)
    cat = Catalog.of([require_skill(folder)])
    monkeypatch.setattr(catalog_mod, "MAX_TOOL_OUTPUT_BYTES", 200_000)
    complete, seen = _forever(8, "read_skill_file", {"name": "greeter", "path": "references/big.md"})
    out = asyncio.run(run_catalog_conversation(complete, "hi", cat, max_turns=6, token_cap=10**9))
    assert len(seen) == 1 and out.tool_calls == 4  # the 4th 60 kB result crosses 200 kB: stop there
    assert out.error is not None and "tool results reached" in out.error and "200,000-byte" in out.error


def test_request_size_is_capped_before_it_is_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = "# Greeter\n\n" + "hello " * 10_000
    cat = Catalog.of([require_skill(_skill(tmp_path, body=big))])
    monkeypatch.setattr(catalog_mod, "MAX_REQUEST_BYTES", 150_000)
    complete, seen = _forever(1)
    out = asyncio.run(run_catalog_conversation(complete, "hi", cat, max_turns=10, token_cap=10**9))
    assert out.error is not None and "over the 150,000-byte limit" in out.error
    assert out.max_request_bytes > 150_000 and len(seen) == out.turns < 5
    # A system prompt that alone is over the cap sends nothing at all.
    complete, seen = _forever(1)
    out = asyncio.run(run_catalog_conversation(complete, "hi", cat, system="s" * 200_000))
    assert seen == [] and out.turns == 0 and out.error is not None


# --------------------------------------------------------------------------- through the scripted server
@pytest.fixture
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


def _script_tools(monkeypatch: pytest.MonkeyPatch, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Make the scripted server call ``calls`` on every turn, and report no usage at all."""

    def step(system, messages, tools):
        return ("many", {}) if "load_skill" in tools else None

    def answer(api, step_, n, system, messages, params):
        wire = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
        return {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": params["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": wire},
                         "finish_reason": "tool_calls"}],
        }  # fmt: skip

    monkeypatch.setattr(llm_server, "tool_step", step)
    monkeypatch.setattr(llm_server, "_tool_answer", answer)


def _catalog_eval(skill: Path, srv, tmp_path: Path, max_turns: int):
    opts = EvalOptions(base_url=srv.openai_base_url, output_dir=tmp_path / "out", plots=False, modes=("catalog",),
                       distractors="none", max_turns=max_turns, include_baseline=False)  # fmt: skip
    return run_eval(skill, ["openai:gpt-4.1-mini"], opts)


@pytest.mark.usefixtures("_env")
def test_server_without_usage_cannot_run_max_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = "# Greeter\n\n" + "Say hello in the house style, every time. " * 1500  # ~64 kB body
    skill = _skill(tmp_path, body=big)
    _script_tools(monkeypatch, [("load_skill", {"name": "greeter"})])
    with running_llm_server() as srv:
        res = _catalog_eval(skill, srv, tmp_path, max_turns=25)
        sent = srv.completion_requests
    (row,) = read_results(res.run_dir)
    assert row.finish_reason == "token_cap" and row.turns is not None and row.turns < 12, row.turns
    assert len(sent) == row.turns
    assert row.input_tokens is None  # the server's (missing) figure is what the row records


@pytest.mark.usefixtures("_env")
def test_turn_of_many_tool_calls_is_an_error_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill = _skill(tmp_path)
    _script_tools(
        monkeypatch, [("read_skill_file", {"name": "greeter", "path": "references/style.md"})] * 500
    )
    with running_llm_server() as srv:
        res = _catalog_eval(skill, srv, tmp_path, max_turns=3)
        sent = srv.completion_requests
    (row,) = read_results(res.run_dir)
    assert len(sent) == 1  # the 500 calls were not served: no second (large) request
    assert row.passed is None and row.error is not None and "500 tool calls in one turn" in row.error
    assert row.turns == 1 and "\n" not in row.error


@pytest.mark.usefixtures("_env")
def test_git_config_never_reaches_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill = _with_litter(_skill(tmp_path))
    _script_tools(monkeypatch, [("read_skill_file", {"name": "greeter", "path": ".git/config"})])
    with running_llm_server() as srv:
        _catalog_eval(skill, srv, tmp_path, max_turns=2)
        bodies = [json.dumps(r.body) for r in srv.completion_requests]
    assert len(bodies) == 2 and "no file '.git/config'" in bodies[1]
    assert not any(TOKEN in b for b in bodies)


def test_the_model_never_reads_the_skills_own_tests(tmp_path: Path) -> None:
    """skill_meta.json / evals/ hold expected answers: serving them would hand the with-skill
    condition its answers (a grading leak the baseline cannot have)."""
    from upskill_hub.session.catalog import CatalogSkill
    from upskill_hub.skill import load_skill

    d = tmp_path / "demo"
    (d / "evals" / "files").mkdir(parents=True)
    (d / "references").mkdir()
    (d / "SKILL.md").write_text("---\nname: demo\ndescription: Use for demos.\n---\n\n# Demo\n\nSee references/a.md.\n")
    (d / "references" / "a.md").write_text("detail\n")
    case = {"id": "c", "input": "q", "assert": [{"type": "contains", "value": "SECRET-ANSWER"}]}
    (d / "skill_meta.json").write_text(json.dumps({"cases": [case]}))
    (d / "evals" / "evals.json").write_text(json.dumps({"evals": [{"id": 1, "prompt": "q", "expected_output": "SECRET"}]}))
    (d / "evals" / "files" / "in.txt").write_text("input\n")
    skill = load_skill(d).skill
    assert skill is not None and "skill_meta.json" in skill.files
    entry = CatalogSkill.from_skill(skill)
    assert sorted(entry.files) == ["SKILL.md", "references/a.md"]
    for path in ("skill_meta.json", "evals/evals.json", "evals/files/in.txt"):
        with pytest.raises(ToolRefusal, match="no file"):
            entry.read(path)
    assert "SECRET" not in entry.file_list()
