"""Tune a skill's description on trigger queries, judged on queries the teacher never saw.

The loop of ``upskill-hub tune`` (after skill-creator's run_loop, for any model):

1. the skill's trigger queries are split into train and held-out, stratified by
   ``should_trigger`` and seeded (:func:`split_queries`), so both halves hold both kinds;
   ``held_out=0`` keeps every query in train (then no score is a held-out score);
2. the starting description (SKILL.md's, or a seed the caller passes) is scored on both
   halves, ``runs`` times per query;
3. each iteration the teacher rewrites the *last* description scored, as run_loop's
   ``current_description`` is rewritten, seeing its *train* failures, the whole SKILL.md
   within a budget, and every earlier attempt with its train figures
   (:mod:`upskill_hub.triggering.tune_prompt`): held-out queries and figures never reach
   it. It proposes a new description. A proposal that is not spec-valid (empty, over
   1,024 characters, control characters) or repeats an earlier candidate is rejected and
   counted, not scored. (Rewriting the best so far instead made a deterministic teacher
   stall: a worse proposal left the best unchanged, the teacher was asked the same
   question again and answered the same rejected text.) The loop stops when the last
   candidate passes every train query;
4. a query's verdict is run_eval's rule at ``threshold`` (:func:`~upskill_hub.triggering.
   query_verdicts.verdict`): a should-trigger query passes when it loaded the skill in at
   least ``threshold`` of its answered repeats, a should-not one when in fewer. A failure
   shown to the teacher is a query that fails *at the threshold*, so a query loaded 3/4
   times is not a miss at 0.5;
5. every candidate is scored on train and held-out; the winner is the one with the most
   held-out queries passed (run_loop's ``test_passed``), pooled accuracy (right decisions
   over all held-out calls) breaking ties, then the shorter text. With no held-out
   queries it is the best on train, and the result says so.

Followed: anthropics/skills ``skills/skill-creator/scripts/run_loop.py``,
``improve_description.py`` and ``run_eval.py`` at commit
9d2f1ae187231d8199c64b5b762e1bdf2244733d (read, not copied).

Scoring and proposing are passed in (:data:`Scorer`, :data:`Teacher`), so the loop is the
same for every model and for the scripted ones of the tests. Every step is added to
``tune.jsonl`` in the run folder as it finishes; a run killed at any point resumes from
it (the split is checked to be the same), and the model calls themselves are reused from
the response cache by the scorer and the teacher.

The run folder's files are read and written like every run folder's: read capped, never
through a symlink, never blocking on a FIFO (:func:`~upskill_hub.rundir.read_run_file`),
and written atomically (a temporary sibling renamed into place, which replaces a planted
symlink instead of writing through it). A teacher is a model: its proposal may hold
terminal escapes, C1 controls or a right-to-left override; such a proposal is rejected,
with the code point in the reason, and never reaches SKILL.md or the terminal.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub._util import limits
from upskill_hub._util.fsutil import BIDI_CONTROLS, shown_path, write_bytes_atomic, write_json_atomic
from upskill_hub.cases import TriggerQuery
from upskill_hub.descriptions import check_description
from upskill_hub.errors import PathError, UpskillError
from upskill_hub.lift.figures.intervals import wilson_interval
from upskill_hub.rundir import read_run_file
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.triggering.query_verdicts import DEFAULT_THRESHOLD, check_threshold, verdict
from upskill_hub.triggering.tune_prompt import TEACHER_SYSTEM, Attempt, Failure, parse_proposal, tune_request

HISTORY_FILE = "tune.jsonl"
RESULT_FILE = "tune_result.json"
DEFAULT_ITERATIONS = 5
DEFAULT_RUNS = 3
DEFAULT_HELD_OUT = 0.4

#: ``scorer(description, queries, runs)``: one :class:`TriggerRow` per query and repeat,
#: with the skill under test described by ``description`` in the catalog.
Scorer = Callable[[str, list[TriggerQuery], int], list[TriggerRow]]
#: ``teacher(description, failures, iteration)``: the teacher's proposed description. A
#: teacher that also takes a ``history`` keyword is given every earlier attempt
#: (:class:`~upskill_hub.triggering.tune_prompt.Attempt`, train figures only) as well.
Teacher = Callable[..., str]


# --------------------------------------------------------------------------- split
def split_queries(
    queries: list[TriggerQuery], *, held_out: float = DEFAULT_HELD_OUT, seed: int = 0
) -> tuple[list[TriggerQuery], list[TriggerQuery]]:
    """Train and held-out queries, stratified by ``should_trigger``, the same for the same seed.

    Each kind is shuffled with its own seeded generator and ``held_out`` of it (rounded, at
    least one when the kind has two or more) goes to held-out; a kind with one query stays
    in train. ``held_out=0`` holds nothing out. Input order does not matter: queries are
    sorted by id first.
    """
    if not 0 <= held_out < 1:
        raise UpskillError(f"the held-out share must be 0, or between 0 and 1, not {held_out}")
    train: list[TriggerQuery] = []
    held: list[TriggerQuery] = []
    for kind in (True, False):
        group = sorted((q for q in queries if q.should_trigger is kind), key=lambda q: q.id)
        random.Random(f"{seed}:{kind}").shuffle(group)
        k = min(len(group) - 1, max(1, round(len(group) * held_out))) if len(group) >= 2 and held_out else 0
        held += group[:k]
        train += group[k:]
    return train, held


# --------------------------------------------------------------------------- figures
@dataclass
class Figures:
    """Trigger figures of one description on one set of queries (all repeats pooled)."""

    n_should: int
    triggered_should: int
    recall: float | None
    recall_ci_low: float | None
    recall_ci_high: float | None
    n_should_not: int
    triggered_should_not: int
    false_trigger_rate: float | None
    fpr_ci_low: float | None
    fpr_ci_high: float | None
    accuracy: float | None  # right decisions (loaded when it should, not when not) over all calls
    errors: int = 0
    queries_passed: int = 0  # queries whose verdict at the threshold is a pass (run_eval's "pass")
    queries_total: int = 0  # queries with a verdict (at least one answered repeat)

    @classmethod
    def of(cls, rows: list[TriggerRow], threshold: float = DEFAULT_THRESHOLD) -> Figures:
        verdicts = _verdicts(rows, threshold)
        pos = [r for r in rows if r.should_trigger and r.triggered is not None and r.error is None]
        neg = [r for r in rows if not r.should_trigger and r.triggered is not None and r.error is None]
        tp, fp = sum(bool(r.triggered) for r in pos), sum(bool(r.triggered) for r in neg)
        rlo, rhi = wilson_interval(tp, len(pos))
        flo, fhi = wilson_interval(fp, len(neg))
        n = len(pos) + len(neg)
        return cls(
            n_should=len(pos), triggered_should=tp, recall=tp / len(pos) if pos else None,
            recall_ci_low=rlo, recall_ci_high=rhi, n_should_not=len(neg), triggered_should_not=fp,
            false_trigger_rate=fp / len(neg) if neg else None, fpr_ci_low=flo, fpr_ci_high=fhi,
            accuracy=(tp + len(neg) - fp) / n if n else None, errors=len(rows) - n,
            queries_passed=sum(verdicts.values()), queries_total=len(verdicts),
        )  # fmt: skip


def _verdicts(rows: list[TriggerRow], threshold: float) -> dict[str, bool]:
    """Each query's verdict at ``threshold`` over its answered repeats (failed calls left out)."""
    counts: dict[str, list[int]] = {}
    should: dict[str, bool] = {}
    for r in rows:
        if r.triggered is None or r.error is not None:
            continue
        c = counts.setdefault(r.query_id, [0, 0])
        c[0] += bool(r.triggered)
        c[1] += 1
        should[r.query_id] = r.should_trigger
    return {q: bool(verdict(k / n, should[q], threshold)) for q, (k, n) in counts.items()}


