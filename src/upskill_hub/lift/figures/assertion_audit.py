"""Which assertions of a run measure nothing: counted exactly from the rows, no model asked.

A lift is only as good as the assertions behind it. Four kinds give a skill's author a
false picture, and the rows of every run already hold what it takes to find them (each
row's ``assertion_details`` lists every assertion's result, in the case's order):

* **worse with the skill**: passes in at least :data:`THRESHOLD` of the baseline's calls
  and fails in at least that share of the with-skill calls (3/3 without, 0/3 with): the
  skill breaks what the model did right alone. A pooled lift can hide it behind gains
  elsewhere, so it is named apart, first.
* **non-discriminating**: passes in at least :data:`THRESHOLD` of the calls *of each*
  condition. Baseline and with-skill answers both pass it, so it cannot show what the
  skill changes (skill-creator's example note: "passes 100% in both configurations").
* **always fails**: passes in no call of either condition: too hard for the model, or
  broken (a typo in the expected text, a schema no answer can meet).
* **flaky**: differs between repeats of the same case in the same condition: for a
  deterministic check that means the answers vary, and the assertion adds noise.

skill-creator leaves this to an LLM "analyst"; here it is counts. An assertion is
identified by model x mode (x agent) x case x position: a check can tell conditions apart
for one model and not for another. The first three kinds need both conditions (a run with
``--no-baseline`` is only checked for flakiness); only answered calls count (a failed
call graded nothing).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from upskill_hub._util import safejson
from upskill_hub._util.percent import count
from upskill_hub.rundir.schema import AssertionFlag, ResultRow

#: Share of each condition's calls an assertion must pass to be called non-discriminating (and, for
#: worse with the skill, pass without it and fail with it).
THRESHOLD = 0.9
NON_DISCRIMINATING, ALWAYS_FAILS, FLAKY = "non_discriminating", "always_fails", "flaky"
WORSE_WITH_SKILL = "worse_with_skill"
#: The kinds, in the order reports list them (what the skill breaks first).
KINDS = (WORSE_WITH_SKILL, NON_DISCRIMINATING, ALWAYS_FAILS, FLAKY)
#: Each kind as a report names it.
NAME = {
    WORSE_WITH_SKILL: "worse with the skill",
    NON_DISCRIMINATING: "non-discriminating",
    ALWAYS_FAILS: "always failing",
    FLAKY: "flaky",
}
#: What each kind means, for reports and notes.
MEANING = {
    WORSE_WITH_SKILL: (
        f"passes without the skill in ≥ {THRESHOLD:.0%} of calls and fails with it in ≥ {THRESHOLD:.0%}: "
        "the skill makes these answers worse"
    ),
    NON_DISCRIMINATING: f"passes in both conditions in ≥ {THRESHOLD:.0%} of calls: does not tell them apart",
    ALWAYS_FAILS: "fails in every call of both conditions: too hard, or broken",
    FLAKY: "differs between repeats of the same case and condition: measures noise",
}
#: Longest assertion text kept in a flag (a long rubric or schema is cut, marked with …).
TEXT_CHARS = 120

#: ``(model, mode, agent, case_id, index)``: one assertion as one model met it.
AssertionKey = tuple[str, str, "str | None", str, int]


@dataclass
class _Tally:
    """One assertion's results: per condition, each answered call's pass/fail in row order."""

    text: str
    outcomes: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class AuditResult:
    """What :func:`audit_rows` found: the flags, how many assertions it looked at, and how
    many answers it could not read (their details were not a JSON list)."""

    flags: list[AssertionFlag]
    checked: int
    unreadable: int = 0


def assertion_text(detail: dict[str, Any]) -> str:
    """How an assertion is named in a report: a rubric by its text, other checks as ``type: value``."""
    kind = str(detail.get("type") or "?")
    value = detail.get("value")
    if value is None:
        text = kind
    elif kind == "llm-rubric" and isinstance(value, str):
        text = value
    else:
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        text = f"{kind}: {shown}"
    text = " ".join(text.split())
    return text if len(text) <= TEXT_CHARS else text[: TEXT_CHARS - 1] + "…"


def row_details(row: ResultRow) -> list[dict[str, Any]] | None:
    """The per-assertion results of ``row``; ``None`` when its details are not a JSON list of objects."""
    try:
        data = safejson.loads(row.assertion_details or "[]")  # bounded nesting: rows may be hand-edited
    except (ValueError, RecursionError, safejson.JSONTooDeep):
        return None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        return None
    return data


def _group(row: ResultRow) -> tuple[str, str, str | None]:
    return (row.model, row.mode, row.agent)


def tally(rows: Iterable[ResultRow]) -> tuple[dict[AssertionKey, _Tally], int]:
    """Every assertion's outcomes per condition, and the count of answers whose details were unreadable."""
    tallies: dict[AssertionKey, _Tally] = {}
    unreadable = 0
    for row in rows:
        if row.error is not None or row.passed is None:
            continue  # a failed call graded nothing
        details = row_details(row)
        if details is None:
            unreadable += 1
            continue
        for i, d in enumerate(details):
            key = (*_group(row), row.case_id, i)
            t = tallies.setdefault(key, _Tally(assertion_text(d)))
            t.outcomes[row.condition].append(d.get("passed") is True)
    return tallies, unreadable


