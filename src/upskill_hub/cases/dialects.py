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
        raise CasesError(where, '\'expected\' must be an object like {"contains": "..."}')
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
        raise CasesError(where, 'must be a non-empty list like [{"type": "contains", "values": [...]}]')
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
        raise CasesError(f"{loc}.context", 'must be null or {"files": {"NAME": "CONTENT"}}')
    files = context.get("files")
    if files is None:
        return text, []
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise CasesError(f"{loc}.context.files", "must map file names to their text")
    check_file_count(len(files), f"{loc}.context.files")
    for name in files:
        schema.checked_input_file(name, f"{loc}.context.files")
    parts = [text.rstrip(), *(schema.file_block(name, content) for name, content in files.items())]
    return "\n\n".join(parts), list(files.items())


def parse_triggers(raw: Any, where: str = "triggers") -> list[TriggerQuery]:
    """Trigger queries from a JSON list of ``{"query", "should_trigger"[, "id"]}`` objects."""
    if not isinstance(raw, list):
        raise CasesError(where, 'must be a list of {"query": ..., "should_trigger": true|false}')
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


#: The keys of an evals.json entry read here. Any other key (agent-skills-eval's ``tools``,
#: ``runtime_checks``, ...) is named once per file in :attr:`SkillMeta.warnings` and ignored.
EVAL_KEYS = frozenset({
    "id", "name", "prompt", "expected_output", "files", "assertions", "expectations", "should_trigger",
    # agent-skill-eval
    "force_skill_invocation", "stage_files",
    # agent-skills-eval
    "params", "tool_assertions",
})  # fmt: skip
#: Top-level keys of an evals.json read here (others are named in the warning too).
EVALS_TOP_KEYS = frozenset({"skill_name", "evals"})
#: The keys of agent-skills-eval's ``params`` that are generation parameters here, and the
#: largest JSON text a ``params`` object may have.
PARAM_KEYS = ("temperature", "max_tokens", "top_p", "seed", "stop")
PARAMS_MAX_CHARS = 4096
MAX_TOKENS_CAP = 1_000_000
#: agent-skill-eval's rule for the assertions that it grades on git state and turns around for
#: a negative control (``_invert``): "A new git branch was created" there means none was.
_GIT_ACTION = (
    (r"\bbranch\b", r"\b(created|exists|new)\b"),
    (r"\bcommit\b", r"\b(created|exists|new)\b"),
    (r"\bpush", r"\b(remote|branch|pushed)\b"),
    (r"\bprs?\b|\bpull request", r""),
)


