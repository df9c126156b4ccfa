"""upskill's CI over a scenarios file: hard score, judge score, tokens, the base version, the gate.

huggingface/skills runs upskill in CI (``scripts/upskill_ci.py``, read at commit f5944d4)
over ``.upskill/evals.json``: each scenario's skill answers its tests, and the report
keeps apart what the ``verifiers`` say and what the judge says (``_aggregate_metrics``):

* **hard score**: verifier assertions passed over verifier assertions graded, pooled over
  every answer (``assertions_passed / assertions_total``); beside it the share of answers
  whose verifiers all pass (``case_success_rate``);
* **judge score**: 0–1 per answer, averaged over the answers the judge scored. upskill's
  judge gives one number per answer for all criteria; here each criterion is graded pass or
  fail (an ``llm-rubric`` check), so an answer's judge score is the share of criteria it
  meets, averaged the same way;
* **tokens**: mean total tokens (input + output) per answer.

It then runs the skill as it was at the base ref on the same tests and compares
(``_compare_variants``); here that is ``--against git:REF`` (or ``--compare`` with an
earlier run), and ``--max-token-increase PCT`` fails the gate when the with-skill tokens
grew by more than PCT percent over the compared version.

Scores are written into each run's ``summary.json`` (keys ``scenario``, ``scores`` and
``compared``, which :class:`~upskill_hub.rundir.schema.RunSummary` leaves alone).

**upskill's CI mode** (``--gate upskill``, :class:`UpskillGate`) decides as that script
does, read at huggingface/skills f5944d4 (``_compare_variants``, ``_run_suite``) with the
scenario selection of upskill's ``upskill.ci`` (``plan_ci_suite``/``select_scenarios``,
read in a fork of huggingface/upskill at ab92dcd; the 0.2.1 wheel on PyPI has no ``ci``
module yet). Per scenario skill and model, the with-skill figures now against those of the
skill at the base ref:

* FAIL when the hard score dropped by more than the allowed drop (default 0);
* when the hard score did not rise: FAIL when the judge score dropped by more than its
  allowed drop (default 0.1), or when the mean tokens per answer grew by more than the
  allowed percentage (default 20, upskill's ratio 0.2);
* NEW (and passing) when the skill has no files at the base ref; PASS otherwise.

Only the scenarios naming a skill that changed since the base run (upskill's scope
``changed``) unless every one is asked for (scope ``all``). What differs: a skill
"changed" when its folder's files differ from those at the base ref, uncommitted edits
included (upskill diffs ``BASE...HEAD``, committed files only); a scenario may name several
skills (upskill's script refuses that); answers that failed are left out of the means
(the run then stops with an error anyway).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from upskill_hub import rundir
from upskill_hub._util.fsutil import FileRefused, write_json_atomic
from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.lift.api import run_eval_async
from upskill_hub.lift.execute import RunResult
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.lift.scenarios import Scenario
from upskill_hub.lift.versus import run_versus_async
from upskill_hub.rundir.schema import ResultRow
from upskill_hub.skill import Skill, require_skill


@dataclass(frozen=True)
class ScenarioScore:
    """upskill's CI figures for one model x mode x condition of a scenario run."""

    model: str
    mode: str
    condition: str
    answers: int  # answered calls (errors left out, as for every rate)
    cases_passed: int  # answers whose verifiers all pass
    verifiers_passed: int
    verifiers_total: int
    judged: int  # answers graded on the judge criteria
    judge_sum: float  # sum of the judged answers' shares of criteria met
    tokens: int  # total tokens of the answers that report them
    token_answers: int

    @property
    def hard_score(self) -> float | None:
        return self.verifiers_passed / self.verifiers_total if self.verifiers_total else None

    @property
    def case_success_rate(self) -> float | None:
        return self.cases_passed / self.answers if self.answers else None

    @property
    def judge_score(self) -> float | None:
        return self.judge_sum / self.judged if self.judged else None

    @property
    def avg_tokens(self) -> float | None:
        return self.tokens / self.token_answers if self.token_answers else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hard_score": self.hard_score, "case_success_rate": self.case_success_rate,
                "judge_score": self.judge_score, "avg_tokens": self.avg_tokens}  # fmt: skip


