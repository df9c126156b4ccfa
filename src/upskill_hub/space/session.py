"""An evaluation started from the Space: request checking, key handling, streaming.

Keys and tokens a visitor types live only in the request object of the handler that uses
them: they are passed to the model clients explicitly (so the provider SDKs never fall
back to the Space's environment), are masked in every message shown (``redact`` with the
session's secrets), and are not written anywhere: the run folder holds results only, and
:class:`SessionKeys` has no ``repr`` that could print them.

The run itself is :func:`upskill_hub.lift.run_eval` in a worker thread; its ``on_row``
callback feeds a queue that :meth:`EvalSession.updates` drains, so the UI shows progress
and partial rows while calls finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub._util.redact import redact
from upskill_hub._util.retry import DEFAULT_TIMEOUT_S
from upskill_hub.errors import UpskillError

#: Limits that keep one visitor from tying up a shared Space (operator can raise them).
MAX_MODELS = int(os.environ.get("UPSKILL_SPACE_MAX_MODELS", "4"))
MAX_RUNS = int(os.environ.get("UPSKILL_SPACE_MAX_RUNS", "5"))
MAX_CASES = int(os.environ.get("UPSKILL_SPACE_MAX_CASES", "50"))
MAX_SKILL_BYTES = 200_000
#: Calls in flight per visitor evaluation: polite to providers and to a shared Space.
CONCURRENCY = int(os.environ.get("UPSKILL_SPACE_CONCURRENCY", "4"))
#: Evaluations running at once in the whole Space; one more is refused (not queued forever).
MAX_EVALS = int(os.environ.get("UPSKILL_SPACE_MAX_EVALS", "4"))
_EVAL_SLOTS = threading.BoundedSemaphore(MAX_EVALS)


@dataclass(repr=False)
class SessionKeys:
    """Keys typed for this session only. ``repr`` never shows them."""

    hf_token: str = ""
    openai_key: str = ""
    anthropic_key: str = ""
    endpoint_key: str = ""

    def __repr__(self) -> str:
        filled = [f.name for f in dataclasses.fields(self) if getattr(self, f.name)]
        return f"SessionKeys(set={filled})"

    __str__ = __repr__

    def secrets(self) -> list[str]:
        return [v for v in (self.hf_token, self.openai_key, self.anthropic_key, self.endpoint_key) if v]


def split_specs(text: str) -> list[str]:
    """Model specs typed one per line or comma-separated."""
    return [s.strip() for s in (text or "").replace(",", "\n").splitlines() if s.strip()]


def build_clients(
    specs: list[str], keys: SessionKeys, *, base_url: str = "", allow_private: bool | None = None
):
    """Model clients for a visitor: explicit keys only, checked endpoints, no local model.

    Every client gets a non-empty ``api_key`` argument, so
    :func:`upskill_hub.models.resolve_api_key` never consults the environment.
    """
    from upskill_hub.models import create_client, parse_model_spec
    from upskill_hub.models.factory import NO_KEY
    from upskill_hub.space.safety import check_base_url

    if not specs:
        raise UpskillError(
            "pick at least one model (e.g. hf:Qwen/Qwen2.5-7B-Instruct or openai:gpt-4.1-mini)"
        )
    if len(specs) > MAX_MODELS:
        raise UpskillError(f"at most {MAX_MODELS} models per evaluation in this Space")
    url = check_base_url(base_url, allow_private=allow_private) if base_url.strip() else None
    parsed = [parse_model_spec(s, url) for s in specs]
    clients = []
    for spec in parsed:
        if spec.provider == "local":
            raise UpskillError("the in-process local model is not available in the Space; use an endpoint")
        if spec.base_url and spec.base_url != url:
            check_base_url(spec.base_url, allow_private=allow_private)
        key = {
            "hf": keys.hf_token,
            "openai": keys.openai_key,
            "anthropic": keys.anthropic_key,
            "openai-compatible": keys.endpoint_key,
        }[spec.provider]
        if spec.base_url and spec.provider != "openai-compatible":
            # A hosted provider redirected to a proxy gets the proxy's key, if one was typed.
            key = keys.endpoint_key or key
        if not key:
            if spec.key_required:
                what = {"hf": "sign in or paste a Hugging Face token", "openai": "enter an OpenAI key",
                        "anthropic": "enter an Anthropic key"}[spec.provider]  # fmt: skip
                raise UpskillError(f"model {spec.raw!r} needs a key: {what} (used for this session only)")
            key = NO_KEY
        clients.append(create_client(spec, api_key=key, timeout=DEFAULT_TIMEOUT_S, max_retries=2))
    return clients


def skill_from_text(skill_md: str, meta_json: str | None, workdir: Path):
    """A skill pasted or uploaded as SKILL.md text (plus optional skill_meta.json text)."""
    from upskill_hub.skill import SKILL_FILE, FrontmatterError, load_skill, name_problem, split_frontmatter

    if len(skill_md.encode("utf-8")) > MAX_SKILL_BYTES:
        raise UpskillError(f"SKILL.md is larger than {MAX_SKILL_BYTES // 1000} kB")
    try:
        fm, _ = split_frontmatter(skill_md)
    except FrontmatterError as exc:
        raise UpskillError(f"pasted SKILL.md: {exc}") from None
    if meta_json and len(meta_json.encode("utf-8")) > MAX_SKILL_BYTES:
        raise UpskillError(f"skill_meta.json is larger than {MAX_SKILL_BYTES // 1000} kB")
    name = fm.get("name")
    why = name_problem(name)
    if why:
        raise UpskillError(f"pasted SKILL.md: name {why}")
    folder = workdir / "skill" / name
    folder.mkdir(parents=True)
    (folder / SKILL_FILE).write_text(skill_md, encoding="utf-8")
    if meta_json and meta_json.strip():
        (folder / "skill_meta.json").write_text(meta_json, encoding="utf-8")
    res = load_skill(folder)
    if not res.ok:
        raise UpskillError(f"pasted skill: {res.errors[0]}")
    return res.skill


def visitor_cases(skill) -> list:
    """The skill's cases with per-assertion judge models removed.

    A judge named inside a test case would be built from the Space's environment keys;
    in the Space every ``llm-rubric`` is judged by the visitor's first model instead.
    """
    cases = list(skill.meta.cases)
    if not cases:
        raise UpskillError(f"skill {skill.name!r} has no test cases; paste a skill_meta.json with cases")
    if len(cases) > MAX_CASES:
        raise UpskillError(
            f"skill {skill.name!r} has {len(cases)} cases; this Space runs at most {MAX_CASES}"
        )
    out = []
    for c in cases:
        if any(a.type == "command" for a in c.asserts):  # a visitor's shell command never runs here
            raise UpskillError(f"case {c.id!r}: 'command' checks run shell commands and are refused in this Space")
        asserts = tuple(dataclasses.replace(a, judge=None) for a in c.asserts)
        out.append(dataclasses.replace(c, asserts=asserts))
    return out


WORKDIR_PREFIX = "upskill-space-"
#: Finished runs stay this long (for "push results"), then their folders are removed.
WORKDIR_MAX_AGE_S = int(os.environ.get("UPSKILL_SPACE_RUN_TTL_S", "7200"))


def new_workdir() -> Path:
    """A private folder for one visitor evaluation; old ones are swept first."""
    sweep_workdirs()
    return Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))


def sweep_workdirs(max_age_s: float | None = None) -> int:
    """Remove evaluation folders older than ``max_age_s``; returns how many went."""
    max_age = WORKDIR_MAX_AGE_S if max_age_s is None else max_age_s
    now = time.time()
    removed = 0
    for p in Path(tempfile.gettempdir()).glob(WORKDIR_PREFIX + "*"):
        try:
            if p.is_dir() and now - p.stat().st_mtime > max_age:
                shutil.rmtree(p, ignore_errors=True)
                removed += 1
        except OSError:
            continue
    return removed


@dataclass
class EvalUpdate:
    """One step of a streamed evaluation, as the UI shows it."""

    done: int
    total: int
    rows: list[Any]  # ResultRow so far
    finished: bool = False
    result: Any = None  # RunResult when finished
    error: str | None = None


@dataclass
class EvalSession:
    """One evaluation run for one visitor: a worker thread plus a queue of finished rows."""

    skill: Any
    clients: list[Any]
    runs: int = 1
    include_baseline: bool = True
    secrets: list[str] = field(default_factory=list, repr=False)
    workdir: Path = field(default_factory=new_workdir)
    _queue: queue.Queue = field(default_factory=queue.Queue, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> EvalSession:
        if not 1 <= self.runs <= MAX_RUNS:
            raise UpskillError(f"runs must be between 1 and {MAX_RUNS}")
        cases = visitor_cases(self.skill)
        if not _EVAL_SLOTS.acquire(blocking=False):
            raise UpskillError(f"the Space is running {MAX_EVALS} evaluations already; try again in a minute")
        self._queue.put(
            ("start", len(cases) * self.runs * len(self.clients) * (2 if self.include_baseline else 1))
        )

        def work() -> None:
            from upskill_hub.lift.api import run_eval_async
            from upskill_hub.lift.harness import HarnessOptions
            from upskill_hub.lift.prepare import EvalOptions

            async def run_then_close():  # -> RunResult
                # The clients' connection pools belong to this event loop: close them in it
                # (an aiohttp session left open complains on stderr when collected).
                try:
                    return await run_eval_async(self.skill, self.clients, options)
                finally:
                    for c in self.clients:
                        with contextlib.suppress(Exception):
                            await c.aclose()

            # The slot is given back *before* the final message goes out: a visitor who starts
            # again the moment this run reports "done" must find the slot free.
            final: tuple[str, Any] = ("error", "evaluation stopped")
            try:
                options = EvalOptions(
                    runs=self.runs,
                    cases=cases,
                    include_baseline=self.include_baseline,
                    concurrency=CONCURRENCY,
                    output_dir=self.workdir / "runs",
                    use_cache=False,  # never share answers (or cache files) between visitors
                    on_row=lambda row: self._queue.put(("row", row)),
                    on_start=lambda total, _done: self._queue.put(("start", total)),
                    harness=HarnessOptions(allow_commands=False),
                )
                final = ("done", asyncio.run(run_then_close()))
            except UpskillError as exc:
                final = ("error", redact(str(exc), self.secrets))
            except Exception as exc:  # report, never crash the Space; no traceback to visitors
                final = ("error", redact(f"evaluation failed: {type(exc).__name__}: {exc}", self.secrets))
            finally:
                _EVAL_SLOTS.release()
                self._queue.put(final)

        self._thread = threading.Thread(target=work, name="upskill-space-eval", daemon=True)
        try:
            self._thread.start()
        except BaseException:
            _EVAL_SLOTS.release()
            raise
        return self

    def updates(self, poll_s: float = 0.1) -> Iterator[EvalUpdate]:
        """Yield an update whenever rows arrive, then a final one (finished or error)."""
        rows: list[Any] = []
        total = 0
        while True:
            try:
                kind, payload = self._queue.get(timeout=poll_s)
            except queue.Empty:
                if self._thread is not None and not self._thread.is_alive() and self._queue.empty():
                    yield EvalUpdate(len(rows), total, rows, finished=True, error="evaluation stopped")
                    return
                continue
            batch = [(kind, payload)]
            while True:  # coalesce a burst of rows into one UI update
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for kind, payload in batch:
                if kind == "start":
                    total = int(payload)
                elif kind == "row":
                    rows.append(payload)
                elif kind == "done":
                    yield EvalUpdate(len(rows), total or len(rows), list(rows), finished=True, result=payload)
                    return
                elif kind == "error":
                    yield EvalUpdate(len(rows), total, list(rows), finished=True, error=payload)
                    return
            yield EvalUpdate(len(rows), total, list(rows))

ROW_HEADERS = ["model", "condition", "case", "repeat", "passed", "assertions", "tokens", "latency s", "error"]


def row_cells(row: Any, secrets: list[str]) -> list[Any]:
    """A result row for the live table (error text redacted with the session's keys)."""
    tokens = None
    if row.input_tokens is not None or row.output_tokens is not None:
        tokens = (row.input_tokens or 0) + (row.output_tokens or 0)
    passed = "error" if row.passed is None else ("yes" if row.passed else "no")
    return [
        row.model,
        row.condition,
        row.case_id,
        row.repeat,
        passed,
        f"{row.assertions_passed}/{row.assertions_total}",
        "" if tokens is None else tokens,
        "" if row.latency_s is None else round(row.latency_s, 2),
        redact(row.error or "", secrets),
    ]


SUMMARY_HEADERS = [
    "model",
    "baseline pass rate",
    "with skill pass rate",
    "lift",
    "p-value",
    "paired cases",
    "note",
]


def summary_rows(summary: Any) -> list[list[Any]]:
    """The finished run's table: pass rates with intervals and lift per model."""
    from upskill_hub.space.views import fmt_lift, fmt_rate

    conds = {(c.model, c.condition): c for c in summary.conditions}
    lifts = {x.model: x for x in summary.lifts}
    out = []
    for model in summary.models:
        b = conds.get((model, "baseline"))
        w = conds.get((model, "with_skill"))
        lf = lifts.get(model)
        out.append(
            [
                model,
                fmt_rate(b.pass_rate, b.ci_low, b.ci_high) if b else "–",
                fmt_rate(w.pass_rate, w.ci_low, w.ci_high) if w else "–",
                fmt_lift(lf.lift, lf.ci_low, lf.ci_high) if lf else "–",
                "" if lf is None or lf.p_value is None else round(lf.p_value, 4),
                lf.n_cases if lf else 0,
                lf.note if lf else "",
            ]
        )
    return out


def summary_frame(summary: Any):
    """Condition stats as a DataFrame (model, condition, pass_rate, ci, mean_tokens) for plots."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "model": c.model,
                "condition": c.condition,
                "pass_rate": c.pass_rate,
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "mean_tokens": c.mean_total_tokens,
            }
            for c in summary.conditions
        ],
        columns=["model", "condition", "pass_rate", "ci_low", "ci_high", "mean_tokens"],
    )


#: Finished runs by handle. The page holds only the handle: a push names a run this
#: Space made for that visitor, never a folder of the caller's choosing.
_RUNS: dict[str, Path] = {}
_RUNS_LOCK = threading.Lock()
MAX_REMEMBERED_RUNS = 1000


def remember_run(run_dir: Path) -> str:
    """An unguessable handle for a finished run's folder (what the page keeps for "push")."""
    import secrets

    handle = secrets.token_urlsafe(18)
    with _RUNS_LOCK:
        _RUNS[handle] = Path(run_dir)
        while len(_RUNS) > MAX_REMEMBERED_RUNS:
            del _RUNS[next(iter(_RUNS))]
    return handle


def run_for(handle: str) -> Path:
    """The run folder behind ``handle``; one-line error when unknown or already swept."""
    with _RUNS_LOCK:
        run_dir = _RUNS.get((handle or "").strip())
    if run_dir is None:
        raise UpskillError(
            "no such evaluation in this Space: run one first (finished runs are kept for a while)"
        )
    if not run_dir.is_dir():
        raise UpskillError("this evaluation's results were removed (runs are kept for a while); run it again")
    return run_dir


def push_run(run_dir: Path, repo_id: str, token: str | None) -> str:
    """Push a finished run's results to ``repo_id`` as the signed-in visitor.

    Only the visitor's OAuth token is used: without it nothing is pushed (the Space's own
    token is never a fallback). Returns a one-line status.
    """
    from upskill_hub.hub.push import push

    if not token:
        raise UpskillError("sign in with Hugging Face to push results")
    started = time.monotonic()
    res = push([], repo_id, results=[run_dir], token=token)
    took = time.monotonic() - started
    if not res.committed:
        return f"{repo_id} already has these results (nothing to push)"
    return f"pushed run {run_dir.name} to {repo_id} in {took:.1f}s"