def parse_agentskills_evals(
    data: dict[str, Any], base_dir: Path | None, evals_dir: Path | None = None
) -> SkillMeta:
    """The agentskills.io ``evals/evals.json`` shape and the dialects of the tools that run it.

    ``{"skill_name", "evals": [{"id", "prompt", "expected_output", "files", "assertions"}]}``;
    skill-creator calls the assertions ``expectations``. Each assertion is a sentence for a
    grader, so it becomes an ``llm-rubric`` that needs ``--judge``. Without any, the
    ``expected_output`` is the rubric (as agent-skills-eval does).

    Input ``files`` are looked up relative to the evals file's folder (``evals_dir``) first,
    then to the skill folder (``base_dir``), and must stay inside the folder they were found in.

    Negative controls (``"should_trigger": false``) are trigger queries; one with assertions
    is also a case (``Case.should_trigger`` false) that keeps them: it runs like any case,
    and in ``--mode catalog`` or in an agent its with-skill run is the run that must not load
    the skill, graded by those assertions.

    agent-skill-eval (tardigrde/skill-evals):

    * ``force_skill_invocation: true``: the case runs with the skill loaded for sure. In
      ``--mode inject`` (the default) the skill is in the system prompt anyway, so nothing
      changes; in ``--mode catalog`` and in agents the with-skill prompt starts with
      ``Use the NAME skill.``, as agent-skill-eval's runner does (:meth:`Case.prompt_for`);
      the baseline prompt is left alone. With ``should_trigger: false`` it is a contradiction,
      refused as agent-skill-eval refuses it.
    * ``stage_files: true``: the input files are also added with ``git add`` to a git
      repository made in the agent's workspace (a ``--model`` call has no workspace: there it
      changes nothing).
    * its input files are copied into the workspace by their name alone, as it does; the
      file is read as agent-skill-eval's when any entry uses one of its two keys.
    * for its negative controls the assertions it grades on git state (a branch, a commit, a
      push, a pull request) mean that this did *not* happen, so the judge is told so.

    agent-skills-eval (darkrishabh/agent-skills-eval):

    * ``params``: the case's generation parameters over the run's (``temperature``,
      ``max_tokens``, ``top_p``, ``seed``, ``stop``); other keys are named in the warning.
    * ``tool_assertions`` become transcript checks: ``tool-called`` and ``tool-not-called``
      by name, ``tool-arg-contains`` a ``tool-called`` check with ``args`` at its ``path``.
      ``tool-arg-equals``, ``tool-arg-matches`` and ``tool-call-count`` have no equivalent
      yet and are refused, never dropped.

    Keys read by none of these are named once per file in :attr:`SkillMeta.warnings`.
    """
    evals = data.get("evals")
    if not isinstance(evals, list):
        raise CasesError("evals", 'must be a list of {"id", "prompt", "assertions"} objects')
    name = data.get("skill_name")
    if name is not None and not isinstance(name, str):
        raise CasesError("skill_name", "must be a string")
    check_case_count(len(evals), "evals")
    flat = any(isinstance(ev, dict) and ({"force_skill_invocation", "stage_files"} & set(ev) or _structured(ev))
               for ev in evals)  # fmt: skip
    attachments = Attachments(base_dir, evals_dir, flat=flat)
    unused: dict[str, None] = {k: None for k in data if k not in EVALS_TOP_KEYS}
    cases: list[Case] = []
    triggers: list[TriggerQuery] = []
    for i, ev in enumerate(evals):
        case, trigger = _parse_entry(ev, i, attachments, unused, flat)
        if trigger is not None:
            triggers.append(trigger)
        if case is not None:
            cases.append(case)
    for c in cases:
        if not re.fullmatch(schema.CASE_ID_PATTERN, c.id):
            raise CasesError("evals", f"id {c.id!r} {schema.CASE_ID_RULE}")
    extra = {"skill_name": name} if name else {}
    warnings = []
    if unused:
        shown = ", ".join(_shown_key(k) for k in list(unused)[:20])
        more = f" and {len(unused) - 20} more" if len(unused) > 20 else ""
        warnings.append(f"evals.json keys upskill-hub does not use, ignored: {shown}{more}")
    return SkillMeta(
        cases=cases, triggers=triggers, extra=extra, source_format=schema.FORMAT_AGENTSKILLS_EVALS,
        warnings=warnings,
    )  # fmt: skip


def _shown_key(key: str) -> str:
    one = " ".join(str(key).split())
    return repr(one if len(one) <= 60 else one[:59] + "…")


def _parse_entry(
    ev: Any, i: int, attachments: Attachments, unused: dict[str, None], flat: bool
) -> tuple[Case | None, TriggerQuery | None]:
    """One entry of ``evals``: a case, a negative trigger control, or both."""
    if not isinstance(ev, dict):
        raise CasesError(f"evals[{i}]", "an eval must be an object with a 'prompt'")
    raw_id = ev.get("id", i + 1)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)):
        raise CasesError(f"evals[{i}].id", "must be a number or a string")
    case_id = f"eval-{raw_id}" if isinstance(raw_id, int) else raw_id
    try:
        return _parse_case_entry(ev, f"evals[{i}]", case_id, attachments, unused, flat)
    except CasesError as exc:  # the one line names the case by its id too
        raise CasesError(exc.field, f"{exc.message} (case {_shown_key(case_id)})") from None