def _split(row: ResultRow, n_criteria: int) -> tuple[list[bool], list[bool]]:
    """The row's verifier results and criteria results (criteria are the last checks of a case)."""
    try:
        details = json.loads(row.assertion_details or "[]")
    except ValueError:
        details = []
    got = [bool(d.get("passed")) for d in details if isinstance(d, dict)]
    if len(got) != row.assertions_total:  # details cut or missing: only the counts are known
        return [True] * row.assertions_passed + [False] * (row.assertions_total - row.assertions_passed), []
    n_hard = max(len(got) - n_criteria, 0)
    return got[:n_hard], got[n_hard:]


def score_rows(rows: Sequence[ResultRow], n_criteria: int) -> list[ScenarioScore]:
    """Hard and judge scores and tokens per model x mode x condition, in the rows' order."""
    groups: dict[tuple[str, str, str], list[ResultRow]] = {}
    for r in rows:
        groups.setdefault((r.model, r.mode, r.condition), []).append(r)
    out = []
    for (model, mode, condition), group in groups.items():
        answered = [r for r in group if r.error is None and r.passed is not None]
        cases = vp = vt = judged = 0
        jsum = 0.0
        tokens = tok_n = 0
        for r in answered:
            hard, crit = _split(r, n_criteria)
            cases += all(hard)
            vp, vt = vp + sum(hard), vt + len(hard)
            if crit:
                judged, jsum = judged + 1, jsum + sum(crit) / len(crit)
            if not r.tokens_unavailable and (r.input_tokens is not None or r.output_tokens is not None):
                tokens, tok_n = tokens + (r.input_tokens or 0) + (r.output_tokens or 0), tok_n + 1
        out.append(ScenarioScore(model, mode, condition, len(answered), cases, vp, vt, judged, jsum, tokens, tok_n))
    return out


@dataclass(frozen=True)
class ScoreChange:
    """With-skill figures now and in the compared version, for one model x mode."""

    model: str
    mode: str
    hard_then: float | None
    hard_now: float | None
    judge_then: float | None
    judge_now: float | None
    tokens_then: float | None
    tokens_now: float | None

    @property
    def token_change_pct(self) -> float | None:
        """How much the mean tokens per answer grew, in percent of the compared version's."""
        if not self.tokens_then or self.tokens_now is None:
            return None
        return (self.tokens_now - self.tokens_then) / self.tokens_then * 100

    def over(self, max_pct: float | None) -> bool:
        change = self.token_change_pct
        return max_pct is not None and change is not None and change > max_pct

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "token_change_pct": self.token_change_pct}


#: What the gate looks at: who ("scenario hf-cli-smoke", "skill hf-cli"), the compared
#: version as named, and the with-skill figures of each model x mode then and now.
GateItem = tuple[str, str | None, Sequence[ScoreChange]]


def compare_scores(now: Sequence[ScenarioScore], then: Sequence[ScenarioScore]) -> list[ScoreChange]:
    """The with-skill scores of each model x mode beside the compared version's."""
    old = {(s.model, s.mode): s for s in then if s.condition == "with_skill"}
    out = []
    for s in now:
        if s.condition != "with_skill":
            continue
        o = old.get((s.model, s.mode))
        out.append(ScoreChange(
            s.model, s.mode, o.hard_score if o else None, s.hard_score, o.judge_score if o else None,
            s.judge_score, o.avg_tokens if o else None, s.avg_tokens,
        ))  # fmt: skip
    return out


#: upskill's CI defaults (``--hard-regression-threshold 0.0``, ``--judge-regression-threshold
#: 0.1``, ``--token-regression-threshold 0.2``, the last here in percent).
CI_MAX_HARD_DROP = 0.0
CI_MAX_JUDGE_DROP = 0.1
CI_MAX_TOKEN_INCREASE = 20.0
#: The one ``--gate`` there is; without it the paired interval and ``--max-token-increase`` gate.
GATE_NAME = "upskill"
#: A base ref GitHub sends for a push that opens a branch; upskill's CI reads it as ``HEAD~1``.
_NULL_SHA = "0" * 40


