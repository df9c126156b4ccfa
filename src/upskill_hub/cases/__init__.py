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
How an assertion is *evaluated* lives in ``upskill_hub.lift.grading.assertions``.

One module a job, each importing only those before it: :mod:`.schema` (the types),
:mod:`.budgets` (the limits), :mod:`.dialects` (other tools' shapes), :mod:`.parse` (loading).
"""

from upskill_hub.cases.budgets import check_case_count
from upskill_hub.cases.dialects import parse_triggers
from upskill_hub.cases.parse import load_cases_file, load_meta_text, parse_case, parse_meta
from upskill_hub.cases.schema import (
    CASE_AWARE_TYPES,
    COMMAND_TIMEOUT_DEFAULT,
    FORMAT_AGENTSKILLS_EVALS,
    FORMAT_OURS,
    FORMAT_UPSKILL_SKILL,
    FORMAT_UPSKILL_SUITE,
    FORMAT_UPSKILL_VERIFIERS,
    WORKSPACE_TYPES,
    Assertion,
    Case,
    CasesError,
    SkillMeta,
    TriggerQuery,
    parse_assertion,
)

__all__ = [
    "CASE_AWARE_TYPES", "COMMAND_TIMEOUT_DEFAULT", "FORMAT_AGENTSKILLS_EVALS", "FORMAT_OURS",
    "FORMAT_UPSKILL_SKILL", "FORMAT_UPSKILL_SUITE", "FORMAT_UPSKILL_VERIFIERS", "WORKSPACE_TYPES",
    "Assertion", "Case", "CasesError", "SkillMeta", "TriggerQuery", "check_case_count", "load_cases_file",
    "load_meta_text", "parse_assertion", "parse_case", "parse_meta", "parse_triggers",
]
