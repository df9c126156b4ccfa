"""Gemini CLI: ``gemini --output-format stream-json --approval-mode yolo --prompt=PROMPT``.

The prompt is glued to ``--prompt=`` (the long form of ``-p``): the parser keeps it as that
option's value whatever it starts with, so it never becomes a flag or a subcommand.

Headless mode (``-p``) documents two JSON formats, both read here:

* ``--output-format json``: one object ``{session_id, response, stats, error?}``; ``stats``
  has per-model ``tokens`` (``prompt``, ``candidates``, ``cached``, ...) and ``tools``
  (``totalCalls``, ``byName``);
* ``--output-format stream-json`` (what the harness runs, since only it shows each tool
  call's arguments): ``init``, ``message`` (assistant chunks with ``delta``), ``tool_use``
  (``tool_name``, ``parameters``), ``tool_result``, ``error`` and ``result`` with ``stats``
  (``input_tokens``, ``output_tokens``, ``cached``, ``tool_calls``).

The transcript pairs each ``tool_use`` with the ``tool_result`` of the same ``tool_id``
(``output``, or ``error.message`` when ``status`` is ``error``); the single ``json`` object
lists tool counts only, so its transcript is missing.

A call counts (a skill loaded, a file read, a command run) only when its ``tool_result`` says
``"status": "success"`` (:class:`~upskill_hub.lift.harness.base.PendingCalls`): a baseline's
``activate_skill`` of an absent skill (``invalid_tool_params``) or ``read_file`` of a missing
``SKILL.md`` (``file_not_found``) is kept in the transcript with its error and counts as
nothing. The skill counts as loaded on a successful ``activate_skill`` with its name, or a
``read_file`` of the installed ``SKILL.md``. Gemini CLI reports tokens but no cost.

Its ``tool_result`` carries the call's *display* text, not what the model got: a successful
``read_file`` shows ``""`` (the file's content goes to the model only), and a shell command's
exit code is not shown when it printed something (its status stays ``success``). An empty
result reads :data:`NO_OUTPUT_SHOWN` in the transcript, so nobody mistakes it for an empty file.

:meth:`Gemini.prepare` makes the CLI run unattended against the provider its variables name
(Gemini CLI 0.61): see its docstring.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from upskill_hub._util import safejson
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
from upskill_hub.session.transcript import Transcript, TranscriptBuilder

#: The transcript's result of a successful call whose ``tool_result`` output is empty.
NO_OUTPUT_SHOWN = "(Gemini CLI does not show this tool's output)"


def user_settings(env: dict[str, str]) -> dict[str, Any]:
    """The ``~/.gemini/settings.json`` of one call: unattended, offline but for the model.

    * ``security.auth.selectedType``: without it, ``GOOGLE_GEMINI_BASE_URL`` alone makes the CLI
      pick its ``gateway`` auth type and exit 41 (``Invalid auth method selected.``); the
      documented pairing is ``gemini-api-key`` + ``GEMINI_API_KEY`` (+ the base URL), or
      ``vertex-ai`` when ``GOOGLE_GENAI_USE_VERTEXAI=true``. With neither, the CLI chooses
      (and says why it cannot, in its own words).
    * usage statistics and telemetry off: nothing goes to Google's logging endpoints, and no
      installation id is sent to the provider in a header;
    * no auto-update and no update notice: a run never touches npm.
    """
    settings: dict[str, Any] = {
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    if env.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() == "true":
        settings["security"] = {"auth": {"selectedType": "vertex-ai"}}
    elif env.get("GEMINI_API_KEY"):
        settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    return settings


@dataclass(frozen=True)
class Gemini(Adapter):
    def prepare(self, call: CallSetup) -> None:
        """Trust the throwaway project and write the user settings into the throwaway home.

        * ``GEMINI_CLI_TRUST_WORKSPACE=true`` (the way Gemini CLI documents for headless runs,
          for the session only; set unless ``--agent-env`` passed a value): in an untrusted
          folder the CLI exits 55, and would downgrade ``--approval-mode yolo`` to ``default``.
          A ``trustedFolders.json`` would do the same but is a file in the user's home, which
          ``--agent-real-home`` must never change.
        * ``<home>/.gemini/settings.json`` (:func:`user_settings`), in the call's own home only:
          with ``--agent-real-home`` the user's own settings and login apply, untouched. A
          *system* settings file (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``) is not used: the CLI
          skips it when any folder above it is world-writable (``/tmp``).
        """
        call.env.setdefault("GEMINI_CLI_TRUST_WORKSPACE", "true")
        if call.real_home:
            return
        folder = call.home / ".gemini"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # the owner's alone, like the file
        text = json.dumps(user_settings(call.env), indent=2) + "\n"
        write_text_atomic(folder / "settings.json", text, mode=0o600, fsync=False)

    def options(self, exe: str, model: str | None) -> list[str]:
        cmd = [exe, "--output-format", "stream-json", "--approval-mode", "yolo"]
        if model:
            cmd += ["--model", model]
        return cmd

    def parse(self, stdout: str) -> ParsedRun:
        text = stdout.strip()
        if text.startswith("{"):  # `--output-format json` prints one (indented) object
            try:
                obj = safejson.loads(text)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and "type" not in obj and ({"response", "stats", "error"} & set(obj)):
                return self._parse_json(obj)
        return self._parse_stream(json_events(stdout, self.name))

    def _parse_json(self, obj: dict[str, Any]) -> ParsedRun:
        answer = obj.get("response")
        if answer is not None and not isinstance(answer, str):
            raise UnknownOutput(f"{self.name}: 'response' is not text")
        run = ParsedRun(text=answer or "")
        stats = dict_of(obj.get("stats"))
        for m in dict_of(stats.get("models")).values():
            tok = dict_of(dict_of(m).get("tokens"))
            run.input_tokens = add(run.input_tokens, as_int(tok.get("prompt")))
            run.output_tokens = add(run.output_tokens, as_int(tok.get("candidates")))
            run.cached_tokens = add(run.cached_tokens, as_int(tok.get("cached")))
        tools = dict_of(stats.get("tools"))
        run.tool_calls = as_int(tools.get("totalCalls"))
        run.transcript = Transcript.unavailable(
            f"{self.name} --output-format json shows tool counts only, not the calls (stream-json does)"
        )
        if "error" in obj:
            run.error = f"{self.name}: {dict_of(obj['error']).get('message') or 'error'}"
        return run

    def _parse_stream(self, events: list[dict[str, Any]]) -> ParsedRun:
        result = next((e for e in reversed(events) if e.get("type") == "result"), None)
        if result is None:
            raise UnknownOutput(f"{self.name}: no 'result' event in the output")
        run = ParsedRun(text="", tool_calls=0)
        parts: list[str] = []
        calls = TranscriptBuilder()
        pending = PendingCalls()
        for ev in events:
            kind = ev.get("type")
            if kind == "init" and isinstance(ev.get("model"), str):
                run.model = ev["model"]
            elif kind == "message" and ev.get("role") == "assistant" and isinstance(ev.get("content"), str):
                if not ev.get("delta"):
                    parts.clear()  # a whole message replaces the chunks before it
                parts.append(ev["content"])
            elif kind == "tool_use":
                run.tool_calls = (run.tool_calls or 0) + 1
                pending.add(ev.get("tool_id"), str(ev.get("tool_name", "")), dict_of(ev.get("parameters")))
                calls.call(ev.get("tool_name"), ev.get("parameters"), ev.get("tool_id"))
                parts.clear()  # the answer is what the model says after its last tool call
            elif kind == "tool_result":
                failed = ev.get("status") != "success"
                settled = pending.settle(ev.get("tool_id"), not failed)
                if settled is not None:
                    _tool(run, *settled)
                calls.result(ev.get("tool_id"), _shown_result(ev, failed), error=failed)
        run.text = "".join(parts)
        run.transcript = calls.build()
        stats = dict_of(result.get("stats"))
        run.input_tokens = as_int(stats.get("input_tokens"))
        run.output_tokens = as_int(stats.get("output_tokens"))
        run.cached_tokens = as_int(stats.get("cached"))
        reported = as_int(stats.get("tool_calls"))
        if reported is not None:
            run.tool_calls = reported
        if result.get("status") == "error":
            run.error = f"{self.name}: {dict_of(result.get('error')).get('message') or 'error'}"
        return run


def _shown_result(ev: dict[str, Any], failed: bool) -> Any:
    """What the transcript shows as a call's result: the error's message for a failed call
    (``read_file``'s names the path: ``File not found: /…/SKILL.md``), else the output, and
    :data:`NO_OUTPUT_SHOWN` where the CLI printed none."""
    err = dict_of(ev.get("error")).get("message")
    output = ev.get("output")
    if failed:
        return err if isinstance(err, str) and err else output
    return NO_OUTPUT_SHOWN if output is None or output == "" else output


def _tool(run: ParsedRun, name: str, args: dict[str, Any]) -> None:
    """Count one successful call: a skill activated, files read, a command run."""
    if name == "activate_skill" and isinstance(args.get("name"), str):
        run.skill_tool.append(args["name"])
    elif name in ("read_file", "read_many_files"):
        for key in ("file_path", "absolute_path", "path"):
            if isinstance(args.get(key), str):
                run.reads.append(args[key])
        paths = args.get("paths")
        run.reads += [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
    elif name == "run_shell_command" and isinstance(args.get("command"), str):
        run.commands.append(args["command"])


ADAPTER = Gemini(
    name="gemini",
    binary="gemini",
    skills_folder=".gemini/skills",
    user_skill_dirs=("~/.gemini/skills", "~/.agents/skills"),
    env_keys=("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_CLOUD_PROJECT",
              "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_VERTEXAI"),
    install_hint="npm install -g @google/gemini-cli",
    billing="GEMINI_API_KEY (API billing, free tier included) or, with --agent-real-home, your Google login",
    prompt_via="option-value", prompt_option="--prompt",
)  # fmt: skip
