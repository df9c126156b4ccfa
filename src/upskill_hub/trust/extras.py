"""What only upskill-hub knows a skill will run: its evals' shell commands and input files.

The scanner reads a skill's files as text. upskill-hub also *executes* parts of a skill's
tests file (``skill_meta.json`` or ``evals/evals.json``): ``command`` checks run in a
shell after the agent, and input files (``files``, upskill's ``context.files``) are put in
the agent's workspace. Inside JSON those are escaped strings (``\\u007c bash``), which
pattern rules can miss, so they are written out as plain files beside the skill's for the
scanner to read (:func:`staged_inputs`), and its findings there are mapped back to the
tests file (:func:`map_back`). Each ``command`` check is also listed as upskill-hub's own
``UPSKILLHUB_EVAL_COMMAND`` finding (info), so a reader sees what an eval would run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from upskill_hub._util.fsutil import check_relpath
from upskill_hub.errors import UpskillError
from upskill_hub.skill import EVALS_FILE, META_FILE, Skill
from upskill_hub.trust.findings import ANALYZER_UPSKILL_HUB, MAX_SNIPPET_CHARS, Finding

#: Folder (inside the scanned copy) holding what the tests file would run or stage.
STAGE_DIR = "_upskill_hub_eval_inputs"
#: upskill-hub's own rules, with what each means (the docs list them).
RULES = {
    "UPSKILLHUB_EVAL_COMMAND": "an eval `command` check runs this shell command on the machine running the eval",
    "UPSKILLHUB_ACK_FILE_INVALID": "the skill's skill-scan-ack.yaml is malformed, so it acknowledges nothing",
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
            findings.append(
                Finding(
                    severity="info",
                    rule="UPSKILLHUB_EVAL_COMMAND",
                    file=where,
                    line=_json_line(text, case.id),
                    snippet=snippet,
                    message=f"case {case.id!r}: {RULES['UPSKILLHUB_EVAL_COMMAND']}",
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
