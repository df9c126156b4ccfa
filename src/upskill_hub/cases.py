"""Test cases of a skill: the ``skill_meta.json`` schema and its loading.

``skill_meta.json`` is versioned (``schema_version``). Three shapes are read:

* ours (schema 1)::

    {"schema_version": 1, "name": "...", "cases": [
        {"id": "h100-build", "input": "...", "split": "train",
         "assert": [{"type": "contains", "value": "9.0"}]}]}

* upskill's: a saved skill's ``{"metadata": {...}, "tests": [...]}`` and a dumped
  ``TestCaseSuite`` ``{"cases": [...]}``, whose cases are
  ``{"input": "...", "context": null, "expected": {"contains": ["9.0"]}, "output_file": null,
  "validator": null, "validator_config": null}``;
* a plain list of cases in either case shape.

Which shape was read is kept in :attr:`SkillMeta.source_format`, so front ends can say in
one line what they read instead of silently showing zero tests.

Every assertion is checked here, when the file is loaded (types, arguments, regexes that
compile, JSON schemas that are valid), so a bad tests file fails before any model call.
How an assertion is *evaluated* lives in ``upskill_hub.lift.assertions``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub._util.fsutil import FileRefused, check_relpath, read_capped
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
}

#: Assertion types graded on an agent's workspace, not on its answer (``--agent`` runs only).
WORKSPACE_TYPES = frozenset({"file-exists", "file-contains", "command"})
#: Bounds of a ``command`` check's ``timeout`` (seconds).
COMMAND_TIMEOUT_DEFAULT = 60.0
COMMAND_TIMEOUT_MAX = 3600.0

SPLITS = ("train", "holdout")

# Budgets for what a tests file may make us read and hold (see SECURITY.md). Each is an
# environment variable; a typo or a non-positive value keeps the default.
#: Largest input file an evals.json entry may attach to its prompt (``UPSKILL_EVAL_FILE_MAX_KB``).
EVAL_FILE_MAX_BYTES = int(limits.env_number("UPSKILL_EVAL_FILE_MAX_KB", 256) * 1024)
#: Bytes of input files one case may attach in all, each distinct file counted once
#: (``UPSKILL_CASE_ATTACH_MAX_KB``).
CASE_ATTACH_MAX_BYTES = int(limits.env_number("UPSKILL_CASE_ATTACH_MAX_KB", 1024) * 1024)
#: Bytes of input files all cases of one tests file may attach together; every case holds
#: its own prompt, so a file shared by many cases counts once per case
#: (``UPSKILL_CASES_ATTACH_MAX_MB``).
CASES_ATTACH_MAX_BYTES = int(limits.env_number("UPSKILL_CASES_ATTACH_MAX_MB", 16) * 1024 * 1024)
#: Files one case may list (evals.json ``files``, a workspace's ``files``, upskill's
#: ``context.files``; ``UPSKILL_CASE_MAX_FILES``).
CASE_MAX_FILES = limits.env_int("UPSKILL_CASE_MAX_FILES", 64)
#: Cases (or evals.json entries) one tests file may hold (``UPSKILL_MAX_CASES``).
MAX_CASES = limits.env_int("UPSKILL_MAX_CASES", 10_000)

#: Labels of the shapes :func:`parse_meta` reads (``SkillMeta.source_format``).
FORMAT_OURS = "upskill-hub schema 1"
FORMAT_UPSKILL_SKILL = "upskill skill_meta.json (\"tests\")"
FORMAT_UPSKILL_SUITE = "upskill TestCaseSuite"
FORMAT_LIST = "a list of cases"
FORMAT_UPSKILL_VERIFIERS = "upskill tests (\"verifiers\")"
FORMAT_AGENTSKILLS_EVALS = "agentskills.io evals.json"

#: Assertion types whose text matching can be case-insensitive (``case_sensitive``).
CASE_AWARE_TYPES = frozenset({"contains", "contains-any", "not-contains", "equals", "starts-with"})

#: upskill's verifier types and how each maps onto an assertion type. upskill compares
#: expected strings case-insensitively (``item.lower() in output.lower()``), so they are
#: read with ``case_sensitive: false`` unless the verifier says otherwise.
VERIFIER_TYPES_OF_UPSKILL = {"contains": "contains"}

#: Keys of upskill's ``TestCase`` that upskill-hub reads beyond ``input``/``expected``.
_UPSKILL_CASE_KEYS = {"context", "output_file", "validator", "validator_config"}


class CasesError(ValueError):
    """A tests file that cannot be used; ``field`` names where it is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


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

    #: ``file-exists`` / ``file-contains``: the file, relative to the agent's workspace.
    path: str | None = None
    #: ``command``: seconds before the command is killed (and fails).
    timeout: float | None = None

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
        return out


