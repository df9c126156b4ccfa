"""A stand-in for the agent CLIs `claude`, `codex`, `gemini` and `opencode` (tests only).

Each executable the tests put on PATH runs ``main(<cli>)``. Like the real CLI it:

* answers ``--version``;
* looks for skills where that CLI looks (project folders under its working directory, then
  user folders under $HOME), and decides whether to load one: it loads a skill whose
  description shares a word of six letters or more with the prompt (a real agent asks its
  model; a fixed rule keeps the tests exact), reading the installed SKILL.md from disk;
* calls the scripted model server (Anthropic API for `claude`, OpenAI chat completions for
  the others) with the skill body in its system prompt when it loaded one;
* carries out ``WRITE <path>: <text>`` lines of the model's answer as file writes in its
  working directory (an agent acting on files), ``RUN <command>`` lines as shell commands
  run there (``/bin/sh -c``, this Python first on PATH, 30 s) and ``READ <path>`` lines as
  file reads, in the order the answer gives them;
* shows each of those tool calls with its arguments and result in its JSON output, as that
  CLI does (Claude Code's ``tool_use`` / ``tool_result`` blocks, Codex's items, Gemini's
  ``tool_use`` / ``tool_result`` events, OpenCode's ``tool_use`` parts);
* prints its run in that CLI's documented JSON output shape, with the server's token counts.

Behaviour switches (passed by the harness only through ``--agent-env``):
``FAKE_AGENT_MODE=hang`` starts a helper process, writes both pids to its own
``<pid>.pids`` file in the folder ``FAKE_AGENT_PIDDIR`` names, and never ends; ``FAKE_AGENT_MODE=nonetwork`` prints Codex's "waiting for network" error without end;
``FAKE_AGENT_MODE=garbage`` prints text that is not
the CLI's format; ``FAKE_AGENT_MODE=leak`` fails, echoing its key on stderr; ``FAKE_AGENT_VERSION`` changes what ``--version`` says;
``FAKE_AGENT_ENV_DUMP`` names a folder receiving, per call, one ``<pid>.json`` file with the
environment the CLI got (one file per process: concurrent calls never write the same file);
``FAKE_AGENT_ARGV_DUMP`` likewise receives its command line, the prompt it read and the
flags its parser accepted (a prompt parsed as a flag shows there).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

VERSIONS = {
    "claude": "2.0.14 (Claude Code)",
    "codex": "codex-cli 0.58.0",
    "gemini": "0.16.0",
    "opencode": "1.0.70",
}
PROJECT_DIRS = {
    "claude": [".claude/skills"],
    "codex": [".agents/skills", ".codex/skills"],
    "gemini": [".gemini/skills", ".agents/skills"],
    "opencode": [".opencode/skills", ".claude/skills", ".agents/skills"],
}
USER_DIRS = {
    "claude": [".claude/skills"],
    "codex": [".agents/skills", ".codex/skills"],
    "gemini": [".gemini/skills", ".agents/skills"],
    "opencode": [".config/opencode/skills", ".claude/skills", ".agents/skills"],
}
_ACTION_RE = re.compile(r"^(?:WRITE ([^:\n]+): (.*)|RUN (.+)|READ (.+))$", re.MULTILINE)


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")


def frontmatter(text: str) -> tuple[dict[str, str], str]:
    meta: dict[str, str] = {}
    if text.startswith("---\n"):
        head, _, body = text[4:].partition("\n---")
        for line in head.splitlines():
            k, _, v = line.partition(":")
            meta[k.strip()] = v.strip().strip("'\"")
        return meta, body.lstrip("-\n")
    return meta, text


def find_skills(cli: str) -> list[tuple[str, Path, str]]:
    """(name, SKILL.md path as the agent would name it, description); user folders win, like Claude Code."""
    found: dict[str, tuple[str, Path, str]] = {}
    home = Path(os.environ.get("HOME", "/nonexistent"))
    roots = [(Path.cwd(), d, True) for d in PROJECT_DIRS[cli]] + [(home, d, False) for d in USER_DIRS[cli]]
    for base, rel, project in reversed(roots):  # earlier roots override later ones
        folder = base / rel
        if not folder.is_dir():
            continue
        for skill_md in sorted(folder.glob("*/SKILL.md")):
            meta, _ = frontmatter(skill_md.read_text(encoding="utf-8"))
            name = meta.get("name", skill_md.parent.name)
            shown = Path(rel) / skill_md.parent.name / "SKILL.md" if project else skill_md
            found[name] = (name, shown, meta.get("description", ""))
    return list(found.values())


def choose(skills: list[tuple[str, Path, str]], prompt: str) -> tuple[str, Path] | None:
    words = {w for w in re.findall(r"[a-z]+", prompt.lower()) if len(w) >= 6}
    for name, path, desc in skills:
        if words & {w for w in re.findall(r"[a-z]+", desc.lower()) if len(w) >= 6}:
            return name, path
    return None


def post(url: str, body: dict, headers: dict[str, str]) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("content-type", "application/json")
    for k, v in headers.items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def ask_model(cli: str, model: str, system: str, prompt: str) -> tuple[str, int, int]:
    """(answer, input tokens, output tokens) from the scripted server."""
    if cli == "claude":
        data = post(
            os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
            {
                "model": model,
                "max_tokens": 1024,
                "system": system,
                "messages": [{"role": "user", "content": prompt}],
            },
            {"x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": "2023-06-01"},
        )
        text = "".join(b.get("text", "") for b in data["content"])
        return text, data["usage"]["input_tokens"], data["usage"]["output_tokens"]
    base = os.environ["GOOGLE_GEMINI_BASE_URL"] + "/v1" if cli == "gemini" else os.environ["OPENAI_BASE_URL"]
    key = os.environ.get("GEMINI_API_KEY" if cli == "gemini" else "OPENAI_API_KEY", "")
    data = post(
        base.rstrip("/") + "/chat/completions",
        {
            "model": model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        },
        {"authorization": f"Bearer {key}"},
    )
    return (
        data["choices"][0]["message"]["content"],
        data["usage"]["prompt_tokens"],
        data["usage"]["completion_tokens"],
    )


def _write_whole(folder: Path, name: str, text: str) -> None:
    """One file per process, renamed into place: concurrent calls never share a file, and a
    reader (the test) never sees half of one."""
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{name}.partial"
    partial.write_text(text)
    partial.rename(folder / name)


def hang() -> None:
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    _write_whole(
        Path(os.environ["FAKE_AGENT_PIDDIR"]), f"{os.getpid()}.pids", f"{os.getpid()} {helper.pid}\n"
    )
    time.sleep(3600)


#: Options each fake CLI knows, as its real parser does: those taking a value, and flags.
#: The real CLIs have the dangerous flags below; a fake that parses one records it.
VALUE_OPTS = {
    "claude": {"--output-format", "--model", "--permission-mode"},
    "codex": {"--sandbox", "--model", "-m"},
    "gemini": {"-p", "--prompt", "--output-format", "-o", "--approval-mode", "--model", "-m"},
    "opencode": {"--format", "--model", "-m"},
}
FLAG_OPTS = {
    "claude": {"-p", "--print", "--verbose", "--dangerously-skip-permissions"},
    "codex": {"--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"},
    "gemini": {"--yolo", "-y"},
    "opencode": {"--dangerously-skip-permissions"},
}


class UsageError(Exception):
    """What a real CLI's parser says (exit 2) for an option it does not know."""


