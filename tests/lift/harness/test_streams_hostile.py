"""Hostile agent CLI output: every adapter reads it in linear time, splits lines as JSON Lines
does, and refuses costs no run can have (issue 45, round 4).

Parsing runs after the CLI has exited, so ``--agent-timeout`` does not cover it: a stream
that makes a parser quadratic would hang the run with the workspace left behind.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.base import ParsedRun, json_events
from upskill_hub.lift.harness.claude_code import ADAPTER as CLAUDE
from upskill_hub.lift.harness.codex import ADAPTER as CODEX
from upskill_hub.lift.harness.gemini import ADAPTER as GEMINI
from upskill_hub.lift.harness.opencode import ADAPTER as OPENCODE
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.models.base import ImplausibleUsage
from upskill_hub.session.transcript import MAX_RESULT_BYTES


def _lines(*events: dict) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"


def _claude(result: object, text: str = "done", **final: object) -> str:
    return _lines(
        {"type": "assistant", "message": {"content": [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"echo {text}"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": result}]}},
        {"type": "result", "subtype": "success", "result": text, "num_turns": 1, **final},
    )  # fmt: skip


def _codex(result: object, text: str = "done") -> str:
    item = {"id": "i1", "type": "mcp_tool_call", "server": "docs", "tool": "search", "arguments": {"q": text},
            "result": result, "error": None, "status": "completed"}  # fmt: skip
    return _lines(
        {"type": "thread.started", "thread_id": "th"},
        {"type": "item.completed", "item": item},
        {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": text}},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    )


def _gemini(result: object, text: str = "done") -> str:
    return _lines(
        {
            "type": "tool_use",
            "tool_name": "run_shell_command",
            "tool_id": "g1",
            "parameters": {"command": text},
        },
        {"type": "tool_result", "tool_id": "g1", "status": "success", "output": result},
        {"type": "message", "role": "assistant", "content": text},
        {"type": "result", "status": "success", "stats": {"input_tokens": 1, "output_tokens": 1}},
    )


def _opencode(result: object, text: str = "done", cost: object = 0.001) -> str:
    return _lines(
        {"type": "step_start", "part": {}},
        {"type": "tool_use", "part": {"callID": "c1", "tool": "bash",
                                      "state": {"status": "completed", "input": {"command": text}, "output": result}}},
        {"type": "text", "part": {"text": text}},
        {"type": "step_finish", "part": {"cost": cost, "tokens": {"input": 1, "output": 1}}},
    )  # fmt: skip


# --------------------------------------------------------------------------- the hang
@pytest.mark.parametrize(
    "adapter,stream,blocks",
    [
        # 200,000 empty text blocks: 6 MB of stream, minutes when the kept text was re-summed per block.
        (CLAUDE, _claude, 200_000),
        (CODEX, lambda b: _codex({"content": b}), 100_000),
        (GEMINI, _gemini, 100_000),
        (OPENCODE, _opencode, 100_000),
    ],
    ids=["claude-code", "codex", "gemini", "opencode"],
)
def test_a_result_of_many_empty_text_blocks_parses_in_linear_time(adapter, stream, blocks):
    run = adapter.parse(stream([{"type": "text", "text": ""}] * blocks))
    (call,) = run.transcript.events
    assert call.result_chars == blocks - 1  # the blocks joined by newlines
    assert call.result_cut and len(call.result) <= MAX_RESULT_BYTES + 600
    assert run.text == "done"


def test_opencode_repeated_step_finish_events_join_the_answer_once():
    """Joining the step's chunks at every ``step_finish`` was steps × chunks (50,000 × 50,000)."""
    chunk = {"type": "text", "part": {"text": "0123456789"}}
    finish = {"type": "step_finish", "part": {}}
    run = OPENCODE.parse(_lines({"type": "step_start", "part": {}}, *[chunk] * 50_000, *[finish] * 50_000))
    assert run.text == "0123456789" * 50_000 and run.turns == 50_000


# --------------------------------------------------------------------------- line separators
@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085"], ids=["U+2028", "U+2029", "U+0085"])
@pytest.mark.parametrize(
    "adapter,stream",
    [(CLAUDE, _claude), (CODEX, _codex), (GEMINI, _gemini), (OPENCODE, _opencode)],
    ids=["claude-code", "codex", "gemini", "opencode"],
)
def test_a_raw_unicode_line_separator_inside_a_string_stays_in_its_event(adapter, stream, sep):
    """Node's ``JSON.stringify`` prints U+2028 raw; ``str.splitlines`` cut such a valid line in two."""
    text = f"first{sep}second"
    out = stream(f"out{sep}put", text=text)
    assert sep in out  # raw, not escaped
    run: ParsedRun = adapter.parse(out)
    assert run.text == text
    assert text in run.transcript.events[0].arguments