def _parse_case_entry(
    ev: dict[str, Any], loc: str, case_id: str, attachments: Attachments, unused: dict[str, None], flat: bool
) -> tuple[Case | None, TriggerQuery | None]:
    for k in ev:
        if k not in EVAL_KEYS:
            unused.setdefault(k, None)
    prompt = ev.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise CasesError(f"{loc}.prompt", "must be a non-empty string")
    should = ev.get("should_trigger", True)
    force = ev.get("force_skill_invocation", False)
    stage = ev.get("stage_files", False)
    for key, value in (("should_trigger", should), ("force_skill_invocation", force), ("stage_files", stage)):
        if not isinstance(value, bool):
            raise CasesError(f"{loc}.{key}", "must be true or false")
    if force and not should:
        raise CasesError(loc, "force_skill_invocation cannot be true when should_trigger is false")
    trigger = None if should else TriggerQuery(id=case_id, query=prompt, should_trigger=False)
    tool_checks = _tool_assertions(ev.get("tool_assertions"), f"{loc}.tool_assertions")
    if should:
        rubrics = _rubrics(ev, loc, required=not tool_checks, structured=flat)
    else:  # a negative control is a case only when it says how to grade it
        rubrics = _rubrics(ev, loc, required=False, promote_expected=False, structured=flat)
        if not rubrics and not tool_checks:
            return None, trigger
    params = _params(ev.get("params"), f"{loc}.params", unused)
    parts, files = attachments.case_parts(ev.get("files", []), f"{loc}.files")
    for staged, _ in files:  # by the name it is staged under (agent-skill-eval keeps only the last part)
        schema.checked_input_file(staged, f"{loc}.files")
    if flat:
        key = "assertions" if "assertions" in ev else "expectations"
        asserts = tuple(_agent_skill_eval_checks(rubrics, should, f"{loc}.{key}")) + tool_checks
    else:
        asserts = (
            tuple(Assertion(type="llm-rubric", value=r, judge_required=True) for r in rubrics) + tool_checks
        )
    description = ev.get("name") if isinstance(ev.get("name"), str) else ""
    # agent-skill-eval sends its prompt verbatim: the files are in the workspace it makes
    text = prompt if flat else "\n\n".join([prompt.rstrip(), *parts])
    case = Case(
        id=case_id, input=text, asserts=asserts, description=description, files=tuple(files),
        should_trigger=should, force_skill=force, stage_files=stage, params=params, git_repo=flat, verbatim=flat,
    )  # fmt: skip
    return case, trigger


#: agent-skill-eval's routing of a prose assertion to a git check (``classify_assertion``,
#: 0.7.0), in its order: the first that matches wins.
_GIT_STATE_ROUTES = (
    ("git-branch-created", r"branch", r"created|exists|new"),
    ("git-commit-created", r"commit", r"created|exists|new"),
    ("git-pushed", r"push", r"remote|branch|pushed"),
)
#: agent-skill-eval's structured assertion types read here, as the assertion type each is
#: (``file_contains`` / ``file_not_contains`` without a ``path`` read the answer: ``icontains``
#: / ``not-contains`` ignoring case, as it matches).
STRUCTURED_TYPES = {
    "file_exists": "file-present", "file_not_exists": "file-absent", "file_contains": "file-present-contains",
    "file_not_contains": "file-present-not-contains", "file_unchanged": "file-unchanged", "git_clean": "git-clean",
    "json_path": "json-path", "json_path_not_exists": "json-path-absent",
}  # fmt: skip
_STRUCTURED_KEYS = {"type", "text", "path", "contains", "command", "json_path", "equals"}
#: Graded by agent-skill-eval from its agent's raw logs (Codex's JSON events, or any line
#: naming the command; pass words such as " passed"), which upskill-hub's transcripts do not keep.
_STRUCTURED_NOT_READ = ("command_ran", "command_not_ran", "tests_pass")