def parse_args(cli: str, argv: list[str]) -> tuple[str, str | None, str, list[str]]:
    """(prompt, model, output format, flags parsed) from the CLI's own command line.

    Like the real parsers: ``--`` ends the options; ``--opt=value`` is one option with its
    value; an unknown option is a usage error; Claude Code reads its prompt from stdin when
    no argument gives one, Codex when the prompt argument is ``-``.
    """
    model, fmt, prompt = None, "json", None
    rest = list(argv)
    if cli == "codex":
        assert rest[0] == "exec" and "--json" in rest, rest
        rest = rest[1:]
    if cli == "opencode":
        assert rest[0] == "run", rest
        rest = rest[1:]
    positional: list[str] = []
    flags: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--":
            positional += rest[i + 1 :]
            break
        if not a.startswith("-") or a == "-":
            positional.append(a)
            i += 1
            continue
        name, eq, value = a.partition("=")
        if name in VALUE_OPTS[cli]:
            if not eq:
                if i + 1 >= len(rest):
                    raise UsageError(f"option {name} needs a value")
                value, i = rest[i + 1], i + 1
            i += 1
            if name in ("-p", "--prompt"):
                prompt = value
            elif name in ("--output-format", "--format", "-o"):
                fmt = value
            elif name in ("--model", "-m"):
                model = value
        elif a in FLAG_OPTS[cli]:
            flags.append(a)
            i += 1
        else:
            raise UsageError(f"unknown option {a!r}")
    if prompt is None:
        if cli == "opencode":
            prompt = " ".join(positional)
        elif positional and positional[-1] != "-":
            prompt = positional[-1]
        elif cli in ("claude", "codex"):
            prompt = sys.stdin.read()
    if not prompt:
        raise UsageError("no prompt given")
    return (
        prompt,
        model,
        fmt,
        [f for f in flags if f not in ("-p", "--print", "--verbose", "--json", "--skip-git-repo-check")],
    )


