"""Statistics: Wilson intervals, error bars, paired lift, pass@k, small-n honesty."""

from __future__ import annotations

import math

import numpy as np
import pytest

from upskill_hub.lift.figures.intervals import score_p_value
from upskill_hub.lift.figures.stats import (
    condition_stats,
    error_bars,
    independent_rows,
    pass_at_k,
    summarize_rows,
    wilson_bounds,
    wilson_interval,
)
from upskill_hub.rundir.schema import ResultRow


def row(model="m", cond="baseline", case="c1", rep=0, passed=True, error=None, cached=False, tok=(10, 5)):
    return ResultRow(
        run_id="r", timestamp="t", tool_version="0", skill_name="s", skill_version="v", model=model,
        provider="test", params="{}", condition=cond, case_id=case, repeat=rep,
        passed=None if error else passed, assertions_passed=1 if passed else 0, assertions_total=1,
        assertion_details="[]", output="", input_tokens=tok[0], output_tokens=tok[1], latency_s=0.1,
        error=error, cached=cached, cost_usd=0.001,
    )


def test_wilson_known_values():
    # Reference values (Wilson 1927; e.g. statsmodels proportion_confint(method="wilson")).
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = wilson_interval(0, 5)
    assert lo == 0.0 and hi == pytest.approx(0.4345, abs=1e-4)
    lo, hi = wilson_interval(5, 5)
    assert hi == 1.0 and lo == pytest.approx(0.5655, abs=1e-4)
    assert wilson_interval(0, 0) == (None, None)


def test_wilson_matches_scipy_everywhere_and_is_exact_at_the_edges():
    from scipy.stats import binomtest

    for n in range(1, 41):
        k = np.arange(n + 1)
        lo, hi = wilson_bounds(k, n)
        for kk in range(n + 1):
            ref = binomtest(kk, n).proportion_ci(method="wilson")
            assert lo[kk] == pytest.approx(ref.low, abs=1e-12) and hi[kk] == pytest.approx(ref.high, abs=1e-12)
        assert lo[0] == 0.0 and hi[n] == 1.0  # exactly: 10/10 must not give 1 - 1e-16
        assert np.all(lo <= k / n) and np.all(k / n <= hi)
    lo, hi = wilson_bounds([3, 0], [0, 0])
    assert np.isnan(lo).all() and np.isnan(hi).all()


def test_error_bars_are_never_negative():
    below, above = error_bars([1.0, 0.0, np.nan, 0.5], [0.72, 0.0, np.nan, 0.6], [1.0 - 1e-16, 0.28, np.nan, 0.9])
    assert below.tolist() == pytest.approx([0.28, 0.0, 0.0, 0.0]) and np.all(above >= 0)
    assert above[0] == 0.0 and above[3] == pytest.approx(0.4)


def test_pass_at_k():
    assert pass_at_k(3, 0, 1) == 0.0
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - math.comb(2, 2) / math.comb(4, 2))


def test_condition_stats_excludes_errors_and_counts_cached():
    rows = [row(case="a"), row(case="b", passed=False), row(case="c", error="HTTP 500"), row(case="d", cached=True)]
    s = condition_stats("m", "baseline", rows)
    assert (s.n, s.passed, s.errors, s.cached_calls) == (3, 2, 1, 1)
    assert s.pass_rate == pytest.approx(2 / 3)
    assert s.mean_total_tokens == 15 and s.mean_input_tokens == 10
    assert s.total_cost_usd == pytest.approx(0.004)
    assert s.pass_at_k == {"pass@1": pytest.approx(2 / 3)}


def test_lift_conclusive_with_enough_cases():
    rows = []
    for i in range(12):
        rows.append(row(cond="baseline", case=f"c{i}", passed=i < 2, tok=(100, 50)))
        rows.append(row(cond="with_skill", case=f"c{i}", passed=True, tok=(300, 20)))
    conds, lifts = summarize_rows(rows, ["m"])
    (x,) = lifts
    assert x.lift == pytest.approx(10 / 12)
    assert x.p_value == pytest.approx(float(score_p_value(10, 0)))
    assert x.conclusive and x.ci_low > 0 and x.ci_high <= 1 and x.note == ""
    assert x.token_savings == pytest.approx(150 - 320)
    assert "Tango" in x.method and x.n_cases == 12


def test_none_to_all_of_ten_is_not_a_certain_hundred_points():
    # Issue 16: 0/10 -> 10/10 used to report lift 1.0 with the interval [1.0, 1.0].
    rows = [row(cond=c, case=f"c{i}", passed=c == "with_skill") for i in range(10) for c in ("baseline", "with_skill")]
    (x,) = summarize_rows(rows, ["m"])[1]
    assert x.lift == 1.0 and 0 < x.ci_low < 0.9 and x.ci_high == 1.0
    assert x.conclusive and x.p_value < 0.05


