"""Reading exported agent traces and condensing long ones for the teacher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.errors import UpskillError
from upskill_hub.traces import load_trace, parse_trace_text, render_trace

SECRET = "hf_" + "A1b2C3d4E5f6G7h8I9j0KlMn"


def test_openai_messages_with_tool_calls(tmp_path: Path) -> None:
    data = {
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Build the rmsnorm kernel"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"cmd": "nix build"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "1",
                "content": "error: build.toml: unknown field `capabilities`",
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Renamed it to cuda-capabilities."}]},
        ]
    }
    p = tmp_path / "t.json"
    p.write_text(json.dumps(data))
    trace = load_trace(p)
    assert trace.format == "json-messages"
    kinds = [(e.role, e.kind, e.is_error) for e in trace.events]
    assert ("assistant", "tool_use", False) in kinds
    assert ("tool", "tool_result", True) in kinds  # error detected from the text
    assert trace.n_errors == 1
    text = render_trace(trace)
    assert 'bash({"cmd": "nix build"})' in text and "cuda-capabilities" in text


def test_claude_code_jsonl_with_tool_result_error(tmp_path: Path) -> None:
    lines = [
        {"type": "summary", "summary": "Kernel build session"},
        {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "write a kernel"}},
        {
            "type": "assistant",
            "sessionId": "s1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "plan first"},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}},
                ],
            },
        },
        {
            "type": "user",
            "sessionId": "s1",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [{"type": "text", "text": "nvcc fatal: unsupported gpu"}],
                    }
                ],
            },
        },
    ]
    p = tmp_path / "session.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    trace = load_trace(p)
    assert trace.format == "claude-code-jsonl"
    assert [e.kind for e in trace.events] == ["text", "text", "text", "tool_use", "tool_result"]
    err = trace.events[-1]
    assert err.is_error and "unsupported gpu" in err.text
    assert "(ERROR)" in render_trace(trace)


def test_markdown_trace_keeps_fences_whole() -> None:
    md = (
        "# Session\n\nI ran the build.\n\n```\nline 1\n\nline 2\n```\n\n"
        "Traceback (most recent call last):\n  boom\n"
    )
    trace = parse_trace_text(md, "t.md", ".md")
    assert trace.format == "markdown"
    assert any("line 1\n\nline 2" in e.text for e in trace.events)
    assert [e.is_error for e in trace.events][-1] is True


def test_long_trace_keeps_beginning_end_and_errors_within_budget() -> None:
    msgs = [{"role": "user", "content": "TASK: build a fused kernel"}]
    for i in range(400):
        msgs.append({"role": "assistant", "content": f"step {i}: " + "filler words " * 20})
        if i == 200:
            msgs.append({"role": "tool", "content": "error: MIDDLE_FAILURE undefined reference to rms_norm"})
    msgs.append({"role": "assistant", "content": 'FINAL: it works with cuda-capabilities = ["9.0"]'})
    trace = parse_trace_text(json.dumps(msgs), "t.json", ".json")
    out = render_trace(trace, budget_tokens=2000)
    from upskill_hub.skill import estimate_tokens

    assert estimate_tokens(out) <= 2000 * 1.1
    assert "TASK: build a fused kernel" in out  # beginning
    assert "FINAL: it works" in out  # end
    assert "MIDDLE_FAILURE" in out  # error from the middle
    assert "events omitted" in out
    assert "step 300" not in out  # ordinary middle dropped


def test_one_huge_tool_output_is_clipped_head_and_tail() -> None:
    big = "START " + "x" * 100_000 + " END-OF-OUTPUT"
    trace = parse_trace_text(json.dumps([{"role": "tool", "content": big}]), "t.json", ".json")
    out = render_trace(trace, budget_tokens=1000)
    assert "START" in out and "END-OF-OUTPUT" in out and "characters omitted" in out
    assert len(out) < 10_000


def test_secrets_in_traces_are_redacted() -> None:
    trace = parse_trace_text(
        json.dumps([{"role": "tool", "content": f"HF_TOKEN={SECRET}"}]), "t.json", ".json"
    )
    out = render_trace(trace)
    assert SECRET not in out and "***" in out


@pytest.mark.parametrize(
    ("content", "suffix", "needle"),
    [
        ("{not json", ".json", "not valid JSON"),
        ('{"role": "user", "content": "a"}\n{oops\n', ".jsonl", "line 2 is not valid JSON"),
        ("[]", ".json", "no messages"),
        ("   \n\n", ".md", "no messages"),
        ("[" * 100_000 + "]" * 100_000, ".json", "deeper than 256"),
        ('{"role": "user", "content": "a"}\n' + "[" * 100_000 + "]" * 100_000, ".jsonl", "line 2: JSON nests"),
    ],
)
def test_bad_traces_are_one_line_errors(tmp_path: Path, content: str, suffix: str, needle: str) -> None:
    p = tmp_path / f"t{suffix}"
    p.write_text(content)
    with pytest.raises(UpskillError) as exc:
        load_trace(p)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_missing_and_binary_traces(tmp_path: Path) -> None:
    with pytest.raises(UpskillError, match="not found"):
        load_trace(tmp_path / "nope.json")
    p = tmp_path / "bin.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UpskillError, match="not UTF-8"):
        load_trace(p)
