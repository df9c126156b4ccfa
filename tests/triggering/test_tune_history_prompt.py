"""What ``tune``'s teacher is shown: every earlier attempt (train only), the whole SKILL.md, within budgets."""

from __future__ import annotations

from test_tune import GOOD, QUERIES, VAGUE, WordOverlapModel

from upskill_hub.triggering.tune import Failure, tune_description, tune_request


def history_teacher(proposals: list[str]):
    """A teacher that takes ``history``: it records what it was shown and answers ``proposals`` in turn."""
    shown: list[tuple[int, list]] = []

    def propose(description, wrong, iteration, history=None):
        shown.append((iteration, list(history or [])))
        return proposals[iteration - 1]

    propose.shown = shown  # type: ignore[attr-defined]
    return propose


PARTIAL = "Convert CSV files."  # catches one query ("convert ..."), misses the rest


def test_the_teacher_is_shown_every_earlier_attempt_with_its_train_figures(tmp_path):
    teach = history_teacher(["", PARTIAL, GOOD])
    result = tune_description(VAGUE, QUERIES, WordOverlapModel(), teach, run_dir=tmp_path / "run", iterations=3, runs=2)
    assert [c.description for c in result.candidates] == [VAGUE, PARTIAL, GOOD]
    (it1, h1), (it2, h2), (it3, h3) = teach.shown
    assert (it1, it2, it3) == (1, 2, 3)
    assert [a.description for a in h1] == [VAGUE]
    assert [(a.description, a.rejected) for a in h2] == [(VAGUE, None), ("", "the description is empty")]
    assert [a.description for a in h3] == [VAGUE, "", PARTIAL]
    train = {q.id for q in QUERIES if q.id in result.train_ids}
    for attempt, cand in zip([h3[0], h3[2]], result.candidates[:2], strict=True):
        t = cand.train
        # Train counts only: 12 train queries asked twice; the held-out figures are never passed.
        assert attempt.calls == 2 * len(train) == t.n_should + t.n_should_not
        assert attempt.loaded_should == (t.triggered_should, t.n_should)
        assert attempt.loaded_should_not == (t.triggered_should_not, t.n_should_not)
        assert attempt.right == round(t.accuracy * attempt.calls)
        held = {q.query for q in QUERIES if q.id in result.held_ids}
        assert attempt.wrong and not ({f.query for f in attempt.wrong} & held)


def test_a_resumed_run_shows_the_teacher_the_attempts_made_before_the_kill(tmp_path):
    run = tmp_path / "run"
    tune_description(VAGUE, QUERIES, WordOverlapModel(), history_teacher(["", PARTIAL]), run_dir=run, iterations=2, runs=1)
    teach = history_teacher(["unused", "unused", GOOD])
    again = tune_description(VAGUE, QUERIES, WordOverlapModel(), teach, run_dir=run, iterations=3, runs=1)
    assert again.resumed and [it for it, _ in teach.shown] == [3]
    assert [a.description for a in teach.shown[0][1]] == [VAGUE, "", PARTIAL]


def test_the_whole_skill_md_reaches_the_teacher_and_a_longer_one_is_cut_and_says_so():
    body = "---\nname: csv-json\ndescription: x\n---\n" + "Step. " * 800 + "THE-LAST-LINE"
    assert len(body) > 4_000
    text = tune_request("csv-json", VAGUE, [], body)
    assert "THE-LAST-LINE" in text and "not shown" not in text  # it used to stop after 2,000 characters

    from upskill_hub.triggering.tune_prompt import SKILL_MD_BUDGET

    huge = "Step. " * (SKILL_MD_BUDGET // 6 + 1000) + "THE-LAST-LINE"
    text = tune_request("csv-json", VAGUE, [], huge)
    assert "THE-LAST-LINE" not in text and f"first {SKILL_MD_BUDGET:,} of {len(huge):,} characters" in text
    assert f"the last {len(huge) - SKILL_MD_BUDGET:,} characters are not shown" in text
    assert len(text) < SKILL_MD_BUDGET + 2_000


def test_a_long_history_keeps_to_its_budget_dropping_the_oldest_failure_lists_first():
    from upskill_hub.triggering.tune_prompt import HISTORY_BUDGET, Attempt, history_section

    wrong = tuple(Failure(f"query {i} " + "w" * 280, True, 0, 3) for i in range(20))
    history = [
        Attempt(i, f"attempt-{i} " + "d" * 1000, index=i, right=5, calls=10, loaded_should=(2, 5),
                loaded_should_not=(2, 5), wrong=wrong)  # fmt: skip
        for i in range(40)
    ]
    text = "\n".join(history_section(history))
    assert len(text) <= HISTORY_BUDGET + 1_000
    blocks = text.split("</attempt>")
    assert "its wrong decisions" in blocks[-2] and "its wrong decisions" not in blocks[0]
    assert "attempt-39 " in text and "more not listed" in text
    shown = sum(f"attempt-{i} " in text for i in range(40))
    assert shown < 40 and f"({40 - shown} earliest attempt(s) not shown)" in text
    assert "attempt-0 " not in text  # the oldest go first
    small = "\n".join(history_section(history[:2]))
    assert small.count("its wrong decisions") == 2 and "not shown" not in small
