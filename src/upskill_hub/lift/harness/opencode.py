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

A call counts only when OpenCode reports it as successful (:class:`PendingCalls`): the skill
is loaded on a ``completed`` ``skill`` call with its name, or a ``completed`` ``read`` of the
installed ``SKILL.md``. A model that asks for an absent skill gets
``{"status": "error", "error": "Skill \"NAME\" not found. ..."}``: kept in the transcript,
never counted. A ``bash`` call is ``completed`` whatever its exit status; one whose
``metadata.exit`` is not 0 failed. OpenCode reports tokens and, for priced models, the cost.

Provider: OpenCode runs the model through the provider its name gives (``anthropic/...``,
``openai/...``), with that provider's own key variable. :meth:`OpenCode.prepare` writes an
OpenCode config into the throwaway home that keeps the CLI unattended and offline
(no autoupdate, no sharing, no models.dev fetch: the catalogue bundled with the binary;
edits, shell commands and skills allowed without asking) and points the provider at its
documented base-URL variable when set: Anthropic Messages at ``ANTHROPIC_BASE_URL`` (the
Anthropic SDKs' convention, without ``/v1``), OpenAI Responses at ``OPENAI_BASE_URL`` (with
``/v1``). OpenCode's built-in providers speak their vendor's protocol; for an
OpenAI-compatible server (Chat Completions: vLLM, Ollama, LM Studio, a proxy) the model
``openai-compatible/MODEL`` names a provider the config defines with OpenCode's
``@ai-sdk/openai-compatible`` at ``OPENAI_BASE_URL`` with ``OPENAI_API_KEY`` (read by
OpenCode from the environment: no key is written to disk).

OpenCode writes files for itself into the project: ``.opencode/.gitignore`` whenever
``.opencode/`` exists (the installed skill), listing what it may install there for its
plugins (``package.json``, ``package-lock.json``, ``bun.lock``): :attr:`Adapter.bookkeeping`.
Its ``skill`` tool lists the skill's files with ripgrep: without ``rg`` on PATH every load
fails with "ripgrep execution failed", which ends the row with that cause and its fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub.lift.harness.base import (
    Adapter,
    CallSetup,
    ParsedRun,
    PendingCalls,
    UnknownOutput,
    add,
    as_cost,
    as_int,
    dict_of,
    json_events,
)
from upskill_hub.session.transcript import TranscriptBuilder

#: Set in every call (unless passed with another value): no self-update, no model catalogue
#: fetched from models.dev (the one bundled with the binary is used), no sharing, no language
#: server downloads; error logs on stderr, where the call's ``stderr.tail`` keeps the cause
#: that OpenCode's JSON error hides ("Unexpected server error. Check server logs").
UNATTENDED_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_PRINT_LOGS": "1",
    "OPENCODE_LOG_LEVEL": "ERROR",
}
#: Built-in provider -> the variable that holds its base URL (the vendor SDK's own name).
BASE_URL_VARS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
#: The provider the config defines for an OpenAI-compatible server (Chat Completions).
COMPATIBLE = "openai-compatible"
#: What OpenCode writes into the project for itself (``.opencode/.gitignore`` names the rest).
BOOKKEEPING = (".opencode/.gitignore", ".opencode/package.json", ".opencode/package-lock.json",
               ".opencode/bun.lock", ".opencode/node_modules/")  # fmt: skip


def config_for(model: str | None, env: dict[str, str]) -> dict[str, Any]:
    """The OpenCode config of one call: unattended, offline, and the model's provider at the
    base URL its variable names (see the module's docstring)."""
    cfg: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "skill": "allow"},
    }
    provider, _, model_id = (model or "").partition("/")
    url = env.get(BASE_URL_VARS.get(provider, ""), "") or None
    if provider == "anthropic" and url is not None:
        cfg["provider"] = {provider: {"options": {"baseURL": _with_v1(url)}}}
    elif provider == "openai" and url is not None:
        cfg["provider"] = {provider: {"options": {"baseURL": url.rstrip("/")}}}
    elif provider == COMPATIBLE and model_id:
        options: dict[str, Any] = {"apiKey": "{env:OPENAI_API_KEY}"}
        if env.get("OPENAI_BASE_URL"):
            options["baseURL"] = env["OPENAI_BASE_URL"].rstrip("/")
        cfg["provider"] = {COMPATIBLE: {
            "npm": "@ai-sdk/openai-compatible", "name": "OpenAI-compatible (upskill-hub)",
            "options": options, "models": {model_id: {"name": model_id, "tool_call": True}},
        }}  # fmt: skip
    return cfg