@dataclass
class Candidate:
    """One description tried: where it came from and how it scored."""

    index: int  # 0 = the original
    iteration: int  # the iteration that proposed it (0 for the original)
    description: str
    train: Figures
    held_out: Figures

    @property
    def held_key(self) -> tuple[int, float, int]:
        """Sort key of the winner: most held-out queries passed (run_loop's rule), then the
        pooled held-out accuracy, then the shorter text."""
        return _key(self.held_out, self.description)

    @property
    def train_key(self) -> tuple[int, float, int]:
        """The same key on train (the winner of a run with no held-out queries)."""
        return _key(self.train, self.description)


def _key(f: Figures, description: str) -> tuple[int, float, int]:
    return (f.queries_passed, f.accuracy if f.accuracy is not None else -1.0, -len(description))


@dataclass
class TuneResult:
    """The candidates in order, the rejected proposals, and the winner.

    ``all_queries``: tuned with ``held_out=0``, every query in train. The winner is then
    the best on train, the queries the teacher saw, so its score is not a held-out score.
    """

    train_ids: list[str]
    held_ids: list[str]
    candidates: list[Candidate]
    rejected: list[dict[str, Any]] = field(default_factory=list)
    resumed: bool = False
    all_queries: bool = False
    threshold: float = DEFAULT_THRESHOLD

    @property
    def original(self) -> Candidate:
        return self.candidates[0]

    @property
    def winner(self) -> Candidate:
        return max(self.candidates, key=lambda c: c.train_key if self.all_queries else c.held_key)

    @property
    def chosen_on(self) -> str:
        """What picked the winner: ``"held_out"`` accuracy, or ``"train"`` accuracy (no held-out queries)."""
        return "train" if self.all_queries else "held_out"

    def to_dict(self) -> dict[str, Any]:
        out = {
            "train_ids": self.train_ids,
            "held_out_ids": self.held_ids,
            "candidates": [asdict(c) for c in self.candidates],
            "rejected": self.rejected,
            "winner": self.winner.index,
            "winner_chosen_on": self.chosen_on,
            "winner_rule": WINNER_RULE,
            "threshold": self.threshold,
            "held_out_score": not self.all_queries,
        }
        if self.all_queries:
            out["note"] = NOT_HELD_OUT
        return out


