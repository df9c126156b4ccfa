"""``upskill-hub eval``: measure a skill (``runs`` lists past runs: :mod:`.runs`).

Thin: the library (:mod:`upskill_hub.lift`) does the work; this module parses options,
shows a progress bar on stderr and renders the report. With ``--json`` stdout carries the
run summary JSON and nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from upskill_hub._util.limits import env_int
from upskill_hub._util.printable import escape_controls
from upskill_hub._util.retry import DEFAULT_TIMEOUT_S
from upskill_hub.cli._agent_options import (
    agent_env_option,
    agent_real_home_option,
    agent_timeout_option,
    keep_workspaces_option,
)
from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import OptionError, UpskillError

if TYPE_CHECKING:  # pragma: no cover
    pass

err_console = make_console(stderr=True, highlight=True)

#: ``--max-tokens`` for hosted models and agents: room for a full answer.
DEFAULT_MAX_TOKENS = 1024
#: ``--max-tokens`` when every model is the local one: the demo's measured budget (its
#: +64-point lift is made with 64 tokens an answer). The 135M model's longer answers mostly
#: loop ("hello, hello, ..."): at 1,024 tokens the tour's `eval --runs 3` took 17 minutes.
LOCAL_MAX_TOKENS = 64
#: Piped or redirected, the progress is one line every this many seconds at least ...
PROGRESS_EVERY_S = 30.0
#: ... and one per tenth of the calls: never minutes of silence, never a line per call.
PROGRESS_LINES = 10


def _progress():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]{task.description}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    )


def default_max_tokens(models: list[str]) -> int:
    """``--max-tokens`` when none is given: :data:`LOCAL_MAX_TOKENS` if every model is the local
    one (an explicit ``--max-tokens`` always wins), else :data:`DEFAULT_MAX_TOKENS`."""
    from upskill_hub.models import parse_model_spec

    try:
        local = bool(models) and all(parse_model_spec(m).provider == "local" for m in models)
    except (UpskillError, ValueError):
        return DEFAULT_MAX_TOKENS  # the bad spec is reported where the model is made
    return LOCAL_MAX_TOKENS if local else DEFAULT_MAX_TOKENS


class LineProgress:
    """Progress for a stderr that is not a terminal: plain lines, never minutes of silence.

    Rich's bar draws nothing until it stops when stderr is a file or a pipe: a redirected
    17-minute eval printed nothing for 17 minutes. Here a line (``eval: 12/24 calls, 1 cached,
    0 errors, 1m 05s``) is printed every tenth of the calls and, while calls are slow, every
    :data:`PROGRESS_EVERY_S` seconds from a timer thread.
    """

    def __init__(self, write, every_s: float = PROGRESS_EVERY_S, clock=None) -> None:  # noqa: ANN001
        import threading
        import time

        self._write, self._every_s = write, every_s
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.label, self.total, self.done, self.info = "eval", 0, 0, ""
        self._started = self._last = self._clock()
        self._next_mark = 1

    def start(self, label: str, total: int, done: int) -> None:
        import threading

        with self._lock:
            self.label, self.total, self.done, self.info = label, total, done, ""
            self._started = self._last = self._clock()
            self._next_mark = done + self._step()
        self._line()
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick_loop, name="eval-progress", daemon=True)
            self._thread.start()

    def _step(self) -> int:
        return max(1, -(-self.total // PROGRESS_LINES))

    def advance(self, info: str) -> None:
        with self._lock:
            self.done += 1
            self.info = info
            due = self.done >= self._next_mark or self.done == self.total
            if due:
                self._next_mark = self.done + self._step()
        if due:
            self._line()

    def tick(self) -> None:
        """A line if none was printed for :data:`PROGRESS_EVERY_S` seconds (the timer calls it)."""
        if self._clock() - self._last >= self._every_s:
            self._line()

    def _tick_loop(self) -> None:
        while not self._stop.wait(min(self._every_s, 5.0)):
            self.tick()

    def _line(self) -> None:
        with self._lock:
            self._last = now = self._clock()
            took = int(now - self._started)
            info = f", {self.info}" if self.info else ""
            line = f"{self.label}: {self.done}/{self.total} calls{info}, {took // 60}m {took % 60:02d}s"
        self._write(line)

    def stop(self) -> None:
        self._stop.set()


def set_local_device(device: str) -> None:
    """``--device``: the local worker reads ``UPSKILL_LOCAL_DEVICE`` when it starts."""
    import os

    from upskill_hub.models.local import DEVICES

    if device not in DEVICES:
        raise UpskillError(f"--device must be one of {', '.join(DEVICES)}, not {device!r}")
    os.environ["UPSKILL_LOCAL_DEVICE"] = device


def eval_command(
    skill: Path | None = typer.Argument(
        None,
        help="The skill folder (holding SKILL.md) to evaluate, or a repository root holding .upskill/evals.json.",
    ),
    model: list[str] = typer.Option(
        None,
        "--model",
        "-m",
        help="Model spec, repeatable: local, haiku, sonnet, anthropic:MODEL, openai:MODEL, hf:ORG/MODEL, "
        "or a name with --base-url. Default: local (a small model that runs offline).",
    ),
    runs: int = typer.Option(1, "--runs", "-n", help="Repeats of each case per model and condition."),
    tests: Path | None = typer.Option(
        None, "--tests", "-t", help="Tests file (skill_meta.json shape) instead of the skill's own cases."
    ),
    no_baseline: bool = typer.Option(False, "--no-baseline", help="Only run with the skill (no lift)."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", help="Concurrent calls per model (default: the provider's)."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint (llama.cpp, vLLM, Ollama, ...)."
    ),
    output: Path = typer.Option(
        Path("upskill-runs"), "--output", "-o", help="Folder that receives run folders."
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Finish the latest run in --output with the same plan (retries failed calls). "
        "With --jobs: `eval --resume RUN_ID --jobs N --repo R` relaunches the shards with missing rows.",
    ),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
    no_cache: bool = typer.Option(False, "--no-cache", help="Call the models even if answers are cached."),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Response cache folder (default: $UPSKILL_HUB_CACHE or the user cache dir)."
    ),
    judge: str | None = typer.Option(
        None, "--judge",
        help="Model spec grading llm-rubric assertions (default: the first --model); a bare NAME is served by "
        "--base-url like --model, provider:NAME or NAME@URL keep their own.",
    ),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature for every call."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens",
        help=f"Maximum output tokens per call (default: {LOCAL_MAX_TOKENS} when every --model is local, "
        f"the demo's budget; else {DEFAULT_MAX_TOKENS}).",
    ),  # fmt: skip
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed, for providers that accept one."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT_S, "--timeout", help="Seconds per attempt before a call times out."
    ),
    retries: int = typer.Option(4, "--retries", help="Retries after a 429/5xx/timeout/dropped connection."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Skip the PNG/HTML plots."),
    device: str | None = typer.Option(
        None, "--device", help="Where --model local runs: auto (a GPU if torch sees one), cpu or cuda."
    ),
    compare: str | None = typer.Option(
        None,
        "--compare",
        help="Compare the lift with the latest published run of this skill (OWNER/NAME[@REV]) or a RUN_DIR.",
    ),
    against: str | None = typer.Option(
        None,
        "--against",
        metavar="OLD",
        help="Compare with an older version of the skill, head to head on the same cases: a folder, "
        "git:REF (this skill's folder at a git revision, e.g. git:HEAD~1) or OWNER/NAME[@REV] on the Hub.",
    ),  # fmt: skip
    fail_on_regression: bool = typer.Option(
        False,
        "--fail-on-regression",
        help="With --compare: exit 1 when the lift is lower (paired test at --level); with --against: "
        "exit 1 when this version is worse than the old one.",
    ),  # fmt: skip
    level: float = typer.Option(
        0.95, "--level", help="Confidence level of the --compare intervals and test."
    ),
    max_token_increase: float | None = typer.Option(
        None,
        "--max-token-increase",
        metavar="PCT",
        help="With --compare or --against: exit 1 when the with-skill tokens per answer grew by more "
        "than PCT percent over the compared version (upskill's CI token gate).",
    ),  # fmt: skip
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        help="Run on Hugging Face Jobs: split the calls into N shards, one Job each (needs --repo). "
        "With --resume, give the run id instead of the skill.",
        rich_help_panel="Hugging Face Jobs",
    ),
    repo: str | None = typer.Option(
        None,
        "--repo",
        help="Dataset repo OWNER/NAME receiving the shards' rows.",
        rich_help_panel="Hugging Face Jobs",
    ),
    flavor: str = typer.Option(
        "cpu-basic",
        "--flavor",
        help="Job hardware (`hf jobs hardware` lists them).",
        rich_help_panel="Hugging Face Jobs",
    ),
    job_timeout: str | None = typer.Option(
        None,
        "--job-timeout",
        help="Per Job: 2h, 30m, or seconds (default: the Hub's).",
        rich_help_panel="Hugging Face Jobs",
    ),
    attempts: int = typer.Option(
        3,
        "--attempts",
        help="Jobs per shard in total: a failed or timed-out shard is relaunched until then.",
        rich_help_panel="Hugging Face Jobs",
    ),  # fmt: skip
    image: str | None = typer.Option(
        None,
        "--image",
        help="Docker image with upskill-hub installed (default: uv's image, which installs this upskill-hub's wheel from the run's bundle).",
        rich_help_panel="Hugging Face Jobs",
    ),  # fmt: skip
    namespace: str | None = typer.Option(
        None,
        "--namespace",
        help="User or org running the Jobs (default: yours).",
        rich_help_panel="Hugging Face Jobs",
    ),
    scenarios: Path | None = typer.Option(
        None,
        "--scenarios",
        help="upskill's scenarios file (.upskill/evals.json): run every scenario's skills on its tests, "
        "scored as upskill's CI does (hard score from verifiers, judge score from criteria).",
    ),
    gate: str | None = typer.Option(
        None,
        "--gate",
        metavar="upskill",
        help="With --scenarios and --against git:BASE: decide as upskill's CI does: only scenarios "
        "whose skill changed since BASE, a skill absent at BASE is NEW and passes, exit 1 on a "
        "hard-score drop, or a judge-score drop or tokens over --max-token-increase (default 20) "
        "when the hard score did not rise.",
    ),  # fmt: skip
    all_scenarios: bool = typer.Option(
        False,
        "--all-scenarios",
        help="With --gate upskill: run every scenario, not only those whose skill changed.",
    ),
    max_hard_drop: float | None = typer.Option(
        None,
        "--max-hard-drop",
        metavar="X",
        help="With --gate upskill: hard-score drop allowed (0-1; default 0).",
    ),
    max_judge_drop: float | None = typer.Option(
        None,
        "--max-judge-drop",
        metavar="X",
        help="With --gate upskill: judge-score drop allowed (0-1; default 0.1).",
    ),
    agent: list[str] = typer.Option(
        None,
        "--agent",
        "-a",
        help="Agent CLI to run each case in, repeatable: claude-code, codex, gemini, opencode (optionally :MODEL, "
        "e.g. claude-code:sonnet) or cmd:'COMMAND {prompt}'. Without --model, only the agents run.",
        rich_help_panel="Agent harnesses",
    ),  # fmt: skip
    agent_env: list[str] = agent_env_option(),
    agent_timeout: float = agent_timeout_option(600.0),
    keep_workspaces: bool = keep_workspaces_option(),
    agent_real_home: bool = agent_real_home_option(),
    allow_commands: bool = typer.Option(
        False,
        "--allow-commands",
        help="Run the 'command' checks the skill's own skill_meta.json / evals.json "
        "brings (shell commands, on this machine). Without it such a skill is refused before any call.",
        rich_help_panel="Agent harnesses",
    ),  # fmt: skip
    mode: list[str] = typer.Option(
        None,
        "--mode",
        help="How the skill reaches the model, repeatable: inject (the whole SKILL.md in the "
        "system prompt; default) or catalog (a skill catalog + load_skill/read_skill_file tools, as agents do).",
        rich_help_panel="Skill loading",
    ),  # fmt: skip
    distractors: str | None = typer.Option(
        None,
        "--distractors",
        help="catalog mode: folder of other skills listed beside the skill under test, "
        "or 'none' (default: the skills shipped with upskill-hub).",
        rich_help_panel="Skill loading",
    ),  # fmt: skip
    max_turns: int = typer.Option(
        8,
        "--max-turns",
        help="catalog mode: model turns one answer may take.",
        rich_help_panel="Skill loading",
    ),
    generate_tests: int | None = typer.Option(
        None, "--generate-tests", metavar="N", rich_help_panel="Generated tests",
        help="A skill without test cases: a --teacher writes N, then they are evaluated; they are kept in the run "
        "folder (generated-tests.json), in skill_meta.json only with --write.",
    ),  # fmt: skip
    teacher: str | None = typer.Option(None, "--teacher", help="Model writing the cases (default: sonnet).", rich_help_panel="Generated tests"),
    write: bool = typer.Option(False, "--write", help="Also save them in skill_meta.json (atomically, its other keys kept).", rich_help_panel="Generated tests"),
) -> None:
    """Measure whether a skill helps: run each case with and without the skill and compare.

    Example: [cyan]upskill-hub eval skills/hf-dataset-card --model local --runs 3[/]
    """
    from upskill_hub.cli import _against
    from upskill_hub.cli import _compare as cmp
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.harness import HarnessOptions
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.lift.report import print_report
    from upskill_hub.lift.scenario_ci import (
        check_gate_options,
        check_max_token_increase,
        check_token_gate,
        token_changes,
    )

    out = printer(fmt, as_json)
    _against.check_against(against, compare=compare, jobs=jobs)
    check_max_token_increase(max_token_increase, bool(compare or against))
    cmp.check_options(compare, fail_on_regression and against is None, level)
    check_run_options(runs, concurrency, agent_timeout if agent else None)
    if scenarios is None and skill is not None and not (skill / "SKILL.md").exists():
        from upskill_hub.lift.scenarios import find_scenarios_file

        scenarios = find_scenarios_file(skill)
    skills_root = _skills_eval_config(skill, scenarios)
    upskill_gate, against = check_gate_options(
        gate, scenarios=scenarios is not None, against=against, compare=compare, all_scenarios=all_scenarios,
        max_hard_drop=max_hard_drop, max_judge_drop=max_judge_drop, max_token_increase=max_token_increase,
    )  # fmt: skip
    from upskill_hub.generate.cases import tests_for_eval

    generated = tests_for_eval(skill, generate_tests, teacher=teacher, write=write, base_url=base_url, models_=model or [],
                               refused={"--tests": tests, "--resume": resume, "--jobs": jobs, "--scenarios": scenarios}, say=_say(out))  # fmt: skip
    max_tokens_given = max_tokens is not None  # an agent-skills-eval project's targetParams yield to it
    if max_tokens is None:
        max_tokens = default_max_tokens(model or ([] if agent else ["local"]))
    if scenarios is not None:
        if jobs is not None or tests is not None or agent or mode or distractors:
            raise UpskillError(
                "--scenarios runs each scenario's own tests on --model, skill injected: "
                "drop --tests, --jobs, --agent, --mode and --distractors"
            )
        options = EvalOptions(  # upskill's CI runs no no-skill answers
            runs=runs, include_baseline=not no_baseline and upskill_gate is None, concurrency=concurrency,
            output_dir=output,
            resume=resume, use_cache=not no_cache, cache_dir=cache_dir, judge=judge, base_url=base_url,
            params={"temperature": temperature, "max_tokens": max_tokens, "seed": seed},
            plots=not no_plots, timeout=timeout, max_retries=retries,
        )  # fmt: skip
        gates = (compare, against, level, fail_on_regression, max_token_increase)
        _run_scenarios(scenarios, model or ["local"], options, out, *gates, upskill_gate, all_scenarios)
        return
    if skills_root is not None:  # an agent-skills-eval project: each of its skills, as it runs them
        refused = {"--tests": tests, "--jobs": jobs, "--resume": resume or None, "--against": against,
                   "--compare": compare, "--agent": agent or None, "--generate-tests": generate_tests}  # fmt: skip
        _run_skills_root(
            skills_root, model or [], out, refused, runs=runs, no_baseline=no_baseline, concurrency=concurrency,
            output=output, use_cache=not no_cache, cache_dir=cache_dir, judge=judge, base_url=base_url,
            params={"temperature": temperature, "max_tokens": max_tokens, "seed": seed}, plots=not no_plots,
            timeout=timeout, retries=retries, modes=tuple(mode or ("inject",)), distractors=distractors,
            max_turns=max_turns, given={"temperature": temperature != 0.0, "max_tokens": max_tokens_given,
                                        "seed": seed is not None, "output": output != Path("upskill-runs")},
        )  # fmt: skip
        return
    if skill is None:
        raise UpskillError(
            "missing argument SKILL: give a skill folder (or --scenarios FILE). See 'upskill-hub eval --help'."
        )
    # agent / quiet: stdout is the answer and stderr stays quiet (no bar, no notes).
    chatty = out.mode in (OutputFormat.human, OutputFormat.json)
    sharded = None
    if jobs is not None:
        from upskill_hub.cli import _eval_jobs as eval_jobs

        sharded = eval_jobs.jobs_options(
            repo=repo, jobs=jobs, flavor=flavor, job_timeout=job_timeout, attempts=attempts, image=image,
            namespace=namespace, device=device,
        )  # fmt: skip
    elif repo is not None:
        raise UpskillError(
            "--repo is for runs on Hugging Face Jobs: add --jobs N (or push a local run with `push`)"
        )
    if jobs is not None and agent:
        raise UpskillError("agent CLIs run on this machine only: --agent cannot be combined with --jobs")
    if jobs is not None and any(m != "inject" for m in mode or ()):
        raise UpskillError(
            "--mode catalog runs on this machine only for now: drop --jobs or use --mode inject"
        )
    if device is not None:
        set_local_device(device)
    scan_shown = False

    def scan_line() -> None:
        # What a scan finds, once, where the user decides: before the consent refusal, or
        # before the first call once everything is validated (never before a bad-input error).
        nonlocal scan_shown
        if agent and chatty and not scan_shown:
            scan_shown = True
            show_scan_line(skill)

    try:
        check_command_consent(skill, tests, bool(agent), allow_commands)
    except UpskillError:
        scan_line()
        raise
    progress = _progress()
    lines = None if err_console.is_terminal else LineProgress(_say(out))
    task = None
    counts = {"err": 0, "cached": 0}

    def on_start(total: int, done: int) -> None:
        nonlocal task
        # Everything is validated by now: say what was read, then start the bar.
        what = _cases_line(skill, tests)
        if not chatty:
            return
        scan_line()
        if what and task is None:
            err_console.print(what, markup=False, highlight=False, soft_wrap=True)
        if lines is not None:  # piped or redirected: plain lines, as the calls go
            lines.start("eval" if task is None else f"eval {escape_controls(str(against))}", total, done)
            task = "lines"
            return
        progress.start()
        from rich.markup import escape

        label = "eval" if task is None else f"eval {escape(str(against))}"  # the second run: the old version
        task = progress.add_task(label, total=total, completed=done, info="")

    def on_row(row) -> None:  # noqa: ANN001 - ResultRow
        counts["err"] += row.error is not None
        counts["cached"] += bool(row.cached)
        info = (
            f"{counts['cached']} cached, {counts['err']} errors" if counts["err"] or counts["cached"] else ""
        )
        if lines is not None and task is not None:
            lines.advance(info)
        elif task is not None:
            progress.update(task, advance=1, info=info)

    try:
        eval_options = EvalOptions(
            runs=runs,
            cases=generated.cases if generated else tests,
            include_baseline=not no_baseline,
            concurrency=concurrency,
            output_dir=output,
            resume=resume,
            use_cache=not no_cache,
            cache_dir=cache_dir,
            judge=judge,
            base_url=base_url,
            params={"temperature": temperature, "max_tokens": max_tokens, "seed": seed},
            on_row=on_row,
            on_start=on_start,
            plots=not no_plots,
            timeout=timeout,
            max_retries=retries,
            agents=agent or (),
            modes=tuple(mode or ("inject",)),
            distractors=distractors,
            max_turns=max_turns,
            harness=HarnessOptions(
                timeout=agent_timeout,
                agent_env=agent_env or [],
                keep_workspaces=keep_workspaces,
                real_home=agent_real_home,
                # The user's own --tests file, or the skill's commands with their consent.
                allow_commands=allow_commands or tests is not None,
            ),  # fmt: skip
        )
        if sharded is not None:
            from upskill_hub.cli import _eval_jobs as eval_jobs

            result = eval_jobs.run(
                skill,
                model or ["local"],
                eval_options,
                sharded,
                resume=resume,
                console=err_console,
                chatty=chatty,
            )
        elif against is not None:
            versus = _against.run_against(skill, against, model or ([] if agent else ["local"]), eval_options)
            result = versus.new
        else:
            result = run_eval(skill, model or ([] if agent else ["local"]), eval_options)
    finally:
        if lines is not None:
            lines.stop()
        elif task is not None:
            progress.stop()
    if generated:
        generated.save(result.run_dir, _say(out))
    comparison = (
        cmp.compare_with(compare, result.summary.run_id, result.rows, level, result.summary.triggers)
        if compare
        else None
    )
    if out.human:
        print_report(result.summary, make_console(), str(result.run_dir), result.rows)
        if comparison is not None:
            cmp.render(comparison, make_console())
        if against is not None:
            _against.render_versus(result.summary, make_console())
    elif against is not None:  # agent: the new-vs-old table; json: the summary, which holds it
        rows = _against.versus_rows(result.summary)
        out.table(rows, _against.VERSUS_HEADERS, id_key="model", json_data=result.summary.to_dict())
    elif comparison is not None:  # agent: the comparison table, which holds both lifts
        data = {**result.summary.to_dict(), "comparison": comparison.to_dict()}
        out.table(comparison.rows(), cmp.COMPARE_HEADERS, id_key="run_id", json_data=data)
    else:
        from upskill_hub.cli._eval_rows import EVAL_HEADERS, lift_rows

        out.table(lift_rows(result.summary), EVAL_HEADERS, json_data=result.summary.to_dict())
    failed = [r for r in result.rows if r.error is not None]
    if failed:
        # The report is printed and every finished call is saved; exit 1 tells scripts and CI
        # that the numbers are incomplete, and says how to finish the run.
        raise UpskillError(
            f"{len(failed)} of {len(result.rows)} calls failed (first: {failed[0].error}); "
            f"the results so far are in {result.run_dir}; finish the run with the same command plus --resume"
        )
    if comparison is not None and fail_on_regression:
        cmp.check_regressions(comparison)
    if against is not None and fail_on_regression:
        _against.check_regression(versus)
    if max_token_increase is not None:
        old_rows, version = (versus.old.rows, against) if against is not None else (comparison.reference_rows, compare)
        who = f"skill {result.summary.skill_name}" if result.summary else "the skill"
        check_token_gate([(who, version, token_changes(result.rows, old_rows))], max_token_increase)


#: Most ``--runs`` accepted: every planned call is kept in memory, so 10^9 repeats would
#: exhaust it before the first call (``UPSKILL_MAX_RUNS`` lifts it).
MAX_RUNS = env_int("UPSKILL_MAX_RUNS", 1000)


def check_run_options(runs: int, concurrency: int | None, agent_timeout: float | None) -> None:
    """Numbers that would crash, hang or mean nothing, refused in one line before anything runs."""
    if runs < 1:
        raise OptionError("runs", runs, f"must be at least 1, got {runs}")
    if runs > MAX_RUNS:
        raise OptionError(
            "runs", runs, f"must be at most {MAX_RUNS} (raise UPSKILL_MAX_RUNS to allow more), got {runs}"
        )
    if concurrency is not None and concurrency < 1:
        raise OptionError("concurrency", concurrency, f"must be at least 1, got {concurrency}")
    if agent_timeout is not None:
        from upskill_hub.lift.harness.spec import check_timeout

        check_timeout(agent_timeout)


def show_scan_line(skill: Path) -> None:
    """One stderr line of what a scan finds in ``skill``, before an agent runs it here.

    An ``--agent`` run follows the skill's instructions on this machine and may run its
    scripts and (with consent) its ``command`` checks, so the user sees the scan first:
    the worst level, the counts and the worst findings. It only informs; the consent rule
    and ``skills scan --max-severity`` decide. No scanner is one line too, never a stop.
    """
    from upskill_hub import trust
    from upskill_hub.skill import load_skill

    res = load_skill(skill)
    if res.skill is None:
        return  # run_eval names the problem
    name = escape_controls(res.skill.name, one_line=True)
    try:
        report = trust.scan_skill(res.skill)
    except UpskillError as exc:
        line = f"scan {name}: not scanned ({exc})"
    else:
        worst = "; ".join(f"{f.severity} {f.rule} at {f.where}" for f in report.unacknowledged[:2])
        level = (report.max_severity or "ok").upper()
        line = f"scan {name}: {level} ({report.summary()})" + (f"; worst: {worst}" if worst else "")
    err_console.print(escape_controls(line, one_line=True), markup=False, highlight=False, soft_wrap=True)


def check_command_consent(skill: Path, tests: Path | None, agents: bool, allowed: bool) -> None:
    """A skill's own ``command`` checks run shell commands here: only with ``--allow-commands``.

    A pulled skill's skill_meta.json / evals.json is someone else's file; the user must say
    yes before its shell commands run (the Space never runs them). A ``--tests`` file is the
    user's own choice, and without ``--agent`` no command can run (the library refuses
    workspace checks then). One line, before any call, naming the skill and the count.
    """
    if allowed or tests is not None or not agents:
        return
    from upskill_hub.skill import EVALS_FILE, META_FILE, load_skill

    res = load_skill(skill)
    if res.skill is None:
        return  # run_eval names the problem
    n = sum(a.type == "command" for c in res.skill.meta.cases for a in c.asserts)
    if n:
        source = next((f for f in (META_FILE, EVALS_FILE) if f in res.skill.files), META_FILE)
        raise UpskillError(
            f"skill {res.skill.name!r} brings {n} 'command' check{'s' if n != 1 else ''} in its {source} "
            "(shell commands run on this machine); read them, then pass --allow-commands to run them"
        )


def _run_scenarios(  # noqa: ANN001 - EvalOptions, Printer, UpskillGate
    path: Path, models: list[str], options, out, compare, against, level, fail, max_increase,  # noqa: ANN001
    upskill_gate=None, all_scenarios: bool = False,  # noqa: ANN001
) -> None:  # fmt: skip
    """Every scenario's skills on its cases, one run each, scored as upskill's CI scores them
    (:mod:`upskill_hub.lift.scenario_ci`), compared with ``--compare`` / ``--against``, gated.

    With ``--gate upskill`` the verdict is upskill's CI's: only the scenarios whose skill
    changed since the base (unless ``--all-scenarios``), a skill absent there NEW, the
    thresholds of :class:`~upskill_hub.lift.scenario_ci.UpskillGate`; the paired new − old
    intervals are shown but do not gate."""
    import contextlib

    from upskill_hub.cli import _against
    from upskill_hub.cli import _compare as cmp
    from upskill_hub.lift import scenario_ci as ci
    from upskill_hub.lift.report import print_report, scenario_table
    from upskill_hub.lift.scenarios import describe, load_scenarios
    from upskill_hub.lift.versus import VersusResult

    def need_judge(scenarios) -> None:  # noqa: ANN001 - list[Scenario]
        if options.judge is None and any(s.criteria for s in scenarios):
            # Before any scenario runs: a later one must not fail after earlier ones spent calls.
            raise UpskillError(
                f"{path}: judge criteria are graded by a judge model: pass --judge MODEL (they are never skipped)"
            )

    found = load_scenarios(path)
    if upskill_gate is None:
        need_judge(found)
    sources = cmp.scenario_sources(compare, found) if compare else {}
    comparisons: dict[int, cmp.Comparison] = {}
    chatty = out.mode in (OutputFormat.human, OutputFormat.json)

    def on_scenario(sc, skill_dir: Path) -> None:  # noqa: ANN001 - Scenario
        if out.human:
            err_console.print(f"scenario {escape_controls(sc.id, one_line=True)}: {skill_dir} on {len(sc.cases)} case(s) from {sc.tests_source}",
                              markup=False, highlight=False, soft_wrap=True)  # fmt: skip

    def on_done(run) -> None:  # noqa: ANN001 - ScenarioRun
        summary = run.result.summary
        if compare and summary is not None:
            comp = cmp.compare_with(sources[(run.scenario.id, run.skill_dir)], summary.run_id, run.result.rows, level)
            comparisons[id(run)] = comp
            run.compare_with(f"{comp.reference_id} ({comp.reference_source})", comp.reference_rows)
            run.write()
        if out.human and summary is not None:
            print_report(summary, make_console(), str(run.result.run_dir), run.result.rows)
            if against is not None and run.old is not None:
                _against.render_versus(summary, make_console())
            if id(run) in comparisons:
                cmp.render(comparisons[id(run)], make_console())

    new_skills: set[Path] = set()
    with contextlib.ExitStack() as stack:
        if upskill_gate is not None:
            olds, new_skills, changed = _against.open_base_versions(against, found, stack)
            to_run, skipped = (found, []) if all_scenarios else ci.select_changed(found, changed)
            need_judge(to_run)
            if skipped and chatty:
                ids = ", ".join(escape_controls(sc.id, one_line=True) for sc in skipped)
                err_console.print(
                    f"not run: {len(skipped)} scenario(s) whose skills are unchanged since {against}: {ids} "
                    "(--all-scenarios runs them)", markup=False, highlight=False, soft_wrap=True,
                )  # fmt: skip
            if not to_run:
                if chatty:
                    err_console.print(f"no scenario's skill changed since {against}: nothing to run",
                                      markup=False, highlight=False, soft_wrap=True)  # fmt: skip
                if not out.human:
                    out.table([], ci.GATE_HEADERS, json_data=[])
                return
        else:
            olds = _against.open_old_versions(against, found, stack) if against else None
            to_run = found
        if chatty:
            err_console.print(describe(path, to_run), markup=False, highlight=False, soft_wrap=True)
        runs = ci.run_scenarios(to_run, models, options, old_versions=olds, against=against,
                                new_skills=new_skills, gate=upskill_gate, on_scenario=on_scenario,
                                on_done=on_done)  # fmt: skip
    rows = ci.score_table_rows(runs)
    if out.human:
        # A scenario id is the file's author's text: one line, its controls escaped, in its cell.
        shown = [{**r, "scenario": escape_controls(str(r["scenario"]), one_line=True)} for r in rows]
        if upskill_gate is not None:
            make_console().print(ci.upskill_table(shown, escape_controls(str(against), one_line=True)))
            for r in shown:
                if r["reasons"]:
                    make_console().print(f"FAIL {r['scenario']} on {r['model']}: {r['reasons']}",
                                         markup=False, highlight=False, soft_wrap=True)  # fmt: skip
        else:
            make_console().print(scenario_table(shown, max_increase))
    else:
        data = [{**(r.result.summary.to_dict() if r.result.summary else {}), **r.record(),
                 **({"comparison": comparisons[id(r)].to_dict()} if id(r) in comparisons else {})} for r in runs]  # fmt: skip
        out.table(rows, ci.SCENARIO_HEADERS if upskill_gate is None else ci.GATE_HEADERS, json_data=data)
    failed = sum(x.error is not None for r in runs for x in r.result.rows + (r.old.rows if r.old else []))
    if failed:
        raise UpskillError(f"{failed} calls failed across the scenarios; rerun the same command with --resume")
    if upskill_gate is not None:  # upskill's rules decide; the intervals above were information
        ci.check_upskill_gate(runs)
        return
    if fail:
        for r in runs:
            if id(r) in comparisons:
                cmp.check_regressions(comparisons[id(r)])
            elif r.old is not None and r.result.summary is not None:
                _against.check_regression(VersusResult(r.result, r.old, r.result.summary.versus or []))
    ci.check_token_gate([r.gate_item for r in runs], max_increase)


def _skills_eval_config(skill: Path | None, scenarios: Path | None) -> Path | None:
    """``eval ROOT`` on an agent-skills-eval project: its ``agent-skills-eval.yaml`` (else None)."""
    if scenarios is not None or skill is None or (skill / "SKILL.md").exists():
        return None
    from upskill_hub.lift.prepare import find_skills_eval_config

    return find_skills_eval_config(skill)


def _run_skills_root(  # noqa: ANN001 - Printer
    config: Path, models: list[str], out, refused: dict, *, runs: int, no_baseline: bool,  # noqa: ANN001
    concurrency: int | None, output: Path, use_cache: bool, cache_dir: Path | None, judge: str | None,
    base_url: str | None, params: dict, plots: bool, timeout: float, retries: int, modes: tuple[str, ...],
    distractors: str | None, max_turns: int, given: dict[str, bool],
) -> None:  # fmt: skip
    """Each skill of an agent-skills-eval project on its evals, one run folder each.

    The YAML (:func:`~upskill_hub.lift.prepare.load_skills_eval_root`) gives the target and
    judge models, ``baseUrl``, ``baseline``, ``concurrency``, ``targetParams``, ``workspace``
    (the folder of run folders), ``include``/``exclude`` and ``strict``; a flag given on the
    command line wins, as in agent-skills-eval (``given``: which of ``--temperature``,
    ``--max-tokens``, ``--seed``, ``--output`` were given, told apart from their defaults).
    Everything is read and checked, and every skill loaded, before the first call.
    """
    from upskill_hub.cli._eval_rows import EVAL_HEADERS, lift_rows
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions, check_cases, load_skills_eval_root
    from upskill_hub.lift.report import print_report
    from upskill_hub.skill import require_skill

    dropped = [flag for flag, v in refused.items() if v is not None]
    if dropped:
        raise UpskillError(
            f"{config}: an agent-skills-eval project runs each skill on its own evals: drop {dropped[0]}"
        )
    root = load_skills_eval_root(config, models_given=bool(models))
    loaded = [require_skill(p, strict=root.strict) for p in root.skills]  # every skill checked before a call
    # agent-skills-eval runs nothing for a skill without evals
    skills = [sk for sk in loaded if sk.meta.cases]
    if not skills:
        raise UpskillError(f"{config}: no skill under its root has an eval to run")
    say = _say(out)
    for note in root.notes:
        say(f"note: {note}")
    params.update({k: v for k, v in root.params.items() if not given.get(k)})
    if not given["max_tokens"] and "max_tokens" not in root.params:  # the default for these models
        params["max_tokens"] = default_max_tokens(models or [root.target or "local"])
    options = EvalOptions(
        runs=runs, include_baseline=root.baseline and not no_baseline,
        concurrency=concurrency if concurrency is not None else root.concurrency,
        output_dir=root.workspace if root.workspace is not None and not given["output"] else output,
        use_cache=use_cache, cache_dir=cache_dir, judge=judge or root.judge, base_url=base_url, params=params,
        plots=plots, timeout=timeout, max_retries=retries, modes=modes, distractors=distractors, max_turns=max_turns,
    )  # fmt: skip
    for sk in skills:  # every skill's cases checked before the first call
        try:
            check_cases(list(sk.meta.cases), True, options)
        except UpskillError as exc:
            raise UpskillError(f"skill {escape_controls(sk.name, one_line=True)}: {exc}") from None
    names = ", ".join(escape_controls(s.name, one_line=True) for s in skills)
    say(f"{config}: {len(skills)} skill(s): {names}")
    results = []
    for sk in skills:
        result = run_eval(sk, models or [root.target], options)
        results.append(result)
        if out.human:
            print_report(result.summary, make_console(), str(result.run_dir), result.rows)
    if not out.human:
        rows = [r for res in results for r in lift_rows(res.summary)]
        out.table(rows, EVAL_HEADERS, json_data=[res.summary.to_dict() for res in results])
    failed = [(res.run_dir, r) for res in results for r in res.rows if r.error is not None]
    if failed:
        raise UpskillError(
            f"{len(failed)} calls failed (first: {failed[0][1].error}); the results so far are in "
            f"{failed[0][0].parent}"
        )


def _say(out):  # noqa: ANN001, ANN202 - Printer; a line on stderr unless the output is for an agent
    chatty = out.mode in (OutputFormat.human, OutputFormat.json)
    return lambda line: err_console.print(line, markup=False, highlight=False, soft_wrap=True) if chatty else None


def _cases_line(skill: Path, tests: Path | None) -> str | None:
    """ "tests: 3 test cases from skill_meta.json (upskill ...)" so no format is read silently.

    ``None`` when the file cannot be read: ``run_eval`` then reports the problem itself.
    """
    from upskill_hub.cases import CasesError, load_cases_file
    from upskill_hub.skill import EVALS_FILE, META_FILE, load_skill

    if tests is not None:
        try:
            return f"tests: {load_cases_file(tests, base_dir=skill).describe(str(tests))}"
        except CasesError:
            return None
    res = load_skill(skill)
    if res.skill is None:
        return None
    for name in (META_FILE, EVALS_FILE):
        if name in res.skill.files:
            return f"tests: {res.skill.meta.describe(name)}"
    return None


def register(app: typer.Typer) -> None:
    """Add ``eval`` to the root app."""
    app.command("eval", no_args_is_help=True)(eval_command)
