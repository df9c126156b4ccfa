"""upskill's scenarios file (``.upskill/evals.json``), read as test plans for ``eval --scenarios``.

upskill keeps, at a repository's root, a file of scenarios: each names the skills it
exercises, the tests to run on them and whether a judge grades the answers::

    {"scenarios": [{"id": "dataset-card",
                    "skills": ["skills/hf-dataset-card"],
                    "tests": "evals/hf-dataset-card/smoke.json",
                    "judge": {"enabled": true, "criteria": ["The card has a YAML header"]}}]}

``tests`` is a tests file (any shape :mod:`upskill_hub.cases` reads, upskill's
``verifiers`` included) or an inline list of cases. ``judge.criteria`` become
``llm-rubric`` checks on every case; they were written for a grader, so the eval needs
``--judge`` (an error otherwise, never a silent skip). Paths are relative to the
repository root (the folder holding ``.upskill/``) and may not leave it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub._util.fsutil import FileRefused, check_relpath, read_capped
from upskill_hub.cases import Assertion, Case, CasesError, check_case_count, load_cases_file, parse_case
from upskill_hub.errors import UpskillError
from upskill_hub.skill import require_skill

SCENARIOS_FILE = ".upskill/evals.json"
FORMAT_LABEL = "upskill scenarios (.upskill/evals.json)"


@dataclass(frozen=True)
class Scenario:
    """One scenario: skills to evaluate, each on the same cases."""

    id: str
    skills: tuple[Path, ...]
    cases: tuple[Case, ...]
    #: ``judge.criteria`` as read (already added to every case as rubric checks).
    criteria: tuple[str, ...] = ()
    #: Where the cases came from (a file path or "inline"), for the line that says what was read.
    tests_source: str = "inline"


def _inside(root: Path, rel: Any, where: str) -> Path:
    if not isinstance(rel, str):
        raise UpskillError(f"{where}: must be a path relative to {root}")
    check_relpath(rel.rstrip("/") or rel)
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        raise UpskillError(f"{where}: {rel!r} points outside {root}")
    return root / rel.rstrip("/")


def find_scenarios_file(root: Path) -> Path | None:
    """``root/.upskill/evals.json`` when ``root`` is a repository folder that has one."""
    p = Path(root) / SCENARIOS_FILE
    return p if p.is_file() else None


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read and check a scenarios file; every problem is a one-line :class:`UpskillError`.

    Everything a run needs is checked here, before the first scenario spends a call: the
    file, every scenario's tests and every skill folder they name (each loaded and
    validated), so a broken skill in the last scenario does not fail the run after the
    earlier ones were paid for.
    """
    p = Path(path)
    if not p.is_file():
        raise UpskillError(f"{p}: scenarios file not found")
    root = p.parent.parent if p.parent.name == ".upskill" else p.parent
    try:
        raw_bytes = read_capped(p, limits.MAX_CONFIG_BYTES)  # a FIFO or a giant is refused, never read
    except FileRefused as exc:
        raise UpskillError(str(exc)) from None
    try:
        data = safejson.loads(raw_bytes.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise UpskillError(f"{p}: not valid UTF-8") from None
    except ValueError as exc:
        raise UpskillError(f"{p}: not valid JSON ({exc})") from None
    raw = data.get("scenarios") if isinstance(data, dict) else None
    if not isinstance(raw, list) or not raw:
        raise UpskillError(f"{p}: needs a non-empty 'scenarios' list")
    out: list[Scenario] = []
    seen: set[str] = set()
    for i, sc in enumerate(raw):
        where = f"{p}: scenarios[{i}]"
        if not isinstance(sc, dict):
            raise UpskillError(f"{where}: must be an object with 'id', 'skills' and 'tests'")
        sid = sc.get("id", f"scenario-{i + 1}")
        if not isinstance(sid, str) or not sid or sid in seen:
            raise UpskillError(f"{where}.id: must be a unique non-empty string")
        seen.add(sid)
        skills = sc.get("skills")
        if isinstance(skills, str):
            skills = [skills]
        if not isinstance(skills, list) or not skills:
            raise UpskillError(f"{where}.skills: must list at least one skill folder")
        skill_paths = tuple(_inside(root, s, f"{where}.skills[{j}]") for j, s in enumerate(skills))
        criteria = _criteria(sc.get("judge"), f"{where}.judge")
        cases, source = _cases(root, sc.get("tests"), f"{where}.tests")
        if criteria:
            extra = tuple(Assertion(type="llm-rubric", value=c, judge_required=True) for c in criteria)
            cases = [replace(c, asserts=c.asserts + extra) for c in cases]
        out.append(Scenario(sid, skill_paths, tuple(cases), criteria, source))
    checked: set[Path] = set()
    for sc in out:
        for j, folder in enumerate(sc.skills):
            real = folder.resolve()
            if real not in checked:  # a skill many scenarios share is loaded once
                _check_skill(folder, f"{p}: scenario {sc.id!r} skills[{j}]")
                checked.add(real)
    return out


def _check_skill(folder: Path, where: str) -> None:
    """Load and validate one scenario skill now; its first problem is the one-line error."""
    try:
        require_skill(folder)
    except UpskillError as exc:
        raise UpskillError(f"{where}: {exc}") from None


def _criteria(judge: Any, where: str) -> tuple[str, ...]:
    if judge is None:
        return ()
    if not isinstance(judge, dict):
        raise UpskillError(f"{where}: must be an object like {{\"enabled\": true, \"criteria\": [...]}}")
    if judge.get("enabled", True) is False:
        return ()
    crit = judge.get("criteria", [])
    if isinstance(crit, str):
        crit = [crit]
    if not isinstance(crit, list) or not all(isinstance(c, str) and c.strip() for c in crit):
        raise UpskillError(f"{where}.criteria: must be a list of sentences for the judge")
    return tuple(crit)


def _cases(root: Path, tests: Any, where: str) -> tuple[list[Case], str]:
    if isinstance(tests, list):
        try:
            check_case_count(len(tests), where)
            return [parse_case(c, i, where) for i, c in enumerate(tests)], "inline"
        except CasesError as exc:
            raise UpskillError(str(exc)) from None
    path = _inside(root, tests, where)
    try:
        meta = load_cases_file(path)
    except CasesError as exc:
        raise UpskillError(f"{where}: {exc}") from None
    return list(meta.cases), f"{tests} ({meta.source_format})"


def describe(path: Path, scenarios: list[Scenario]) -> str:
    """The one line that says what was read."""
    n_runs = sum(len(s.skills) for s in scenarios)
    judged = sum(1 for s in scenarios if s.criteria)
    return (
        f"scenarios: {len(scenarios)} from {path} ({FORMAT_LABEL}): {n_runs} skill eval(s), "
        f"{sum(len(s.cases) for s in scenarios)} test case(s), {judged} with judge criteria"
    )
