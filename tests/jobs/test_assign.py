"""The shard assignment: deterministic, balanced, mixed, and what ``--resume`` relaunches."""

from __future__ import annotations

import random

import pytest

from upskill_hub.errors import UpskillError
from upskill_hub.jobs.assign import (
    ShardTarget,
    check_shard_count,
    missing_shards,
    owned_keys,
    plan_keys,
    shard_of,
    split_keys,
)
from upskill_hub.rundir.schema import PlannedModel, RunPlan

KEYS = [
    (m, "inject", c, f"case-{i}", r)
    for m in ("a", "b")
    for c in ("baseline", "with_skill")
    for i in range(5)
    for r in range(3)
]


def test_every_key_is_in_exactly_one_shard_and_sizes_differ_by_at_most_one():
    for n in (1, 2, 3, 4, 7, 60):
        parts = split_keys(KEYS, n)
        assert sorted(k for p in parts for k in p) == sorted(KEYS)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_the_assignment_does_not_depend_on_the_order_keys_come_in():
    shuffled = KEYS[:]
    random.Random(3).shuffle(shuffled)
    assert split_keys(shuffled, 4) == split_keys(KEYS, 4)
    assert shard_of(shuffled, 4) == shard_of(KEYS, 4)


def test_each_shard_mixes_models_and_conditions():
    for part in split_keys(KEYS, 4):
        assert {k[0] for k in part} == {"a", "b"}
        assert {k[2] for k in part} == {"baseline", "with_skill"}


def test_missing_shards_are_those_owning_a_key_not_present():
    parts = split_keys(KEYS, 4)
    present = set(KEYS) - {parts[2][0]} - set(parts[3])
    assert missing_shards(KEYS, 4, present) == [2, 3]
    assert missing_shards(KEYS, 4, KEYS) == []
    assert missing_shards(KEYS, 4, []) == [0, 1, 2, 3]


def test_owned_keys_and_a_target_agree_with_the_split():
    target = ShardTarget("run", "2026-01-01", "fp", 1, 3)
    assert target.owns(KEYS) == set(split_keys(KEYS, 3)[1]) == set(owned_keys(KEYS, 1, 3))
    with pytest.raises(UpskillError, match="shard 3 does not exist"):
        owned_keys(KEYS, 3, 3)


def test_shard_count_must_be_between_one_and_the_number_of_calls():
    assert check_shard_count(60, 60) == 60
    with pytest.raises(UpskillError, match="at least 1"):
        check_shard_count(0, 60)
    with pytest.raises(UpskillError, match="more shards than the run has calls"):
        check_shard_count(61, 60)


def test_plan_keys_are_the_calls_of_the_stored_plan():
    plan = RunPlan(
        run_id="r", models=[PlannedModel("openai", "a"), PlannedModel("openai", "b")],
        conditions=["baseline", "with_skill"], runs=3, case_ids=[f"case-{i}" for i in range(5)],
    )  # fmt: skip
    assert sorted(plan_keys(plan)) == sorted(KEYS)