#: How the winner is picked, in words (the JSON result, the table and the report say it).
WINNER_RULE = "most queries passed at the threshold, then pooled accuracy, then the shorter text"

#: What a result tuned on every query says about its figures (table, report, JSON).
NOT_HELD_OUT = (
    "tuned with --held-out 0, on every query: the winner is the best on the queries the teacher saw, "
    "so its score is not a held-out score and overstates how well the description generalises"
)


def failures(rows: list[TriggerRow], runs: int, threshold: float = DEFAULT_THRESHOLD) -> list[Failure]:
    """The queries of ``rows`` whose verdict at ``threshold`` is a fail (errors are not failures).

    As run_eval and improve_description: a should-trigger query loaded 3 times of 4 passes
    at 0.5, so it is not shown to the teacher as a miss; it is one at 0.8.
    """
    by: dict[str, list[TriggerRow]] = {}
    for r in rows:
        if r.triggered is not None and r.error is None:
            by.setdefault(r.query_id, []).append(r)
    out = []
    for group in by.values():
        hits = sum(bool(r.triggered) for r in group)
        if not verdict(hits / len(group), group[0].should_trigger, threshold):
            out.append(Failure(group[0].query, group[0].should_trigger, hits, len(group)))
    return out


# --------------------------------------------------------------------------- history
def _fingerprint(train: list[TriggerQuery], held: list[TriggerQuery], runs: int, threshold: float) -> str:
    """Identity of a run's split; the threshold is in it only when not the default, so a run
    begun before ``--threshold`` existed (always 0.5) still resumes."""
    parts: list[Any] = [[q.to_dict() for q in train], [q.to_dict() for q in held], runs]
    if threshold != DEFAULT_THRESHOLD:
        parts.append(threshold)
    data = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _read_history(path: Path) -> list[dict[str, Any]]:
    """The finished steps of an earlier run (a torn last line, from a kill, is dropped).

    Read capped and never through a symlink or from a FIFO; each step must be an object
    whose ``kind`` is text, whose ``iteration`` is a whole number and whose ``description``
    (when it has one) is text: anything else is one line naming the file and the line.
    """
    import os

    if not os.path.lexists(path):
        return []
    data = read_run_file(path, limits.MAX_FILE_BYTES)
    try:
        lines = data.decode("utf-8").split("\n")[:-1]
    except UnicodeDecodeError:
        raise PathError(path, "is not UTF-8 text; start a new tune run") from None
    out = []
    for number, line in enumerate(lines, 1):
        try:
            item = json.loads(line)
        except ValueError:
            raise PathError(path, f"line {number} is not JSON; start a new tune run") from None
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("kind"), str)
            or (item["kind"] != "split" and (type(item.get("iteration")) is not int))
            or ("description" in item and not isinstance(item["description"], str))
            or ("reason" in item and not isinstance(item["reason"], str))
        ):
            raise PathError(path, f"line {number} is not a tune step; start a new tune run")
        out.append(item)
    return out