@dataclass(frozen=True)
class UpskillGate:
    """upskill's CI verdict on one model's with-skill figures, now against the base ref's.

    Scores missing on a side count as 0, as upskill's averages over nothing do; the judge
    rule needs a judge score on both sides, the token rule base tokens above 0.
    """

    max_hard_drop: float = CI_MAX_HARD_DROP
    max_judge_drop: float = CI_MAX_JUDGE_DROP
    max_token_increase: float = CI_MAX_TOKEN_INCREASE  # percent

    def reasons(self, c: ScoreChange) -> list[str]:
        """Why this change fails the gate, upskill's wording; empty when it passes."""
        now, then = c.hard_now or 0.0, c.hard_then or 0.0
        out = []
        if now + self.max_hard_drop < then:
            out.append(f"hard score dropped from {then:.3f} to {now:.3f}")
        flat_or_worse = now <= then + 1e-9  # a better hard score excuses the judge and the tokens
        if (
            flat_or_worse
            and c.judge_now is not None
            and c.judge_then is not None
            and c.judge_now + self.max_judge_drop < c.judge_then
        ):
            out.append(f"judge score dropped from {c.judge_then:.3f} to {c.judge_now:.3f}")
        if flat_or_worse and c.tokens_then and c.over(self.max_token_increase):
            out.append(
                f"average tokens increased from {c.tokens_then:.1f} to {c.tokens_now:.1f} "
                f"(+{c.token_change_pct:.1f}%, over +{self.max_token_increase:g}%)"
            )
        return out


def check_gate_options(
    gate: str | None,
    *,
    scenarios: bool,
    against: str | None,
    compare: str | None,
    all_scenarios: bool,
    max_hard_drop: float | None,
    max_judge_drop: float | None,
    max_token_increase: float | None,
) -> tuple[UpskillGate | None, str | None]:
    """The gate ``--gate`` names and the base ``--against`` names, checked before anything runs.

    Without ``--gate`` its own options are refused and ``against`` comes back as given; with
    it, ``against`` must be ``git:REF`` (upskill compares with the pull request's base
    commit), and GitHub's null sha becomes ``git:HEAD~1`` as in upskill's CI.
    """
    own = {"all_scenarios": all_scenarios or None, "max_hard_drop": max_hard_drop,
           "max_judge_drop": max_judge_drop}  # fmt: skip
    if gate is None:
        given = [(k, v) for k, v in own.items() if v is not None]
        if given:
            raise OptionError(given[0][0], given[0][1], "goes with --gate upskill (upskill's CI mode)")
        return None, against
    if gate != GATE_NAME:
        raise OptionError("gate", gate, f"must be 'upskill' (decide as upskill's CI does), got {gate!r}")
    if not scenarios:
        raise OptionError("gate", gate, "upskill decides over a scenarios file: add --scenarios FILE")
    if compare is not None or against is None or not against.startswith("git:"):
        raise OptionError(
            "gate", gate, "upskill compares each skill with its version at the base commit: "
            "add --against git:BASE (and drop --compare)",
        )  # fmt: skip
    for name, value in (("max_hard_drop", max_hard_drop), ("max_judge_drop", max_judge_drop)):
        if value is not None and not (math.isfinite(value) and 0 <= value <= 1):
            raise OptionError(name, value, f"must be a score drop between 0 and 1, got {value}")
    if against == "git:" + _NULL_SHA:
        against = "git:HEAD~1"
    return UpskillGate(
        CI_MAX_HARD_DROP if max_hard_drop is None else max_hard_drop,
        CI_MAX_JUDGE_DROP if max_judge_drop is None else max_judge_drop,
        CI_MAX_TOKEN_INCREASE if max_token_increase is None else max_token_increase,
    ), against