def _kinds(t: _Tally) -> list[str]:
    """The kinds ``t`` shows (an assertion may be both flaky and non-discriminating)."""
    base, skill = t.outcomes.get("baseline", []), t.outcomes.get("with_skill", [])
    kinds = []
    if base and skill:
        if sum(base) >= THRESHOLD * len(base) and sum(skill) >= THRESHOLD * len(skill):
            kinds.append(NON_DISCRIMINATING)
        if not any(base) and not any(skill):
            kinds.append(ALWAYS_FAILS)
        if sum(base) >= THRESHOLD * len(base) and len(skill) - sum(skill) >= THRESHOLD * len(skill):
            kinds.append(WORSE_WITH_SKILL)
    if _flaky_conditions(t):
        kinds.append(FLAKY)
    return kinds


def _flaky_conditions(t: _Tally) -> list[str]:
    """Conditions whose repeats disagree (one tally is one case, so these are repeats of it)."""
    return [c for c in ("baseline", "with_skill") if len(set(t.outcomes.get(c, []))) > 1]


def audit_rows(rows: Sequence[ResultRow]) -> AuditResult:
    """The flags of a run's rows, in :data:`KINDS` order, then model, mode, case and position."""
    tallies, unreadable = tally(rows)
    flags = []
    for key, t in tallies.items():
        model, mode, agent, case_id, index = key
        base, skill = t.outcomes.get("baseline", []), t.outcomes.get("with_skill", [])
        for kind in _kinds(t):
            flags.append(
                AssertionFlag(
                    model=model, case_id=case_id, index=index, assertion=t.text, kind=kind, mode=mode,
                    agent=agent, baseline_passed=sum(base), baseline_calls=len(base),
                    with_skill_passed=sum(skill), with_skill_calls=len(skill),
                    flaky_conditions=_flaky_conditions(t) if kind == FLAKY else [],
                )
            )  # fmt: skip
    flags.sort(key=lambda f: (KINDS.index(f.kind), f.model, f.mode, f.agent or "", f.case_id, f.index))
    return AuditResult(flags=flags, checked=len(tallies), unreadable=unreadable)


def _who(flag: AssertionFlag, several: bool) -> str:
    if not several:
        return ""
    label = flag.model if flag.mode == "inject" else f"{flag.model} ({flag.agent or flag.mode})"
    return f"{label}: "


def flag_line(flag: AssertionFlag, several_models: bool = False) -> str:
    """One flag in words, with its counts: ``case 'greet' #1 (contains: hello): baseline 3/3, with skill 3/3``."""
    counts = []
    if flag.baseline_calls:
        counts.append(f"baseline {flag.baseline_passed}/{flag.baseline_calls}")
    if flag.with_skill_calls:
        counts.append(f"with skill {flag.with_skill_passed}/{flag.with_skill_calls}")
    where = (
        f" (repeats differ: {', '.join(c.replace('_', ' ') for c in flag.flaky_conditions)})"
        if flag.flaky_conditions
        else ""
    )
    return (
        f"{_who(flag, several_models)}case {flag.case_id!r} assertion {flag.index + 1} ({flag.assertion}): "
        f"{', '.join(counts)} passed{where}"
    )


def summary_lines(
    flags: Sequence[AssertionFlag] | None, checked: int | None, *, per_kind: int = 5
) -> list[str]:
    """The analysis in plain words: one line per kind found (count and case ids), then up to
    ``per_kind`` flags of that kind with their counts. Nothing for a run that was not analysed."""
    if flags is None or not checked:
        return []
    if not flags:
        return [
            f"assertion analysis: none of {count(checked, 'assertion')} is worse with the skill, non-discriminating, "
            "always failing or flaky"
        ]
    several = len({(f.model, f.mode, f.agent) for f in flags}) > 1
    lines = []
    for kind in KINDS:
        mine = [f for f in flags if f.kind == kind]
        if not mine:
            continue
        cases = ", ".join(dict.fromkeys(f.case_id for f in mine))
        lines.append(
            f"{len(mine)} of {count(checked, 'assertion')} {'is' if len(mine) == 1 else 'are'} "
            f"{NAME[kind]} ({MEANING[kind]}); cases: {cases}"
        )
        lines += [f"  {flag_line(f, several)}" for f in mine[:per_kind]]
        if len(mine) > per_kind:
            lines.append(f"  … and {len(mine) - per_kind} more (summary.json: assertion_flags)")
    return lines


def benchmark_notes(flags: Sequence[AssertionFlag] | None) -> list[str]:
    """One note per flag, in the style of skill-creator's analyst notes (``benchmark.json`` notes)."""
    if not flags:
        return []
    several = len({(f.model, f.mode, f.agent) for f in flags}) > 1
    return [f"{flag_line(f, several)} - {MEANING[f.kind]}" for f in flags]