def test_crlf_line_endings_are_read():
    assert [e["a"] for e in json_events('{"a": 1}\r\n\r\n{"a": "x\u2028y"}\r\n', "cli")] == [1, "x\u2028y"]


# --------------------------------------------------------------------------- costs
@pytest.mark.parametrize(
    "raw",
    ["NaN", "Infinity", "-Infinity", "1e308", "1001", "1" + "0" * 400],
    ids=["nan", "inf", "-inf", "1e308", "over-the-cap", "400-digit-int"],
)
def test_claude_code_implausible_cost_is_refused(raw):
    out = _claude("ok").replace('"num_turns": 1', f'"num_turns": 1, "total_cost_usd": {raw}')
    with pytest.raises(ImplausibleUsage, match=r"implausible cost in the reply: result\.total_cost_usd = "):
        CLAUDE.parse(out)


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "1e308"])
def test_opencode_implausible_step_cost_is_refused(raw):
    out = _opencode("ok", cost="COST").replace('"COST"', raw)
    with pytest.raises(ImplausibleUsage, match=r"part\.cost = "):
        OPENCODE.parse(out)


def test_opencode_step_costs_cannot_sum_past_the_cap(monkeypatch):
    """Each step under the cap, their sum over it: the run is one call, its cost is refused."""
    monkeypatch.setattr("upskill_hub._util.limits.MAX_COST_PER_CALL_USD", 10.0)
    step = [{"type": "step_start", "part": {}}, {"type": "step_finish", "part": {"cost": 9.0}}]
    with pytest.raises(ImplausibleUsage, match="the sum of part.cost = 18.0"):
        OPENCODE.parse(_lines(*step, *step))
    # Plausible and unreadable costs keep their meaning.
    assert OPENCODE.parse(_lines(*step)).cost_usd == 9.0
    assert CLAUDE.parse(_claude("ok", total_cost_usd=0.0123)).cost_usd == 0.0123
    # A negative cost is unknown, as a negative token count is.
    assert CLAUDE.parse(_claude("ok", total_cost_usd=-1)).cost_usd is None
    assert CLAUDE.parse(_claude("ok", total_cost_usd="3")).cost_usd is None
    assert OPENCODE.parse(_opencode("ok", cost=0)).cost_usd == 0.0


# --------------------------------------------------------------------------- through a whole run
def _canned_claude(bin_dir: Path, stream: str) -> None:
    """A ``claude`` on PATH that answers every case with ``stream`` (as Node would print it)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "stream.jsonl").write_text(stream, encoding="utf-8")
    exe = bin_dir / "claude"
    exe.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "if '--version' in sys.argv:\n    print('2.0.0 (Claude Code)')\n    raise SystemExit\n"
        "sys.stdin.read()\n"
        f"sys.stdout.buffer.write(open({str(bin_dir / 'stream.jsonl')!r}, 'rb').read())\n"
    )
    exe.chmod(0o755)


@pytest.mark.parametrize(
    "answer,raw,error",
    [
        ("WX-42 \u2028 done", "0.25", None),  # a raw U+2028: read whole, the call is not an error
        ("WX-42", "NaN", "implausible cost in the reply: result.total_cost_usd = nan"),
        ("WX-42", "1e308", "implausible cost in the reply: result.total_cost_usd = 1e+308"),
    ],
    ids=["line-separator", "nan", "1e308"],
)
def test_a_run_stores_no_implausible_cost_and_reads_raw_line_separators(
    agents_env, widget_skill, tmp_path, monkeypatch, answer, raw, error
):
    stream = _claude("ok", text=answer).replace('"num_turns": 1', f'"num_turns": 1, "total_cost_usd": {raw}')
    _canned_claude(tmp_path / "canned", stream)
    monkeypatch.setenv("PATH", f"{tmp_path / 'canned'}{os.pathsep}{os.environ['PATH']}")
    opts = EvalOptions(agents=["claude-code"], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache",
                       plots=False, harness=HarnessOptions(timeout=60))  # fmt: skip
    opts.include_baseline = False
    result = run_eval(widget_skill, [], opts)
    assert result.rows
    for row in result.rows:
        if error is None:
            assert row.error is None and row.cost_usd == 0.25 and row.output == answer
        else:
            assert row.error is not None and error in row.error and row.cost_usd is None
    rows = (next((tmp_path / "runs").iterdir()) / "results.jsonl").read_text()
    assert "NaN" not in rows and "Infinity" not in rows and "1e+308" not in rows.replace(error or "", "")