def _agent_skill_eval_checks(items: list[Any], should: bool, where: str) -> list[Assertion]:
    """agent-skill-eval's assertions as it grades them (``graders.DeterministicGrader``).

    A sentence about a new branch, a commit or a push (its words, its order) is a git check on
    the workspace's state, not the judge's; for a negative control it must *not* have
    happened (``value: false``). Its structured types are the state checks of
    :data:`STRUCTURED_TYPES`; those it grades from its agent's raw logs are refused, never dropped.
    A sentence that "contains" a quoted text is ``contains-any`` on the answer, as it grades it
    (:func:`_quoted_contains`). Every other sentence goes to the judge (a negative control's
    pull-request sentence told so).
    """
    out: list[Assertion] = []
    for j, item in enumerate(items):
        loc = f"{where}[{j}]"
        if isinstance(item, dict):
            out.append(_structured_assertion(item, loc))
            continue
        low = item.lower()
        route = next((t for t, a, b in _GIT_STATE_ROUTES if re.search(a, low) and re.search(b, low)), None)
        if route is not None:
            out.append(Assertion(type=route, value=None if should else False))
        elif (quoted := _quoted_contains(item)) is not None:
            out.append(quoted)
        else:
            out.append(
                Assertion(type="llm-rubric", value=item if should else _negated(item), judge_required=True)
            )
    return out


def _quoted_contains(sentence: str) -> Assertion | None:
    """agent-skill-eval's ``content-contains`` route: a sentence saying "contains" / "includes"
    with a ``"quoted"`` (else a `` `backticked` ``) text passes when any of them is in the
    answer, either case; never inverted for a negative control. Its earlier routes win first
    (a pull request, a file, a command ran: those still go to the judge here)."""
    low = sentence.lower()
    if (
        re.search(r"\bprs?\b|\bpull request", low)
        or "file exists" in low
        or ("file" in low and "exists" in low)
        or ("created" in low and ("." in low or "file" in low))
        or ("ran" in low and any(c in low for c in ("command", "npm", "git", "python", "cargo", "go")))
        or ("contains" not in low and "includes" not in low)
    ):
        return None
    patterns = re.findall(r'"([^"]+)"', sentence) or re.findall(r"`([^`]+)`", sentence)
    if not patterns:
        return None  # prose that happens to say "contains": the judge, as it does
    return Assertion(type="contains-any", value=list(dict.fromkeys(patterns)), case_sensitive=False)


def _structured_assertion(item: dict[str, Any], where: str) -> Assertion:
    stype = item.get("type")
    if stype in _STRUCTURED_NOT_READ:
        raise CasesError(
            where, f"agent-skill-eval's structured assertion {stype!r} has no upskill-hub equivalent yet "
            f"(read: {', '.join(STRUCTURED_TYPES)}); express it as a sentence for the judge"
        )  # fmt: skip
    if stype not in STRUCTURED_TYPES:
        raise CasesError(
            where,
            f"unknown structured assertion type {str(stype)[:40]!r} (read: {', '.join(STRUCTURED_TYPES)})",
        )
    extra = set(item) - _STRUCTURED_KEYS
    if extra:
        raise CasesError(where, f"unknown keys: {', '.join(sorted(map(str, extra)))[:200]}")
    atype, path = STRUCTURED_TYPES[stype], item.get("path")
    raw: dict[str, Any] = {"type": atype, "path": path}
    if stype in ("file_contains", "file_not_contains"):
        if not isinstance(item.get("contains"), str) or not item["contains"]:
            raise CasesError(where, f"{stype!r} needs a non-empty string 'contains'")
        raw["value"] = item["contains"]
        if path is None:  # agent-skill-eval then looks in the answer, ignoring case
            return parse_assertion(
                {"type": "icontains" if stype == "file_contains" else "not-contains", "value": item["contains"]},
                where, default_case_sensitive=False,
            )  # fmt: skip
    elif stype in ("json_path", "json_path_not_exists"):
        if path is None:
            raise CasesError(
                where, f"{stype!r} without 'path' (a JSON answer) is not read yet; name the file"
            )
        raw["value"] = {"at": item.get("json_path")}
        if stype == "json_path" and item.get("equals") is not None:
            raw["value"]["equals"] = item["equals"]
    return parse_assertion(raw, where)


