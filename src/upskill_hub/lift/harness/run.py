"""One agent call: workspace, CLI run, parse, grade, artifacts, cleanup.

For a call ``(agent, condition, case, repeat)``:

1. a fresh workspace gets the case's input ``files``; for ``with_skill`` the skill is
   installed where the agent looks, by the code of ``skills install``; the "before"
   snapshot is taken;
2. the CLI runs non-interactively (its documented scripting form) in ``project/`` with an
   allow-listed environment and HOME inside the workspace, under the timeout; its process
   group is killed on timeout or cancellation;
3. its JSON output is read by the agent's adapter: answer, tokens and cost where reported,
   tool calls, and the skills it loaded (``triggered``); an unknown shape is an error
   naming the CLI and its version;
4. what the run created, modified and deleted in ``project/`` (the change set) is listed,
   and the changed files are rendered as text (:mod:`upskill_hub.artifacts`: spreadsheets
   with their formulas, documents, decks, PDFs, images' format and size), bounded in time
   and size; the answer's assertions and the workspace assertions are graded, a judge
   seeing those renderings in an ``<artifacts>`` section of its prompt;
5. the command (secrets masked), the tails of stdout/stderr, the change set
   (``changes.json``) and the renderings (``rendered/``) go to the run folder's
   ``agents/<call>/``; the workspace is removed unless ``--keep-workspaces``.

A graded outcome is cached under a key that includes the CLI's version, the skill version
and the whole case, so an identical re-run costs no agent run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import shlex
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from upskill_hub._util.fsutil import write_json_atomic, write_text_atomic
from upskill_hub._util.redact import redact
from upskill_hub.artifacts import (
    ChangeSet,
    Rendered,
    change_set,
    judge_section,
    render_changes,
    render_one,
    write_rendered,
)
from upskill_hub.artifacts.changes import masked_path
from upskill_hub.cases import Case
from upskill_hub.lift.grading import transcript_checks
from upskill_hub.lift.grading.assertions import JudgeCall, JudgeContext, JudgeError, evaluate_case
from upskill_hub.lift.harness import process
from upskill_hub.lift.harness.base import CallSetup, ParsedRun, PromptRefused, UnknownOutput, skill_files_in
from upskill_hub.lift.harness.diagnose import failure_line
from upskill_hub.lift.harness.grading import WorkspaceChecker
from upskill_hub.lift.harness.process import run_process
from upskill_hub.lift.harness.spec import AgentClient
from upskill_hub.lift.harness.workspace import Snapshot, Workspace
from upskill_hub.models.base import ModelClient

#: Bump when the cached outcome's format or meaning changes (2: judges and file-contains
#: see the rendered artifacts; 3: rows keep the transcript, judges see it; 4: only successful
#: tool calls count as loads and reads, the key holds the passed values' digests and the config).
CACHE_FORMAT = 4
MAX_OUTPUT_CHARS = 20_000
#: Folder of the run folder holding each agent call's artifacts.
ARTIFACTS_DIR = "agents"


@dataclass
class HarnessOutcome:
    """Everything a harness row adds to the shared row fields (run id, case, condition, ...)."""

    passed: bool | None
    assertions_passed: int
    assertions_total: int
    assertion_details: str
    output: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    error: str | None = None
    cached: bool = False
    triggered: bool | None = None
    loaded: str = "[]"
    files_read: str = "[]"
    turns: int | None = None
    tool_calls: int | None = None
    tokens_unavailable: bool = False
    params: str = "{}"
    transcript: str = ""
    changes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def row_fields(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("extra")
        return d


def call_id(label: str, condition: str, case_id: str, repeat: int) -> str:
    """A folder name for one call's artifacts (labels hold ':' and '/'); long ones end in a hash."""
    cid = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{label}__{condition}__{case_id}__r{repeat}")
    if len(cid) > 120:  # file names are limited to 255 bytes
        digest = hashlib.sha256(f"{label}\0{condition}\0{case_id}\0{repeat}".encode()).hexdigest()[:12]
        cid = f"{cid[:100]}-{digest}"
    return cid


def agent_params(agent: AgentClient) -> str:
    """The row's ``params``: which CLI, version and model answered, and under which limit."""
    return json.dumps(
        {"cli": agent.adapter.binary, "cli_version": agent.version, "cli_model": agent.cli_model,
         "timeout_s": agent.options.timeout},
        sort_keys=True,
    )  # fmt: skip