class _History:
    """``tune.jsonl``: the finished steps, rewritten atomically as each new one is added.

    The file is small (one line per iteration), so each step rewrites it whole through a
    temporary sibling and a rename (fsynced): a kill or a full disk leaves the previous
    steps intact, and a symlink planted at ``tune.jsonl`` is replaced, never written through.
    """

    def __init__(self, path: Path, steps: list[dict[str, Any]]) -> None:
        self.path = path
        self.lines = [json.dumps(d, ensure_ascii=False) + "\n" for d in steps]

    def append(self, item: dict[str, Any]) -> None:
        """One finished step, on disk before the next begins (a kill loses at most the step under way)."""
        self.lines.append(json.dumps(item, ensure_ascii=False) + "\n")
        write_bytes_atomic(self.path, "".join(self.lines).encode("utf-8"))


def _figures(d: dict[str, Any]) -> Figures:
    return Figures(**d)


# --------------------------------------------------------------------------- loop
def tune_description(
    description: str,
    queries: list[TriggerQuery],
    scorer: Scorer,
    teacher: Teacher,
    *,
    run_dir: Path,
    iterations: int = DEFAULT_ITERATIONS,
    runs: int = DEFAULT_RUNS,
    seed: int = 0,
    held_out: float = DEFAULT_HELD_OUT,
    threshold: float = DEFAULT_THRESHOLD,
    on_step: Callable[[str], None] | None = None,
) -> TuneResult:
    """Propose and score up to ``iterations`` descriptions; the history lives in ``run_dir``.

    ``description`` is the first candidate (index 0): SKILL.md's own, or any seed. When
    ``run_dir`` already holds a history of the same split and runs, its steps are reused
    and the loop goes on from where it stopped. A ``teacher`` that takes a ``history``
    keyword is shown every earlier attempt (see :data:`Teacher`). ``threshold`` decides each
    query's verdict (the failures the teacher sees, the queries passed that pick the winner).
    """
    if iterations < 0 or runs < 1:
        raise UpskillError("--iterations must be 0 or more and --runs 1 or more")
    threshold = check_threshold(threshold)
    train, held = split_queries(queries, held_out=held_out, seed=seed)
    if not any(q.should_trigger for q in train) or (held_out and not held):
        need = (
            "should-trigger queries"
            if not held_out
            else "trigger queries of both kinds, enough to hold some out"
        )
        raise UpskillError(
            f"tune needs {need} (got {len(queries)}); add 'triggers' to skill_meta.json or pass --triggers FILE"
        )
    say = on_step or (lambda _m: None)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / HISTORY_FILE
    fp = _fingerprint(train, held, runs, threshold)
    done = _read_history(path)
    if done and (done[0].get("kind") != "split" or done[0].get("fingerprint") != fp):
        raise UpskillError(
            f"{run_dir} holds a tune run of other queries, --runs or --threshold; use a new --output"
        )
    result = TuneResult([q.id for q in train], [q.id for q in held], [], resumed=bool(done), all_queries=not held,
                        threshold=threshold)  # fmt: skip
    history = _History(path, done)
    if not done:
        history.append({"kind": "split", "fingerprint": fp, "seed": seed, "train": result.train_ids,
                        "held_out": result.held_ids, "runs": runs, "threshold": threshold})  # fmt: skip
    steps = {(d.get("kind"), d.get("iteration")): d for d in done[1:]}

    def scored(desc: str, index: int, iteration: int) -> tuple[Candidate, list[TriggerRow]]:
        rows_train = scorer(desc, train, runs)
        rows_held = scorer(desc, held, runs) if held else []
        figures = Figures.of(rows_train, threshold), Figures.of(rows_held, threshold)
        return Candidate(index, iteration, desc, *figures), rows_train

    train_rows: dict[int, list[TriggerRow]] = {}

    def ask(desc: str, wrong: list[Failure], it: int) -> str:
        if not shows_history:
            return teacher(desc, wrong, it)
        return teacher(desc, wrong, it, history=attempts(result, train_rows, runs, threshold))

    shows_history = _takes_history(teacher)
    # The original is always scored again: the scorer's cache makes that free after a kill,
    # and the train failures the teacher needs come with it.
    original, train_rows[0] = scored(description, 0, 0)
    result.candidates.append(original)
    if ("candidate", 0) not in steps:
        history.append({"kind": "candidate", "iteration": 0, **asdict(original)})
    for it in range(1, iterations + 1):
        last = result.candidates[-1]  # run_loop rewrites the last description, not the best so far
        wrong = failures(train_rows[last.index], runs, threshold)
        if not wrong:
            say(f"iteration {it}: no train failures left at threshold {threshold:g}; stopping")
            break
        step = steps.get(("candidate", it)) or steps.get(("rejected", it))
        if step is not None and step["kind"] == "rejected":  # stored escaped: its reason stands
            reason, proposal = _escaped(step.get("reason") or "rejected"), str(step.get("description") or "")
        else:
            proposal = step["description"] if step else ask(last.description, wrong, it)
            reason = _rejection(proposal, result.candidates)
        if reason:
            kept = _escaped(proposal)[:2000]  # the text as the teacher wrote it, made inert
            result.rejected.append({"iteration": it, "reason": reason, "description": kept})
            if step is None:
                history.append({"kind": "rejected", "iteration": it, "reason": reason, "description": kept})
            say(f"iteration {it}: proposal rejected ({reason})")
            continue
        cand, train_rows[len(result.candidates)] = scored(proposal, len(result.candidates), it)
        result.candidates.append(cand)
        if step is None:
            history.append({"kind": "candidate", "iteration": it, **asdict(cand)})
        say(_scored_line(it, cand))
    write_json_atomic(run_dir / RESULT_FILE, result.to_dict())
    return result


