"""Trigger evaluation inside real agent CLIs: ``upskill-hub triggers SKILL --agent claude-code``.

A model trigger call (:mod:`.triggers`) shows a model the catalog and a ``load_skill`` tool.
Here, as skill-creator's run_eval does, the question goes to the agent itself: per query and
repeat, a throwaway workspace (:class:`~upskill_hub.lift.harness.workspace.Workspace`) gets
the skill under test installed beside the distractors, in the folder that CLI reads skills
from (its adapter's ``skills_folder``: ``.claude/skills``, ``.agents/skills``...); the CLI
runs non-interactively with the query as its prompt, under ``eval --agent``'s timeout, in its
own process group; and the query *triggered* iff the CLI's own transcript shows it loading the
skill: its skill tool called with the name, or a read (a read tool, or a shell command) of a
file of the installed skill (:func:`~upskill_hub.lift.harness.run.skill_usage`).

A call whose CLI cannot be started, times out, exits non-zero, reports an error, prints what
its adapter cannot read, or prints output that shows no tool calls at all (Claude Code's lone
``result`` object) is a row with ``error`` set and ``triggered`` null: an error, never a
"did not trigger". Failed calls are asked again by ``--resume``.

Everything downstream is the model trigger eval's: rows in ``triggers.jsonl`` (``mode`` =
``harness``, ``agent`` and ``model`` = the agent label, ``params`` naming the CLI and its
version), recall and false-trigger rate with Wilson intervals in ``summary.json``, each
query's rate and verdict at ``threshold`` in ``trigger-queries.json``, the plan in
``triggers-plan.json`` (resume finds the run by its fingerprint), and a
:class:`~upskill_hub.triggering.triggers.TriggerResult`. Each call leaves
``agents/<agent>__trigger__<query>__r<N>/`` (the masked command, output tails, exit status
and the transcript of tool calls). Answered calls are cached in the harness cache under a key
holding the CLI's version, its command line, every installed skill's version and the query,
so an identical run starts no CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from upskill_hub import __version__
from upskill_hub._util.fsutil import write_json_atomic, write_text_atomic
from upskill_hub._util.redact import redact
from upskill_hub._util.timestamps import utc_now
from upskill_hub.agents import install_skill
from upskill_hub.cases import TriggerQuery
from upskill_hub.errors import UpskillError
from upskill_hub.lift.harness.base import PromptRefused, UnknownOutput
from upskill_hub.lift.harness.diagnose import failure_line
from upskill_hub.lift.harness.process import MAX_STDOUT_BYTES, ProcessResult, run_process
from upskill_hub.lift.harness.run import (
    ARTIFACTS_DIR,
    HarnessCache,
    HarnessOutcome,
    agent_params,
    call_env,
    call_id,
    skill_usage,
)
from upskill_hub.lift.harness.spec import AgentClient, HarnessOptions, parse_agent_spec, prepare_agents
from upskill_hub.lift.harness.workspace import Workspace
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.session.cache import default_cache_dir
from upskill_hub.session.clients import load_distractors
from upskill_hub.skill import Skill, require_skill
from upskill_hub.triggering.candidates import candidate_skill, check_candidate_description
from upskill_hub.triggering.query_verdicts import DEFAULT_THRESHOLD, check_threshold
from upskill_hub.triggering.trigger_queries import check_plan_size, resolve_queries
from upskill_hub.triggering.triggers import (
    PLAN_FILE,
    TriggerResult,
    TriggerRunPlan,
    check_run_options,
    concurrency_of,
    drive_trigger_run,
    open_run_dir,
)

#: Bump when a cached agent trigger outcome changes meaning.
CACHE_FORMAT = 2  # 2: success-only loads; passed values (digests) and the config in the key
#: Characters of the CLI's answer kept in the cache (a trigger eval grades no answer).
MAX_ANSWER_CHARS = 2_000
#: The condition part of a call's artifacts folder: ``agents/<agent>__trigger__<query>__r<N>/``.
CONDITION = "trigger"


def check_agent_specs(specs: Sequence[str]) -> None:
    """``--agent`` values a trigger eval can read a trigger from, else one line: a ``cmd:`` agent
    prints only its answer, so whether it loaded the skill cannot be known."""
    if not specs:
        raise UpskillError("--agent: name at least one agent CLI (claude-code, codex, gemini, opencode)")
    for text in specs:
        spec = parse_agent_spec(text)
        if spec.adapter.name == "cmd":
            raise UpskillError(
                f"--agent {text}: a cmd: agent prints no transcript of skill loads, so its triggers cannot be "
                "read; triggers --agent takes claude-code, codex, gemini or opencode"
            )


@dataclass(frozen=True)
class _Setup:
    """What every call of a run shares: the skill, what is installed beside it, the run folder."""

    skill: Skill
    installed: tuple[Skill, ...]  # the skill first, then the distractors
    run_dir: Path
    run_id: str
    cache: HarnessCache | None


def fingerprint(agents: Sequence[AgentClient], setup_skills: Sequence[Skill], queries: Sequence[TriggerQuery],
                runs: int, options: HarnessOptions) -> str:  # fmt: skip
    """Identity of an agent trigger plan (resume finds its folder by it); the CLI's version is not
    part of it (as for ``eval --agent``): a resume after a CLI update finishes the run."""
    payload = {
        "kind": "agent-triggers",
        "agents": [[a.provider, a.endpoint, a.model] for a in agents],
        "skills": [[s.name, s.version] for s in setup_skills],
        "queries": [q.to_dict() for q in queries],
        "runs": runs,
        "real_home": options.real_home,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def cache_key(agent: AgentClient, installed: Sequence[Skill], query: str, repeat: int) -> str:
    """The harness cache key of one agent trigger call (never that of an ``eval --agent`` call)."""
    payload = {
        "format": CACHE_FORMAT,
        "kind": "trigger",
        "agent": agent.model,
        "provider": agent.provider,
        "cli_version": agent.version,
        "argv": agent.adapter.options(agent.adapter.binary, agent.cli_model),
        "prompt_via": agent.adapter.prompt_via,
        "skills_folder": agent.adapter.skills_folder,
        "skills": [[s.name, s.version] for s in installed],
        "query": query,
        "repeat": repeat,
        "real_home": agent.options.real_home,
        "env": agent.env_fingerprint(),
        "config": agent.config_fingerprint(),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _failed(agent: AgentClient, msg: str) -> HarnessOutcome:
    """A failed call: one line, the passed variables' values masked, ``triggered`` unknown."""
    secrets = agent.secrets
    line = redact(" ".join(f"{agent.model} ({agent.version}): {msg}".split()), extra=secrets)[:1000]
    return HarnessOutcome(passed=None, assertions_passed=0, assertions_total=0, assertion_details="[]", output="",
                          error=line, params=agent_params(agent))  # fmt: skip