@dataclass(frozen=True)
class Case:
    """A prompt sent to the model plus the assertions its answer must pass."""

    id: str
    input: str
    asserts: tuple[Assertion, ...]
    split: str = "train"
    description: str = ""
    #: Input files ``(relative path, text)`` put in an agent's workspace before it runs.
    files: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "input": self.input}
        if self.description:
            out["description"] = self.description
        if self.files:
            out["files"] = dict(self.files)
        out["split"] = self.split
        out["assert"] = [a.to_dict() for a in self.asserts]
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


def parse_triggers(raw: Any, where: str = "triggers") -> list[TriggerQuery]:
    """Trigger queries from a JSON list of ``{"query", "should_trigger"[, "id"]}`` objects."""
    if not isinstance(raw, list):
        raise CasesError(where, "must be a list of {\"query\": ..., \"should_trigger\": true|false}")
    out: list[TriggerQuery] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        loc = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise CasesError(loc, "must be an object with 'query' and 'should_trigger'")
        query = item.get("query")
        if not isinstance(query, str) or not query.strip():
            raise CasesError(f"{loc}.query", "must be a non-empty string")
        should = item.get("should_trigger")
        if not isinstance(should, bool):
            raise CasesError(f"{loc}.should_trigger", "must be true or false")
        qid = item.get("id", f"t{i + 1}")
        if not isinstance(qid, str) or not qid:
            qid = str(qid)
        if qid in seen:
            raise CasesError(f"{loc}.id", f"duplicate trigger query id {qid!r}")
        seen.add(qid)
        out.append(TriggerQuery(id=qid, query=query, should_trigger=should))
    return out


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
    if kind in ("str-or-list", "list"):
        if isinstance(value, str) and kind == "str-or-list":
            if value == "":
                raise CasesError(where, f"'{atype}' needs a non-empty string")
            return value
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v != "" for v in value)
        ):
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
    unknown = set(raw) - {"type", "value", "judge", "case_sensitive", "path", "timeout"}
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
    return Assertion(
        type=atype, value=value, judge=judge, case_sensitive=case_sensitive, path=path, timeout=timeout
    )


def _check_path(atype: str, path: Any, where: str) -> str | None:
    """``path`` of a file check: relative, inside the workspace (no ``..``, no absolute path)."""
    if ASSERTION_TYPES[atype] not in ("path", "path-text"):
        if path is not None:
            raise CasesError(where, f"'path' is only for file-exists and file-contains, not '{atype}'")
        return None
    if not isinstance(path, str) or not path:
        raise CasesError(where, f"'{atype}' needs 'path': a file relative to the agent's workspace")
    try:
        return check_relpath(path)
    except UpskillError as exc:
        raise CasesError(where, str(exc)) from None


def _check_timeout(atype: str, timeout: Any, where: str) -> float | None:
    if timeout is None:
        return None
    if atype != "command":
        raise CasesError(where, f"'timeout' is only for 'command', not '{atype}'")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= COMMAND_TIMEOUT_MAX:
        raise CasesError(where, f"'timeout' must be a number of seconds in (0, {COMMAND_TIMEOUT_MAX:g}]")
    return float(timeout)