def select_changed(
    scenarios: Sequence[Scenario], changed: Collection[Path]
) -> tuple[list[Scenario], list[Scenario]]:
    """upskill's scope ``changed``: the scenarios naming at least one changed or new skill, and the rest."""
    hit = [sc for sc in scenarios if any(folder in changed for folder in sc.skills)]
    return hit, [sc for sc in scenarios if sc not in hit]


@dataclass
class ScenarioRun:
    """One scenario skill's run, its scores, and what it was compared with."""

    scenario: Scenario
    skill_dir: Path
    result: RunResult
    scores: list[ScenarioScore]
    #: How the compared version was named (``git:REF``, a run folder, a Hub repo), or ``None``.
    compared_to: str | None = None
    changes: list[ScoreChange] = field(default_factory=list)
    #: ``--against``: the old version's run.
    old: RunResult | None = None
    #: upskill's CI mode: the skill has no files at the base ref (upskill's NEW).
    new: bool = False
    #: upskill's CI mode: the gate's reasons to fail, per (model, mode); ``None`` outside it.
    verdicts: dict[tuple[str, str], list[str]] | None = None

    @property
    def label(self) -> str:
        return self.scenario.id if len(self.scenario.skills) == 1 else f"{self.scenario.id} ({self.skill_dir.name})"

    @property
    def gate_item(self) -> GateItem:
        return (f"scenario {self.label}", self.compared_to, self.changes)

    def compare_with(self, label: str, rows: Sequence[ResultRow]) -> None:
        """Set the compared version from its rows (scored as this scenario's answers are)."""
        self.compared_to = label
        self.changes = compare_scores(self.scores, score_rows(rows, len(self.scenario.criteria)))

    def decide(self, gate: UpskillGate) -> None:
        """upskill's CI verdict on every model x mode compared (none for a NEW skill)."""
        self.verdicts = {(c.model, c.mode): gate.reasons(c) for c in self.changes}

    @property
    def status(self) -> str | None:
        """upskill's status column: FAIL, NEW or PASS; ``None`` outside upskill's CI mode."""
        if self.verdicts is None:
            return None
        if any(self.verdicts.values()):
            return "FAIL"
        return "NEW" if self.new else "PASS"

    def record(self) -> dict[str, Any]:
        """What goes into ``summary.json`` beside the run summary."""
        out = {
            "scenario": self.scenario.id,
            "scores": [s.to_dict() for s in self.scores],
            "compared": None if self.compared_to is None else {
                "version": self.compared_to, "changes": [c.to_dict() for c in self.changes],
            },
        }  # fmt: skip
        if self.verdicts is not None:
            out["ci"] = {
                "gate": GATE_NAME, "status": self.status,
                "reasons": [{"model": m, "mode": mode, "reason": r}
                            for (m, mode), rs in self.verdicts.items() for r in rs],
            }  # fmt: skip
        return out

    def write(self) -> None:
        """Add the scores to the run's ``summary.json`` (the rest of it as the run wrote it)."""
        path = self.result.run_dir / rundir.SUMMARY_FILE
        if self.result.summary is None:
            return
        write_json_atomic(path, {**self.result.summary.to_dict(), **self.record()})


async def run_scenarios_async(
    scenarios: Sequence[Scenario],
    models: Sequence[str],
    options: EvalOptions,
    *,
    old_versions: Mapping[Path, Skill] | None = None,
    against: str | None = None,
    new_skills: Collection[Path] = (),
    gate: UpskillGate | None = None,
    on_scenario: Callable[[Scenario, Path], None] | None = None,
    on_done: Callable[[ScenarioRun], None] | None = None,
) -> list[ScenarioRun]:
    """Every scenario's skills on its cases, one run each, scored; with ``old_versions``
    (skill folder -> its old version, ``--against``) each is also run head to head.

    With ``gate`` each run gets upskill's CI verdict; a skill in ``new_skills`` (absent at
    the base ref) runs alone and is NEW."""
    out: list[ScenarioRun] = []
    for sc in scenarios:
        for skill_dir in sc.skills:
            if on_scenario is not None:
                on_scenario(sc, skill_dir)
            opts = replace(options, cases=list(sc.cases))
            old = (old_versions or {}).get(skill_dir)
            old_result = None
            if old is not None:
                versus = await run_versus_async(require_skill(skill_dir), old, against or "", models, opts)
                result, old_result = versus.new, versus.old
            else:
                result = await run_eval_async(skill_dir, models, opts)
            run = ScenarioRun(sc, skill_dir, result, score_rows(result.rows, len(sc.criteria)), old=old_result)
            if old_result is not None:
                run.compare_with(against or "", old_result.rows)
            run.new = skill_dir in new_skills
            if gate is not None:
                run.decide(gate)
            run.write()
            out.append(run)
            if on_done is not None:
                on_done(run)
    return out


