"""What a tests file means: the types, their vocabulary, and the check that makes an assertion.

Every dialect's parser returns these types and every consumer reads them, so they sit at the
bottom of the package with the error all parsers raise.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from upskill_hub._util.fsutil import check_relpath
from upskill_hub.errors import UpskillError

SCHEMA_VERSION = 1

#: Assertion types and the kind of ``value`` each takes.
ASSERTION_TYPES: dict[str, str] = {
    "contains": "str-or-list",
    "icontains": "str-or-list",
    "contains-any": "list",
    "not-contains": "str-or-list",
    "equals": "str",
    "regex": "regex",
    "is-json": "none",
    "json-schema": "schema",
    "starts-with": "str",
    "llm-rubric": "str",
    # Workspace checks (agent harness runs only): on the files the agent left behind.
    "file-exists": "path",
    "file-contains": "path-text",
    "command": "command",
    # agent-skill-eval's state checks (agent harness runs only): on the workspace's git
    # repository before and after the agent ran, and on the files present whoever wrote them.
    # A git check with ``value: false`` passes only when that did *not* happen.
    "git-branch-created": "expect",
    "git-commit-created": "expect",
    "git-pushed": "expect",
    "file-present": "path",
    "file-absent": "path",
    # ... and its other structured state checks: text in a file present now (either case),
    # a path neither changed in the working tree nor in a new commit, a repository with
    # nothing to commit, a value at a dot path of a JSON file present now.
    "file-present-contains": "path-text",
    "file-present-not-contains": "path-text",
    "file-unchanged": "path",
    "git-clean": "none",
    "json-path": "json-path",
    "json-path-absent": "json-path",
    # Transcript checks (agent runs and catalog mode): on the tool calls made on the way.
    "tool-called": "tool",
    "tool-not-called": "tool",
    "skill-loaded": "optional-str",
    "file-read": "str",
}

#: Assertion types graded on an agent's workspace, not on its answer (``--agent`` runs only).
WORKSPACE_TYPES = frozenset({"file-exists", "file-contains", "command", "git-branch-created", "git-commit-created",
                             "git-pushed", "file-present", "file-absent", "file-present-contains",
                             "file-present-not-contains", "file-unchanged", "git-clean", "json-path",
                             "json-path-absent"})  # fmt: skip
#: The workspace types graded on the git repository the workspace was made as (agent-skill-eval's).
GIT_STATE_TYPES = frozenset({"git-branch-created", "git-commit-created", "git-pushed"})
#: Assertion types graded on the tool calls an answer made (its transcript): ``--agent`` runs
#: and ``--mode catalog``; a ``--model`` call in inject mode makes none.
TRANSCRIPT_TYPES = frozenset({"tool-called", "tool-not-called", "skill-loaded", "file-read"})
#: Longest tool name a ``tool-called`` check names.
TOOL_NAME_MAX = 100
#: Bounds of a ``command`` check's ``timeout`` (seconds).
COMMAND_TIMEOUT_DEFAULT = 60.0
COMMAND_TIMEOUT_MAX = 3600.0

SPLITS = ("train", "holdout")
#: What a case id may be (ours, and an evals.json id once prefixed).
CASE_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}"
CASE_ID_RULE = "must be 1-100 chars of letters, digits, '.', '_' or '-'"

#: Labels of the shapes :func:`~upskill_hub.cases.parse_meta` reads (``SkillMeta.source_format``).
FORMAT_OURS = "upskill-hub schema 1"
FORMAT_UPSKILL_SKILL = 'upskill skill_meta.json ("tests")'
FORMAT_UPSKILL_SUITE = "upskill TestCaseSuite"
FORMAT_LIST = "a list of cases"
FORMAT_UPSKILL_VERIFIERS = 'upskill tests ("verifiers")'
FORMAT_AGENTSKILLS_EVALS = "agentskills.io evals.json"

#: Assertion types whose text matching can be case-insensitive (``case_sensitive``).
CASE_AWARE_TYPES = frozenset({"contains", "contains-any", "not-contains", "equals", "starts-with"})


class FieldError(ValueError):
    """Input that cannot be used; ``field`` names where it is wrong (a tests file, a frontmatter)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class CasesError(FieldError):
    """A tests file that cannot be used; ``field`` names where it is wrong."""


def checked_relpath(rel: str, where: str) -> str:
    """``rel`` when it is a safe relative path (no ``..``, not absolute), else a :class:`CasesError`."""
    try:
        return check_relpath(rel)
    except UpskillError as exc:
        raise CasesError(where, str(exc)) from None