def _write_artifacts(art: Path, agent: AgentClient, argv: list[str], stdin: bytes | None, res: ProcessResult,
                     secrets: list[str], kept: Workspace | None) -> None:  # fmt: skip
    """The command (masked, with the prompt it read on stdin), output tails and exit status."""
    shown = shlex.join(argv) + ("\n--- stdin ---\n" + stdin.decode("utf-8", "replace") if stdin is not None else "")
    meta = {
        "agent": agent.model, "cli": agent.adapter.binary, "cli_version": agent.version,
        "exit_code": res.returncode, "timed_out": res.timed_out, "elapsed_s": round(res.elapsed_s, 3),
        "stdout_truncated": res.truncated, "env_passed": sorted(agent.passed_env),
        "workspace": str(kept.root) if kept is not None else None,
    }  # fmt: skip
    with contextlib.suppress(OSError):
        art.mkdir(parents=True, exist_ok=True)
        write_text_atomic(art / "command.txt", redact(shown, extra=secrets) + "\n", fsync=False)
        for name, data in (("stdout.tail", res.stdout_tail), ("stderr.tail", res.stderr_tail)):
            write_text_atomic(art / name, redact(data.decode("utf-8", "replace"), extra=secrets), fsync=False)
        write_json_atomic(art / "call.json", meta, fsync=False)