def _scored_line(it: int, cand: Candidate) -> str:
    h, t = cand.held_out, cand.train
    if h.accuracy is not None:
        return f"iteration {it}: held-out {h.queries_passed}/{h.queries_total} queries passed, accuracy {h.accuracy:.0%}"
    if t.accuracy is not None:
        return (f"iteration {it}: train {t.queries_passed}/{t.queries_total} queries passed, "
                f"accuracy {t.accuracy:.0%} (no held-out queries)")  # fmt: skip
    return f"iteration {it}: scored"


def _takes_history(teacher: Teacher) -> bool:
    """Whether ``teacher`` takes the ``history`` keyword (a plain three-argument teacher does not)."""
    import inspect

    try:
        params = inspect.signature(teacher).parameters
    except (TypeError, ValueError):
        return False
    return "history" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def attempts(
    result: TuneResult,
    train_rows: dict[int, list[TriggerRow]],
    runs: int,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Attempt]:
    """Every attempt so far as the teacher sees it, in the order tried: train figures only.

    Scored candidates carry their train counts and train failures; rejected proposals their
    reason (and the text, already made inert). Held-out figures are never read here.
    """
    out: list[tuple[int, int, Attempt]] = []
    for c in result.candidates:
        t = c.train
        right = t.triggered_should + (t.n_should_not - t.triggered_should_not)
        wrong = tuple(failures(train_rows.get(c.index, []), runs, threshold))
        out.append((c.iteration, 0, Attempt(
            c.iteration, c.description, index=c.index, right=right, calls=t.n_should + t.n_should_not,
            loaded_should=(t.triggered_should, t.n_should), loaded_should_not=(t.triggered_should_not, t.n_should_not),
            wrong=wrong, passed=(t.queries_passed, t.queries_total),
        )))  # fmt: skip
    for r in result.rejected:
        text = str(r.get("description") or "")
        out.append(
            (
                int(r.get("iteration") or 0),
                1,
                Attempt(int(r.get("iteration") or 0), text, rejected=str(r.get("reason"))),
            )
        )
    return [a for _, _, a in sorted(out, key=lambda x: (x[0], x[1]))]


