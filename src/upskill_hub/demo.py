"""The offline walk-through behind ``upskill-hub demo`` (the README's first command).

It runs, one after the other, the very commands a newcomer would type, and prints each
before running it: validate the shipped skills, start a local Hub, evaluate a shipped skill
on the local model (with and without the skill), push skill + results to the local Hub,
read them back with ``datasets.load_dataset``, pull them byte-identical, build a kernel,
publish it and load it with ``kernels.get_kernel``, and launch the Space against the pushed
library. Running real commands (not library shortcuts) keeps the demo honest: if it works,
the documented commands work.

It runs from any folder, in a clone or after ``pip install upskill-hub``: the shipped skills
and kernel example (:mod:`upskill_hub.shipped`) are copied into the scratch folder first and
every command runs there, so the printed commands work as shown and nothing is written into
the installed package or the clone.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub._util.fsutil import claim_folder
from upskill_hub._util.netutil import free_port
from upskill_hub._util.percent import count, interval, pct, points
from upskill_hub.errors import UpskillError
from upskill_hub.shipped import shipped_path

#: A skill the 135M local model can use: it teaches an API (kernels.get_kernel) and the
#: repository naming the model cannot know, and its cases check the code it writes.
DEMO_SKILL = "hub-kernels"
DEMO_KERNEL = "rmsnorm"
#: The local Hub dataset repo the demo pushes the skill and its results to.
DEMO_REPO = "demo/skills"
#: The file that marks a folder as the demo's own scratch folder: only such a folder, or an
#: empty one, is recreated (the demo never deletes what it did not make).
WORKDIR_MARKER = ".upskill-demo-workdir"
#: huggingface_hub's and datasets' switches for their progress bars (see _Runner.__init__).
QUIET_PROGRESS_ENV = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")


@dataclass
class Step:
    title: str
    seconds: float
    ok: bool


@dataclass
class DemoReport:
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)


def _wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise UpskillError(f"server for {url} exited early (code {proc.returncode})")
        try:
            with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - loopback only
                return
        except urllib.error.HTTPError as exc:
            if exc.code < 500:  # it answers (e.g. 401 without a token): it is up
                return
            time.sleep(0.3)
        except OSError:
            time.sleep(0.3)
    raise UpskillError(f"{url} did not answer within {timeout:.0f} s")


def throughput_sentence(run_dir: Path, seconds: float) -> str:
    """``28 answers, 1,712 tokens in 21.4 s: 80.0 tokens/s (model load included)``."""
    from upskill_hub.rundir import read_results

    rows = [r for r in read_results(run_dir) if r.error is None]
    tokens = sum(int(r.output_tokens or 0) for r in rows)
    rate = tokens / seconds if seconds > 0 else 0.0
    return f"{count(len(rows), 'answer')}, {count(tokens, 'token')} in {seconds:.1f} s: {rate:.1f} tokens/s (the whole command, model load included)"


def lift_sentence(run_dir: Path, skill: str) -> str:
    """One sentence with the measured lift and its interval, from the run's summary.json."""
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    parts = []
    for lift in summary.get("lifts", []):
        if lift.get("lift") is None:
            continue
        verdict = "the interval excludes 0" if lift.get("conclusive") else "not conclusive"
        shown = points(lift["lift"], lift.get("ci_low"), lift.get("ci_high"), unit="points")
        parts.append(f"{skill} lifts {lift['model']} by {shown} (95% CI; {verdict})")
    return "; ".join(parts) or f"no lift measured for {skill}"


def trigger_sentence(run_dir: Path, skill: str) -> str:
    """One plain sentence per model with the measured catalog-mode trigger rate, from summary.json.

    A small model may never load a skill from a catalog; the sentence then says so outright
    rather than leaving a 0% to be read as a result about the skill.
    """
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    parts = []
    for t in summary.get("triggers", []):
        n, k = t.get("n_should") or 0, t.get("triggered_should") or 0
        if not n:
            parts.append(f"catalog mode: no answered call for {t['model']} ({t.get('errors', 0)} failed)")
            continue
        shown = f"{pct(t['recall'])} {interval(t.get('recall_ci_low'), t.get('recall_ci_high'))}"
        line = f"catalog mode: {t['model']} loaded {skill} by itself in {k} of {count(n, 'answer')} (trigger rate {shown}, 95% CI)"
        if k == 0:
            line += "; it never triggered, so for this model only inject mode shows what the skill can do"
        parts.append(line)
    return "; ".join(parts) or f"catalog mode: no trigger figures for {skill}"