#: Names git reads as a repository's metadata or configuration wherever they sit in a tree:
#: a ``.git`` gitfile points git at another repository (whose config runs filters and hooks),
#: ``.gitattributes`` names filters, ``.gitmodules`` submodules. ``.gitignore`` only hides files.
GIT_METADATA_NAMES = frozenset({".git", ".gitmodules", ".gitattributes", ".gitconfig"})
#: What git on NTFS also reads as ``.git`` / ``.gitmodules`` (8.3 short names).
_GIT_SHORT_NAMES = frozenset({"git~1", "gitmod~1"})
#: Code points HFS+ ignores in names (git refuses ``.g\u200cit`` for that reason).
_HFS_IGNORED = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)
#: Folders of a project where some agent looks for skills: those of
#: :data:`upskill_hub.agents.AGENTS` and the older ones agents still read (``.codex/skills``,
#: OpenCode's ``skill/``). A case file there would plant a skill in the baseline workspace.
SKILLS_FOLDERS = (
    ".claude/skills",
    ".agents/skills",
    ".codex/skills",
    ".opencode/skills",
    ".opencode/skill",
    ".cursor/skills",
    ".gemini/skills",
)


def _folded(part: str) -> str:
    """A path component as a case-insensitive file system may resolve it: case folded, the
    code points HFS+ ignores dropped, trailing dots and spaces (Windows) and a stream
    suffix (``.git::$INDEX_ALLOCATION``, NTFS) cut."""
    return part.translate(_HFS_IGNORED).casefold().split(":", 1)[0].rstrip(". ")


def input_file_problem(rel: str) -> str | None:
    """Why a case's input file ``rel`` (a safe relative path) may not be put in an agent's
    workspace, or ``None``.

    The one rule the case parsers and the workspace apply: no component git would read as
    repository metadata (a staged ``.git`` gitfile made ``git add`` run the filter of another
    repository's config), and nothing in or over a skills folder (a planted ``SKILL.md``
    turns the baseline into a with-skill run, and the real install then fails).
    """
    parts = [_folded(p) for p in rel.split("/")]
    for part in parts:
        if part in GIT_METADATA_NAMES or part in _GIT_SHORT_NAMES:
            return (
                "git reads it as repository metadata or configuration; rename it "
                "(no .git, .gitattributes, .gitmodules)"
            )
    for folder in SKILLS_FOLDERS:
        steps = folder.split("/")
        n = min(len(steps), len(parts))
        if parts[:n] == steps[:n]:
            return f"it lands in (or on the way to) {folder}/, where agents look for skills; put it elsewhere"
    return None


def checked_input_file(rel: str, where: str) -> str:
    """``rel`` when it is a safe relative path an agent's workspace may receive, else a
    :class:`CasesError` in one line (see :func:`input_file_problem`)."""
    checked_relpath(rel, where)
    problem = input_file_problem(rel)
    if problem is not None:
        raise CasesError(where, f"input file {rel!r} is refused: {problem}")
    return rel


def file_block(name: str, content: str | bytes) -> str:
    """An input file as it is appended to a prompt: a text file in full, any other named only."""
    if isinstance(content, bytes):
        return f"File `{name}` ({len(content):,} bytes, not text) is in your working directory."
    return f"File `{name}`:\n```\n{content.rstrip()}\n```"


@dataclass(frozen=True)
class Assertion:
    """One check on a model's answer."""

    type: str
    value: Any = None
    #: Optional judge model for ``llm-rubric`` (a model spec); default is the eval's judge.
    judge: str | None = None
    #: Text matching: ``None`` = case-sensitive (our default), ``False`` = case-insensitive
    #: (what upskill does, so its files are read that way). Only for ``CASE_AWARE_TYPES``.
    case_sensitive: bool | None = None
    #: Set for rubrics imported from another tool's format (agentskills.io assertions,
    #: upskill ``judge.criteria``): those were written for a real grader, so the eval asks
    #: for ``--judge`` instead of letting the model under test grade itself.
    judge_required: bool = False

    #: ``file-exists`` / ``file-contains``: the file, relative to the agent's workspace;
    #: ``tool-called`` with ``args``: where in the call's arguments the text must be, as a
    #: dot path (``query``, ``input.command``, ``files[0]``; agent-skills-eval's ``path``).
    path: str | None = None
    #: ``command``: seconds before the command is killed (and fails).
    timeout: float | None = None
    #: ``tool-called``: text that must occur in the matching call's arguments (their JSON).
    args: str | None = None

    @property
    def ignore_case(self) -> bool:
        """Whether text matching ignores case (``icontains`` always does)."""
        return self.type == "icontains" or self.case_sensitive is False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.path is not None:
            out["path"] = self.path
        if self.value is not None:
            out["value"] = self.value
        if self.judge:
            out["judge"] = self.judge
        if self.case_sensitive is not None:
            out["case_sensitive"] = self.case_sensitive
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.args is not None:
            out["args"] = self.args
        return out


