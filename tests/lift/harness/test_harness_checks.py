"""Workspace checks (file-exists, file-contains, command), custom agents, output readers, the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from _harness_kit import SKILL_MD

from upskill_hub.cases import Assertion, parse_meta
from upskill_hub.errors import UpskillError
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.base import UnknownOutput
from upskill_hub.lift.harness.grading import WorkspaceChecker
from upskill_hub.lift.harness.spec import ADAPTERS, parse_agent_spec
from upskill_hub.lift.harness.workspace import Workspace
from upskill_hub.lift.prepare import EvalOptions


def _ws(tmp_path: Path) -> Workspace:
    ws = Workspace.create(tmp_path, "t-")
    ws.write_files([("kept.txt", "same\n"), ("edited.txt", "v1\n")])
    ws.freeze()
    (ws.project / "edited.txt").write_text("v2 DONE\n")
    (ws.project / "new" / "out.md").parent.mkdir()
    (ws.project / "new" / "out.md").write_text("# Report\nDONE\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("DONE")
    (ws.project / "link.txt").symlink_to(outside)
    return ws


def _check(ws: Workspace, a: Assertion, **kw):
    env = {"PATH": os.environ["PATH"], "HOME": str(ws.home)}
    return asyncio.run(WorkspaceChecker(ws, ws.changed(), env, **kw)(a))


def test_file_checks_see_only_what_the_agent_changed(tmp_path):
    ws = _ws(tmp_path)
    assert _check(ws, Assertion("file-exists", path="new/out.md")).passed
    assert _check(ws, Assertion("file-contains", "DONE", path="edited.txt")).passed
    r = _check(ws, Assertion("file-exists", path="kept.txt"))
    assert not r.passed and "existed before the agent ran" in r.evidence
    r = _check(ws, Assertion("file-contains", ["Report", "MISSING"], path="new/out.md"))
    assert not r.passed and "'MISSING'" in r.evidence
    r = _check(ws, Assertion("file-exists", path="nowhere.md"))
    assert not r.passed and "not found" in r.evidence
    # A symlink the agent made to a file outside the workspace proves nothing.
    r = _check(ws, Assertion("file-contains", "DONE", path="link.txt"))
    assert not r.passed and "outside the workspace" in r.evidence


def test_command_check_exit_status_timeout_and_refusal(tmp_path):
    ws = _ws(tmp_path)
    ok = _check(ws, Assertion("command", "grep -q DONE new/out.md"))
    assert ok.passed and ok.evidence == "exit status 0"
    bad = _check(ws, Assertion("command", "echo nope; exit 3"))
    assert not bad.passed and bad.extra["exit_code"] == 3 and "nope" in bad.extra["output_tail"]
    slow = _check(ws, Assertion("command", "sleep 30", timeout=0.5))
    assert not slow.passed and "timed out after 0.5 s" in slow.evidence
    refused = _check(ws, Assertion("command", "true"), allow_commands=False)
    assert not refused.passed and "refused" in refused.evidence


def test_workspace_assertions_parse_path_safely():
    meta = parse_meta({"cases": [{"input": "x", "assert": [{"type": "file-exists", "path": "a/b.md"}]}]})
    assert meta.cases[0].asserts[0].path == "a/b.md"
    for bad, why in (
        ({"type": "file-exists", "path": "../etc/passwd"}, "must not contain '..'"),
        ({"type": "file-contains", "path": "/etc/passwd", "value": "root"}, "must be relative"),
        ({"type": "file-contains", "path": "a.md"}, "needs 'path' and a 'value'"),
        ({"type": "command", "value": "true", "timeout": 99999}, "'timeout' must be"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_meta({"cases": [{"input": "x", "assert": [bad]}]})


def test_command_checks_are_refused_in_the_space(tmp_path):
    from upskill_hub.space.session import skill_from_text, visitor_cases

    meta = {"cases": [{"id": "c", "input": "x", "assert": [{"type": "command", "value": "rm -rf ~"}]}]}
    skill = skill_from_text(SKILL_MD, json.dumps(meta), tmp_path)
    with pytest.raises(
        UpskillError, match="'command' checks run shell commands and are refused in this Space"
    ):
        visitor_cases(skill)


def test_library_refuses_commands_when_switched_off(agents_env, widget_skill, tmp_path):
    tests = tmp_path / "tests.json"
    tests.write_text(
        json.dumps({"cases": [{"id": "c", "input": "x", "assert": [{"type": "command", "value": "true"}]}]})
    )
    opts = EvalOptions(agents=["codex"], cases=tests, output_dir=tmp_path / "runs", plots=False,
                       harness=HarnessOptions(allow_commands=False))  # fmt: skip
    with pytest.raises(UpskillError, match="'command' checks are refused here"):
        run_eval(widget_skill, [], opts)


def test_custom_command_agent(agents_env, widget_skill, tmp_path):
    """cmd:'TEMPLATE': any executable; the prompt is one argument; its stdout is the answer."""
    script = tmp_path / "bin" / "my-agent"
    script.write_text(
        f"#!{sys.executable}\nimport sys, pathlib\n"
        "p = pathlib.Path('.agents/skills/widget-report/SKILL.md')\n"
        "print('WX-42' if p.exists() else 'no skill', '|', sys.argv[2])\n"
    )
    script.chmod(0o755)
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"cases": [{"id": "c", "input": "say it; $(touch pwned)", "assert": [
        {"type": "contains", "value": "WX-42"}]}]}))  # fmt: skip
    opts = EvalOptions(agents=["cmd:my-agent --task {prompt}"], cases=tests, output_dir=tmp_path / "runs",
                       cache_dir=tmp_path / "cache", plots=False)  # fmt: skip
    result = run_eval(widget_skill, [], opts)
    by = {r.condition: r for r in result.rows}
    assert by["with_skill"].model == "cmd:my-agent" and by["with_skill"].agent == "cmd"
    assert by["with_skill"].passed is True and by["baseline"].passed is False
    assert by["with_skill"].output.endswith("| say it; $(touch pwned)")  # never through a shell
    assert by["with_skill"].tokens_unavailable is True and by["with_skill"].input_tokens is None
    assert by["with_skill"].triggered is None and by["with_skill"].tool_calls is None  # unknowable


def test_agent_specs():
    s = parse_agent_spec("claude-code:sonnet")
    assert (s.label, s.model, s.adapter.binary) == ("claude-code:sonnet", "sonnet", "claude")
    assert parse_agent_spec("claude").label == "claude-code"
    assert parse_agent_spec("opencode:anthropic/claude-sonnet-4-5").model == "anthropic/claude-sonnet-4-5"
    with pytest.raises(UpskillError, match="No closing quotation"):
        parse_agent_spec("cmd:'unterminated")
    inv = ADAPTERS["claude-code"].invocation("claude", "hi", "sonnet")
    assert inv.argv[:4] == ["claude", "-p", "--output-format", "stream-json"] and inv.argv[-2:] == [
        "--model",
        "sonnet",
    ]
    assert inv.stdin == b"hi"  # the prompt never sits on the command line
    codex = ADAPTERS["codex"].invocation("codex", "hi", None)
    assert codex.argv[:3] == ["codex", "exec", "--json"] and codex.argv[-1] == "-" and codex.stdin == b"hi"
    assert ADAPTERS["gemini"].invocation("gemini", "hi", None).argv == [
        "gemini",
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
        "--prompt=hi",
    ]
    assert ADAPTERS["opencode"].invocation("opencode", "hi", None).argv == [
        "opencode", "run", "--format", "json", "--", "hi",
    ]  # fmt: skip


def test_single_object_json_outputs_are_read_too():
    """`claude -p --output-format json` and `gemini -p --output-format json` print one object."""
    claude = ADAPTERS["claude-code"].parse(json.dumps({
        "type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "result": "hi",
        "session_id": "s", "total_cost_usd": 0.0123,
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 1, "output_tokens": 7},
    }))  # fmt: skip
    assert (claude.text, claude.input_tokens, claude.cached_tokens, claude.output_tokens) == ("hi", 16, 5, 7)
    assert claude.cost_usd == 0.0123 and claude.turns == 2 and claude.tool_calls is None  # not in this format
    gemini = ADAPTERS["gemini"].parse(json.dumps({
        "session_id": "s", "response": "ok",
        "stats": {"models": {"gemini-2.5-pro": {"tokens": {"prompt": 20, "candidates": 3, "cached": 4}}},
                  "tools": {"totalCalls": 1, "byName": {"activate_skill": {"count": 1}}}},
    }, indent=2))  # fmt: skip
    assert (gemini.text, gemini.input_tokens, gemini.output_tokens, gemini.tool_calls) == ("ok", 20, 3, 1)
    with pytest.raises(UnknownOutput, match="no 'result' event"):
        ADAPTERS["claude-code"].parse('{"type": "system", "subtype": "init"}')
    with pytest.raises(UnknownOutput, match="no 'thread.started'"):
        ADAPTERS["codex"].parse('{"type": "turn.completed"}')
    err = ADAPTERS["claude-code"].parse(
        json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": True})
    )
    assert err.error and "error_max_turns" in err.error and err.tokens_unavailable


def test_cli_eval_with_agents(agents_env, widget_skill, tmp_path, capsys, monkeypatch):
    sys.path.insert(0, str(Path(__file__).parents[2]))
    from cli_runner import run_cli

    code, out, err = run_cli(
        ["eval", str(widget_skill), "--agent", "claude-code:sonnet", "--agent", "opencode", "-o", str(tmp_path / "runs"),
         "--cache-dir", str(tmp_path / "cache"), "--no-plots", "--format", "agent"],
        capsys, monkeypatch,
    )  # fmt: skip
    assert code == 0, err
    assert "claude-code:sonnet" in out and "opencode" in out
    code, out, err = run_cli(
        ["eval", str(widget_skill), "--agent", "codex", "--jobs", "2", "--repo", "a/b"], capsys, monkeypatch
    )
    assert code != 0 and "--agent cannot be combined with --jobs" in err


def test_llm_rubric_on_agent_answers_needs_a_judge_model(
    agents_env, widget_skill, tmp_path, llm, monkeypatch
):
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"cases": [{"id": "c", "input": "Produce the inventory report for the widget.",
                                            "assert": [{"type": "llm-rubric", "value": "names the widget code"}]}]}))  # fmt: skip
    opts = EvalOptions(agents=["gemini"], cases=tests, output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                       plots=False)  # fmt: skip
    with pytest.raises(UpskillError, match="llm-rubric assertions need a judge: pass --judge MODEL"):
        run_eval(widget_skill, [], opts)
    opts.judge = f"openai-compatible:scripted-model@{llm.openai_base_url}"
    result = run_eval(widget_skill, [], opts)
    by = {r.condition: r for r in result.rows}
    assert by["with_skill"].passed is True and by["baseline"].passed is False
    assert json.loads(by["with_skill"].assertion_details)[0]["judge_model"].endswith("scripted-model")
    assert result.stats.judge_calls == 2