def run_scenarios(scenarios: Sequence[Scenario], models: Sequence[str], options: EvalOptions, **kw: Any) -> list[ScenarioRun]:
    """:func:`run_scenarios_async` from synchronous code."""
    return asyncio.run(run_scenarios_async(scenarios, models, options, **kw))


def check_max_token_increase(pct: float | None, compared: bool) -> None:
    """``--max-token-increase``: a finite percentage, not negative, with a version to compare with."""
    if pct is None:
        return
    if not math.isfinite(pct) or pct < 0:
        raise OptionError("max_token_increase", pct, f"must be a percentage of at least 0, got {pct}")
    if not compared:
        raise OptionError(
            "max_token_increase", pct, "needs a version to compare with: add --against OLD or --compare SRC"
        )


def token_changes(new_rows: Sequence[ResultRow], old_rows: Sequence[ResultRow]) -> list[ScoreChange]:
    """With-skill figures of a run beside another's (an eval without scenarios: no criteria)."""
    return compare_scores(score_rows(new_rows, 0), score_rows(old_rows, 0))


def check_token_gate(items: Sequence[GateItem], max_pct: float | None) -> None:
    """The CI gate: one line naming the first scenario (or skill) and model whose with-skill
    tokens grew by more than ``max_pct`` percent, and by how much."""
    if max_pct is None:
        return
    bad = [(who, version, c) for who, version, changes in items for c in changes if c.over(max_pct)]
    if not bad:
        return
    who, version, c = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    where = "" if c.mode == "inject" else f" ({c.mode} mode)"
    raise UpskillError(
        f"token regression: {who} on {c.model}{where}: with-skill tokens {c.tokens_then:.1f} -> "
        f"{c.tokens_now:.1f} per answer (+{c.token_change_pct:.1f}%, over --max-token-increase {max_pct:g}%) "
        f"vs {version}{more}"
    )


def check_upskill_gate(runs: Sequence[ScenarioRun]) -> None:
    """upskill's CI exit: one line naming the first failing scenario, model and reason."""
    bad = [
        (run, model, mode, r) for run in runs for (model, mode), rs in (run.verdicts or {}).items() for r in rs
    ]
    if not bad:
        return
    run, model, mode, reason = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    where = "" if mode == "inject" else f" ({mode} mode)"
    raise UpskillError(
        f"upskill CI gate: scenario {run.label} on {model}{where}: {reason} vs {run.compared_to}{more}"
    )


def latest_run_of(folder: Path, skill_name: str, scenario_id: str) -> Path | None:
    """In a folder of run folders, the latest finished run of ``skill_name`` (of this scenario
    when its summary names one), for ``--compare FOLDER``."""
    best: tuple[int, str, Path] | None = None
    for d in sorted(p for p in Path(folder).iterdir() if p.is_dir() and not p.is_symlink()):
        try:
            data = rundir.read_run_json(d / rundir.SUMMARY_FILE)
        except (FileRefused, OSError):
            continue
        if not isinstance(data, dict) or data.get("skill_name") != skill_name:
            continue
        same = data.get("scenario") == scenario_id
        if data.get("scenario") is not None and not same:
            continue
        key = (int(same), str(data.get("timestamp", "")), d)
        if best is None or key[:2] > best[:2]:
            best = key
    return None if best is None else best[2]