def main(cli: str) -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print(os.environ.get("FAKE_AGENT_VERSION", VERSIONS[cli]))
        return
    if os.environ.get("FAKE_AGENT_ENV_DUMP"):
        _write_whole(
            Path(os.environ["FAKE_AGENT_ENV_DUMP"]), f"{os.getpid()}.json", json.dumps(dict(os.environ))
        )
    mode = os.environ.get("FAKE_AGENT_MODE", "")
    if mode == "hang":
        hang()
        return
    if mode == "leak":  # an auth failure that echoes the key, as some CLIs do
        key = os.environ.get("GEMINI_API_KEY") or os.environ.get("ANTHROPIC_API_KEY", "")
        settings = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
        if settings:  # Gemini CLI's own diagnostic: its cause is a path, which must stay readable
            print(f"Skipping system settings file '{settings}': Parent directory is insecure", file=sys.stderr)
        extra = os.environ.get("FAKE_AGENT_TOKEN", "")
        print(f"Error authenticating with key {key}{extra}: 401", file=sys.stderr)
        sys.exit(41)
    if mode == "nonetwork":  # Codex when its endpoint cannot be reached: the same line without end
        emit({"type": "thread.started", "thread_id": str(uuid.uuid4())})
        while True:
            emit({"type": "error", "message": "Reconnecting... waiting for network (Connection failed: refused)"})
            sys.stdout.flush()
            time.sleep(0.05)
    if mode == "garbage":
        print("Welcome to the agent! Press any key to continue.\n\x1b[32m>\x1b[0m ready")
        return
    try:
        prompt, model, fmt, flags = parse_args(cli, argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if os.environ.get("FAKE_AGENT_ARGV_DUMP"):
        _write_whole(Path(os.environ["FAKE_AGENT_ARGV_DUMP"]), f"{os.getpid()}.json",
                     json.dumps({"cli": cli, "argv": argv, "prompt": prompt, "flags": flags}))  # fmt: skip
    model = model or {"claude": "claude-sonnet-4-5", "codex": "gpt-5-codex", "gemini": "gemini-2.5-pro",
                      "opencode": "anthropic/claude-sonnet-4-5"}[cli]  # fmt: skip
    t0 = time.time()
    picked = choose(find_skills(cli), prompt)
    system = f"You are the {cli} coding agent."
    skill_text = ""
    if picked is not None:
        skill_text = picked[1].read_text(encoding="utf-8") if picked[1].is_absolute() else (
            Path.cwd() / picked[1]).read_text(encoding="utf-8")  # fmt: skip
        system += "\n\n" + frontmatter(skill_text)[1]
    answer, n_in, n_out = ask_model(cli, model, system, prompt)
    actions = [act(m) for m in _ACTION_RE.finditer(answer)]
    out = {"claude": claude_out, "codex": codex_out, "gemini": gemini_out, "opencode": opencode_out}[cli]
    out(fmt, model, prompt, picked, actions, answer, n_in, n_out, int((time.time() - t0) * 1000))


def act(m: re.Match) -> tuple[str, str, str, str, bool]:
    """Carry out one action line: ``(verb, path or command, text written, result, succeeded)``."""
    if m.group(1) is not None:  # WRITE
        path, text = m.group(1).strip(), m.group(2)
        dest = Path.cwd() / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text + "\n", encoding="utf-8")
        return "WRITE", path, text, f"File created successfully at: {dest}", True
    if m.group(3) is not None:  # RUN
        cmd = m.group(3).strip()
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        try:
            res = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=30, env=env)
            return "RUN", cmd, "", (res.stdout + res.stderr).strip(), res.returncode == 0
        except subprocess.TimeoutExpired:
            return "RUN", cmd, "", "Command timed out after 30s", False
    path = m.group(4).strip()
    try:
        return "READ", path, "", (Path.cwd() / path).read_text(encoding="utf-8"), True
    except OSError as exc:
        return "READ", path, "", f"Error reading file: {exc.strerror}", False