def test_two_tied_cases_are_wide_and_inconclusive():
    # Issue 16: the demo's 2 cases with no difference printed +0 pp [+0, +0].
    rows = [row(cond=c, case=f"c{i}", passed=True) for i in range(2) for c in ("baseline", "with_skill")]
    (x,) = summarize_rows(rows, ["m"])[1]
    assert x.lift == 0 and x.ci_low < -0.5 and x.ci_high > 0.5
    assert not x.conclusive and x.note.startswith("no case differs between the conditions")


@pytest.mark.parametrize(
    ("passed", "advice"),
    [
        ([True] * 14, "the model already passes every case without the skill: add cases it fails without it"),
        ([False] * 14, "every case fails with the skill too: check that the cases ask what the skill teaches"),
        ([True] * 7 + [False] * 7, "add cases where the skill should change the answer"),
    ],
)
def test_cases_that_never_differ_say_so_not_too_few(passed: list[bool], advice: str):
    # Issue 37: 14 cases that never differ read "too few cases to conclude: only 0 of 14
    # case(s) differ ... add test cases": not true (14 is not few) and not the advice.
    rows = [row(cond=c, case=f"c{i}", passed=p) for i, p in enumerate(passed) for c in ("baseline", "with_skill")]
    (x,) = summarize_rows(rows, ["m"])[1]
    assert not x.conclusive and x.lift == 0
    assert x.note == (
        "no case differs between the conditions: all 14 cases give the same result with and without "
        f"the skill, so there is no evidence of an effect; {advice}"
    )
    assert "too few" not in x.note and "0 of 14" not in x.note


def test_too_few_differing_cases_agree_with_their_counts():
    rows = [row(cond="baseline", case="a", passed=False), row(cond="with_skill", case="a", passed=True)]
    rows += [row(cond=c, case="b", passed=True) for c in ("baseline", "with_skill")]
    (x,) = summarize_rows(rows, ["m"])[1]
    assert "too few cases to conclude: only 1 of 2 cases differs between conditions" in x.note
    assert "case(s)" not in x.note


def test_one_case_that_does_not_differ_is_said_in_the_singular():
    rows = [row(cond=c, case="only", passed=False) for c in ("baseline", "with_skill")]
    (x,) = summarize_rows(rows, ["m"])[1]
    assert "the one case gives the same result" in x.note and "the case fails with the skill too" in x.note


def test_lift_small_n_says_so_plainly():
    rows = [row(cond="baseline", case="a", passed=False), row(cond="with_skill", case="a", passed=True),
            row(cond="baseline", case="b", passed=False), row(cond="with_skill", case="b", passed=True)]
    (x,) = summarize_rows(rows, ["m"])[1]
    assert x.lift == 1.0 and not x.conclusive and x.ci_low < 0
    assert "too few cases" in x.note


def test_lift_with_repeats_uses_per_case_rates():
    rows = []
    for i in range(8):
        for r in range(3):
            rows.append(row(cond="baseline", case=f"c{i}", rep=r, passed=r == 0))
            rows.append(row(cond="with_skill", case=f"c{i}", rep=r, passed=True))
    conds, (x,) = summarize_rows(rows, ["m"])
    assert x.lift == pytest.approx(2 / 3) and x.n_cases == 8  # repeats do not inflate n
    # every case differs by exactly 2/3: no spread, so each case is worth its 3 runs (16 of 24 pairs)
    assert "repeats" in x.method and x.p_value == pytest.approx(float(score_p_value(16, 0)))
    assert x.conclusive == (x.ci_low > 0) and 0 < x.ci_low < 2 / 3 < x.ci_high <= 1
    base = conds[0]
    assert base.pass_at_k["pass@1"] == pytest.approx(1 / 3) and base.pass_at_k["pass@3"] == 1.0


def test_conclusive_never_contradicts_the_interval():
    for better in range(0, 13):
        for worse in range(0, 13 - better):
            rows = []
            for i in range(12):
                b, s = (False, True) if i < better else (True, False) if i < better + worse else (True, True)
                rows += [row(cond="baseline", case=f"c{i}", passed=b), row(cond="with_skill", case=f"c{i}", passed=s)]
            (x,) = summarize_rows(rows, ["m"])[1]
            assert x.conclusive == (x.ci_low > 0 or x.ci_high < 0) == (x.p_value < 0.05)
            assert x.conclusive == (x.note == "")


def test_independent_rows_drop_cached_when_pooling_runs():
    assert len(independent_rows([row(), row(cached=True)])) == 1


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_brackets_the_rate(kn):
    k, n = kn
    lo, hi = wilson_interval(k, n)
    if n == 0:
        assert (lo, hi) == (None, None)
    else:
        assert 0.0 <= lo <= k / n <= hi <= 1.0


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_grows_with_k(nc):
    n, c = nc
    vals = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert vals == sorted(vals) and vals[0] == pytest.approx(c / n)