#: Columns of ``eval --scenarios --format agent/csv``: one row per scenario skill x model x mode.
SCENARIO_HEADERS = [
    "scenario", "skill", "model", "mode", "hard_baseline", "hard_score", "case_success_rate", "judge_baseline",
    "judge_score", "avg_tokens", "lift", "compared_to", "hard_then", "judge_then", "tokens_then",
    "token_change_pct", "run_id",
]  # fmt: skip


#: Columns of ``eval --scenarios --gate upskill --format agent/csv``: upskill's status beside the figures.
GATE_HEADERS = [*SCENARIO_HEADERS, "status", "reasons"]


def score_table_rows(runs: Sequence[ScenarioRun]) -> list[dict[str, Any]]:
    """The machine rows: with-skill scores beside the no-skill ones and the compared version's."""
    rows = []
    for run in runs:
        summary = run.result.summary
        lifts = {(x.model, x.mode): x.lift for x in (summary.lifts if summary else [])}
        by = {(s.model, s.mode, s.condition): s for s in run.scores}
        changes = {(c.model, c.mode): c for c in run.changes}
        for s in run.scores:
            if s.condition != "with_skill":
                continue
            b, c = by.get((s.model, s.mode, "baseline")), changes.get((s.model, s.mode))
            rows.append({
                "scenario": run.scenario.id, "skill": summary.skill_name if summary else run.skill_dir.name,
                "model": s.model, "mode": s.mode, "hard_baseline": b.hard_score if b else None,
                "hard_score": s.hard_score, "case_success_rate": s.case_success_rate,
                "judge_baseline": b.judge_score if b else None, "judge_score": s.judge_score,
                "avg_tokens": s.avg_tokens, "lift": lifts.get((s.model, s.mode)), "compared_to": run.compared_to,
                "hard_then": c.hard_then if c else None, "judge_then": c.judge_then if c else None,
                "tokens_then": c.tokens_then if c else None, "token_change_pct": c.token_change_pct if c else None,
                "run_id": summary.run_id if summary else None,
                "status": _row_status(run, (s.model, s.mode)),
                "reasons": "; ".join((run.verdicts or {}).get((s.model, s.mode), [])) or None,
            })  # fmt: skip
    return rows


def _row_status(run: ScenarioRun, key: tuple[str, str]) -> str | None:
    """One model x mode's status: FAIL on its own reasons, else the run's NEW or PASS."""
    if run.verdicts is None:
        return None
    return "FAIL" if run.verdicts.get(key) else ("NEW" if run.new else "PASS")


def upskill_table(rows: Sequence[Mapping[str, Any]], base: str) -> Table:
    """upskill's CI summary table: now and at the base, hard, judge and tokens, and the status.

    ``rows`` are :func:`score_table_rows` (their text cells already escaped by the caller).
    """
    t = Table(
        title=f"upskill CI: each scenario against {base}",
        title_style="bold",
        caption="hard: verifier checks passed / graded; judge: mean share of criteria met; "
        "tokens: mean per answer; NEW: the skill is not at the base; "
        "the new − old intervals above are extra information",
    )
    cols = ["scenario", "model", "hard", "base hard", "judge", "base judge", "tokens", "base tokens",
            "status"]  # fmt: skip
    for col in cols:
        t.add_column(col, justify="left" if col in ("scenario", "model", "status") else "right")

    def num(x: float | None, fmt: str = ".3f") -> str:
        return "–" if x is None else format(x, fmt)

    for r in rows:
        status = r["status"] or "–"
        t.add_row(
            Text(r["scenario"]), Text(r["model"]), num(r["hard_score"]), num(r["hard_then"]),
            num(r["judge_score"]), num(r["judge_then"]), num(r["avg_tokens"], ".1f"), num(r["tokens_then"], ".1f"),
            Text(status, style="red" if status == "FAIL" else ""),
        )  # fmt: skip
    return t
