"""Codex: ``codex exec --json --skip-git-repo-check --sandbox workspace-write -``, prompt on stdin.

``codex exec`` is Codex's documented non-interactive mode; its prompt argument ``-`` reads
the instructions from standard input, so a case's text never reaches the option parser; ``--json`` prints JSON Lines
events: ``thread.started``, ``turn.started``, ``item.started`` / ``item.updated`` /
``item.completed`` (items of type ``agent_message``, ``reasoning``, ``command_execution``,
``file_change``, ``mcp_tool_call``, ``web_search``, ``todo_list``, ``error``),
``turn.completed`` with ``usage`` (``input_tokens``, ``cached_input_tokens``,
``output_tokens``), ``turn.failed`` and ``error``. The answer is the last agent message.

Codex has no skill tool: it lists the skills it found and opens a ``SKILL.md`` with a shell
command, so the skill counts as loaded when a command names the installed file. Codex
reports tokens but no cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from upskill_hub.lift.harness.base import (
    Adapter,
    ParsedRun,
    UnknownOutput,
    add,
    as_int,
    dict_of,
    json_events,
)

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
        for ev in events:
            kind = ev.get("type")
            if kind not in _KNOWN_EVENTS:
                continue  # newer event kinds carry nothing we grade on
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
        return run


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
