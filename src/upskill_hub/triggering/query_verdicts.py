"""A trigger query's verdict over its repeats (skill-creator's run_eval rule).

Each query's trigger rate is the share of its answered repeats in which the model loaded
the skill, with a 95% Wilson interval; at ``threshold`` a should-trigger query passes when
its rate is at least the threshold, a should-not one when it is below. Failed calls are
counted apart and never enter the rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import OptionError
from upskill_hub.lift.figures.intervals import wilson_interval
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.rundir.trigger_rows import QueryRate

#: A query's verdict: should-trigger passes at a rate >= this, should-not below it (skill-creator's default).
DEFAULT_THRESHOLD = 0.5


def check_threshold(threshold: float) -> float:
    """``--threshold`` as a share of runs above 0 and at most 1, else a one-line :class:`OptionError`."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise OptionError("threshold", threshold, f"must be a number from 0 to 1, got {threshold!r}")
    if not 0 < threshold <= 1:
        raise OptionError(
            "threshold", threshold,
            f"must be above 0 and at most 1 (the share of runs a query must trigger in), got {threshold:g}",
        )  # fmt: skip
    return float(threshold)


def verdict(rate: float | None, should_trigger: bool, threshold: float) -> bool | None:
    """Whether a query passes at ``threshold`` (skill-creator's run_eval rule); ``None`` with no rate."""
    if rate is None:
        return None
    return rate >= threshold if should_trigger else rate < threshold


def query_rate(
    model: str, q: TriggerQuery, runs: int, triggered: int, errors: int, threshold: float
) -> QueryRate:
    """``q``'s figures on ``model``: ``triggered`` of ``runs`` answered calls, its Wilson interval and verdict."""
    rate = triggered / runs if runs else None
    lo, hi = wilson_interval(triggered, runs)
    return QueryRate(
        model=model, query_id=q.id, query=q.query, should_trigger=q.should_trigger, runs=runs, triggered=triggered,
        rate=rate, ci_low=lo, ci_high=hi, passed=verdict(rate, q.should_trigger, threshold), errors=errors,
    )  # fmt: skip


def query_rates(rows: Iterable[TriggerRow], threshold: float = DEFAULT_THRESHOLD) -> list[QueryRate]:
    """Per model and query (in the order first seen): the trigger rate over the answered repeats and its verdict."""
    check_threshold(threshold)
    counts: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        c = counts.setdefault((r.model, r.query_id), [TriggerQuery(r.query_id, r.query, r.should_trigger), 0, 0, 0])
        if r.error is not None or r.triggered is None:
            c[3] += 1
        else:
            c[1] += 1
            c[2] += bool(r.triggered)
    return [query_rate(m, q, n, k, e, threshold) for (m, _), (q, n, k, e) in counts.items()]


def run_eval_fields(skill_name: str, description: str, rates: Iterable[QueryRate]) -> dict[str, Any]:
    """The fields of skill-creator's ``run_eval.py`` output, so its ``improve_description.py``
    (and ``run_loop``'s reports) read our verdicts as they read its own.

    Each measured query is one of ``results``: ``trigger_rate`` (loads over answered runs),
    ``triggers`` (the loads), ``runs`` (the answered runs) and ``pass`` (the verdict at the run's
    threshold, run_eval's rule); ``summary`` counts them (``failed`` = ``total`` - ``passed``).
    A query with no answered run has no verdict and is left out, where run_eval would have counted
    its failed calls as misses. With several models each (model, query) is one result, named by
    ``model``. Our own names (``rate``, ``triggered``, ``passed``) stay in ``queries``.
    """
    results = [
        {"query": r.query, "should_trigger": r.should_trigger, "trigger_rate": r.rate, "triggers": r.triggered,
         "runs": r.runs, "pass": r.passed, "model": r.model}
        for r in rates
        if r.passed is not None
    ]  # fmt: skip
    passed = sum(bool(r["pass"]) for r in results)
    return {
        "skill_name": skill_name,
        "description": description,
        "results": results,
        "summary": {"total": len(results), "passed": passed, "failed": len(results) - passed},
    }


def failing_queries(rates: Iterable[QueryRate]) -> list[QueryRate]:
    """The queries whose verdict is a fail (each once per model, however many repeats went wrong)."""
    return [r for r in rates if r.passed is False]