@dataclass(frozen=True)
class Case:
    """A prompt sent to the model plus the assertions its answer must pass."""

    id: str
    input: str
    asserts: tuple[Assertion, ...]
    split: str = "train"
    description: str = ""
    #: Input files ``(relative path, text or bytes)`` put in an agent's workspace before it
    #: runs; bytes are files that are not text (a PDF, a spreadsheet), which only an agent opens.
    files: tuple[tuple[str, str | bytes], ...] = ()
    #: ``False`` for a negative control (evals.json ``should_trigger: false``): the skill must
    #: not be loaded for it; its assertions grade what the answer did instead.
    should_trigger: bool = True
    #: agent-skill-eval's ``force_skill_invocation``: the with-skill run is told to use the
    #: skill (see :meth:`prompt_for`).
    force_skill: bool = False
    #: agent-skill-eval's ``stage_files``: the input files are also added to the index of a
    #: git repository made in the agent's workspace (``git add``), as that tool does.
    stage_files: bool = False
    #: agent-skill-eval's workspace: ``project/`` is a git repository on ``main`` with an empty
    #: "Initial commit" (as its runner makes it, with or without ``stage_files``), so the
    #: git checks grade what the agent did to it.
    git_repo: bool = False
    #: agent-skill-eval sends the prompt as written: an agent finds the input files in its
    #: workspace; a call without one (``--model``) gets them appended (:meth:`prompt_for`).
    verbatim: bool = False
    #: Generation parameters of this case over the run's (agent-skills-eval's ``params``),
    #: ``(name, value)`` pairs of :class:`~upskill_hub.models.base.GenerationParams` fields.
    params: tuple[tuple[str, Any], ...] = ()

    def prompt_for(self, condition: str, skill_name: str, mode: str) -> str:
        """The prompt sent for ``condition`` in ``mode`` (``inject``, ``catalog``, ``harness``).

        A forced case's with-skill run in ``catalog`` mode or in an agent starts by telling
        the agent to use the skill, as agent-skill-eval does (``Use the $name skill.``, the
        ``$`` kept: it is how Codex names a skill); in ``inject`` mode the skill is in the
        system prompt already, and the baseline never hears of it. A :attr:`verbatim` case
        sent to a model (no workspace) gets its input files appended.
        """
        text = self.input
        if self.verbatim and mode != "harness" and self.files:
            text = "\n\n".join([text.rstrip(), *(file_block(name, content) for name, content in self.files)])
        if self.force_skill and condition == "with_skill" and mode != "inject":
            return f"Use the ${skill_name} skill. {text}"
        return text

    @property
    def binary_files(self) -> list[str]:
        """The input files that are not text: a call that sends only text cannot hand them over."""
        return [rel for rel, content in self.files if isinstance(content, bytes)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "input": self.input}
        if self.description:
            out["description"] = self.description
        if self.files:  # a binary file by its digest: the case's identity, not its bytes
            out["files"] = {
                rel: c if isinstance(c, str) else {"sha256": hashlib.sha256(c).hexdigest(), "bytes": len(c)}
                for rel, c in self.files
            }
        out["split"] = self.split
        out["assert"] = [a.to_dict() for a in self.asserts]
        if not self.should_trigger:
            out["should_trigger"] = False
        if self.force_skill:
            out["force_skill_invocation"] = True
        if self.stage_files:
            out["stage_files"] = True
        if self.git_repo:
            out["git_repo"] = True
        if self.verbatim:
            out["verbatim"] = True
        if self.params:
            out["params"] = dict(self.params)
        return out


@dataclass(frozen=True)
class TriggerQuery:
    """A user query and whether an agent should load the skill for it.

    The shape skill-creator's trigger eval sets use (``{"query", "should_trigger"}``);
    ``should_trigger`` false queries are negative controls.
    """

    id: str
    query: str
    should_trigger: bool

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "should_trigger": self.should_trigger}