def cache_key(agent: AgentClient, condition: str, case: Case, repeat: int, judge: str | None) -> str:
    payload = {
        "format": CACHE_FORMAT,
        "agent": agent.model,
        "provider": agent.provider,
        "cli_version": agent.version,
        "argv": agent.adapter.options(agent.adapter.binary, agent.cli_model),
        "prompt_via": agent.adapter.prompt_via,
        "skill_version": agent.skill.version if condition == "with_skill" else None,
        "condition": condition,
        "case": case.to_dict(),
        "repeat": repeat,
        "judge": judge,
        "real_home": agent.options.real_home,
        "env": agent.env_fingerprint(),
        "config": agent.config_fingerprint(),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class HarnessCache:
    """Graded agent outcomes, next to the response cache (``<cache>/harness/``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root) / "harness"

    def get(self, key: str) -> HarnessOutcome | None:
        try:
            data = json.loads((self.root / key[:2] / f"{key}.json").read_text(encoding="utf-8"))
            if data.pop("format", None) != CACHE_FORMAT:
                return None
            return HarnessOutcome(**data, cached=True)
        except (OSError, ValueError, TypeError):
            return None

    def put(self, key: str, outcome: HarnessOutcome) -> None:
        data = {"format": CACHE_FORMAT, **outcome.row_fields()}
        data.pop("cached")
        with contextlib.suppress(OSError):
            write_json_atomic(self.root / key[:2] / f"{key}.json", data, indent=None, fsync=False)


def skill_usage(run: ParsedRun) -> tuple[list[str], list[str]]:
    """Skills loaded (skill tool, or a read of a ``SKILL.md``) and skill files read, in order."""
    loaded = [n for n in run.skill_tool]
    files: list[str] = []
    for text in [*run.reads, *run.commands]:
        for name, rel in skill_files_in(text):
            files.append(f"{name}/{rel}")
            if rel == "SKILL.md" and name not in loaded:
                loaded.append(name)
    for name in run.skill_tool:
        if f"{name}/SKILL.md" not in files:
            files.append(f"{name}/SKILL.md")  # the skill tool returns the SKILL.md body
    return list(dict.fromkeys(loaded)), list(dict.fromkeys(files))


def _relative(text: str, folders: dict[str, str]) -> str:
    """A path or command with the workspace's folders shown as the transcript shows them
    (``./out.txt``, ``<workspace>/home``), so evidence and transcript read alike."""
    for folder, shown in folders.items():
        text = text.replace(folder + "/", shown + "/").replace(folder, shown)
    return text


def call_env(agent: AgentClient, ws: Workspace) -> dict[str, str]:
    """The CLI's environment for one call in ``ws``, with whatever its adapter prepares
    (config files in the throwaway home, the variables that make it run unattended)."""
    env = ws.env(agent.passed_env)
    if agent.options.real_home:
        env["HOME"] = str(Path.home())
        for k in [k for k in env if k.startswith("XDG_")]:
            del env[k]
    setup = CallSetup(home=ws.home, project=ws.project, env=env, model=agent.cli_model,
                      real_home=agent.options.real_home)  # fmt: skip
    agent.adapter.prepare(setup)
    return setup.env


def _error(agent: AgentClient, msg: str, case: Case, **kw: Any) -> HarnessOutcome:
    """An error outcome; the message is one line with the passed variables' values masked."""
    secrets = agent.secrets
    return HarnessOutcome(
        passed=None,
        assertions_passed=0,
        assertions_total=len(case.asserts),
        assertion_details="[]",
        output="",
        error=redact(" ".join(f"{agent.model} ({agent.version}): {msg}".split()), extra=secrets)[:1000],
        params=agent_params(agent),
        **kw,
    )


def _mask(argv: list[str], stdin: bytes | None, secrets: list[str]) -> str:
    """The command line, and what went to its stdin (the prompt, for most CLIs), masked."""
    shown = shlex.join(argv)
    if stdin is not None:
        shown += "\n--- stdin ---\n" + stdin.decode("utf-8", "replace")
    return redact(shown, extra=secrets)


async def run_agent_call(
    agent: AgentClient,
    case: Case,
    condition: str,
    repeat: int,
    run_dir: Path,
    *,
    judges: dict[str | None, ModelClient] | None = None,
    judge_call: JudgeCall | None = None,
    cache: HarnessCache | None = None,
    judge_label: str | None = None,
) -> HarnessOutcome:
    """Run one planned agent call and grade it; failures are outcomes with ``error`` set."""
    key = cache_key(agent, condition, case, repeat, judge_label)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    opts = agent.options
    ws = Workspace.create(
        opts.workspace_root, prefix=f"upskill-{call_id(agent.model, condition, case.id, repeat)}-"
    )
    art = run_dir / ARTIFACTS_DIR / call_id(agent.model, condition, case.id, repeat)
    secrets = agent.secrets
    try:
        ws.write_files(case.files, git_stage=case.stage_files, git_repo=case.git_repo)
        if condition == "with_skill":
            ws.install(agent.skill, agent.adapter.skills_folder)
        ws.freeze()
        env = call_env(agent, ws)
        try:  # the case's text is untrusted: it never becomes an option of the CLI
            prompt = case.prompt_for(condition, agent.skill.name, "harness")
            inv = agent.adapter.invocation(agent.exe, prompt, agent.cli_model)
        except PromptRefused as exc:
            return _error(agent, f"not run: {exc}", case)
        argv, stdin = inv.argv, inv.stdin
        t0 = time.perf_counter()
        try:
            res = await run_process(argv, cwd=ws.project, env=env, timeout=opts.timeout, stdin=stdin,
                                    watch=agent.adapter.stalled)
        except OSError as exc:
            return _error(agent, f"cannot start `{agent.exe}`: {exc.strerror or exc}", case)
        latency = time.perf_counter() - t0
        _write_artifacts(
            art, _mask(argv, stdin, secrets), res, secrets, agent, ws if opts.keep_workspaces else None
        )
        failed = partial(failure_line, res=res, adapter=agent.adapter, model=agent.cli_model)
        if res.timed_out:
            return _error(agent, failed(f"timed out after {opts.timeout:g} s; its process group was killed"), case)
        if res.stopped:
            return _error(agent, failed(f"stopped after {res.elapsed_s:.0f} s: {res.stopped}"), case)
        if res.truncated:
            cap = process.MAX_STDOUT_BYTES / (1024 * 1024)
            return _error(
                agent,
                f"printed more than {cap:g} MB on stdout; the output was truncated at that cap and is not "
                "graded (raise UPSKILL_AGENT_MAX_STDOUT_MB to allow more)",
                case,
            )
        stdout = res.stdout.decode("utf-8", "replace")
        try:
            run = agent.adapter.parse(stdout)
        except UnknownOutput as exc:
            tail = res.stderr_tail.decode("utf-8", "replace").strip().splitlines()
            why = f"exited with code {res.returncode}" + (f" ({tail[-1][:200]})" if tail else "")
            if res.returncode not in (0, None):
                return _error(agent, failed(f"{why}; output not readable: {exc}"), case)
            return _error(agent, f"unknown output shape: {exc}", case)
        if run.error is not None or res.returncode != 0:
            return _error(agent, failed(run.error or f"exited with code {res.returncode}"), case)
        # Bounded in time, depth, entries and bytes, off the event loop (other calls go on).
        after = await asyncio.to_thread(ws.snapshot)
        after = after.without(agent.adapter.bookkeeping, ws.before)
        changed = after.changed_since(ws.before)
        changes, rendered = await _artifacts(ws, after, secrets)
        section = judge_section(changes, rendered, secrets=secrets)
        checker = WorkspaceChecker(
            ws, changed, env, allow_commands=opts.allow_commands, cut=[*ws.before.cut, *after.cut],
            broken=after.broken, rendered={r.path: r for r in rendered},
            render=partial(render_one, ws.project, identity=ws.project_id, secrets=secrets),
        )  # fmt: skip
        loaded, files_read = skill_usage(run)
        custom = agent.adapter.name == "cmd"
        # Masked, then cut, workspace paths shown relative: what graders, the judge and the row see.
        transcript = run.transcript.redacted(secrets, {str(ws.project): ".", str(ws.root): "<workspace>"})
        here = partial(_relative, folders={str(ws.project): ".", str(ws.root): "<workspace>"})
        activity = transcript_checks.Activity(transcript, agent.skill.name, loaded,
                                              [*map(here, run.reads), *files_read],
                                              [*map(here, run.commands)])  # fmt: skip
        try:
            kw: dict[str, Any] = {"call": judge_call} if judge_call is not None else {}
            sections = [("transcript", transcript_checks.judge_summary(transcript))]
            if section:
                sections.append(("artifacts", section))
            kw["judge_context"] = JudgeContext(tuple(sections))
            outcome = await evaluate_case(case, run.text, judges=judges, workspace=checker,
                                          transcript=transcript_checks.checker(activity), **kw)  # fmt: skip
        except JudgeError as exc:
            return _error(agent, str(exc), case)
        shown_changed = [masked_path(p, secrets) for p in sorted(changed)]  # as changes.json shows them
        result = HarnessOutcome(
            passed=outcome.passed,
            assertions_passed=outcome.n_passed,
            assertions_total=outcome.n_total,
            assertion_details=redact(outcome.details_json(), extra=secrets),
            output=redact(run.text[:MAX_OUTPUT_CHARS], extra=secrets),
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            cached_tokens=run.cached_tokens,
            latency_s=latency,
            cost_usd=run.cost_usd,
            triggered=None if custom else agent.skill.name in loaded,
            loaded=json.dumps(loaded),
            files_read=json.dumps(files_read),
            turns=run.turns,
            tool_calls=None if custom else run.tool_calls,
            tokens_unavailable=run.tokens_unavailable,
            params=agent_params(agent),
            transcript=transcript.to_json(secrets),
            changes=json.dumps(changes.masked(secrets).to_dict(), ensure_ascii=False),
            extra={"changed": shown_changed, "snapshot_cut": [redact(c, extra=secrets) for c in after.cut]},
        )
        with contextlib.suppress(OSError):
            write_json_atomic(art / "changed.json", shown_changed, fsync=False)
        await asyncio.to_thread(write_rendered, art, changes, rendered, secrets=secrets)
        if cache is not None:
            cache.put(key, result)
        return result
    finally:
        if not opts.keep_workspaces:
            ws.remove()


async def _artifacts(ws: Workspace, after: Snapshot, secrets: list[str]) -> tuple[ChangeSet, list[Rendered]]:
    """The change set against the staged state and the changed files rendered as text
    (masked like answers), off the event loop: a worker process renders the binary formats."""
    if after.broken is not None:  # project/ is not the folder we made: nothing in it is read
        return ChangeSet(cut=[after.broken]), []
    changes = ChangeSet()
    try:
        changes = await asyncio.to_thread(
            change_set, ws.project, ws.before.files, after.files, identity=ws.project_id,
            cut=[*ws.before.cut, *after.cut],
        )  # fmt: skip
        rendered = await asyncio.to_thread(
            render_changes, ws.project, changes, identity=ws.project_id, secrets=secrets
        )
    except Exception as exc:  # noqa: BLE001 - the evidence is extra: its failure never costs the row
        why = " ".join(f"artifacts not read: {type(exc).__name__}: {exc}".split())
        why = redact(why, extra=secrets)[:300]
        return ChangeSet(files=changes.files, omitted=changes.omitted, cut=[*changes.cut, why]), []
    return changes, rendered


def _write_artifacts(
    art: Path, command: str, res: Any, secrets: list[str], agent: AgentClient, kept: Workspace | None
) -> None:
    """The command (masked), the output tails and the exit status, for a reader to check a row."""
    with contextlib.suppress(OSError):
        art.mkdir(parents=True, exist_ok=True)
        write_text_atomic(art / "command.txt", command + "\n", fsync=False)
        write_text_atomic(
            art / "stdout.tail",
            redact(res.stdout_tail.decode("utf-8", "replace"), extra=secrets),
            fsync=False,
        )
        write_text_atomic(
            art / "stderr.tail",
            redact(res.stderr_tail.decode("utf-8", "replace"), extra=secrets),
            fsync=False,
        )
        meta = {
            "agent": agent.model,
            "cli": agent.adapter.binary,
            "cli_version": agent.version,
            "exit_code": res.returncode,
            "timed_out": res.timed_out,
            "elapsed_s": round(res.elapsed_s, 3),
            "stdout_truncated": res.truncated,
            "env_passed": sorted(agent.passed_env),
            "workspace": str(kept.root) if kept is not None else None,
        }
        write_json_atomic(art / "call.json", meta, fsync=False)
