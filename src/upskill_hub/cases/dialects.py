"""The other tools' shapes of tests: upskill's cases, agentskills.io ``evals.json``, trigger lists.

Each is translated into our cases and trigger queries here, so :mod:`.parse` reads one shape
of case and only dispatches.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from upskill_hub.cases import schema
from upskill_hub.cases.budgets import Attachments, check_case_count, check_file_count
from upskill_hub.cases.schema import Assertion, Case, CasesError, SkillMeta, TriggerQuery, parse_assertion

#: upskill's verifier types and how each maps onto an assertion type. upskill compares
#: expected strings case-insensitively (``item.lower() in output.lower()``), so they are
#: read with ``case_sensitive: false`` unless the verifier says otherwise.
VERIFIER_TYPES_OF_UPSKILL = {"contains": "contains"}

#: Keys of upskill's ``TestCase`` that upskill-hub reads beyond ``input``/``expected``.
EXTRA_UPSKILL_KEYS = {"context", "output_file", "validator", "validator_config"}


def expected_to_assertions(expected: Any, where: str) -> list[Assertion]:
    """upskill's ``expected`` mapping: each key is an assertion type, its value the argument.

    upskill matches these strings case-insensitively, so they are read that way.
    """
    if isinstance(expected, str):
        return [parse_assertion({"type": "contains", "value": expected}, where, False)]
    if not isinstance(expected, dict) or not expected:
        raise CasesError(where, "'expected' must be an object like {\"contains\": \"...\"}")
    out = []
    for key, value in expected.items():
        raw = {"type": key} if schema.ASSERTION_TYPES.get(key) == "none" else {"type": key, "value": value}
        out.append(parse_assertion(raw, f"{where}.{key}", False))
    return out


def verifiers_to_assertions(verifiers: Any, where: str) -> list[Assertion]:
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


def upskill_extras(raw: dict[str, Any], text: str, loc: str) -> tuple[str, list[tuple[str, str]]]:
    """Apply upskill's optional ``TestCase`` fields; return the prompt to send and the
    context files to stage in an agent's workspace.

    upskill dumps every field, so ``null`` means "not used" and is accepted. Context
    files are what the agent would have found in its workspace: they are staged there for
    an agent, and appended to the prompt, since a plain model call has no workspace. A custom ``validator`` is upskill code
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
        return text, []
    if not isinstance(context, dict) or set(context) - {"files"}:
        raise CasesError(f"{loc}.context", "must be null or {\"files\": {\"NAME\": \"CONTENT\"}}")
    files = context.get("files")
    if files is None:
        return text, []
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise CasesError(f"{loc}.context.files", "must map file names to their text")
    check_file_count(len(files), f"{loc}.context.files")
    for name in files:
        schema.checked_relpath(name, f"{loc}.context.files")
    parts = [text.rstrip(), *(schema.file_block(name, content) for name, content in files.items())]
    return "\n\n".join(parts), list(files.items())


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


def parse_agentskills_evals(data: dict[str, Any], base_dir: Path | None) -> SkillMeta:
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
    check_case_count(len(evals), "evals")
    attachments = Attachments(base_dir)
    cases: list[Case] = []
    triggers: list[TriggerQuery] = []
    for i, ev in enumerate(evals):
        entry = _parse_entry(ev, i, attachments)
        if isinstance(entry, TriggerQuery):
            triggers.append(entry)
        else:
            cases.append(entry)
    for c in cases:
        if not re.fullmatch(schema.CASE_ID_PATTERN, c.id):
            raise CasesError("evals", f"id {c.id!r} {schema.CASE_ID_RULE}")
    extra = {"skill_name": name} if name else {}
    return SkillMeta(cases=cases, triggers=triggers, extra=extra, source_format=schema.FORMAT_AGENTSKILLS_EVALS)


def _parse_entry(ev: Any, i: int, attachments: Attachments) -> Case | TriggerQuery:
    """One entry of ``evals``: a case graded by its rubrics, or a negative trigger control."""
    loc = f"evals[{i}]"
    if not isinstance(ev, dict):
        raise CasesError(loc, "an eval must be an object with a 'prompt'")
    known = {"id", "name", "prompt", "expected_output", "files", "assertions", "expectations", "should_trigger"}
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
        return TriggerQuery(id=case_id, query=prompt, should_trigger=False)
    rubrics = _rubrics(ev, loc)
    parts, files = attachments.case_parts(ev.get("files", []), f"{loc}.files")
    asserts = tuple(Assertion(type="llm-rubric", value=r, judge_required=True) for r in rubrics)
    description = ev.get("name") if isinstance(ev.get("name"), str) else ""
    text = "\n\n".join([prompt.rstrip(), *parts])
    return Case(id=case_id, input=text, asserts=asserts, description=description, files=tuple(files))


def _rubrics(ev: dict[str, Any], loc: str) -> list[str]:
    """The sentences an entry is graded by: its assertions (or expectations), else its expected output."""
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
    return rubrics
