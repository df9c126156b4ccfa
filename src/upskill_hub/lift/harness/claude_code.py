"""Claude Code: ``claude -p --output-format stream-json --verbose`` with the prompt on stdin.

Documented for scripting ("Run Claude Code programmatically"): ``-p`` runs one prompt
non-interactively, read from standard input when no prompt argument is given (the prompt
never sits on the command line, where text such as ``--dangerously-skip-permissions`` or a
subcommand name would be parsed as one); ``stream-json`` (which needs ``--verbose`` with ``-p``) prints one JSON
event per line: ``system``/``init``, ``assistant`` messages whose ``content`` holds ``text``
and ``tool_use`` blocks, ``user`` messages with ``tool_result`` blocks, and a final
``result`` event with ``result`` (the answer), ``num_turns``, ``usage`` and
``total_cost_usd``. ``--output-format json`` (the single ``result`` object, or with
``--verbose`` an array of all events) is read too.

The transcript pairs each ``tool_use`` block (``name``, ``input``, ``id``) with the
``tool_result`` block of the same ``tool_use_id`` (its ``content``, text or text blocks,
and ``is_error``); the lone ``result`` object shows no calls, so its transcript is missing.

The skill counts as loaded when the ``Skill`` tool is called with its name, or when the
installed ``SKILL.md`` is read (skill-creator's trigger eval uses the same two signals).
Edits need permission in ``-p`` mode: the throwaway workspace runs with
``--permission-mode bypassPermissions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from upskill_hub.lift.harness.base import (
    Adapter,
    ParsedRun,
    UnknownOutput,
    as_cost,
    as_int,
    dict_of,
    json_events,
)
from upskill_hub.session.transcript import TranscriptBuilder


@dataclass(frozen=True)
class ClaudeCode(Adapter):
    def options(self, exe: str, model: str | None) -> list[str]:
        cmd = [exe, "-p", "--output-format", "stream-json", "--verbose"]
        cmd += ["--permission-mode", "bypassPermissions"]
        if model:
            cmd += ["--model", model]
        return cmd

    def parse(self, stdout: str) -> ParsedRun:
        events = json_events(stdout, self.name)
        result = next((e for e in reversed(events) if e.get("type") == "result"), None)
        if result is None:
            raise UnknownOutput(f"{self.name}: no 'result' event in the output")
        answer = result.get("result")
        if answer is not None and not isinstance(answer, str):
            raise UnknownOutput(f"{self.name}: the result event's 'result' is not text")
        run = ParsedRun(text=answer or "")
        usage = dict_of(result.get("usage"))
        uncached = as_int(usage.get("input_tokens"))
        if uncached is not None:
            read = as_int(usage.get("cache_read_input_tokens")) or 0
            write = as_int(usage.get("cache_creation_input_tokens")) or 0
            run.input_tokens, run.cached_tokens = uncached + read + write, read
        run.output_tokens = as_int(usage.get("output_tokens"))
        cost_key = "total_cost_usd" if "total_cost_usd" in result else "cost_usd"
        run.cost_usd = as_cost(result.get(cost_key), f"result.{cost_key}")
        run.turns = as_int(result.get("num_turns"))
        if result.get("is_error") is True or str(result.get("subtype", "success")).startswith("error"):
            run.error = f"{self.name} reported {result.get('subtype') or 'an error'}: {answer or ''}".strip()
        tool_calls = 0
        calls = TranscriptBuilder()
        for ev in events:
            if ev.get("type") == "system" and ev.get("subtype") == "init":
                run.model = ev.get("model") if isinstance(ev.get("model"), str) else None
            if ev.get("type") not in ("assistant", "user"):
                continue
            content = dict_of(ev.get("message")).get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if ev["type"] == "assistant" and block.get("type") == "tool_use":
                    tool_calls += 1
                    _tool(run, str(block.get("name", "")), dict_of(block.get("input")))
                    calls.call(block.get("name"), block.get("input"), block.get("id"))
                elif ev["type"] == "user" and block.get("type") == "tool_result":
                    failed = block.get("is_error") is True
                    calls.result(block.get("tool_use_id"), block.get("content"), error=failed)
        # Tool calls are only visible in the event stream, not in the lone result object.
        run.tool_calls = tool_calls if len(events) > 1 else None
        if len(events) <= 1:
            calls.set_missing(f"{self.name}'s lone result object shows no tool calls (stream-json does)")
        run.transcript = calls.build()
        return run


def _tool(run: ParsedRun, name: str, args: dict[str, Any]) -> None:
    if name == "Skill":
        skill = args.get("skill", args.get("command"))
        if isinstance(skill, str):
            run.skill_tool.append(skill.strip().lstrip("/"))
    elif name in ("Read", "NotebookRead") and isinstance(args.get("file_path"), str):
        run.reads.append(args["file_path"])
    elif name == "Bash" and isinstance(args.get("command"), str):
        run.commands.append(args["command"])


ADAPTER = ClaudeCode(
    name="claude-code",
    binary="claude",
    skills_folder=".claude/skills",
    user_skill_dirs=("~/.claude/skills",),
    env_keys=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN"),
    install_hint="npm install -g @anthropic-ai/claude-code",
    billing="ANTHROPIC_API_KEY (API billing) or, with --agent-real-home, your Claude subscription login",
    prompt_via="stdin",
)
