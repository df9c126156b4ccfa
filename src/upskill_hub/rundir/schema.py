"""The types of an eval run: its plan, its rows and its summary (their I/O is in :mod:`.rundir`).

Types here, reading and writing in :mod:`upskill_hub.rundir` (the split inspect_ai
uses for its logs): the runner, push, pull, the Space and ``runs`` all share these
classes, and the Hub's parquet columns are derived from them, so a column is declared once.

Nested data (generation parameters, assertion details) is stored as JSON text so the
parquet schema stays flat and the dataset viewer shows it. Integer fields are 32-bit in
parquet unless their metadata says :data:`INT64` (token counts can exceed 2**31 in sums).
"""

from __future__ import annotations

import functools
import math
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from typing import Any

CONDITIONS = ("baseline", "with_skill")

#: How the skill reaches the model (ARCHITECTURE.md, "Three ways a skill reaches a model"):
#: ``inject`` pastes SKILL.md into the system prompt (the default, an upper bound);
#: ``catalog`` shows names + descriptions and lets the model load the skill through a tool;
#: ``harness`` runs a real agent CLI in a throwaway workspace.
MODES = ("inject", "catalog", "harness")

#: The identity of one planned call: ``(model, mode, condition, case_id, repeat)``.
CallKey = tuple[str, str, str, str, int]

#: Field metadata: store this integer as a 64-bit parquet column (the default is 32-bit).
INT64 = {"arrow": "int64"}