# ----- output shapes ------------------------------------------------------------------


def claude_out(fmt, model, prompt, picked, actions, answer, n_in, n_out, ms) -> None:
    sid = str(uuid.uuid4())
    usage = {"input_tokens": n_in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": n_out, "server_tool_use": {"web_search_requests": 0}, "service_tier": "standard"}  # fmt: skip
    calls = []
    if picked is not None:
        calls.append(("Skill", {"skill": picked[0]}, f"Launching skill: {picked[0]}", True))
    for verb, target, text, res, ok in actions:
        if verb == "WRITE":
            calls.append(("Write", {"file_path": str(Path.cwd() / target), "content": text}, res, ok))
        elif verb == "RUN":
            calls.append(("Bash", {"command": target, "description": "Run the command"}, res, ok))
        else:  # Claude Code numbers the lines it shows
            shown = (
                "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(res.splitlines(), 1)) if ok else res
            )
            calls.append(("Read", {"file_path": str(Path.cwd() / target)}, shown, ok))
    result = {
        "type": "result", "subtype": "success", "is_error": False, "duration_ms": ms, "duration_api_ms": ms,
        "num_turns": 1 + len(calls), "result": answer, "session_id": sid,
        "total_cost_usd": round((n_in * 3 + n_out * 15) / 1e6, 8), "usage": usage,
        "modelUsage": {model: {"inputTokens": n_in, "outputTokens": n_out, "cacheReadInputTokens": 0,
                               "cacheCreationInputTokens": 0, "webSearchRequests": 0,
                               "costUSD": round((n_in * 3 + n_out * 15) / 1e6, 8), "contextWindow": 200000}},
        "permission_denials": [], "uuid": str(uuid.uuid4()),
    }  # fmt: skip
    if fmt == "json":
        print(json.dumps(result))
        return
    assert fmt == "stream-json", fmt
    emit({"type": "system", "subtype": "init", "cwd": str(Path.cwd()), "session_id": sid,
          "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "Skill"], "mcp_servers": [],
          "model": model, "permissionMode": "bypassPermissions", "slash_commands": [], "apiKeySource": "ANTHROPIC_API_KEY",
          "claude_code_version": VERSIONS["claude"].split()[0], "output_style": "default", "agents": [],
          "skills": [picked[0]] if picked else [], "uuid": str(uuid.uuid4())})  # fmt: skip
    for i, (name, args, res, ok) in enumerate(calls):
        tid = f"toolu_{i:02d}"
        emit({"type": "assistant", "message": {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": model,
              "content": [{"type": "tool_use", "id": tid, "name": name, "input": args}], "stop_reason": None,
              "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}},
              "parent_tool_use_id": None, "session_id": sid, "uuid": str(uuid.uuid4())})  # fmt: skip
        # As Claude Code 2.1 prints them: a failed call's result has ``is_error: true`` (a failed
        # command's text starts "Exit code N", a failed read's is a <tool_use_error>), a Bash
        # result says ``is_error: false``, and ``tool_use_result`` repeats the outcome.
        block = {"tool_use_id": tid, "type": "tool_result", "content": res}
        if not ok:
            block["content"] = (
                f"Exit code 1\n{res}" if name == "Bash" else f"<tool_use_error>{res}</tool_use_error>"
            )
            block["is_error"] = True
        elif name == "Bash":
            block["is_error"] = False
        outcome: object = f"Error: {res}" if not ok else (
            {"success": True, "commandName": args.get("skill")} if name == "Skill"
            else {"stdout": res, "stderr": "", "interrupted": False, "isImage": False} if name == "Bash" else {})  # fmt: skip
        emit({"type": "user", "message": {"role": "user", "content": [block]}, "parent_tool_use_id": None,
              "session_id": sid, "uuid": str(uuid.uuid4()), "tool_use_result": outcome})  # fmt: skip
        if name == "Skill" and ok:  # the skill's body follows as a synthetic user message
            emit({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text":
                  f"Base directory for this skill: {Path.cwd() / picked[1].parent}"}]},
                  "parent_tool_use_id": None, "session_id": sid, "isSynthetic": True})  # fmt: skip
    emit({"type": "assistant", "message": {"id": "msg_final", "type": "message", "role": "assistant", "model": model,
          "content": [{"type": "text", "text": answer}], "stop_reason": None, "stop_sequence": None, "usage": usage},
          "parent_tool_use_id": None, "session_id": sid, "uuid": str(uuid.uuid4())})  # fmt: skip
    emit(result)