@dataclass
class SkillMeta:
    """The parsed contents of ``skill_meta.json``."""

    cases: list[Case] = field(default_factory=list)
    #: Trigger queries (``triggers``), should-trigger and should-not; may be empty.
    triggers: list[TriggerQuery] = field(default_factory=list)
    #: Every other top-level key, kept verbatim (teacher model, created_at, ...).
    extra: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    #: Which shape the file had (``FORMAT_*``); written files are always ours.
    source_format: str = FORMAT_OURS
    #: What was read but not used, one line each (an evals.json's unknown keys, named once
    #: per file); front ends print them as warnings.
    warnings: list[str] = field(default_factory=list)

    def describe(self, source: str = "skill_meta.json") -> str:
        """One line saying what was read, e.g. ``3 test cases from x.json (upskill TestCaseSuite)``."""
        n = len(self.cases)
        line = f"{n} test case{'' if n == 1 else 's'} from {source} ({self.source_format})"
        if self.triggers:
            neg = sum(1 for t in self.triggers if not t.should_trigger)
            line += f", {len(self.triggers)} trigger quer{'y' if len(self.triggers) == 1 else 'ies'} ({neg} should not trigger)"
        return line

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": self.schema_version}
        out.update(self.extra)
        out["cases"] = [c.to_dict() for c in self.cases]
        if self.triggers:
            out["triggers"] = [t.to_dict() for t in self.triggers]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _check_value(kind: str, atype: str, value: Any, where: str) -> Any:
    if kind == "none":
        return None
    if kind == "str":
        if not isinstance(value, str) or value == "":
            raise CasesError(where, f"'{atype}' needs a non-empty string value")
        return value
    if kind == "expect":
        if value is not None and not isinstance(value, bool):
            raise CasesError(where, f"'{atype}' takes 'value': false (it must not happen) or no value")
        return None if value is None or value else False
    if kind == "optional-str":
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise CasesError(
                where, f"'{atype}' takes a skill name as 'value', or none for the skill under test"
            )
        return value.strip() if isinstance(value, str) else None
    if kind == "tool":
        if not isinstance(value, str) or not value.strip() or len(value) > TOOL_NAME_MAX:
            raise CasesError(where, f"'{atype}' needs a tool name as 'value' (e.g. Bash, read_file, shell)")
        return value.strip()
    if kind in ("str-or-list", "list"):
        if isinstance(value, str) and kind == "str-or-list":
            if value == "":
                raise CasesError(where, f"'{atype}' needs a non-empty string")
            return value
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v != "" for v in value):
            wanted = "a string or a list of strings" if kind == "str-or-list" else "a list of strings"
            raise CasesError(where, f"'{atype}' needs {wanted}")
        return list(value)
    if kind == "regex":
        if not isinstance(value, str) or value == "":
            raise CasesError(where, "'regex' needs a pattern string")
        from upskill_hub._util.guarded import compile_pattern

        try:
            compile_pattern(value)
        except ValueError as exc:
            raise CasesError(where, f"regex {value[:200]!r} does not compile: {exc}") from None
        return value
    if kind == "path":
        if value is not None:
            raise CasesError(where, f"'{atype}' takes 'path', not 'value'")
        return None
    if kind == "path-text":
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
            return list(value)
        raise CasesError(where, f"'{atype}' needs 'path' and a 'value' (a string or a list of strings)")
    if kind == "json-path":
        return _check_json_path(atype, value, where)
    if kind == "command":
        if not isinstance(value, str) or not value.strip():
            raise CasesError(where, "'command' needs a shell command string as 'value'")
        return value
    if kind == "schema":
        from upskill_hub._util.guarded import check_schema

        if not isinstance(value, dict):
            raise CasesError(where, "'json-schema' needs a JSON Schema object")
        try:
            check_schema(value)
        except ValueError as exc:
            raise CasesError(where, str(exc)) from None
        return value
    raise AssertionError(kind)  # pragma: no cover - table above is exhaustive


#: Longest dot path a ``json-path`` check names.
JSON_PATH_MAX = 200


def _check_json_path(atype: str, value: Any, where: str) -> dict[str, Any]:
    """``{"at": "a.b.0"[, "equals": X]}``: agent-skill-eval's ``json_path`` (dot-separated
    keys, a number indexes a list) and the value it must equal (``json-path`` only)."""
    keys = {"at", "equals"} if atype == "json-path" else {"at"}
    if not isinstance(value, dict) or set(value) - keys or not isinstance(value.get("at"), str):
        shown = '{"at": "a.b.0", "equals": VALUE}' if atype == "json-path" else '{"at": "a.b.0"}'
        raise CasesError(where, f"'{atype}' needs 'path' and a 'value' like {shown}")
    at = value["at"]
    if not at or len(at) > JSON_PATH_MAX:
        raise CasesError(where, f"'{atype}' needs a dot path of 1-{JSON_PATH_MAX} characters as 'at'")
    return dict(value)


