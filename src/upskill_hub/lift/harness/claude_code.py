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
installed ``SKILL.md`` is read (skill-creator's trigger eval uses the same two signals), and
only when that call's ``tool_result`` is not ``is_error``: a model that asks for an absent
skill gets ``<tool_use_error>Unknown skill: NAME</tool_use_error>`` with ``is_error: true``,
which the transcript keeps and nothing counts (:class:`~upskill_hub.lift.harness.base.PendingCalls`).
The same rule holds for files read and commands run.

Edits need permission in ``-p`` mode: the throwaway workspace runs with
``--permission-mode bypassPermissions``. As root (containers, HF Jobs) the CLI refuses that
mode ("--dangerously-skip-permissions cannot be used with root/sudo privileges") unless
``IS_SANDBOX=1`` says it runs in a sandbox, which the throwaway workspace is:
:meth:`ClaudeCode.prepare` sets it for root. It also turns off what would reach past the
provider (:data:`UNATTENDED_ENV`); the empty throwaway home needs no config file (``-p``
skips onboarding and the trust dialog).

Tokens and cost: ``result.usage`` counts only the main conversation, while
``total_cost_usd`` also pays for side calls (a session title, a subagent on another model);
``modelUsage`` counts them all, per model. The row's tokens are ``modelUsage`` summed over
its models when present (so tokens and cost describe the same calls), else ``usage``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from upskill_hub.lift.harness.base import (
    Adapter,
    CallSetup,
    ParsedRun,
    PendingCalls,
    UnknownOutput,
    as_cost,
    as_int,
    dict_of,
    json_events,
)
from upskill_hub.session.transcript import TranscriptBuilder

#: Set in every call (unless passed with another value): no traffic but the model calls (no
#: telemetry, error reports, feature flags or update checks, which go to api.anthropic.com
#: whatever ``ANTHROPIC_BASE_URL`` says), and no self-update of the CLI between calls.
UNATTENDED_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def _is_root() -> bool:
    geteuid = getattr(os, "geteuid", None)  # absent on Windows, where there is no root check
    return geteuid is not None and geteuid() == 0


@dataclass(frozen=True)
class ClaudeCode(Adapter):
    def prepare(self, call: CallSetup) -> None:
        """Variables that keep the CLI unattended and off the network, and ``IS_SANDBOX=1`` as
        root (the CLI's own word for "this is a sandbox": without it, it refuses
        ``bypassPermissions`` as root). Values passed with ``--agent-env`` win."""
        for name, value in UNATTENDED_ENV.items():
            call.env.setdefault(name, value)
        if _is_root():
            call.env.setdefault("IS_SANDBOX", "1")

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
        _tokens(run, result)
        cost_key = "total_cost_usd" if "total_cost_usd" in result else "cost_usd"
        run.cost_usd = as_cost(result.get(cost_key), f"result.{cost_key}")
        run.turns = as_int(result.get("num_turns"))
        if result.get("is_error") is True or str(result.get("subtype", "success")).startswith("error"):
            subtype = str(result.get("subtype") or "")
            said = subtype if subtype.startswith("error") else "an error"  # is_error with subtype "success"
            run.error = f"{self.name} reported {said}: {answer or ''}".strip() + _api_error(result, events)
        tool_calls = 0
        calls = TranscriptBuilder()
        pending = PendingCalls()
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
                    pending.add(block.get("id"), str(block.get("name", "")), dict_of(block.get("input")))
                    calls.call(block.get("name"), block.get("input"), block.get("id"))
                elif ev["type"] == "user" and block.get("type") == "tool_result":
                    failed = block.get("is_error") is True
                    calls.result(block.get("tool_use_id"), block.get("content"), error=failed)
                    done = pending.settle(block.get("tool_use_id"), ok=not failed)
                    if done is not None:  # only a call the CLI reports as successful counts
                        _tool(run, *done)
        # Tool calls are only visible in the event stream, not in the lone result object.
        run.tool_calls = tool_calls if len(events) > 1 else None
        if len(events) <= 1:
            calls.set_missing(f"{self.name}'s lone result object shows no tool calls (stream-json does)")
        run.transcript = calls.build()
        return run


def _tokens(run: ParsedRun, result: dict[str, Any]) -> None:
    """Tokens of every model call the run paid for: ``modelUsage`` summed over its models
    (what ``total_cost_usd`` prices, side calls included), else the main ``usage``."""
    per_model = [dict_of(u) for u in dict_of(result.get("modelUsage")).values()]
    if per_model and all(as_int(u.get("inputTokens")) is not None for u in per_model):
        keys = ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "outputTokens")
        uncached, read, write, out = (sum(as_int(u.get(k)) or 0 for u in per_model) for k in keys)
    else:
        usage = dict_of(result.get("usage"))
        if as_int(usage.get("input_tokens")) is None:
            run.output_tokens = as_int(usage.get("output_tokens"))
            return
        keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        uncached, read, write = (as_int(usage.get(k)) or 0 for k in keys)
        out = as_int(usage.get("output_tokens"))
    run.input_tokens, run.cached_tokens, run.output_tokens = uncached + read + write, read, out


def _api_error(result: dict[str, Any], events: list[dict[str, Any]]) -> str:
    """What the run says about a failed API call, for its error line: the HTTP status
    (``api_error_status``, or the last ``api_retry`` event's), the retries, and what to check
    (a wrong key or base URL shows as a run of retries, then the error)."""
    tries = [e for e in events if e.get("type") == "system" and e.get("subtype") == "api_retry"]
    status = as_int(result.get("api_error_status"))
    if status is None and tries:
        status = as_int(tries[-1].get("error_status"))
    if status is None and not tries:
        return ""
    kind = tries[-1].get("error") if tries and isinstance(tries[-1].get("error"), str) else None
    said = f"HTTP {status}" if status is not None else "no answer"
    said += f" ({kind})" if kind else ""
    if tries:
        said += f" after {len(tries)} retries"
    if status in (401, 403):
        said += ": check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
    elif status is None:
        said += ": check that ANTHROPIC_BASE_URL is reachable"
    return f" (the API gave {said})"


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
