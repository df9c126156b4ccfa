"""Issue 48, item 9: every command the demo prints pastes into a shell and runs what it ran.

The demo printed ``" ".join(argv)``: ``$ …/python -c import datasets`` followed by the
script's lines, unquoted. Each printed command must now parse back (``shlex.split``) to the
argv the demo ran, its CLI prefix spelled as the user would type it.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from upskill_hub import demo as demo_mod
from upskill_hub.demo import DEMO_SKILL, Demo


class _Recorded(Demo):
    """The walk-through with its processes faked; the printed lines and the argv kept."""

    ran: list[list[str]]

    @contextmanager
    def background(self, args: list[str], ready_url: str, timeout: float = 60):
        self.echo(f"\n$ {self._show(args)} &")
        self.ran.append(args)
        yield None


def test_each_printed_command_parses_back_to_the_argv_it_ran(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("throughput_sentence", "lift_sentence", "trigger_sentence"):
        monkeypatch.setattr(demo_mod, name, lambda *a: "figures")
    said: list[str] = []
    demo = _Recorded(tmp_path / "wd", model="local", kernels=True, space=False, echo=said.append)
    demo.ran = []

    def fake_run(args: list[str], **kw) -> subprocess.CompletedProcess:
        demo.ran.append(list(args))
        if "eval" in args:
            (Path(args[args.index("--output") + 1]) / "run-1").mkdir(parents=True)
        if "pull" in args:
            shutil.copytree(
                demo.workdir / "skills" / DEMO_SKILL, Path(args[args.index("-o") + 1]) / DEMO_SKILL
            )
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(demo_mod.subprocess, "run", fake_run)
    assert demo.go().ok
    printed = [line.removeprefix("\n$ ").removesuffix(" &") for line in said if line.startswith("\n$ ")]
    assert len(printed) == len(demo.ran) >= 10
    cli = [sys.executable, "-m", "upskill_hub.cli.app"]
    for line, argv in zip(printed, demo.ran, strict=True):
        typed = shlex.split(line)
        if argv[:3] == cli:  # the CLI by the name that runs this environment's upskill-hub
            assert typed[len(demo.cli_shown) :] == argv[3:], line
            assert typed[: len(demo.cli_shown)] == demo.cli_shown
        else:
            assert typed == argv, line
    (script,) = [argv[2] for argv in demo.ran if argv[1:2] == ["-c"]]
    assert "\n" in script  # the multi-line one: quoted whole, not cut at its first space
    compile(script, "<demo>", "exec")


def test_the_cli_is_shown_as_a_command_that_runs_this_install(monkeypatch, tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "upskill-hub"
    if not script.is_file():
        assert demo_mod.cli_as_typed() == [sys.executable, "-m", "upskill_hub.cli.app"]
        return
    monkeypatch.setenv("PATH", str(script.parent))
    assert demo_mod.cli_as_typed() == ["upskill-hub"]
    monkeypatch.setenv("PATH", str(tmp_path))  # a venv not activated: its full path
    assert demo_mod.cli_as_typed() == [str(script)]
