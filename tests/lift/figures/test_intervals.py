"""The paired lift interval: Tango's score interval, its test, and its small-n honesty."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from upskill_hub.lift.figures.intervals import (
    ALPHA,
    Z95,
    discordance,
    effective_counts,
    min_discordant_for_significance,
    paired_lift,
    score,
    score_p_value,
)


def test_uncorrected_interval_matches_its_closed_form():
    # b = n, c = 0: the score is sqrt(n (1 - d) / (1 + d)), so the lower bound solves to
    # (n - z^2) / (n + z^2), and the upper bound is 1.
    for n in (5, 10, 40):
        r = paired_lift(n, 0, n, cc=0.0)
        assert float(r.ci_low) == pytest.approx((n - Z95**2) / (n + Z95**2), abs=1e-9)
        assert float(r.ci_high) == 1.0
    # b = c = 0: the bounds are +-z^2 / (n + z^2).
    r = paired_lift(0, 0, 7, cc=0.0)
    assert float(r.ci_high) == pytest.approx(Z95**2 / (7 + Z95**2), abs=1e-9) == -float(r.ci_low)


def test_bounds_solve_the_corrected_score_equation():
    for b, c, n in ((3, 1, 12), (7, 2, 20), (2.5, 0.75, 6)):
        r = paired_lift(b, c, n)
        assert float(score(r.ci_low, b, c, n)) == pytest.approx(Z95, abs=1e-6)
        assert float(score(r.ci_high, b, c, n)) == pytest.approx(-Z95, abs=1e-6)
        assert float(r.ci_low) < (b - c) / n < float(r.ci_high)


@pytest.mark.parametrize(("b", "c", "n", "delta"), [(4, 1, 10, 0.1), (0, 3, 8, -0.5), (6, 0, 6, 0.3), (2, 2, 9, -0.2)])
def test_constrained_mle_inside_the_score_is_the_maximum(b, c, n, delta):
    # Maximise the multinomial likelihood under p12 - p21 = delta numerically, and compare
    # the resulting variance with the closed form inside ``score`` (uncorrected).
    rest = n - b - c

    def nll(p21):
        p12 = p21 + delta
        p_rest = 1 - p12 - p21
        return -(b * math.log(p12) + c * math.log(p21) + rest * math.log(p_rest)) if min(p12, p21, p_rest) > 0 else 1e300

    lo = max(0.0, -delta) + 1e-12
    hi = (1 - delta) / 2 - 1e-12
    p21 = minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}).x
    expected = (b - c - n * delta) / math.sqrt(n * (2 * p21 + delta * (1 - delta)))
    assert float(score(delta, b, c, n, cc=0.0)) == pytest.approx(expected, rel=1e-5)


def test_ten_of_ten_against_none_is_not_pinned_to_one():
    r = paired_lift(10, 0, 10)
    assert 0 < float(r.ci_low) < 0.9 and float(r.ci_high) == 1.0 and bool(r.conclusive)


def test_two_tied_cases_give_a_wide_interval():
    r = paired_lift(*discordance([0.0, 0.0]))
    assert float(r.ci_low) < -0.5 and float(r.ci_high) > 0.5 and float(r.p_value) == 1.0


def test_never_zero_width_below_fifty_cases():
    for n in range(1, 50):
        b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1))
        keep = (b + c) <= n
        r = paired_lift(b[keep], c[keep], n)
        assert np.all(r.ci_high - r.ci_low > 0.02), n
        assert np.all((r.ci_low >= -1) & (r.ci_high <= 1))


def test_interval_and_p_value_agree_on_every_table():
    for n in range(1, 41):
        b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1))
        keep = (b + c) <= n
        r = paired_lift(b[keep], c[keep], n)
        assert np.array_equal(r.conclusive, r.p_value < ALPHA), n


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([-1, -2 / 3, -1 / 3, 0, 1 / 3, 2 / 3, 1]), min_size=1, max_size=60))
def test_repeats_interval_brackets_the_lift_and_agrees_with_p(diffs):
    r = paired_lift(*discordance(diffs, runs=3))
    lift = float(np.mean(diffs))
    assert float(r.lift) == pytest.approx(lift)
    assert -1 <= float(r.ci_low) <= lift <= float(r.ci_high) <= 1
    assert float(r.ci_high) > float(r.ci_low)
    assert bool(r.conclusive) == (float(r.p_value) < ALPHA)


def test_score_decreases_in_delta_so_the_roots_are_unique():
    grid = np.linspace(-0.999, 0.999, 801)
    for b, c, n in ((0, 0, 3), (5, 0, 5), (3, 4, 10), (1.5, 0.5, 4), (0, 9, 12)):
        z = score(grid, b, c, n)
        assert np.all(np.diff(z) <= 1e-12)


def test_p_value_is_the_corrected_mcnemar_score_test():
    assert float(score_p_value(0, 0)) == 1.0
    assert float(score_p_value(8, 2)) == pytest.approx(math.erfc((6 - 0.5) / math.sqrt(10) / math.sqrt(2)))
    assert float(score_p_value(2, 8)) == float(score_p_value(8, 2))


def test_min_discordant_is_the_boundary_of_significance():
    k = min_discordant_for_significance()
    assert float(score_p_value(k, 0)) < ALPHA <= float(score_p_value(k - 1, 0))
    assert k == 5


def test_no_cases_gives_nan_not_an_error():
    r = paired_lift(0, 0, 0)
    assert math.isnan(float(r.lift)) and math.isnan(float(r.ci_low)) and not bool(r.conclusive)


def test_design_effect_is_one_for_whole_outcomes_and_capped_by_runs():
    # +-1/0 differences are already binary pairs: nothing changes, whatever the runs.
    assert discordance([1, 1, 0, -1], runs=3) == (2.0, 1.0, 4.0)
    # Fractional differences with no spread: each case is worth its runs, never more.
    assert discordance([1 / 3] * 6, runs=3) == pytest.approx((6.0, 0.0, 18.0))
    # Spread in between: 1 < f < runs, the lift unchanged.
    b, c, n = discordance([1 / 3, 2 / 3, 0, -1 / 3, 1, 1 / 3], runs=3)
    assert 6 < n < 18 and (b - c) / n == pytest.approx(1 / 3)
    one = effective_counts([2.0], [1.0], [3.0], [4], [1])
    assert [float(x[0]) for x in one] == [2.0, 1.0, 4.0]


def test_repeats_narrow_the_interval_but_never_below_whole_runs():
    diffs = [1 / 3, 2 / 3, 0, 1 / 3, 1, 1 / 3, 0, 2 / 3, 1 / 3, -1 / 3]
    conservative = paired_lift(*discordance(diffs, runs=1))
    weighted = paired_lift(*discordance(diffs, runs=3))
    every_run = paired_lift(*(3 * np.array(discordance(diffs, runs=1))))
    width = lambda r: float(r.ci_high - r.ci_low)  # noqa: E731
    assert width(every_run) <= width(weighted) < width(conservative)