def _with_v1(url: str) -> str:
    """``ANTHROPIC_BASE_URL`` as the Anthropic SDKs (and Claude Code) read it, without ``/v1``;
    OpenCode's Anthropic provider wants the API root with it."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


@dataclass(frozen=True)
class OpenCode(Adapter):
    def prepare(self, call: CallSetup) -> None:
        """Write the call's OpenCode config (:func:`config_for`) into the throwaway home, and set
        the variables that keep OpenCode unattended (values passed with ``--agent-env`` win).

        Without ``--real-home`` the config is the user config ``$XDG_CONFIG_HOME/opencode/
        opencode.json`` of the throwaway home; with it, the user's own config stays as it is
        and this one is added on top through ``OPENCODE_CONFIG`` (still in the throwaway home).
        """
        for name, value in UNATTENDED_ENV.items():
            call.env.setdefault(name, value)
        text = json.dumps(config_for(call.model, call.env), indent=2) + "\n"
        if call.real_home:
            path = call.home / "opencode-harness.json"
            call.env.setdefault("OPENCODE_CONFIG", str(path))
        else:
            path = (
                Path(call.env.get("XDG_CONFIG_HOME") or call.home / ".config") / "opencode" / "opencode.json"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

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
        pending = PendingCalls()
        for ev in events:
            kind, part = ev.get("type"), dict_of(ev.get("part"))
            if kind == "step_start":
                step_text = []
            elif kind == "text" and isinstance(part.get("text"), str):
                step_text.append(part["text"])
            elif kind == "tool_use":
                call_id = str(part.get("callID", part.get("id", len(seen_calls))))
                state = dict_of(part.get("state"))
                tool = str(part.get("tool", ""))
                if call_id not in seen_calls:
                    seen_calls.add(call_id)
                    run.tool_calls = (run.tool_calls or 0) + 1
                    pending.add(call_id, tool, dict_of(state.get("input")))
                    calls.call(part.get("tool"), state.get("input"), call_id)
                status = state.get("status")
                if status in ("completed", "error"):
                    failed = status == "error" or _exit_failed(tool, state)
                    output = state.get("error") if status == "error" else state.get("output")
                    calls.result(call_id, output, error=failed)
                    done = pending.settle(call_id, ok=not failed)
                    if done is not None:  # only a call OpenCode reports as successful counts
                        _tool(run, *done)
                    if tool == "skill" and status == "error" and run.error is None:
                        run.error = _skill_tool_broken(self.name, state.get("error"))
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
                run.error = _error_line(self.name, dict_of(ev.get("error")))
        if answer is not None:
            run.text = "".join(answer[0][: answer[1]])
        # Each step is at most the cap, so the sum stays finite; the run as a whole is one call.
        run.cost_usd = as_cost(cost, "the sum of part.cost")
        run.transcript = calls.build()
        return run


def _exit_failed(tool: str, state: dict[str, Any]) -> bool:
    """A ``bash`` call is ``completed`` whatever the command's exit status (``metadata.exit``)."""
    code = dict_of(state.get("metadata")).get("exit")
    return tool == "bash" and isinstance(code, int) and not isinstance(code, bool) and code != 0


def _skill_tool_broken(cli: str, error: Any) -> str | None:
    """The row's error when the skill tool itself cannot work (every load would fail the same
    way, with or without the skill): ripgrep missing. A skill that is absent is no such case."""
    if isinstance(error, str) and "ripgrep" in error.lower():
        return (f"{cli}: its skill tool failed ({error[:200]}): OpenCode lists a skill's files with "
                "ripgrep; install `rg` on PATH (Debian/Ubuntu: apt-get install ripgrep)")  # fmt: skip
    return None


def _error_line(cli: str, err: dict[str, Any]) -> str:
    """One line for OpenCode's ``error`` event: its message, the URL it could not reach, and
    for its bare "Unexpected server error" the usual cause (OpenCode logs the real one)."""
    data = dict_of(err.get("data"))
    msg = data.get("message") or err.get("message") or err.get("name")
    line = f"{cli}: {msg if isinstance(msg, str) else 'error'}"
    url = dict_of(data.get("metadata")).get("url")
    if isinstance(url, str) and url:
        line += f" ({url})"
    if isinstance(msg, str) and msg.startswith("Unexpected server error"):
        line += ("; most often the model is unknown to OpenCode or its provider has no key: name it "
                 "PROVIDER/MODEL and pass that provider's key variable (ANTHROPIC_API_KEY, "
                 "OPENAI_API_KEY, ...); OpenCode's log line with the cause is in the call's stderr.tail")  # fmt: skip
    return line


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
    install_hint="npm install -g opencode-ai (its skill tool also needs ripgrep: apt-get install ripgrep)",
    billing="the key of the provider its model uses (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) or `opencode auth login`",
    bookkeeping=BOOKKEEPING,
)  # fmt: skip
