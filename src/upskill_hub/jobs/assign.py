"""Split a planned run into N shards of calls, deterministically, for Hugging Face Jobs.

Pure functions over call keys ``(model, mode, condition, case_id, repeat)``; no I/O. The launcher,
every shard Job and ``--resume`` must agree on which calls a shard owns without talking
to each other, so the rule is a function of the plan alone:

    sort every planned key; shard ``i`` of ``n`` owns the keys at positions ``i, i+n, i+2n, ...``

Sorted keys run model by model, condition by condition, case by case, so dealing them
round-robin gives every shard an even mix of models, conditions and cases (one slow model
does not end up in one shard), and shard sizes differ by at most one call. The rule has a
name (:data:`ASSIGNMENT`) stored with the plan, so a later version that changes it can
refuse an old run instead of silently reassigning calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.rundir.schema import CallKey, RunPlan

#: The name of the assignment rule above (stored in the run's Job bundle).
ASSIGNMENT = "round-robin-sorted-keys-v1"


@dataclass(frozen=True)
class ShardTarget:
    """What one shard Job runs: its part of run ``run_id`` (planned elsewhere, same fingerprint)."""

    run_id: str
    created: str
    fingerprint: str
    index: int
    count: int

    def owns(self, keys: Iterable[CallKey]) -> set[CallKey]:
        """The keys of ``keys`` (all the plan's calls) that this shard runs."""
        return set(owned_keys(keys, self.index, self.count))


def check_shard_count(shards: int, planned_calls: int) -> int:
    """``shards`` when it can split ``planned_calls`` calls (1 to one shard per call); else one line."""
    if shards < 1:
        raise OptionError("shards", shards, f"must be at least 1, got {shards}")
    if shards > planned_calls:
        raise UpskillError(
            f"--jobs {shards} is more shards than the run has calls ({planned_calls}); use at most {planned_calls}"
        )
    return shards


def split_keys(keys: Iterable[CallKey], shards: int) -> list[list[CallKey]]:
    """Every shard's keys, in sorted order (see the module docstring for the rule)."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    ordered = sorted(set(keys))
    return [ordered[i::shards] for i in range(shards)]


def owned_keys(keys: Iterable[CallKey], index: int, shards: int) -> list[CallKey]:
    """The keys shard ``index`` (0-based) of ``shards`` owns."""
    if not 0 <= index < shards:
        raise UpskillError(f"shard {index} does not exist in a run of {shards} shards (0 to {shards - 1})")
    return split_keys(keys, shards)[index]


def shard_of(keys: Iterable[CallKey], shards: int) -> dict[CallKey, int]:
    """Each key's shard index."""
    return {k: i for i, part in enumerate(split_keys(keys, shards)) for k in part}


def missing_shards(keys: Iterable[CallKey], shards: int, present: Iterable[CallKey]) -> list[int]:
    """Shards that own at least one planned key not in ``present`` (sorted), for ``--resume``."""
    have = set(present)
    return [i for i, part in enumerate(split_keys(keys, shards)) if any(k not in have for k in part)]


def plan_keys(plan: RunPlan) -> list[CallKey]:
    """Every call key of a stored plan (``run.json``), as :meth:`EvalPlan.calls` makes them."""
    return [
        (m.model, mode, cond, case_id, r)
        for r in range(plan.runs)
        for case_id in plan.case_ids
        for m in plan.models
        for mode in plan.modes or ["inject"]
        for cond in plan.conditions
    ]
