"""Codex: ``codex exec --json --skip-git-repo-check --sandbox workspace-write -``, prompt on stdin.

``codex exec`` is Codex's documented non-interactive mode; its prompt argument ``-`` reads
the instructions from standard input, so a case's text never reaches the option parser; ``--json`` prints JSON Lines
events: ``thread.started``, ``turn.started``, ``item.started`` / ``item.updated`` /
``item.completed`` (items of type ``agent_message``, ``reasoning``, ``command_execution``,
``file_change``, ``mcp_tool_call``, ``web_search``, ``todo_list``, ``error``),
``turn.completed`` with ``usage`` (``input_tokens``, ``cached_input_tokens``,
``output_tokens``), ``turn.failed`` and ``error``. The answer is the last agent message.

The transcript has one call per tool item (``command_execution`` with its ``command``,
``file_change`` with its ``changes``, ``web_search`` with its ``query``, an MCP call under
its ``tool`` name with its ``arguments``), recorded when first seen and given its result
(aggregated output and exit code, status, MCP result or error) when completed.

Codex has no skill tool: it lists the skills it found and opens a ``SKILL.md`` with a shell
command, so the skill counts as loaded when a command names the installed file. Codex
reports tokens but no cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from upskill_hub.lift.harness.base import (
    Adapter,
    ParsedRun,
    UnknownOutput,
    add,
    as_int,
    dict_of,
    json_events,
)
from upskill_hub.session.transcript import TranscriptBuilder

#: Item types that are the agent acting (the rest are its messages and thoughts).
_TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
_KNOWN_EVENTS = frozenset(
    {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started", "item.updated",
     "item.completed", "error"}
)  # fmt: skip


@dataclass(frozen=True)
class Codex(Adapter):
    def options(self, exe: str, model: str | None) -> list[str]:
        cmd = [exe, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"]
        if model:
            cmd += ["--model", model]
        return [*cmd, "-"]  # "-": read the prompt from stdin

    def parse(self, stdout: str) -> ParsedRun:
        events = json_events(stdout, self.name)
        if not any(e.get("type") == "thread.started" for e in events):
            raise UnknownOutput(f"{self.name}: no 'thread.started' event in the output")
        run = ParsedRun(text="", tool_calls=0)
        done_turn = False
        calls = TranscriptBuilder()
        for ev in events:
            kind = ev.get("type")
            if kind not in _KNOWN_EVENTS:
                continue  # newer event kinds carry nothing we grade on
            if kind in ("item.started", "item.updated", "item.completed"):
                _record(calls, dict_of(ev.get("item")), done=kind == "item.completed")
            if kind == "item.completed":
                item = dict_of(ev.get("item"))
                itype = item.get("type", item.get("item_type"))
                if itype == "agent_message" and isinstance(item.get("text"), str):
                    run.text = item["text"]
                elif itype in _TOOL_ITEMS:
                    run.tool_calls = (run.tool_calls or 0) + 1
                    if itype == "command_execution" and isinstance(item.get("command"), str):
                        run.commands.append(item["command"])
            elif kind == "turn.completed":
                done_turn = True
                u = dict_of(ev.get("usage"))
                run.input_tokens = add(run.input_tokens, as_int(u.get("input_tokens")))
                run.output_tokens = add(run.output_tokens, as_int(u.get("output_tokens")))
                run.cached_tokens = add(run.cached_tokens, as_int(u.get("cached_input_tokens")))
            elif kind in ("turn.failed", "error"):
                err = dict_of(ev.get("error")).get("message") or ev.get("message")
                run.error = f"{self.name}: {err if isinstance(err, str) else kind}"
        if not done_turn and run.error is None:
            raise UnknownOutput(f"{self.name}: the output ends without 'turn.completed' or 'turn.failed'")
        run.transcript = calls.build()
        return run


def _record(calls: TranscriptBuilder, item: dict[str, Any], *, done: bool) -> None:
    """A tool item in the transcript: recorded when first seen, its result when completed."""
    itype = item.get("type", item.get("item_type"))
    if itype not in _TOOL_ITEMS:
        return
    item_id = item.get("id")
    has_id = isinstance(item_id, str) and bool(item_id)
    index = None
    if not has_id and not done:
        return  # an item without an id is recorded once, when completed
    if not calls.known(item_id):
        kind = None
        if itype == "mcp_tool_call":
            name, args, kind = item.get("tool") or "mcp_tool_call", item.get("arguments"), "mcp"
        else:
            key = {"command_execution": "command", "file_change": "changes", "web_search": "query"}[itype]
            name, args = itype, {key: item.get(key)}
        index = calls.call(name, args, item_id if has_id else None, kind=kind)
    if not done:
        return
    status = item.get("status")
    failed = status in ("failed", "declined")
    if itype == "command_execution":
        code = item.get("exit_code")
        failed = failed or (isinstance(code, int) and code != 0)
        output: Any = item.get("aggregated_output")
        if isinstance(code, int) and not isinstance(code, bool):
            output = f"{output if isinstance(output, str) else ''}\n(exit code {code})".lstrip("\n")
    elif itype == "mcp_tool_call":
        err = dict_of(item.get("error")).get("message")
        output = err if isinstance(err, str) else item.get("result")
    else:
        output = status if isinstance(status, str) else None
    if output is not None:
        calls.result(item_id, output, error=failed, index=index)


ADAPTER = Codex(
    name="codex",
    binary="codex",
    skills_folder=".agents/skills",
    user_skill_dirs=("~/.agents/skills", "~/.codex/skills"),
    env_keys=("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"),
    install_hint="npm install -g @openai/codex",
    billing="OPENAI_API_KEY / CODEX_API_KEY (API billing) or, with --agent-real-home, your ChatGPT plan login",
    prompt_via="stdin",
)
