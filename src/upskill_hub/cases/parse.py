"""Read a tests file into a :class:`SkillMeta`: decode it, tell its shape, parse our cases.

The entry point of every front end (``skill_meta.json`` in a skill, ``--tests``, a Space
upload): our schema-1 cases are parsed here, the other tools' shapes in :mod:`.dialects`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub._util.fsutil import FileRefused, read_capped
from upskill_hub.cases import dialects, schema
from upskill_hub.cases.budgets import check_case_count, check_file_count
from upskill_hub.cases.schema import Assertion, Case, CasesError, SkillMeta, parse_assertion


def _parse_files(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    """A case's input ``files``: ``{"relative/path": "text"}``, every path inside the workspace."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise CasesError(where, "must map relative file paths to their text")
    check_file_count(len(raw), where)
    for name in raw:
        schema.checked_input_file(name, where)
    return tuple(raw.items())


def parse_case(raw: Any, index: int, where: str = "cases") -> Case:
    """Validate one case in our shape or upskill's."""
    loc = f"{where}[{index}]"
    if not isinstance(raw, dict):
        raise CasesError(loc, "a case must be an object with 'input'")
    text = raw.get("input")
    if not isinstance(text, str) or not text.strip():
        raise CasesError(f"{loc}.input", "must be a non-empty string")
    known = {"id", "input", "assert", "expected", "verifiers", "split", "description", "vars", "files"} | dialects.EXTRA_UPSKILL_KEYS
    unknown = set(raw) - known
    if unknown:
        raise CasesError(loc, f"unknown case keys: {', '.join(sorted(unknown))}")
    text, context_files = dialects.upskill_extras(raw, text, loc)
    asserts: list[Assertion] = []
    if "assert" in raw:
        if not isinstance(raw["assert"], list):
            raise CasesError(f"{loc}.assert", "must be a list of assertions")
        asserts += [parse_assertion(a, f"{loc}.assert[{j}]") for j, a in enumerate(raw["assert"])]
    if "expected" in raw:
        asserts += dialects.expected_to_assertions(raw["expected"], f"{loc}.expected")
    if "verifiers" in raw:
        asserts += dialects.verifiers_to_assertions(raw["verifiers"], f"{loc}.verifiers")
    if not asserts:
        raise CasesError(loc, "has no assertions ('assert', 'expected' or 'verifiers')")
    case_id = raw.get("id", f"case-{index + 1}")
    if not isinstance(case_id, str) or not re.fullmatch(schema.CASE_ID_PATTERN, case_id):
        raise CasesError(f"{loc}.id", schema.CASE_ID_RULE)
    split = raw.get("split", "train")
    if split not in schema.SPLITS:
        raise CasesError(f"{loc}.split", f"must be one of {', '.join(schema.SPLITS)}")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise CasesError(f"{loc}.description", "must be a string")
    files = _parse_files(raw.get("files"), f"{loc}.files")
    clash = sorted({name for name, _ in files} & {name for name, _ in context_files})
    if clash:
        raise CasesError(f"{loc}.files", f"{clash[0]!r} is also in context.files: give each input file once")
    files += tuple(context_files)  # upskill's context files: in the prompt and in an agent's workspace
    return Case(
        id=case_id, input=text, asserts=tuple(asserts), split=split, description=description, files=files
    )


def parse_meta(data: Any, base_dir: Path | None = None, evals_dir: Path | None = None) -> SkillMeta:
    """Turn decoded JSON (object or plain list) into a :class:`SkillMeta`.

    ``base_dir`` is the skill folder and ``evals_dir`` the folder of the evals file (default:
    the skill's ``evals/``): an agentskills.io ``evals.json`` names its input files relative
    to the one, else to the other.
    """
    key = "cases"
    if isinstance(data, dict) and "evals" in data and "cases" not in data and "tests" not in data:
        meta = dialects.parse_agentskills_evals(data, base_dir, evals_dir)
        _check_unique([c.id for c in meta.cases])
        _check_unique([t.id for t in meta.triggers])
        return meta
    if isinstance(data, list):
        raw_cases, extra, version, fmt = data, {}, schema.SCHEMA_VERSION, schema.FORMAT_LIST
    elif isinstance(data, dict):
        version = data.get("schema_version", schema.SCHEMA_VERSION)
        if version != schema.SCHEMA_VERSION:
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
    triggers = dialects.parse_triggers(data["triggers"]) if isinstance(data, dict) and "triggers" in data else []
    _check_unique([c.id for c in cases])
    if fmt == schema.FORMAT_LIST and cases and all(isinstance(c, dict) and "verifiers" in c for c in raw_cases):
        fmt = schema.FORMAT_UPSKILL_VERIFIERS
    return SkillMeta(cases=cases, triggers=triggers, extra=extra, schema_version=version, source_format=fmt)


def _check_unique(ids: list[str]) -> None:
    seen: set[str] = set()
    for cid in ids:
        if cid in seen:
            raise CasesError("cases", f"duplicate case id {cid!r}")
        seen.add(cid)


def _detect_format(data: dict[str, Any], key: str, raw_cases: list[Any]) -> str:
    """Name the shape of a decoded tests object (for the one-line "what was read")."""
    if key == "tests":
        return schema.FORMAT_UPSKILL_SKILL
    if "schema_version" in data:
        return schema.FORMAT_OURS
    if raw_cases and all(isinstance(c, dict) and "verifiers" in c for c in raw_cases):
        return schema.FORMAT_UPSKILL_VERIFIERS
    upskill_like = raw_cases and all(
        isinstance(c, dict) and "expected" in c and not {"assert", "id", "split"} & set(c) for c in raw_cases
    )
    return schema.FORMAT_UPSKILL_SUITE if upskill_like and set(data) == {"cases"} else schema.FORMAT_OURS


def load_meta_text(
    text: str | bytes, source: str = "skill_meta.json", base_dir: Path | None = None, evals_dir: Path | None = None
) -> SkillMeta:
    """Parse the text of a ``skill_meta.json`` (or a tests file); ``base_dir``, ``evals_dir``: see :func:`parse_meta`."""
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
    return parse_meta(data, base_dir, evals_dir)


def load_cases_file(path: str | Path, base_dir: Path | None = None) -> SkillMeta:
    """Load a tests file given with ``--tests``; it must contain at least one case.

    ``base_dir`` is the skill folder: an agentskills.io ``evals.json`` names its input files
    relative to the file's own folder first, then to the skill folder.
    """
    p = Path(path)
    if not os.path.lexists(p):
        raise CasesError(str(p), "not found")
    try:
        data = read_capped(p, limits.MAX_CONFIG_BYTES)  # a FIFO or a device is refused, never read
    except FileRefused as exc:
        raise CasesError(str(p), exc.problem) from None
    meta = load_meta_text(data, source=str(p), base_dir=base_dir, evals_dir=p.absolute().parent)
    if not meta.cases:
        raise CasesError(str(p), "has no test cases")
    return meta