def parse_assertion(raw: Any, where: str, default_case_sensitive: bool | None = None) -> Assertion:
    """Validate one assertion mapping (``{"type": ..., "value": ...[, "case_sensitive": bool]}``).

    ``default_case_sensitive`` is the matching rule of the format the assertion came from,
    used when the assertion does not say (upskill's files: ``False``).
    """
    if not isinstance(raw, dict):
        raise CasesError(where, "an assertion must be an object with a 'type'")
    atype = raw.get("type")
    if atype not in ASSERTION_TYPES:
        known = ", ".join(ASSERTION_TYPES)
        raise CasesError(where, f"unknown assertion type {atype!r} (known: {known})")
    unknown = set(raw) - {"type", "value", "judge", "case_sensitive", "path", "timeout", "args"}
    if unknown:
        raise CasesError(where, f"unknown assertion keys: {', '.join(sorted(unknown))}")
    value = _check_value(ASSERTION_TYPES[atype], atype, raw.get("value"), where)
    judge = raw.get("judge")
    if judge is not None and (atype != "llm-rubric" or not isinstance(judge, str)):
        raise CasesError(where, "'judge' is only for llm-rubric and must be a model spec string")
    case_sensitive = raw.get("case_sensitive", default_case_sensitive)
    if "case_sensitive" in raw:
        if not isinstance(case_sensitive, bool):
            raise CasesError(f"{where}.case_sensitive", "must be true or false")
        if atype not in CASE_AWARE_TYPES:
            raise CasesError(
                f"{where}.case_sensitive", f"is for {', '.join(sorted(CASE_AWARE_TYPES))}, not {atype!r}"
            )
    if atype not in CASE_AWARE_TYPES:
        case_sensitive = None
    path = _check_path(atype, raw.get("path"), where)
    timeout = _check_timeout(atype, raw.get("timeout"), where)
    args = raw.get("args")
    if args is not None and (atype != "tool-called" or not isinstance(args, str) or not args):
        raise CasesError(where, f"'args' is only for tool-called and must be a non-empty string, not on '{atype}'"
                         if atype != "tool-called" else "'args' must be a non-empty string")  # fmt: skip
    if atype == "tool-called" and path is not None and args is None:
        raise CasesError(where, "a tool-called 'path' says where 'args' must be: give 'args' too")
    return Assertion(
        type=atype, value=value, judge=judge, case_sensitive=case_sensitive, path=path, timeout=timeout,
        args=args,
    )  # fmt: skip


#: A ``tool-called`` argument path: names and ``[index]`` steps joined by dots.
ARG_PATH_PATTERN = r"[A-Za-z_$][\w$\-]*(\[\d{1,6}\])*(\.[A-Za-z_$][\w$\-]*(\[\d{1,6}\])*)*"
ARG_PATH_MAX = 200


def _check_path(atype: str, path: Any, where: str) -> str | None:
    """``path`` of a file check: relative, inside the workspace (no ``..``, no absolute path);
    of a ``tool-called`` check: a dot path into the call's arguments."""
    if atype == "tool-called" and path is not None:
        import re

        if not isinstance(path, str) or len(path) > ARG_PATH_MAX or not re.fullmatch(ARG_PATH_PATTERN, path):
            raise CasesError(
                where,
                "a tool-called 'path' is a dot path into the arguments, like 'query' or 'input.files[0]'",
            )
        return path
    if ASSERTION_TYPES[atype] not in ("path", "path-text", "json-path"):
        if path is not None:
            raise CasesError(where, f"'path' is only for file-exists and file-contains, not '{atype}'")
        return None
    if not isinstance(path, str) or not path:
        raise CasesError(where, f"'{atype}' needs 'path': a file relative to the agent's workspace")
    return checked_relpath(path, where)


def _check_timeout(atype: str, timeout: Any, where: str) -> float | None:
    if timeout is None:
        return None
    if atype != "command":
        raise CasesError(where, f"'timeout' is only for 'command', not '{atype}'")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout <= COMMAND_TIMEOUT_MAX
    ):
        raise CasesError(where, f"'timeout' must be a number of seconds in (0, {COMMAND_TIMEOUT_MAX:g}]")
    return float(timeout)