# Field metadata: the range a figure must lie in when it is read back (:func:`record_problem`).
# A run folder or a Hub table is anyone's to edit: a pass rate of 7.0 would show as 700 %,
# a lift of 1e308 as "+inf pts", a count of -4 would be published. ``None`` is an open end.
#: A share: a pass rate, an interval bound of one, a p-value, recall, precision.
RATE = {"range": (0.0, 1.0)}
#: A difference of two shares (a lift, new minus old): whole percentage points are x 100.
LIFT = {"range": (-1.0, 1.0)}
#: A count of calls, cases, repeats or assertions.
COUNT = {"range": (0, None)}
#: A count stored as a 64-bit column.
COUNT64 = {**INT64, **COUNT}
#: An amount that cannot be negative: tokens, seconds, dollars.
AMOUNT = {"range": (0.0, None)}


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` limited to ``cls``'s fields: files written by newer versions still load."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass
class ResultRow:
    """One model call of an eval run."""

    run_id: str
    timestamp: str  # ISO 8601, UTC
    tool_version: str
    skill_name: str
    skill_version: str
    model: str  # the model id sent to the provider
    provider: str  # anthropic | openai | openai-compatible | hf | local | ...
    params: str  # JSON text: temperature, max_tokens, seed, ...
    condition: str  # "with_skill" | "baseline"
    case_id: str
    repeat: int = field(metadata=COUNT)
    passed: bool | None  # None when the call failed (see ``error``)
    assertions_passed: int = field(metadata=COUNT)
    assertions_total: int = field(metadata=COUNT)
    assertion_details: str  # JSON text: [{"type", "passed", "evidence", ...}]
    output: str
    input_tokens: int | None = field(default=None, metadata=COUNT64)
    output_tokens: int | None = field(default=None, metadata=COUNT64)
    cached_tokens: int | None = field(default=None, metadata=COUNT64)
    latency_s: float | None = field(default=None, metadata=AMOUNT)
    cost_usd: float | None = field(default=None, metadata=AMOUNT)
    error: str | None = None
    cached: bool = False
    split: str = "train"
    finish_reason: str | None = None
    # How the skill reached the model, and what the model did with it (catalog / harness).
    mode: str = "inject"  # one of MODES; rows written before modes existed are "inject"
    agent: str | None = None  # harness mode: the agent CLI ("claude-code", "codex", ...)
    triggered: bool | None = None  # catalog / harness: the skill under test was loaded
    loaded: str = "[]"  # JSON text: names of the skills loaded, in order
    files_read: str = "[]"  # JSON text: "skill/relative/path" of each file read, in order
    turns: int | None = field(default=None, metadata=COUNT)  # model turns the answer took (catalog / harness)
    tool_calls: int | None = field(default=None, metadata=COUNT)  # tool calls made along the way
    tokens_unavailable: bool = False  # the harness reported no token counts (not zero tokens)
    #: JSON text: the tool calls the answer made (catalog / harness; see session/transcript.py),
    #: ``{"calls": [{"name", "kind", "arguments", "result", ...}], "total", "cut"?, "missing"?}``;
    #: "" when none was recorded (inject rows, rows written before transcripts existed).
    transcript: str = ""
    #: JSON text: what an ``--agent`` call changed in its workspace (harness rows; see
    #: artifacts/changes.py), ``{"files": [{"path", "status", "kind", "size", "sha256", ...}],
    #: "omitted", "cut"}``; "" for other rows and rows written before it existed.
    changes: str = ""

    @property
    def key(self) -> CallKey:
        """Identity of a planned call inside a run (used for resume and de-duplication)."""
        return (self.model, self.mode, self.condition, self.case_id, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultRow:
        return cls(**_known(cls, data))


@dataclass
class TriggerRow:
    """One trigger query sent to a model with a skill catalog: did it load the skill?

    Stored one per line in the run folder's ``triggers.jsonl`` and pushed as the ``triggers``
    config. ``should_trigger`` false rows are negative controls.
    """

    run_id: str
    timestamp: str  # ISO 8601, UTC
    tool_version: str
    skill_name: str
    skill_version: str
    model: str
    provider: str
    params: str  # JSON text
    query_id: str
    query: str
    should_trigger: bool
    repeat: int
    triggered: bool | None  # None when the call failed (see ``error``)
    loaded: str = "[]"  # JSON text: skills loaded, in order
    input_tokens: int | None = field(default=None, metadata=INT64)
    output_tokens: int | None = field(default=None, metadata=INT64)
    latency_s: float | None = None
    cost_usd: float | None = None
    error: str | None = None
    cached: bool = False
    mode: str = "catalog"  # "catalog" (a model with tools) or "harness" (an agent CLI)
    agent: str | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """Identity of a planned trigger call inside a run (resume, de-duplication)."""
        return (self.model, self.query_id, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TriggerRow:
        return cls(**_known(cls, data))


@dataclass
class TriggerStats:
    """Trigger figures for one model: recall on should-trigger queries, false triggers on the rest."""

    model: str
    n_should: int = field(metadata=COUNT)  # answered should-trigger calls
    triggered_should: int = field(metadata=COUNT)
    recall: float | None = field(metadata=RATE)
    recall_ci_low: float | None = field(metadata=RATE)
    recall_ci_high: float | None = field(metadata=RATE)
    n_should_not: int = field(metadata=COUNT)  # answered should-not-trigger calls (negative controls)
    triggered_should_not: int = field(metadata=COUNT)
    false_trigger_rate: float | None = field(metadata=RATE)
    fpr_ci_low: float | None = field(metadata=RATE)
    fpr_ci_high: float | None = field(metadata=RATE)
    precision: float | None = field(metadata=RATE)
    f1: float | None = field(metadata=RATE)
    errors: int = field(default=0, metadata=COUNT)


@dataclass
class ConditionStats:
    """Aggregates for one model x condition."""

    model: str
    condition: str
    n: int = field(metadata=COUNT)  # answered calls (errors excluded)
    passed: int = field(metadata=COUNT)
    errors: int = field(metadata=COUNT)
    pass_rate: float | None = field(metadata=RATE)
    ci_low: float | None = field(metadata=RATE)
    ci_high: float | None = field(metadata=RATE)
    mean_assertions: float | None = field(metadata=RATE)  # mean fraction of assertions passed
    mean_input_tokens: float | None = field(metadata=AMOUNT)
    mean_output_tokens: float | None = field(metadata=AMOUNT)
    mean_total_tokens: float | None = field(metadata=AMOUNT)
    mean_latency_s: float | None = field(metadata=AMOUNT)
    total_cost_usd: float | None = field(metadata=AMOUNT)
    pass_at_k: dict[str, float] = field(default_factory=dict, metadata=RATE)
    cached_calls: int = field(default=0, metadata=COUNT)
    mode: str = "inject"


@dataclass
class LiftStats:
    """with_skill minus baseline for one model, paired over cases."""

    model: str
    lift: float | None = field(metadata=LIFT)
    ci_low: float | None = field(metadata=LIFT)
    ci_high: float | None = field(metadata=LIFT)
    p_value: float | None = field(metadata=RATE)
    n_cases: int = field(metadata=COUNT)
    method: str  # how ci_low/ci_high and p_value were computed (see intervals.py)
    token_savings: float | None  # baseline mean total tokens minus with-skill mean
    conclusive: bool
    note: str = ""
    mode: str = "inject"


@dataclass
class VersusStats:
    """A new version of a skill minus an old one, for one model x mode (``eval --against``).

    Paired over the cases both versions answered, computed exactly as the lift over no skill
    is, with the old version's answers in the baseline's place: ``lift`` is the mean per-case
    difference of pass rates, with its interval and p-value. ``new_lift`` and ``old_lift``
    are each version's lift over the same no-skill answers (``None`` with ``--no-baseline``).
    """

    model: str
    mode: str
    lift: float | None = field(metadata=LIFT)
    ci_low: float | None = field(metadata=LIFT)
    ci_high: float | None = field(metadata=LIFT)
    p_value: float | None = field(metadata=RATE)
    n_cases: int = field(metadata=COUNT)
    method: str
    conclusive: bool
    note: str = ""
    new_lift: float | None = field(default=None, metadata=LIFT)
    old_lift: float | None = field(default=None, metadata=LIFT)

    @property
    def regression(self) -> bool:
        """The new version is worse, and the interval says so (its upper bound is below 0)."""
        return self.ci_high is not None and self.ci_high < 0


@dataclass
class BenchmarkStats:
    """Spread over a run's repeats for one model x mode x condition (``benchmark.json``).

    Intervals say how sure the pass rate is; these say how much one repeat of the whole
    case set differs from the next (skill-creator's benchmark figures). Run ``i``'s pass
    rate is the share of cases passed in repeat ``i``, its assertion rate the mean share of
    assertions passed per answer, its time and tokens the mean per answer. ``stddev`` is
    the sample standard deviation (n - 1), 0 for one repeat, as skill-creator computes it.
    The ``delta_*`` fields (with-skill entries only) are with-skill minus baseline means.
    """

    model: str
    condition: str
    mode: str = "inject"
    agent: str | None = None
    runs: int = field(default=0, metadata=COUNT)  # repeats with at least one answered call
    pass_rate_mean: float | None = field(default=None, metadata=RATE)
    pass_rate_stddev: float | None = field(default=None, metadata=RATE)
    pass_rate_min: float | None = field(default=None, metadata=RATE)
    pass_rate_max: float | None = field(default=None, metadata=RATE)
    assertion_rate_mean: float | None = field(default=None, metadata=RATE)
    assertion_rate_stddev: float | None = field(default=None, metadata=RATE)
    assertion_rate_min: float | None = field(default=None, metadata=RATE)
    assertion_rate_max: float | None = field(default=None, metadata=RATE)
    latency_s_mean: float | None = field(default=None, metadata=AMOUNT)
    latency_s_stddev: float | None = field(default=None, metadata=AMOUNT)
    latency_s_min: float | None = field(default=None, metadata=AMOUNT)
    latency_s_max: float | None = field(default=None, metadata=AMOUNT)
    tokens_mean: float | None = field(default=None, metadata=AMOUNT)
    tokens_stddev: float | None = field(default=None, metadata=AMOUNT)
    tokens_min: float | None = field(default=None, metadata=AMOUNT)
    tokens_max: float | None = field(default=None, metadata=AMOUNT)
    delta_pass_rate: float | None = field(default=None, metadata=LIFT)
    delta_assertion_rate: float | None = field(default=None, metadata=LIFT)
    delta_latency_s: float | None = None
    delta_tokens: float | None = None


@dataclass
class AssertionFlag:
    """One assertion the run's rows show to be weak, and the counts that show it.

    ``kind``: ``worse_with_skill`` (passes in at least 90% of the baseline's calls and fails
    in at least 90% of the with-skill ones: the skill breaks it), ``non_discriminating``
    (passes in at least 90% of the calls of each condition: it cannot tell them apart),
    ``always_fails`` (never passes in either condition: too hard, or broken) or ``flaky``
    (differs between repeats of the same case and condition: it measures noise). Counted
    from the rows' assertion details, no model.
    """

    model: str
    case_id: str
    index: int = field(metadata=COUNT)  # position of the assertion in the case (0-based)
    assertion: str  # its type and value, shortened
    kind: str
    mode: str = "inject"
    agent: str | None = None
    baseline_passed: int = field(default=0, metadata=COUNT)
    baseline_calls: int = field(default=0, metadata=COUNT)
    with_skill_passed: int = field(default=0, metadata=COUNT)
    with_skill_calls: int = field(default=0, metadata=COUNT)
    flaky_conditions: list[str] = field(default_factory=list)  # conditions whose repeats differ


@dataclass
class RunSummary:
    """What a run found; stored as ``summary.json`` and in the ``runs`` config on the Hub."""

    run_id: str
    timestamp: str
    tool_version: str
    skill_name: str
    skill_version: str
    models: list[str]
    runs_per_case: int = field(metadata=COUNT)
    n_cases: int = field(metadata=COUNT)
    judge_model: str | None = None
    params: str = "{}"
    holdout: dict[str, Any] | None = None
    n_results: int | None = field(default=None, metadata=COUNT64)
    conditions: list[ConditionStats] = field(default_factory=list)
    lifts: list[LiftStats] = field(default_factory=list)
    triggers: list[TriggerStats] = field(default_factory=list)
    #: Spread over repeats per model x mode x condition; ``None`` in runs written before it existed.
    benchmark: list[BenchmarkStats] | None = None
    #: Weak assertions (see :class:`AssertionFlag`); ``None``: not analysed (an older run).
    assertion_flags: list[AssertionFlag] | None = None
    #: How many assertions (model x mode x case x position) the analysis looked at.
    assertions_checked: int | None = field(default=None, metadata=COUNT)
    #: ``eval --against``: the old version as named (a folder, ``git:REF``, ``OWNER/NAME[@REV]``),
    #: its version hash, the run that answered with it, and the new-minus-old figures.
    against: str | None = None
    against_version: str | None = None
    against_run_id: str | None = None
    versus: list[VersusStats] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        d = dict(data)
        d["conditions"] = [ConditionStats(**_known(ConditionStats, c)) for c in d.get("conditions") or []]
        d["lifts"] = [LiftStats(**_known(LiftStats, x)) for x in d.get("lifts") or []]
        d["triggers"] = [TriggerStats(**_known(TriggerStats, x)) for x in d.get("triggers") or []]
        for key, item in (("benchmark", BenchmarkStats), ("assertion_flags", AssertionFlag), ("versus", VersusStats)):
            if d.get(key) is not None:  # None (an older run, or a null parquet cell) stays None
                d[key] = [item(**_known(item, x)) for x in d[key]]
        return cls(**_known(cls, d))


@dataclass
class PlannedModel:
    """One model of a run's plan, as ``run.json`` records it."""

    provider: str
    model: str
    endpoint: str | None = None


@dataclass
class RunPlan:
    """``run.json``: what a run set out to do; its fingerprint finds it again for ``--resume``."""

    run_id: str = ""
    created: str = ""
    tool_version: str = ""
    skill_name: str = ""
    skill_version: str = ""
    models: list[PlannedModel] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=lambda: ["inject"])
    runs: int = 1
    case_ids: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    judge: str | None = None
    base_system_prompt: str = ""
    fingerprint: str = ""
    planned_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunPlan:
        d = _known(cls, data)
        # A bare model name (hand-written or older plans) is a model of unknown provider.
        d["models"] = [
            PlannedModel("", m) if isinstance(m, str) else PlannedModel(**_known(PlannedModel, m))
            for m in d.get("models") or []
        ]
        return cls(**d)


# --------------------------------------------------------------------------- checks on read
#: Largest integer a 64-bit parquet column holds, and a 32-bit one (the default, see INT64).
_INT_BOUNDS = {"int64": 2**63, "int32": 2**31}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _not_finite(value: Any, depth: int = 0) -> bool:
    """True when ``value`` (a parsed JSON value) holds NaN or an infinity anywhere."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if depth > 64:  # parsed with bounded nesting already; this only keeps the walk finite
        return False
    if isinstance(value, dict):
        return any(_not_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_not_finite(v, depth + 1) for v in value)
    return False


def _kind(value: Any) -> str:
    """What a JSON value is, in words, for a refusal."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


#: Slack for float rounding at a range's ends (a mean of shares may come out 1.0000000000000002).
_RANGE_SLACK = 1e-9


def range_problem(value: float, meta: typing.Mapping[str, Any]) -> str | None:
    """Why finite ``value`` lies outside the ``range`` its field's metadata sets (``None`` when inside).

    The one range rule for figures read back (summary.json, result rows, Hub tables): a share
    lies in [0, 1], a lift in [-1, 1], a count or an amount is not negative (:data:`RATE`,
    :data:`LIFT`, :data:`COUNT`, :data:`AMOUNT`).
    """
    bounds = meta.get("range")
    if bounds is None:
        return None
    lo, hi = bounds
    if (lo is None or value >= lo - _RANGE_SLACK) and (hi is None or value <= hi + _RANGE_SLACK):
        return None
    if hi is None:
        return f"is {value!r}, below {lo:g}"
    return f"is {value!r}, outside [{lo:g}, {hi:g}]"


def _item_meta(meta: typing.Mapping[str, Any]) -> typing.Mapping[str, Any]:
    """The metadata a list's or a dict's items are checked with: the field's range, not its column type."""
    return {"range": meta["range"]} if "range" in meta else {}


def _value_problem(value: Any, tp: Any, meta: typing.Mapping[str, Any]) -> str | None:
    """Why ``value`` cannot be stored in a field annotated ``tp`` (``None`` when it can)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(tp)):
            return None
        return _value_problem(value, args[0], meta) if len(args) == 1 else None
    if tp is Any:
        return "holds NaN or Infinity" if _not_finite(value) else None
    if tp is str:
        return None if isinstance(value, str) else f"is {_kind(value)}, not text"
    if tp is bool:
        return None if isinstance(value, bool) else f"is {_kind(value)}, not true/false"
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"is {_kind(value)}, not a whole number"
        bound = _INT_BOUNDS[meta.get("arrow", "int32")]
        return range_problem(value, meta) if -bound <= value < bound else "is too large"
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"is {_kind(value)}, not a number"
        if not math.isfinite(value):
            return f"is {value!r} (NaN and Infinity are not stored)"
        return range_problem(value, meta)
    if (origin or tp) is list:
        if not isinstance(value, list):
            return f"is {_kind(value)}, not a list"
        (item,) = typing.get_args(tp) or (Any,)
        for i, v in enumerate(value):
            if (why := _value_problem(v, item, _item_meta(meta))) is not None:
                return f"item {i} {why}"
        return None
    if (origin or tp) is dict:
        if not isinstance(value, dict):
            return f"is {_kind(value)}, not an object"
        _, item = typing.get_args(tp) or (str, Any)
        for k, v in value.items():
            if (why := _value_problem(v, item, _item_meta(meta))) is not None:
                return f"key {str(k)[:40]!r} {why}"
        return None
    if is_dataclass(tp):
        return record_problem(tp, value)
    return None


def record_problem(cls: type, data: Any) -> str | None:
    """Why ``data`` (a row read back from a file) is not a valid ``cls``, or ``None``.

    Rows come back from run folders that anyone may have edited, and go on to statistics,
    to Arrow tables and to the Hub: a list where text belongs, ``"no"`` where a boolean
    belongs or ``NaN`` as a cost would count wrongly, raise deep inside pyarrow, or be
    published. So every field present is checked against its annotation (``X | None``
    allows null; numbers are finite; integers fit their parquet column; nested dataclasses
    and lists are checked item by item), and every field without a default must be
    present. Fields this version does not know are ignored, as :func:`_known` does.
    """
    if not isinstance(data, dict):
        return f"is {_kind(data)}, not an object"
    hints = _hints(cls)
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                return f"field {f.name!r} is missing"
            continue
        why = _value_problem(data[f.name], hints[f.name], f.metadata)
        if why is not None:
            return f"field {f.name!r} {why}"
    return None


def required_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` a stored row must hold a value for: no default, not ``X | None``."""
    hints = _hints(cls)
    return tuple(
        f.name
        for f in fields(cls)
        if f.default is MISSING
        and f.default_factory is MISSING
        and type(None) not in typing.get_args(hints[f.name])
    )


def duplicate_key(keys: typing.Iterable[typing.Hashable]) -> tuple[int, typing.Hashable] | None:
    """``(index, key)`` of the first key seen before in ``keys``, or ``None`` when all differ.

    A run holds one row per planned call; a repeated key (a line pasted twice, a merged
    folder) would count one call several times, so readers refuse it.
    """
    seen: set[typing.Hashable] = set()
    for i, key in enumerate(keys):
        if key in seen:
            return i, key
        seen.add(key)
    return None