async def run_agent_trigger(agent: AgentClient, setup: _Setup, q: TriggerQuery, repeat: int) -> HarnessOutcome:
    """One query through one agent CLI in a fresh workspace; failures are outcomes with ``error`` set."""
    opts = agent.options
    cid = call_id(agent.model, CONDITION, q.id, repeat)
    ws = Workspace.create(opts.workspace_root, prefix=f"upskill-{cid}-")
    art = setup.run_dir / ARTIFACTS_DIR / cid
    secrets = agent.secrets
    try:
        folder = ws.project / agent.adapter.skills_folder
        for s in setup.installed:  # the agent's test material stays out, as in eval --agent
            install_skill(s.without_tests(), folder)
        env = call_env(agent, ws)
        try:  # the query is untrusted text: it never becomes an option of the CLI
            inv = agent.adapter.invocation(agent.exe, q.query, agent.cli_model)
        except PromptRefused as exc:
            return _failed(agent, f"not run: {exc}")
        t0 = time.perf_counter()
        try:
            res = await run_process(inv.argv, cwd=ws.project, env=env, timeout=opts.timeout, stdin=inv.stdin,
                                    watch=agent.adapter.stalled)
        except OSError as exc:
            return _failed(agent, f"cannot start `{agent.exe}`: {exc.strerror or exc}")
        latency = time.perf_counter() - t0
        _write_artifacts(art, agent, inv.argv, inv.stdin, res, secrets, ws if opts.keep_workspaces else None)
        failed = partial(failure_line, res=res, adapter=agent.adapter, model=agent.cli_model)
        if res.timed_out:
            return _failed(agent, failed(f"timed out after {opts.timeout:g} s; its process group was killed"))
        if res.stopped:
            return _failed(agent, failed(f"stopped after {res.elapsed_s:.0f} s: {res.stopped}"))
        if res.truncated:
            return _failed(agent, f"printed more than {MAX_STDOUT_BYTES / 1048576:g} MB on stdout; not read "
                                  "(raise UPSKILL_AGENT_MAX_STDOUT_MB to allow more)")  # fmt: skip
        try:
            run = agent.adapter.parse(res.stdout.decode("utf-8", "replace"))
        except UnknownOutput as exc:
            tail = res.stderr_tail.decode("utf-8", "replace").strip().splitlines()
            why = f"exited with code {res.returncode}" + (f" ({tail[-1][:200]})" if tail else "")
            if res.returncode not in (0, None):
                return _failed(agent, failed(f"{why}; output not readable: {exc}"))
            return _failed(agent, f"unknown output shape: {exc}")
        if run.error is not None or res.returncode != 0:
            return _failed(agent, failed(run.error or f"exited with code {res.returncode}"))
        if run.transcript.missing is not None:  # no tool call is visible: a load could not be seen either
            return _failed(agent, f"its output shows no tool calls, so whether it loaded the skill is unknown "
                                  f"({run.transcript.missing})")  # fmt: skip
        loaded, files_read = skill_usage(run)
        used = list(dict.fromkeys([*loaded, *(f.split("/", 1)[0] for f in files_read)]))
        transcript = run.transcript.redacted(secrets, {str(ws.project): ".", str(ws.root): "<workspace>"})
        with contextlib.suppress(OSError):
            write_text_atomic(art / "transcript.json", transcript.to_json(secrets) + "\n", fsync=False)
        return HarnessOutcome(
            passed=None, assertions_passed=0, assertions_total=0, assertion_details="[]",
            output=redact(run.text[:MAX_ANSWER_CHARS], extra=secrets), input_tokens=run.input_tokens,
            output_tokens=run.output_tokens, cached_tokens=run.cached_tokens, latency_s=latency,
            cost_usd=run.cost_usd, triggered=setup.skill.name in used, loaded=json.dumps(used),
            files_read=json.dumps(files_read), turns=run.turns, tool_calls=run.tool_calls,
            tokens_unavailable=run.tokens_unavailable, params=agent_params(agent),
            transcript=transcript.to_json(secrets),
        )  # fmt: skip
    finally:
        if not opts.keep_workspaces:
            ws.remove()