def _parse_files(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    """A case's input ``files``: ``{"relative/path": "text"}``, every path inside the workspace."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise CasesError(where, "must map relative file paths to their text")
    _check_file_count(len(raw), where)
    for name in raw:
        try:
            check_relpath(name)
        except UpskillError as exc:
            raise CasesError(where, str(exc)) from None
    return tuple(raw.items())


def _expected_to_assertions(expected: Any, where: str) -> list[Assertion]:
    """upskill's ``expected`` mapping: each key is an assertion type, its value the argument.

    upskill matches these strings case-insensitively, so they are read that way.
    """
    if isinstance(expected, str):
        return [parse_assertion({"type": "contains", "value": expected}, where, False)]
    if not isinstance(expected, dict) or not expected:
        raise CasesError(where, "'expected' must be an object like {\"contains\": \"...\"}")
    out = []
    for key, value in expected.items():
        raw = {"type": key} if ASSERTION_TYPES.get(key) == "none" else {"type": key, "value": value}
        out.append(parse_assertion(raw, f"{where}.{key}", False))
    return out


def _verifiers_to_assertions(verifiers: Any, where: str) -> list[Assertion]:
    """upskill's ``verifiers`` list (``[{"type": "contains", "values": [...]}]``).

    Every string in ``values`` must appear (upskill's rule), case-insensitively unless the
    verifier carries ``"case_sensitive": true``.
    """
    if not isinstance(verifiers, list) or not verifiers:
        raise CasesError(where, "must be a non-empty list like [{\"type\": \"contains\", \"values\": [...]}]")
    out = []
    for j, v in enumerate(verifiers):
        loc = f"{where}[{j}]"
        if not isinstance(v, dict):
            raise CasesError(loc, "a verifier must be an object with a 'type'")
        vtype = v.get("type")
        if vtype not in VERIFIER_TYPES_OF_UPSKILL:
            known = ", ".join(VERIFIER_TYPES_OF_UPSKILL)
            raise CasesError(f"{loc}.type", f"unknown upskill verifier type {vtype!r} (read here: {known})")
        unknown = set(v) - {"type", "values", "value", "case_sensitive"}
        if unknown:
            raise CasesError(loc, f"unknown verifier keys: {', '.join(sorted(unknown))}")
        value = v.get("values", v.get("value"))
        raw: dict[str, Any] = {"type": VERIFIER_TYPES_OF_UPSKILL[vtype], "value": value}
        if "case_sensitive" in v:
            raw["case_sensitive"] = v["case_sensitive"]
        out.append(parse_assertion(raw, loc, False))
    return out


def _upskill_extras(raw: dict[str, Any], text: str, loc: str) -> str:
    """Apply upskill's optional ``TestCase`` fields; return the prompt to send.

    upskill dumps every field, so ``null`` means "not used" and is accepted. Context
    files are what the agent would have found in its workspace: a plain model call has no
    workspace, so they are appended to the prompt. A custom ``validator`` is upskill code
    that cannot run here; refusing the case is better than silently dropping a check.
    """
    for key in ("validator", "output_file", "validator_config"):
        if raw.get(key) is not None:
            raise CasesError(
                f"{loc}.{key}",
                "upskill's custom validators cannot run in upskill-hub: express the check with "
                "'expected'/'assert' instead",
            )
    context = raw.get("context")
    if context is None:
        return text
    if not isinstance(context, dict) or set(context) - {"files"}:
        raise CasesError(f"{loc}.context", "must be null or {\"files\": {\"NAME\": \"CONTENT\"}}")
    files = context.get("files")
    if files is None:
        return text
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise CasesError(f"{loc}.context.files", "must map file names to their text")
    _check_file_count(len(files), f"{loc}.context.files")
    parts = [text.rstrip()]
    for name, content in files.items():
        parts.append(f"File `{name}`:\n```\n{content.rstrip()}\n```")
    return "\n\n".join(parts)


def parse_case(raw: Any, index: int, where: str = "cases") -> Case:
    """Validate one case in our shape or upskill's."""
    loc = f"{where}[{index}]"
    if not isinstance(raw, dict):
        raise CasesError(loc, "a case must be an object with 'input'")
    text = raw.get("input")
    if not isinstance(text, str) or not text.strip():
        raise CasesError(f"{loc}.input", "must be a non-empty string")
    known = {"id", "input", "assert", "expected", "verifiers", "split", "description", "vars", "files"} | _UPSKILL_CASE_KEYS
    unknown = set(raw) - known
    if unknown:
        raise CasesError(loc, f"unknown case keys: {', '.join(sorted(unknown))}")
    text = _upskill_extras(raw, text, loc)
    asserts: list[Assertion] = []
    if "assert" in raw:
        if not isinstance(raw["assert"], list):
            raise CasesError(f"{loc}.assert", "must be a list of assertions")
        asserts += [parse_assertion(a, f"{loc}.assert[{j}]") for j, a in enumerate(raw["assert"])]
    if "expected" in raw:
        asserts += _expected_to_assertions(raw["expected"], f"{loc}.expected")
    if "verifiers" in raw:
        asserts += _verifiers_to_assertions(raw["verifiers"], f"{loc}.verifiers")
    if not asserts:
        raise CasesError(loc, "has no assertions ('assert', 'expected' or 'verifiers')")
    case_id = raw.get("id", f"case-{index + 1}")
    if not isinstance(case_id, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}", case_id):
        raise CasesError(f"{loc}.id", "must be 1-100 chars of letters, digits, '.', '_' or '-'")
    split = raw.get("split", "train")
    if split not in SPLITS:
        raise CasesError(f"{loc}.split", f"must be one of {', '.join(SPLITS)}")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise CasesError(f"{loc}.description", "must be a string")
    files = _parse_files(raw.get("files"), f"{loc}.files")
    return Case(
        id=case_id, input=text, asserts=tuple(asserts), split=split, description=description, files=files
    )


class _Attachments:
    """The input files one tests file attaches to its prompts, read once and counted.

    An ``evals.json`` of 170 kB listing one 256 kB file 12,000 times asked for 3 GB of
    prompt, and ``skills validate``, ``pull``, ``triggers --library`` and the Space's
    library loader died with ``MemoryError`` while merely parsing it. Each attachment is
    therefore sized (``stat``, before a byte is read) against three budgets: one file
    (:data:`EVAL_FILE_MAX_BYTES`), one case (:data:`CASE_ATTACH_MAX_BYTES`) and the whole
    tests file (:data:`CASES_ATTACH_MAX_BYTES`); a file one case lists twice is attached
    once, and a file several cases share is read from disk once.
    """

    def __init__(self, base_dir: Path | None) -> None:
        self.base_dir = base_dir
        self._root = base_dir.resolve() if base_dir is not None else None
        self.total = 0
        self._texts: dict[Path, str] = {}
        self._sizes: dict[Path, int] = {}

    def case_parts(self, files: Any, where: str) -> list[str]:
        """The ``File `rel`:`` blocks of one case, in listed order, each distinct file once."""
        if not isinstance(files, list):
            raise CasesError(where, "must be a list of paths relative to the skill folder")
        _check_file_count(len(files), where)
        parts: list[str] = []
        seen: set[Path] = set()
        case_bytes = 0
        for j, rel in enumerate(files):
            loc = f"{where}[{j}]"
            target = self._locate(rel, loc)
            if target in seen:  # the same file twice (or through another spelling): once is enough
                continue
            seen.add(target)
            size = self._size(target, rel, loc)
            case_bytes += size
            if case_bytes > CASE_ATTACH_MAX_BYTES:
                raise CasesError(
                    where,
                    f"attaches {case_bytes:,} bytes of input files (so far); a case may attach at most "
                    f"{_budget(CASE_ATTACH_MAX_BYTES, 'UPSKILL_CASE_ATTACH_MAX_KB', 1024)}",
                )
            if self.total + size > CASES_ATTACH_MAX_BYTES:
                raise CasesError(
                    where,
                    f"brings the input files attached by all cases to {self.total + size:,} bytes; a tests "
                    f"file may attach at most {_budget(CASES_ATTACH_MAX_BYTES, 'UPSKILL_CASES_ATTACH_MAX_MB', 1024**2)}",
                )
            text = self._read(target, rel, loc)
            self.total += self._sizes[target]
            parts.append(f"File `{rel}`:\n```\n{text.rstrip()}\n```")
        return parts

    def _locate(self, rel: Any, where: str) -> Path:
        """The real path of one listed file, inside ``base_dir`` (the skill folder)."""
        if not isinstance(rel, str):
            raise CasesError(where, "must be a path relative to the skill folder")
        try:
            check_relpath(rel)
        except UpskillError as exc:
            raise CasesError(where, str(exc)) from None
        if self._root is None:
            raise CasesError(
                where, f"input file {rel!r} needs the skill folder: evaluate the skill that holds evals.json"
            )
        target = (self._root / rel).resolve()
        if not target.is_relative_to(self._root):
            raise CasesError(where, f"input file {rel!r} points outside the skill folder")
        if not os.path.lexists(target):
            raise CasesError(where, f"input file {rel!r} not found in {self.base_dir}")
        return target

    def _size(self, target: Path, rel: str, where: str) -> int:
        """Bytes ``target`` will add to the prompt (``stat``: nothing is read yet)."""
        if target in self._sizes:
            return self._sizes[target]
        try:
            size = os.stat(target).st_size  # a FIFO's stat does not block; read_capped refuses it
        except OSError as exc:
            raise CasesError(where, f"input file {rel!r} cannot be read ({exc.strerror or exc})") from None
        if size > EVAL_FILE_MAX_BYTES:
            raise CasesError(where, _file_too_big(rel, size))
        return size

    def _read(self, target: Path, rel: str, where: str) -> str:
        if target in self._texts:
            return self._texts[target]
        try:
            data = read_capped(target, EVAL_FILE_MAX_BYTES)  # a FIFO, a device or a giant is refused
        except FileRefused as exc:
            try:  # grown past the cap since it was sized: say so with the real limit
                size = os.stat(target).st_size
            except OSError:
                size = 0
            problem = _file_too_big(rel, size) if size > EVAL_FILE_MAX_BYTES else f"input file {rel!r} {exc.problem}"
            raise CasesError(where, problem) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CasesError(where, f"input file {rel!r} is not UTF-8 text (only text files can be attached)") from None
        self._texts[target] = text
        self._sizes[target] = len(data)
        return text


def _budget(cap: int, var: str, unit: int) -> str:
    """The limit in bytes, the variable that sets it (in its own unit) and that raising it lifts it."""
    return f"{cap:,} bytes ({var}={cap / unit:g}; raise it to allow more)"


def _file_too_big(rel: str, size: int) -> str:
    return (
        f"input file {rel!r} is {size:,} bytes; an attached file may be at most "
        f"{_budget(EVAL_FILE_MAX_BYTES, 'UPSKILL_EVAL_FILE_MAX_KB', 1024)}"
    )


def _parse_agentskills_evals(data: dict[str, Any], base_dir: Path | None) -> SkillMeta:
    """The agentskills.io ``evals/evals.json`` shape (also skill-creator's and agent-skills-eval's).

    ``{"skill_name", "evals": [{"id", "prompt", "expected_output", "files", "assertions"}]}``;
    skill-creator calls the assertions ``expectations``. Each assertion is a sentence for a
    grader, so it becomes an ``llm-rubric`` that needs ``--judge``. Without any, the
    ``expected_output`` is the rubric (as agent-skills-eval does). An entry with
    ``"should_trigger": false`` is a negative control: a trigger query, not a case.
    """
    evals = data.get("evals")
    if not isinstance(evals, list):
        raise CasesError("evals", "must be a list of {\"id\", \"prompt\", \"assertions\"} objects")
    name = data.get("skill_name")
    if name is not None and not isinstance(name, str):
        raise CasesError("skill_name", "must be a string")
    known = {"id", "name", "prompt", "expected_output", "files", "assertions", "expectations", "should_trigger"}
    check_case_count(len(evals), "evals")
    attachments = _Attachments(base_dir)
    cases: list[Case] = []
    triggers: list[TriggerQuery] = []
    for i, ev in enumerate(evals):
        loc = f"evals[{i}]"
        if not isinstance(ev, dict):
            raise CasesError(loc, "an eval must be an object with a 'prompt'")
        unknown = set(ev) - known
        if unknown:
            raise CasesError(loc, f"unknown eval keys: {', '.join(sorted(unknown))}")
        prompt = ev.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise CasesError(f"{loc}.prompt", "must be a non-empty string")
        raw_id = ev.get("id", i + 1)
        if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
            raise CasesError(f"{loc}.id", "must be a number or a string")
        case_id = f"eval-{raw_id}" if isinstance(raw_id, int) else raw_id
        should = ev.get("should_trigger", True)
        if not isinstance(should, bool):
            raise CasesError(f"{loc}.should_trigger", "must be true or false")
        if not should:
            triggers.append(TriggerQuery(id=case_id, query=prompt, should_trigger=False))
            continue
        key = "assertions" if "assertions" in ev else "expectations"
        if "assertions" in ev and "expectations" in ev:
            raise CasesError(loc, "has both 'assertions' and 'expectations': keep one list")
        rubrics = ev.get(key, [])
        if not isinstance(rubrics, list) or not all(isinstance(r, str) and r.strip() for r in rubrics):
            raise CasesError(f"{loc}.{key}", "must be a list of sentences for the judge")
        expected = ev.get("expected_output")
        if expected is not None and not isinstance(expected, str):
            raise CasesError(f"{loc}.expected_output", "must be a string")
        if not rubrics and expected and expected.strip():
            rubrics = [expected]
        if not rubrics:
            raise CasesError(loc, f"has no '{key}' and no 'expected_output' to grade against")
        parts = [prompt.rstrip(), *attachments.case_parts(ev.get("files", []), f"{loc}.files")]
        asserts = tuple(
            Assertion(type="llm-rubric", value=r, judge_required=True) for r in rubrics
        )
        description = ev.get("name") if isinstance(ev.get("name"), str) else ""
        cases.append(Case(id=case_id, input="\n\n".join(parts), asserts=asserts, description=description))
    for c in cases:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}", c.id):
            raise CasesError("evals", f"id {c.id!r} must be 1-100 chars of letters, digits, '.', '_' or '-'")
    extra = {"skill_name": name} if name else {}
    return SkillMeta(cases=cases, triggers=triggers, extra=extra, source_format=FORMAT_AGENTSKILLS_EVALS)


def parse_meta(data: Any, base_dir: Path | None = None) -> SkillMeta:
    """Turn decoded JSON (object or plain list) into a :class:`SkillMeta`.

    ``base_dir`` is the skill folder, where agentskills.io ``evals.json`` input files live.
    """
    key = "cases"
    if isinstance(data, dict) and "evals" in data and "cases" not in data and "tests" not in data:
        meta = _parse_agentskills_evals(data, base_dir)
        _check_unique([c.id for c in meta.cases] + [t.id for t in meta.triggers])
        return meta
    if isinstance(data, list):
        raw_cases, extra, version, fmt = data, {}, SCHEMA_VERSION, FORMAT_LIST
    elif isinstance(data, dict):
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise CasesError("schema_version", f"unsupported version {version!r} (this tool reads 1)")
        if "tests" in data and "cases" in data:
            raise CasesError("tests", "both 'cases' and upskill's 'tests' are present: keep one list")
        key = "tests" if "tests" in data else "cases"
        raw_cases = data.get(key, [])
        if not isinstance(raw_cases, list):
            raise CasesError(key, "must be a list")
        extra = {k: v for k, v in data.items() if k not in (key, "schema_version", "triggers")}
        fmt = _detect_format(data, key, raw_cases)
    else:
        raise CasesError("skill_meta.json", "must be a JSON object or a list of cases")
    check_case_count(len(raw_cases), key)
    cases = [parse_case(c, i, key) for i, c in enumerate(raw_cases)]
    triggers = parse_triggers(data["triggers"]) if isinstance(data, dict) and "triggers" in data else []
    _check_unique([c.id for c in cases])
    if fmt == FORMAT_LIST and cases and all(isinstance(c, dict) and "verifiers" in c for c in raw_cases):
        fmt = FORMAT_UPSKILL_VERIFIERS
    return SkillMeta(cases=cases, triggers=triggers, extra=extra, schema_version=version, source_format=fmt)


def check_case_count(n: int, where: str) -> None:
    """Refuse a tests file with more than :data:`MAX_CASES` cases, before any is parsed."""
    if n > MAX_CASES:
        raise CasesError(
            where, f"holds {n:,} cases; a tests file may hold at most {MAX_CASES:,} (raise UPSKILL_MAX_CASES to allow more)"
        )


def _check_file_count(n: int, where: str) -> None:
    if n > CASE_MAX_FILES:
        raise CasesError(
            where, f"lists {n:,} files; a case may list at most {CASE_MAX_FILES:,} (raise UPSKILL_CASE_MAX_FILES to allow more)"
        )


def _check_unique(ids: list[str]) -> None:
    seen: set[str] = set()
    for cid in ids:
        if cid in seen:
            raise CasesError("cases", f"duplicate case id {cid!r}")
        seen.add(cid)


def _detect_format(data: dict[str, Any], key: str, raw_cases: list[Any]) -> str:
    """Name the shape of a decoded tests object (for the one-line "what was read")."""
    if key == "tests":
        return FORMAT_UPSKILL_SKILL
    if "schema_version" in data:
        return FORMAT_OURS
    if raw_cases and all(isinstance(c, dict) and "verifiers" in c for c in raw_cases):
        return FORMAT_UPSKILL_VERIFIERS
    upskill_like = raw_cases and all(
        isinstance(c, dict) and "expected" in c and not {"assert", "id", "split"} & set(c) for c in raw_cases
    )
    return FORMAT_UPSKILL_SUITE if upskill_like and set(data) == {"cases"} else FORMAT_OURS


def load_meta_text(text: str | bytes, source: str = "skill_meta.json", base_dir: Path | None = None) -> SkillMeta:
    """Parse the text of a ``skill_meta.json`` (or a tests file); ``base_dir``: see :func:`parse_meta`."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CasesError(source, "not valid UTF-8") from None
    try:
        data = safejson.loads(text)
    except safejson.JSONTooDeep as exc:
        raise CasesError(source, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise CasesError(source, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    return parse_meta(data, base_dir)


def load_cases_file(path: str | Path, base_dir: Path | None = None) -> SkillMeta:
    """Load a tests file given with ``--tests``; it must contain at least one case.

    ``base_dir`` is the skill folder (input files of an agentskills.io ``evals.json``).
    """
    p = Path(path)
    if not os.path.lexists(p):
        raise CasesError(str(p), "not found")
    try:
        data = read_capped(p, limits.MAX_CONFIG_BYTES)  # a FIFO or a device is refused, never read
    except FileRefused as exc:
        raise CasesError(str(p), exc.problem) from None
    meta = load_meta_text(data, source=str(p), base_dir=base_dir)
    if not meta.cases:
        raise CasesError(str(p), "has no test cases")
    return meta
