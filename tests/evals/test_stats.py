"""Statistics: Wilson intervals, exact McNemar, paired lift, pass@k, small-n honesty."""

from __future__ import annotations

import math

import numpy as np
import pytest

from upskill_hub.evals.schema import ResultRow
from upskill_hub.evals.stats import (
    condition_stats,
    independent_rows,
    mcnemar_exact,
    pass_at_k,
    sign_flip_p_value,
    summarize_rows,
    wilson_interval,
)


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


def test_mcnemar_exact_matches_binomial():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(6, 0) == pytest.approx(2 / 64)
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    # b=8, c=2: 2 * P(X <= 2), X ~ Bin(10, .5)
    assert mcnemar_exact(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)


def test_sign_flip_equals_mcnemar_for_binary_diffs():
    d = np.array([1.0] * 7 + [-1.0] * 1 + [0.0] * 4)
    assert sign_flip_p_value(d) == pytest.approx(mcnemar_exact(7, 1))


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
    assert x.p_value == pytest.approx(mcnemar_exact(10, 0))
    assert x.conclusive and x.ci_low > 0 and x.ci_high <= 1
    assert x.token_savings == pytest.approx(150 - 320)
    assert "McNemar" in x.method and x.n_cases == 12


def test_lift_small_n_says_so_plainly():
    rows = [row(cond="baseline", case="a", passed=False), row(cond="with_skill", case="a", passed=True),
            row(cond="baseline", case="b", passed=False), row(cond="with_skill", case="b", passed=True)]
    (x,) = summarize_rows(rows, ["m"])[1]
    assert x.lift == 1.0 and not x.conclusive
    assert "too few cases" in x.note


def test_lift_with_repeats_uses_per_case_rates_and_permutation():
    rows = []
    for i in range(8):
        for r in range(3):
            rows.append(row(cond="baseline", case=f"c{i}", rep=r, passed=r == 0))
            rows.append(row(cond="with_skill", case=f"c{i}", rep=r, passed=True))
    conds, (x,) = summarize_rows(rows, ["m"])
    assert x.lift == pytest.approx(2 / 3) and x.n_cases == 8  # repeats do not inflate n
    assert "sign-flip" in x.method and x.p_value == pytest.approx(2 / 256)
    base = conds[0]
    assert base.pass_at_k["pass@1"] == pytest.approx(1 / 3) and base.pass_at_k["pass@3"] == 1.0


def test_bootstrap_is_reproducible():
    rows = [row(cond=c, case=f"c{i}", passed=(i + (c == "with_skill")) % 3 == 0) for i in range(9)
            for c in ("baseline", "with_skill")]
    a = summarize_rows(rows, ["m"])[1][0]
    b = summarize_rows(rows, ["m"])[1][0]
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)


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


@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_is_a_symmetric_probability(b, c):
    p = mcnemar_exact(b, c)
    assert 0.0 < p <= 1.0 and p == mcnemar_exact(c, b)


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_grows_with_k(nc):
    n, c = nc
    vals = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert vals == sorted(vals) and vals[0] == pytest.approx(c / n)