async def _call(agent: AgentClient, setup: _Setup, q: TriggerQuery, repeat: int) -> tuple[TriggerRow, bool]:
    """One row (from the cache, or from a run of the CLI) and whether a CLI ran for it."""
    key = cache_key(agent, setup.installed, q.query, repeat)
    hit = setup.cache.get(key) if setup.cache is not None else None
    outcome = hit if hit is not None and hit.error is None and hit.triggered is not None else None
    if outcome is None:
        outcome = await run_agent_trigger(agent, setup, q, repeat)
        if outcome.error is None and setup.cache is not None:
            setup.cache.put(key, outcome)
    row = TriggerRow(
        run_id=setup.run_id, timestamp=utc_now(), tool_version=__version__, skill_name=setup.skill.name,
        skill_version=setup.skill.version, model=agent.model, provider=agent.provider, params=outcome.params,
        query_id=q.id, query=q.query, should_trigger=q.should_trigger, repeat=repeat,
        triggered=None if outcome.error is not None else outcome.triggered,
        loaded=outcome.loaded if outcome.error is None else "[]", input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens, latency_s=outcome.latency_s, cost_usd=outcome.cost_usd,
        error=outcome.error, cached=outcome is hit, mode="harness", agent=agent.model,
    )  # fmt: skip
    return row, outcome is not hit


async def run_agent_triggers_async(
    skill: Skill | str | Path,
    agents: Sequence[str],
    *,
    harness: HarnessOptions | None = None,
    runs: int = 1,
    triggers_file: str | Path | None = None,
    distractors: str | Path | None = None,
    output_dir: str | Path = "upskill-runs",
    resume: bool = False,
    cache: HarnessCache | None = None,
    concurrency: int | None = None,
    on_row: Callable[[TriggerRow], None] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    description: str | None = None,
    description_source: str | None = None,
) -> TriggerResult:
    """Send every trigger query ``runs`` times through every agent CLI; see the module docstring.

    Everything is checked before a folder is made or a CLI runs: the options, the queries, the
    agents (a CLI missing from PATH is one line saying how to install it; each answers
    ``--version``, which goes into the cache key).
    """
    check_run_options(runs=runs, concurrency=concurrency)
    threshold = check_threshold(threshold)
    check_agent_specs(agents)
    if description is not None:
        check_candidate_description(description)
    if isinstance(skill, (str, Path)):
        skill = require_skill(skill)
    original = skill.description
    if description is not None:
        skill = candidate_skill(skill, description)
    others = load_distractors(distractors, skill.name)
    queries, source = resolve_queries(skill, others, triggers_file)
    check_plan_size(len(queries), len(agents), runs, skill.name)
    options = harness or HarnessOptions()
    clients = prepare_agents(list(agents), skill, options)
    installed = (skill, *others)
    candidate = None if description is None else {
        "text": description, "source": description_source or "--description", "skill_md_description": original,
    }  # fmt: skip
    run_dir = open_run_dir(
        output_dir, fingerprint(clients, installed, queries, runs, options), PLAN_FILE, f"{skill.name}-triggers",
        "trigger", resume=resume,
        plan={"source": source, "skill_name": skill.name, "mode": "harness", "models": [c.model for c in clients],
              "agents": [{"agent": c.model, "cli": c.adapter.binary, "cli_version": c.version,
                          "skills_folder": c.adapter.skills_folder} for c in clients],
              "catalog": [s.name for s in installed], "runs": runs, "timeout_s": options.timeout,
              "candidate_description": candidate},
    )  # fmt: skip
    setup = _Setup(skill, installed, run_dir, run_dir.name, cache)

    async def call(ci: int, q: TriggerQuery, repeat: int) -> tuple[TriggerRow, bool]:
        return await _call(clients[ci], setup, q, repeat)

    params = json.dumps({"mode": "harness", "agents": [json.loads(agent_params(c)) for c in clients]}, sort_keys=True)
    return await drive_trigger_run(
        TriggerRunPlan(
            skill=skill, queries=queries, source=source, labels=[c.model for c in clients],
            workers=[concurrency_of(c, concurrency) for c in clients], runs=runs, run_dir=run_dir,
            params_json=params, threshold=threshold, description=description, candidate=candidate,
            queries_meta={"mode": "harness"},
        ),
        call, on_plan=on_plan, on_row=on_row,
    )  # fmt: skip


def run_agent_triggers(
    skill: Skill | str | Path,
    agents: Sequence[str],
    *,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    **kwargs: Any,
) -> TriggerResult:
    """:func:`run_agent_triggers_async` from synchronous code, with the harness cache (``<cache>/harness/``)."""
    cache = HarnessCache(Path(cache_dir or default_cache_dir())) if use_cache else None
    return asyncio.run(run_agent_triggers_async(skill, agents, cache=cache, **kwargs))