def codex_out(fmt, model, prompt, picked, actions, answer, n_in, n_out, ms) -> None:
    emit({"type": "thread.started", "thread_id": str(uuid.uuid4())})
    emit({"type": "turn.started"})
    n = 0
    if picked is not None:
        cmd = f"bash -lc 'sed -n \"1,200p\" {picked[1]}'"
        emit({"type": "item.started", "item": {"id": f"item_{n}", "type": "command_execution", "command": cmd,
              "aggregated_output": "", "exit_code": None, "status": "in_progress"}})  # fmt: skip
        emit({"type": "item.completed", "item": {"id": f"item_{n}", "type": "command_execution", "command": cmd,
              "aggregated_output": "---\nname: ...", "exit_code": 0, "status": "completed"}})  # fmt: skip
        n += 1
    for verb, target, _, res, ok in actions:
        if verb == "WRITE":
            emit({"type": "item.completed", "item": {"id": f"item_{n}", "type": "file_change",
                  "changes": [{"path": str(Path.cwd() / target), "kind": "add"}], "status": "completed"}})  # fmt: skip
        else:  # Codex reads files with shell commands too
            cmd = f"bash -lc {target!r}" if verb == "RUN" else f"bash -lc 'cat {target}'"
            emit({"type": "item.started", "item": {"id": f"item_{n}", "type": "command_execution", "command": cmd,
                  "aggregated_output": "", "exit_code": None, "status": "in_progress"}})  # fmt: skip
            emit({"type": "item.completed", "item": {"id": f"item_{n}", "type": "command_execution", "command": cmd,
                  "aggregated_output": res, "exit_code": 0 if ok else 1,
                  "status": "completed" if ok else "failed"}})  # fmt: skip
        n += 1
    emit({"type": "item.completed", "item": {"id": f"item_{n}", "type": "agent_message", "text": answer}})
    emit(
        {
            "type": "turn.completed",
            "usage": {"input_tokens": n_in, "cached_input_tokens": 0, "output_tokens": n_out},
        }
    )