def _negated(rubric: str) -> str:
    """A negative control's git-action assertion as agent-skill-eval grades it: it must not have happened."""
    low = rubric.lower()
    for subject, verb in _GIT_ACTION:
        if re.search(subject, low) and (not verb or re.search(verb, low)):
            return (
                "This is a negative control: the skill should not have run, so the following must NOT "
                f"have happened (pass only if it did not): {rubric}"
            )
    return rubric


def _structured(ev: dict[str, Any]) -> bool:
    """Whether an entry lists one of agent-skill-eval's structured assertions (an object)."""
    items = ev.get("assertions")
    return isinstance(items, list) and any(isinstance(a, dict) for a in items)


def _rubrics(
    ev: dict[str, Any],
    loc: str,
    required: bool = True,
    promote_expected: bool = True,
    structured: bool = False,
) -> list[Any]:
    """The sentences an entry is graded by: its assertions (or expectations), else its expected
    output; with ``structured`` (agent-skill-eval's file) its assertion objects too."""
    key = "assertions" if "assertions" in ev else "expectations"
    if "assertions" in ev and "expectations" in ev:
        raise CasesError(loc, "has both 'assertions' and 'expectations': keep one list")
    rubrics = ev.get(key, [])
    if not isinstance(rubrics, list) or not all(
        (isinstance(r, str) and r.strip()) or (structured and isinstance(r, dict)) for r in rubrics
    ):
        raise CasesError(f"{loc}.{key}", "must be a list of sentences for the judge")
    expected = ev.get("expected_output")
    if expected is not None and not isinstance(expected, str):
        raise CasesError(f"{loc}.expected_output", "must be a string")
    if promote_expected and not rubrics and expected and expected.strip():
        rubrics = [expected]
    if not rubrics and required:
        raise CasesError(loc, f"has no '{key}' and no 'expected_output' to grade against")
    return rubrics


#: agent-skills-eval's tool assertion types read here, and the keys each may carry.
TOOL_ASSERTION_KEYS = {
    "tool-called": {"type", "name", "description"},
    "tool-not-called": {"type", "name", "description"},
    "tool-arg-contains": {"type", "name", "path", "value", "description"},
}
MAX_TOOL_ASSERTIONS = 64
_TOOL_ASSERTIONS_NOT_READ = ("tool-arg-equals", "tool-arg-matches", "tool-call-count")