def shown_from_cwd(path: Path) -> str:
    """``path`` as the user can find it from where they ran the demo: relative when below it.

    The demo's commands run in --workdir, so ``skills/hub-kernels`` in its messages would
    name a folder of the user's own (or none) when they started it from elsewhere.
    """
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def cli_as_typed() -> list[str]:
    """How a user runs this upskill-hub: ``upskill-hub`` when that name on PATH is this
    environment's script, its full path when not (a venv not activated), else ``python -m``."""
    script = Path(sys.executable).parent / "upskill-hub"
    if not script.is_file():
        return [sys.executable, "-m", "upskill_hub.cli.app"]
    found = shutil.which("upskill-hub")
    if found and Path(found).resolve() == script.resolve():
        return ["upskill-hub"]
    return [str(script)]


class _Runner:
    """Runs the demo's commands as it shows them: each printed first, then run in ``workdir``
    against the local Hub (a throwaway token, a free port), each step timed into ``report``."""

    def __init__(self, workdir: Path, echo: Callable[[str], None]) -> None:
        self.workdir = workdir
        self.echo = echo
        self.report = DemoReport()
        # A throwaway write token for the local Hub; never a real credential.
        self.token = "demo-" + secrets.token_hex(8)
        self.port = free_port()
        self.env = {
            **os.environ,
            "HF_ENDPOINT": f"http://127.0.0.1:{self.port}",
            "HF_HUB_DISABLE_XET": "1",
            "HF_TOKEN": self.token,
            "HF_HOME": str(workdir / "hf-home"),
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("HF_HUB_OFFLINE", None)
        # The files the demo moves are a few kB: tqdm bars ("Upload 3 LFS files: 0%",
        # "Generating train split") only add noise between its steps. The libraries' own
        # switches, for the demo's commands only; a value the user set wins.
        for switch in QUIET_PROGRESS_ENV:
            self.env.setdefault(switch, "1")
        self.cli = [sys.executable, "-m", "upskill_hub.cli.app"]
        self.cli_shown = cli_as_typed()

    def shown_argv(self, args: list[str]) -> list[str]:
        """``args`` as the user would type them: the CLI by its command name where that runs it."""
        return [*self.cli_shown, *args[len(self.cli) :]] if args[: len(self.cli)] == self.cli else list(args)

    def _show(self, args: list[str]) -> str:
        """The command line to print: quoted (shlex.join), so it pastes into a shell as it ran."""
        return shlex.join(self.shown_argv(args))

    def run(self, args: list[str], *, timeout: float = 1800) -> None:
        self.echo(f"\n$ {self._show(args)}")
        proc = subprocess.run(args, cwd=self.workdir, env=self.env, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise UpskillError(f"demo step failed: {self._show(args)} (exit {proc.returncode})")

    @contextmanager
    def background(self, args: list[str], ready_url: str, timeout: float = 60):
        self.echo(f"\n$ {self._show(args)} &")
        log = (self.workdir / f"{args[3] if len(args) > 3 else 'server'}-{len(self.report.steps)}.log").open("w")
        proc = subprocess.Popen(args, cwd=self.workdir, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_http(ready_url, timeout, proc)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()

    def step(self, title: str, fn: Callable[[], object]) -> None:
        self.echo(f"\n── {title} " + "─" * max(0, 60 - len(title)))
        t0 = time.monotonic()
        try:
            fn()
        except BaseException:
            self.report.steps.append(Step(title, time.monotonic() - t0, False))
            raise
        self.report.steps.append(Step(title, time.monotonic() - t0, True))


class Demo(_Runner):
    """Runs the walk-through in ``workdir`` (recreated) on copies of the shipped files."""

    def __init__(
        self,
        workdir: Path,
        *,
        model: str = "local",
        cases: int | None = None,
        max_tokens: int = 64,
        kernels: bool = True,
        space: bool = True,
        echo: Callable[[str], None] = print,
    ) -> None:
        super().__init__(workdir, echo)
        self.model = model
        self.cases = cases
        self.max_tokens = max_tokens
        self.kernels = kernels
        self.space = space
        self.lift_line = ""
        self.trigger_line = ""

    def go(self) -> DemoReport:
        """The walk-through: each step below runs the commands a newcomer would type."""
        skill_dir = self._copy_shipped_files()
        if self.model == "local":
            self.step("Check that the offline model runs on this machine", lambda: self.run([*self.cli, "doctor"]))
        self._validate_and_list_skills()
        tests_file, n_cases = self._write_tests(skill_dir)
        run_dir = self._evaluate(tests_file, n_cases)
        self._evaluate_catalog(tests_file)
        serve = [*self.cli, "hub", "serve", "--root", str(self.workdir / "hub"), "--port", str(self.port), "--token", self.token]
        with self.background(serve, f"http://127.0.0.1:{self.port}/api/whoami-v2"):
            self._push_and_read_back(run_dir)
            self.step("Pull the skill back", lambda: self._pull_and_compare(skill_dir))
            if self.kernels:
                self._build_and_publish_kernel()
            if self.space:
                sport = free_port()
                self.step("Launch the Space on the pushed library", lambda: self._launch_space(sport))
        return self.report

    def _claim_workdir(self) -> None:
        """Make ``workdir`` the demo's empty scratch folder, refusing one that holds anything else.

        A folder the demo made before (it carries :data:`WORKDIR_MARKER`) is emptied and
        reused; an empty or absent one is taken; any other is refused in one line before
        anything is written, so a mistyped ``--workdir`` never costs a user their files.
        """
        reuse = claim_folder(
            self.workdir, option="--workdir", maker="the demo", shown=shown_from_cwd(self.workdir),
            ours=lambda p: (p / WORKDIR_MARKER).is_file(),
            then="the demo empties its scratch folder, so name a new or empty folder",
        )  # fmt: skip
        if reuse:
            shutil.rmtree(self.workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)  # absent, emptied, or empty already
        (self.workdir / WORKDIR_MARKER).write_text("upskill-hub demo scratch folder: `upskill-hub demo` empties it\n")

    def _copy_shipped_files(self) -> Path:
        """Recreate the scratch folder with copies of the shipped skills and kernel example."""
        shipped_skills = shipped_path("skills")
        shipped_kernel = shipped_path(f"kernels_examples/{DEMO_KERNEL}")
        self._claim_workdir()
        # Copies: the kernel build writes build/ beside its sources, and the installed package
        # (or the clone) stays untouched. Paths in the printed commands are relative to workdir.
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "result")
        shutil.copytree(shipped_skills, self.workdir / "skills", ignore=ignore)
        shutil.copytree(shipped_kernel, self.workdir / "kernels_examples" / DEMO_KERNEL, ignore=ignore)
        # The printed commands name paths relative to the scratch folder: say which it is.
        self.echo(f"The commands below run in {shown_from_cwd(self.workdir)}, on copies of the shipped files.")
        return self.workdir / "skills" / DEMO_SKILL

    def _validate_and_list_skills(self) -> None:
        skills = sorted(f"skills/{p.name}" for p in (self.workdir / "skills").iterdir() if p.is_dir())
        self.step("Validate the shipped skills", lambda: self.run([*self.cli, "skills", "validate", *skills]))
        self.step("List them", lambda: self.run([*self.cli, "skills", "list", "skills"]))

    def _write_tests(self, skill_dir: Path) -> tuple[Path, int]:
        """The demo skill's test cases (the first ``cases`` of them) as a tests file; and how many."""
        tests_file = self.workdir / "demo-tests.json"
        meta = json.loads((skill_dir / "skill_meta.json").read_text(encoding="utf-8"))
        chosen = meta["cases"] if self.cases is None else meta["cases"][: self.cases]
        tests_file.write_text(json.dumps({"cases": chosen}, indent=2), encoding="utf-8")
        return tests_file, len(chosen)

    def _eval(self, tests_file: Path, output: Path, options: list[str], limits: tuple[str, ...] = ()) -> None:
        self.run(
            [
                *self.cli, "eval", f"skills/{DEMO_SKILL}", "--model", self.model, *options,
                "--tests", str(tests_file), "--output", str(output), "--max-tokens", str(self.max_tokens), *limits,
                # a cache of its own: the demo always makes (and times) real calls
                "--cache-dir", str(self.workdir / "cache"),
            ]
        )  # fmt: skip

    def _evaluate(self, tests_file: Path, n_cases: int) -> Path:
        """Evaluate the skill on the model, with and without it; say how fast and how much it lifts."""
        runs_dir = self.workdir / "runs"
        self.step(f"Evaluate {DEMO_SKILL} on '{self.model}' ({count(n_cases, 'case')}, with and without the skill)",
                  lambda: self._eval(tests_file, runs_dir, ["--runs", "1"]))  # fmt: skip
        run_dirs = sorted(p for p in runs_dir.iterdir() if p.is_dir())
        if not run_dirs:
            raise UpskillError(f"the eval wrote no run folder under {runs_dir}")
        run_dir = run_dirs[-1]
        self.echo(throughput_sentence(run_dir, self.report.steps[-1].seconds))
        self.lift_line = lift_sentence(run_dir, DEMO_SKILL)
        self.echo(self.lift_line)
        return run_dir

    def _evaluate_catalog(self, tests_file: Path) -> None:
        """Catalog mode: does the model load the skill by itself, offered among the shipped ones?"""
        catalog_dir = self.workdir / "catalog-runs"
        self.step(f"Catalog mode: does '{self.model}' load {DEMO_SKILL} by itself among the shipped skills?",
                  lambda: self._eval(tests_file, catalog_dir, ["--mode", "catalog", "--no-baseline"],
                                     ("--max-turns", "3", "--no-plots")))  # fmt: skip
        catalog_runs = sorted(p for p in catalog_dir.iterdir() if p.is_dir()) if catalog_dir.is_dir() else []
        if catalog_runs:
            self.trigger_line = trigger_sentence(catalog_runs[-1], DEMO_SKILL)
            self.echo(self.trigger_line)

    def _push_and_read_back(self, run_dir: Path) -> None:
        self.step(
            "Push the skill and its results to the local Hub",
            lambda: self.run([*self.cli, "push", f"skills/{DEMO_SKILL}", "--repo", DEMO_REPO, "--results", str(run_dir)]),
        )
        # Double quotes only: printed inside shlex.join's single quotes, it reads as written.
        load = (
            "import datasets\n"
            'for config in ("skills", "results", "runs"):\n'
            f'    ds = datasets.load_dataset("{DEMO_REPO}", config, split="train")\n'
            '    columns = ", ".join(ds.column_names[:6])\n'
            '    print(f"{config:8s} {ds.num_rows:4d} rows  columns: {columns}, ...")\n'
        )
        self.step("Read them back with datasets.load_dataset", lambda: self.run([sys.executable, "-c", load]))

    def _pull_and_compare(self, skill_dir: Path) -> None:
        pulled = self.workdir / "pulled"
        self.run([*self.cli, "pull", DEMO_REPO, "-o", str(pulled)])
        for src in sorted(p for p in skill_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            rel = src.relative_to(skill_dir)
            if (pulled / DEMO_SKILL / rel).read_bytes() != src.read_bytes():
                raise UpskillError(f"pulled file differs: {rel}")
        self.echo(f"pulled files are byte-identical to the pushed skill ({shown_from_cwd(skill_dir)})")

    def _build_and_publish_kernel(self) -> None:
        kdir = f"kernels_examples/{DEMO_KERNEL}"
        for title, args in (
            ("Build the rmsnorm kernel for this machine", ["build", kdir, "--builder", "local"]),
            ("Check it", ["check", kdir]),
            ("Publish it as a Hub kernel repo", ["push", kdir, "--repo", f"demo/{DEMO_KERNEL}"]),
            ("Load it with kernels.get_kernel and run its tests", ["verify", f"demo/{DEMO_KERNEL}", "--trust-remote-code"]),
        ):
            self.step(title, lambda args=args: self.run([*self.cli, "kernels", *args]))

    def _launch_space(self, sport: int) -> None:
        space = [*self.cli, "space", "run", "--repo", DEMO_REPO, "--port", str(sport)]
        url = f"http://127.0.0.1:{sport}/"
        with self.background(space, url, timeout=120), urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310
            self.echo(f"the Space answered HTTP {resp.status} at {url}")