def gemini_out(fmt, model, prompt, picked, actions, answer, n_in, n_out, ms) -> None:
    ts = "2026-11-25T02:00:00.000Z"
    calls = []
    if picked is not None:
        calls.append(("activate_skill", {"name": picked[0]}, "ok", True))
    for verb, target, text, res, ok in actions:
        if verb == "WRITE":
            calls.append(("write_file", {"file_path": str(Path.cwd() / target), "content": text}, res, ok))
        elif verb == "RUN":
            calls.append(("run_shell_command", {"command": target, "description": "Run the command"}, res, ok))
        else:
            calls.append(("read_file", {"absolute_path": str(Path.cwd() / target)}, res, ok))
    writes = [a for a in actions if a[0] == "WRITE"]
    if fmt == "json":
        by_name = {}
        for name, *_ in calls:
            d = by_name.setdefault(name, {"count": 0, "success": 0, "fail": 0, "durationMs": 3,
                                          "decisions": {"accept": 0, "reject": 0, "modify": 0, "auto_accept": 0}})  # fmt: skip
            d["count"] += 1
            d["success"] += 1
            d["decisions"]["auto_accept"] += 1
        print(json.dumps({"session_id": str(uuid.uuid4()), "response": answer, "stats": {
            "models": {model: {"api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": ms},
                               "tokens": {"input": n_in, "prompt": n_in, "candidates": n_out, "total": n_in + n_out,
                                          "cached": 0, "thoughts": 0, "tool": 0}, "roles": {}}},
            "tools": {"totalCalls": len(calls), "totalSuccess": len(calls), "totalFail": 0, "totalDurationMs": 3,
                      "totalDecisions": {"accept": 0, "reject": 0, "modify": 0, "auto_accept": len(calls)},
                      "byName": by_name},
            "files": {"totalLinesAdded": len(writes), "totalLinesRemoved": 0}}}, indent=2))  # fmt: skip
        return
    assert fmt == "stream-json", fmt
    emit({"type": "init", "timestamp": ts, "session_id": str(uuid.uuid4()), "model": model})
    emit({"type": "message", "timestamp": ts, "role": "user", "content": prompt})
    for i, (name, args, res, ok) in enumerate(calls):
        tid = f"{name}-{i}"
        emit({"type": "tool_use", "timestamp": ts, "tool_name": name, "tool_id": tid, "parameters": args})
        if ok:
            emit({"type": "tool_result", "timestamp": ts, "tool_id": tid, "status": "success", "output": res})
        else:
            emit({"type": "tool_result", "timestamp": ts, "tool_id": tid, "status": "error", "output": res,
                  "error": {"type": "tool_error", "message": res}})  # fmt: skip
    half = len(answer) // 2
    emit({"type": "message", "timestamp": ts, "role": "assistant", "content": answer[:half], "delta": True})
    emit({"type": "message", "timestamp": ts, "role": "assistant", "content": answer[half:], "delta": True})
    emit({"type": "result", "timestamp": ts, "status": "success", "stats": {
        "total_tokens": n_in + n_out, "input_tokens": n_in, "output_tokens": n_out, "cached": 0, "input": n_in,
        "duration_ms": ms, "tool_calls": len(calls)}})  # fmt: skip


def opencode_out(fmt, model, prompt, picked, actions, answer, n_in, n_out, ms) -> None:
    sid = "ses_" + uuid.uuid4().hex[:24]
    now = int(time.time() * 1000)

    def ev(kind: str, part: dict) -> None:
        emit({"type": kind, "timestamp": now, "sessionID": sid,
              "part": {"id": "prt_" + uuid.uuid4().hex[:24], "sessionID": sid, "messageID": "msg_1", **part}})  # fmt: skip

    calls = []
    if picked is not None:
        calls.append(("skill", {"name": picked[0]}, "ok", True))
    for verb, target, text, res, ok in actions:
        if verb == "WRITE":
            calls.append(("write", {"filePath": str(Path.cwd() / target), "content": text}, res, ok))
        elif verb == "RUN":
            calls.append(("bash", {"command": target, "description": "Run the command"}, res, ok))
        else:
            calls.append(("read", {"filePath": str(Path.cwd() / target)}, res, ok))
    zero = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    if calls:
        ev("step_start", {"type": "step-start", "snapshot": uuid.uuid4().hex})
        for i, (name, args, res, ok) in enumerate(calls):
            # As OpenCode 1.18 reports them: a bash call is "completed" whatever its exit
            # status (metadata.exit); any other failed call is "error" with its message.
            meta = {"output": res, "exit": 0 if ok else 1, "truncated": False} if name == "bash" else {}
            state = {"status": "completed", "input": args, "output": res} if ok or name == "bash" else {
                "status": "error", "input": args, "error": res}  # fmt: skip
            ev("tool_use", {"type": "tool", "callID": f"call_{i}", "tool": name, "state": {
                **state, "title": name, "metadata": meta, "time": {"start": now, "end": now}}})  # fmt: skip
        ev("step_finish", {"type": "step-finish", "reason": "tool-calls", "snapshot": uuid.uuid4().hex, "cost": 0,
                           "tokens": zero})  # fmt: skip
    ev("step_start", {"type": "step-start", "snapshot": uuid.uuid4().hex})
    ev("text", {"type": "text", "text": answer, "time": {"start": now, "end": now}})
    ev("step_finish", {"type": "step-finish", "reason": "stop", "snapshot": uuid.uuid4().hex,
                       "cost": round((n_in * 3 + n_out * 15) / 1e6, 8),
                       "tokens": {"input": n_in, "output": n_out, "reasoning": 0, "cache": {"read": 0, "write": 0}}})  # fmt: skip