def control_problem(text: str) -> str | None:
    """Why ``text`` may not go into SKILL.md as a description: a control character, or ``None``.

    C0 controls (ESC starts a terminal escape), DEL, C1 controls (``\x9b`` is a one-byte
    CSI) and bidirectional overrides (U+202E makes text read backwards) are each named by
    their code point. Line breaks and tabs are not refused here: a proposal is one line
    by then, and the spec check handles the rest.
    """
    for c in text:
        o = ord(c)
        if c in "\n\t":
            continue
        if o < 0x20 or 0x7F <= o <= 0x9F or c in BIDI_CONTROLS:
            return f"holds the control character U+{o:04X}; descriptions never carry terminal or direction controls"
    return None


def _escaped(text: Any) -> str:
    """``text`` with its control characters written as escapes (safe to store and print)."""
    return shown_path(text) if isinstance(text, str) else repr(text)


def _rejection(proposal: Any, candidates: list[Candidate]) -> str | None:
    """Why a proposal cannot be scored, or ``None`` when it can."""
    if not isinstance(proposal, str):
        return "not text"
    if (why := control_problem(proposal)) is not None:
        return why
    try:
        check_description(proposal)
    except UpskillError as exc:
        return str(exc)
    if any(c.description.strip() == proposal.strip() for c in candidates):
        return "the same as an earlier candidate"
    return None


# --------------------------------------------------------------------------- the teacher model
class ModelTeacher:
    """A :data:`Teacher` asking a model client (by default the one ``generate`` uses).

    Each request (:func:`~upskill_hub.triggering.tune_prompt.tune_request`) holds the last
    description scored, its train failures at ``threshold``, ``skill_md`` (the whole SKILL.md, within its
    budget) and every earlier attempt with its train figures (``history``, from the loop).
    The loop is synchronous while clients are async and bound to one event loop, so the
    teacher keeps its own loop for all its calls; :meth:`close` releases the client.
    Answers are kept in the response ``cache`` under a key of the request and the
    iteration, so a resumed run asks nothing it already asked. A failed call is a one-line
    :class:`UpskillError`; an answer holding no usable description is returned as it is,
    and the loop rejects and counts it.
    """

    def __init__(
        self, client: Any, name: str, *, skill_md: str = "", cache: Any = None, label: str = "teacher",
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:  # fmt: skip
        import asyncio

        from upskill_hub.models.base import GenerationParams

        self.client, self.name, self.skill_md, self.cache, self.label = client, name, skill_md, cache, label
        self.threshold = threshold
        self.params = GenerationParams(temperature=1.0, max_tokens=1024)
        self._loop = asyncio.new_event_loop()

    def __call__(
        self, description: str, wrong: list[Failure], iteration: int, *, history: list[Attempt] | None = None
    ) -> str:
        from upskill_hub.models.base import Message, ModelCallError
        from upskill_hub.session.cache import cache_key

        text = tune_request(self.name, description, wrong, self.skill_md, history, threshold=self.threshold)
        messages = [Message("user", text)]
        key = cache_key(
            provider=str(getattr(self.client, "provider", "")), endpoint=str(getattr(self.client, "endpoint", "") or ""),
            model=str(getattr(self.client, "model", "")), system=TEACHER_SYSTEM, messages=messages,
            params=self.params, repeat=iteration,
        )  # fmt: skip
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None:
            try:
                hit = self._loop.run_until_complete(
                    self.client.complete(TEACHER_SYSTEM, messages, self.params)
                )
            except ModelCallError as exc:
                raise UpskillError(
                    f"teacher model {self.label} failed while proposing a description: {exc}"
                ) from None
            if self.cache is not None:
                self.cache.put(key, hit)
        return parse_proposal(hit.text)

    def close(self) -> None:
        """Release the client's connections and the teacher's event loop."""
        try:
            self._loop.run_until_complete(self.client.aclose())
        finally:
            self._loop.close()
