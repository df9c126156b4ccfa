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
command. A command counts (a skill loaded, a command run) only when it completed with exit
code 0 (:class:`~upskill_hub.lift.harness.base.PendingCalls`): a baseline's
``cat .agents/skills/NAME/SKILL.md`` that ends ``No such file or directory (exit code 1)``
stays in the transcript with its error and counts as nothing.

Codex reports its own trouble as ``error`` events and ``error`` items, and most of it is
transient: ``Reconnecting... 2/5 (...)`` while a stream is retried, ``Falling back from
WebSockets to HTTPS transport``, ``Model metadata for `X` not found``. Those are kept in the
transcript as :data:`NOTE` entries; the row is an error only when the turn failed
(``turn.failed``, or no ``turn.completed``). Codex reports tokens but no cost.

:meth:`Codex.prepare` writes the per-call ``config.toml`` that points Codex at its provider
(Codex 0.171 ignores ``OPENAI_BASE_URL``): see :func:`call_config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tomlkit

from upskill_hub._util.fsutil import write_text_atomic
from upskill_hub.lift.harness.base import (
    Adapter,
    CallSetup,
    ParsedRun,
    PendingCalls,
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
#: The transcript entry of a message Codex printed about itself (a retry, a fallback, a
#: warning): kept beside the tool calls, never counted as one.
NOTE = "(codex error)"
#: The provider entry :func:`call_config` writes (``model_provider`` names it).
PROVIDER_ID = "upskill-openai"
#: Where the OpenAI API is when ``OPENAI_BASE_URL`` is not set.
OPENAI_API_URL = "https://api.openai.com/v1"
#: What Codex prints, over and over, while it cannot connect at all: it waits for the
#: network without end (no retry limit applies), so the call would run to its timeout.
WAITING_FOR_NETWORK = "Reconnecting... waiting for network"
#: Times that line must appear before the call is ended as stalled.
STALL_REPEATS = 3


def call_config(env: dict[str, str]) -> dict[str, Any]:
    """The ``$CODEX_HOME/config.toml`` of one call: unattended, and pointed at the provider
    its variables name.

    * ``model_providers.upskill-openai``, selected by ``model_provider``, when an API key or
      ``OPENAI_BASE_URL`` is passed: Codex 0.171 reads no base URL from the environment
      (with only ``OPENAI_BASE_URL`` it calls api.openai.com, or waits "for network" without
      end where that is unreachable), and its built-in provider sends no ``OPENAI_API_KEY``
      (only a login or ``CODEX_API_KEY``). The entry is the documented custom provider:
      ``base_url`` (``OPENAI_BASE_URL``, else the OpenAI API), ``env_key`` (``OPENAI_API_KEY``,
      else ``CODEX_API_KEY``: the key stays in the environment, never in the file),
      ``wire_api = "responses"``, and ``supports_websockets = false``: plain HTTPS streaming,
      so no call starts with WebSocket attempts and their "Reconnecting..." retries.
    * ``check_for_update_on_startup = false``: a run never asks GitHub for a newer release;
    * ``analytics.enabled = false`` and ``feedback.enabled = false``: nothing goes to
      OpenAI's analytics or feedback endpoints;
    * ``history.persistence = "none"``: no prompt history file.
    """
    config: dict[str, Any] = {
        "check_for_update_on_startup": False,
        "analytics": {"enabled": False},
        "feedback": {"enabled": False},
        "history": {"persistence": "none"},
    }
    base_url = env.get("OPENAI_BASE_URL", "").strip()
    key_var = next((k for k in ("OPENAI_API_KEY", "CODEX_API_KEY") if env.get(k)), None)
    if base_url or key_var:
        provider: dict[str, Any] = {
            "name": "OpenAI API (upskill-hub: OPENAI_BASE_URL / OPENAI_API_KEY)",
            "base_url": base_url or OPENAI_API_URL,
            "wire_api": "responses",
            "supports_websockets": False,
        }
        if key_var:
            provider["env_key"] = key_var
        config["model_provider"] = PROVIDER_ID
        config["model_providers"] = {PROVIDER_ID: provider}
    return config


@dataclass(frozen=True)
class Codex(Adapter):
    def prepare(self, call: CallSetup) -> None:
        """Write :func:`call_config` into a ``CODEX_HOME`` inside the call's throwaway home.

        Left alone: with ``--agent-real-home`` the user's own ``~/.codex`` (its login and its
        config decide the provider; upskill-hub never writes there), and a ``CODEX_HOME``
        passed with ``--agent-env`` (a config folder the user prepared on purpose).
        """
        if call.real_home or call.env.get("CODEX_HOME"):
            return
        home = call.home / ".codex"
        home.mkdir(parents=True, exist_ok=True)
        write_text_atomic(home / "config.toml", tomlkit.dumps(call_config(call.env)))
        call.env["CODEX_HOME"] = str(home)

    def options(self, exe: str, model: str | None) -> list[str]:
        cmd = [exe, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"]
        if model:
            cmd += ["--model", model]
        return [*cmd, "-"]  # "-": read the prompt from stdin

    def stalled(self, stdout_tail: bytes) -> str | None:
        """Codex cannot connect to its model endpoint and waits for the network without end: it
        printed ``Reconnecting... waiting for network`` :data:`STALL_REPEATS` times (one such
        line can be a blip it recovers from)."""
        if stdout_tail.count(WAITING_FOR_NETWORK.encode()) < STALL_REPEATS:
            return None
        return (
            f"{self.name} cannot connect to its model endpoint and waits for the network without end "
            "(it printed 'Reconnecting... waiting for network'); check that OPENAI_BASE_URL names a "
            "server that is up and reachable from this machine"
        )

    def parse(self, stdout: str) -> ParsedRun:
        events = json_events(stdout, self.name)
        if not any(e.get("type") == "thread.started" for e in events):
            raise UnknownOutput(f"{self.name}: no 'thread.started' event in the output")
        run = ParsedRun(text="", tool_calls=0)
        done_turn = False
        failed: str | None = None  # turn.failed's message
        last_error: str | None = None  # the last error event's message
        calls = TranscriptBuilder()
        pending = PendingCalls()
        for ev in events:
            kind = ev.get("type")
            if kind not in _KNOWN_EVENTS:
                continue  # newer event kinds carry nothing we grade on
            if kind in ("item.started", "item.updated", "item.completed"):
                item = dict_of(ev.get("item"))
                _record(calls, item, done=kind == "item.completed")
                _track(run, pending, item, done=kind == "item.completed")
            if kind == "item.completed":
                item = dict_of(ev.get("item"))
                itype = item.get("type", item.get("item_type"))
                if itype == "agent_message" and isinstance(item.get("text"), str):
                    run.text = item["text"]
                elif itype in _TOOL_ITEMS:
                    run.tool_calls = (run.tool_calls or 0) + 1
                elif itype == "error":
                    _note(calls, item.get("message"))
            elif kind == "turn.completed":
                done_turn = True
                u = dict_of(ev.get("usage"))
                run.input_tokens = add(run.input_tokens, as_int(u.get("input_tokens")))
                run.output_tokens = add(run.output_tokens, as_int(u.get("output_tokens")))
                run.cached_tokens = add(run.cached_tokens, as_int(u.get("cached_input_tokens")))
            elif kind == "turn.failed":
                err = dict_of(ev.get("error")).get("message")
                failed = err if isinstance(err, str) and err else kind
            elif kind == "error":
                err = ev.get("message", dict_of(ev.get("error")).get("message"))
                last_error = err if isinstance(err, str) and err else kind
                _note(calls, last_error)
        # The row errs only when the turn failed: retries that ended in a completed turn are notes.
        if failed is not None:
            run.error = f"{self.name}: {failed}"
        elif not done_turn:
            if last_error is None:
                raise UnknownOutput(f"{self.name}: the output ends without 'turn.completed' or 'turn.failed'")
            run.error = f"{self.name}: {last_error}"
        run.transcript = calls.build()
        return run


def _ok(item: dict[str, Any]) -> bool:
    """A completed tool item that succeeded: a command only with exit code 0."""
    if item.get("status") != "completed":
        return False
    if item.get("type", item.get("item_type")) == "command_execution":
        code = item.get("exit_code")
        return isinstance(code, int) and not isinstance(code, bool) and code == 0
    return True


def _track(run: ParsedRun, pending: PendingCalls, item: dict[str, Any], *, done: bool) -> None:
    """Count a command (``run.commands``) once Codex reports that it succeeded."""
    if item.get("type", item.get("item_type")) != "command_execution":
        return
    command = item.get("command")
    item_id = item.get("id")
    if not isinstance(command, str):
        return
    if not isinstance(item_id, str) or not item_id:  # no id to pair: judged on its completed form alone
        if done and _ok(item):
            run.commands.append(command)
        return
    pending.add(item_id, "command_execution", {"command": command})
    if done:
        got = pending.settle(item_id, _ok(item))
        if got is not None:
            run.commands.append(got[1]["command"])


def _note(calls: TranscriptBuilder, message: Any) -> None:
    """A message Codex printed about itself, kept in the transcript as a failed :data:`NOTE`."""
    text = message if isinstance(message, str) and message else "(no message)"
    index = calls.call(NOTE, {"message": text}, kind="other")
    calls.result(None, text, error=True, index=index)


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
