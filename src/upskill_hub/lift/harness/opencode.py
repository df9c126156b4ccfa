"""OpenCode: ``opencode run --format json -- PROMPT``.

The prompt is the last argument, after ``--``: text such as ``--dangerously-...`` stays a
message word and never becomes an option.

``opencode run`` is OpenCode's non-interactive mode; ``--format json`` prints one JSON event
per line, each ``{type, timestamp, sessionID, part}``: ``step_start``, ``text``
(``part.text``), ``tool_use`` (``part.tool``, ``part.state.input``), ``step_finish``
(``part.tokens`` with ``input``, ``output``, ``reasoning``, ``cache.read``/``cache.write``;
``part.cost``) and ``error``. The answer is the text of the last step.

The transcript has one call per ``callID`` (``part.tool``, ``part.state.input``), with
``state.output`` (or ``state.error``) once its ``status`` is ``completed`` (or ``error``).

The skill counts as loaded on the ``skill`` tool with its name, or a ``read`` of the
installed ``SKILL.md``. OpenCode reports tokens and, for priced models, the cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from upskill_hub.lift.harness.base import (
    Adapter,
    ParsedRun,
    UnknownOutput,
    add,
    as_cost,
    as_int,
    dict_of,
    json_events,
)
from upskill_hub.session.transcript import TranscriptBuilder


@dataclass(frozen=True)
class OpenCode(Adapter):
    def options(self, exe: str, model: str | None) -> list[str]:
        cmd = [exe, "run", "--format", "json"]
        if model:
            cmd += ["--model", model]
        return cmd

    def parse(self, stdout: str) -> ParsedRun:
        events = json_events(stdout, self.name)
        if not any(e.get("type") == "step_finish" for e in events) and not any(
            e.get("type") == "error" for e in events
        ):
            raise UnknownOutput(f"{self.name}: no 'step_finish' event in the output")
        run = ParsedRun(text="", tool_calls=0, turns=0)
        step_text: list[str] = []
        # The answer: the text of the last finished step, joined once at the end (joining at
        # every step_finish would cost steps × text on a stream of repeated step_finish events).
        answer: tuple[list[str], int] | None = None
        cost: float | None = None
        seen_calls: set[str] = set()
        calls = TranscriptBuilder()
        for ev in events:
            kind, part = ev.get("type"), dict_of(ev.get("part"))
            if kind == "step_start":
                step_text = []
            elif kind == "text" and isinstance(part.get("text"), str):
                step_text.append(part["text"])
            elif kind == "tool_use":
                call_id = str(part.get("callID", part.get("id", len(seen_calls))))
                state = dict_of(part.get("state"))
                if call_id not in seen_calls:
                    seen_calls.add(call_id)
                    run.tool_calls = (run.tool_calls or 0) + 1
                    _tool(run, str(part.get("tool", "")), dict_of(state.get("input")))
                    calls.call(part.get("tool"), state.get("input"), call_id)
                if state.get("status") in ("completed", "error"):
                    failed = state.get("status") == "error"
                    calls.result(call_id, state.get("error") if failed else state.get("output"), error=failed)
            elif kind == "step_finish":
                run.turns = (run.turns or 0) + 1
                tok = dict_of(part.get("tokens"))
                cache = dict_of(tok.get("cache"))
                inp = as_int(tok.get("input"))
                if inp is not None:
                    inp += (as_int(cache.get("read")) or 0) + (as_int(cache.get("write")) or 0)
                out = as_int(tok.get("output"))
                if out is not None:
                    out += as_int(tok.get("reasoning")) or 0
                run.input_tokens = add(run.input_tokens, inp)
                run.output_tokens = add(run.output_tokens, out)
                run.cached_tokens = add(run.cached_tokens, as_int(cache.get("read")))
                c = as_cost(part.get("cost"), "part.cost")
                cost = c if cost is None else (cost if c is None else cost + c)
                if step_text:
                    answer = (step_text, len(step_text))
            elif kind == "error":
                err = dict_of(ev.get("error"))
                msg = dict_of(err.get("data")).get("message") or err.get("message") or err.get("name")
                run.error = f"{self.name}: {msg if isinstance(msg, str) else 'error'}"
        if answer is not None:
            run.text = "".join(answer[0][: answer[1]])
        # Each step is at most the cap, so the sum stays finite; the run as a whole is one call.
        run.cost_usd = as_cost(cost, "the sum of part.cost")
        run.transcript = calls.build()
        return run


def _tool(run: ParsedRun, name: str, args: dict[str, Any]) -> None:
    if name == "skill" and isinstance(args.get("name"), str):
        run.skill_tool.append(args["name"])
    elif name == "read":
        path = args.get("filePath", args.get("file_path"))
        if isinstance(path, str):
            run.reads.append(path)
    elif name == "bash" and isinstance(args.get("command"), str):
        run.commands.append(args["command"])


ADAPTER = OpenCode(
    name="opencode",
    binary="opencode",
    skills_folder=".opencode/skills",
    user_skill_dirs=("~/.config/opencode/skills", "~/.claude/skills", "~/.agents/skills"),
    env_keys=("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
              "OPENROUTER_API_KEY", "GEMINI_API_KEY"),
    install_hint="npm install -g opencode-ai",
    billing="the key of the provider its model uses (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) or `opencode auth login`",
)  # fmt: skip