def _tool_assertions(raw: Any, where: str) -> tuple[Assertion, ...]:
    """agent-skills-eval's ``tool_assertions`` as transcript checks (see :func:`parse_agentskills_evals`)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise CasesError(where, 'must be a list of {"type": "tool-called", "name": ...} objects')
    if len(raw) > MAX_TOOL_ASSERTIONS:
        raise CasesError(
            where, f"lists {len(raw):,} tool assertions; a case may list at most {MAX_TOOL_ASSERTIONS}"
        )
    out = []
    for j, ta in enumerate(raw):
        loc = f"{where}[{j}]"
        if not isinstance(ta, dict):
            raise CasesError(loc, "a tool assertion must be an object with a 'type'")
        ttype = ta.get("type")
        if ttype in _TOOL_ASSERTIONS_NOT_READ:
            raise CasesError(
                loc, f"tool assertion type {ttype!r} has no upskill-hub equivalent yet "
                f"(read: {', '.join(TOOL_ASSERTION_KEYS)}); remove it or express it as one of those"
            )  # fmt: skip
        if ttype not in TOOL_ASSERTION_KEYS:
            raise CasesError(
                loc,
                f"unknown tool assertion type {str(ttype)[:40]!r} (read: {', '.join(TOOL_ASSERTION_KEYS)})",
            )
        extra = set(ta) - TOOL_ASSERTION_KEYS[ttype]
        if extra:
            raise CasesError(loc, f"unknown keys for {ttype}: {', '.join(sorted(map(str, extra)))[:200]}")
        if ttype == "tool-arg-contains":
            if not isinstance(ta.get("value"), str) or not ta["value"]:
                raise CasesError(loc, "tool-arg-contains needs a non-empty string 'value'")
            if len(ta["value"]) > PARAMS_MAX_CHARS:
                raise CasesError(
                    loc, f"'value' is {len(ta['value']):,} characters; at most {PARAMS_MAX_CHARS:,}"
                )
            mapped = {
                "type": "tool-called",
                "value": ta.get("name"),
                "args": ta["value"],
                "path": ta.get("path"),
            }
        else:
            mapped = {"type": ttype, "value": ta.get("name")}
        out.append(parse_assertion(mapped, loc))
    return tuple(out)


def _params(raw: Any, where: str, unused: dict[str, None]) -> tuple[tuple[str, Any], ...]:
    """agent-skills-eval's ``params``: the generation parameters of one case, checked and bounded."""
    import json

    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise CasesError(where, 'must be an object of generation parameters, like {"temperature": 0}')
    try:
        size = len(json.dumps(raw))
    except (TypeError, ValueError, RecursionError):
        raise CasesError(where, "must hold JSON values only") from None
    if size > PARAMS_MAX_CHARS:
        raise CasesError(
            where, f"is {size:,} characters of JSON; a case's params may be at most {PARAMS_MAX_CHARS:,}"
        )
    out: list[tuple[str, Any]] = []
    for key, value in raw.items():
        if key not in PARAM_KEYS:
            unused.setdefault(f"params.{key}", None)
            continue
        out.append((key, _param_value(key, value, f"{where}.{key}")))
    return tuple(out)


def strict_params(raw: Any, where: str) -> dict[str, Any]:
    """agent-skills-eval.yaml's ``targetParams``: generation parameters, every key honoured or refused.

    Unlike a case's ``params`` (whose unknown keys are named in a warning), a run-wide
    parameter that cannot be sent would change every answer unseen: it is a ``CasesError``.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CasesError(where, "must be a mapping of generation parameters, like {temperature: 0}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in PARAM_KEYS:
            raise CasesError(
                f"{where}.{_shown_key(key)[1:-1]}",
                f"is not a parameter upskill-hub sends (it sends {', '.join(PARAM_KEYS)})",
            )
        out[key] = _param_value(key, value, f"{where}.{key}")
    return out


def _param_value(key: str, value: Any, where: str) -> Any:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == "temperature":
        if not number or not 0 <= value <= 2:
            raise CasesError(where, "must be a number from 0 to 2")
        return float(value)
    if key == "top_p":
        if not number or not 0 < value <= 1:
            raise CasesError(where, "must be a number above 0 and at most 1")
        return float(value)
    if key == "max_tokens":
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_TOKENS_CAP:
            raise CasesError(where, f"must be a whole number from 1 to {MAX_TOKENS_CAP:,}")
        return value
    if key == "seed":
        if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
            raise CasesError(where, "must be a whole number that fits in 64 bits")
        return value
    stops = [value] if isinstance(value, str) else value
    if (
        not isinstance(stops, list)
        or not 1 <= len(stops) <= 16
        or not all(isinstance(x, str) and x for x in stops)
    ):
        raise CasesError(where, "must be a string or a list of 1 to 16 non-empty strings")
    return tuple(stops)
