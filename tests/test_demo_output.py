"""Issue 37: what ``upskill-hub demo`` prints is quiet and true, wherever it is started.

* The Hub and ``datasets`` progress bars ("Upload 3 LFS files: 0%", "Generating train
  split") are off for the demo's own commands, through the libraries' switches; a value
  the user set wins.
* Started from an empty folder, the demo names the folder its commands run in, and the
  pulled files are compared with a folder that exists (not ``skills/hub-kernels`` of a
  folder the user does not have).
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

from upskill_hub import demo as demo_mod
from upskill_hub.demo import DEMO_SKILL, Demo

#: huggingface_hub's and datasets' own switches for their progress bars.
QUIET_PROGRESS_ENV = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")


def test_progress_bars_are_off_for_the_demos_commands(tmp_path: Path, monkeypatch) -> None:
    for name in QUIET_PROGRESS_ENV:
        monkeypatch.delenv(name, raising=False)
    env = Demo(tmp_path / "wd").env
    assert all(env[name] == "1" for name in QUIET_PROGRESS_ENV)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")  # the user asked for bars: they get them
    assert Demo(tmp_path / "wd").env["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"


class _Scripted(Demo):
    """The walk-through with each command replaced by what it leaves on disk."""

    def run(self, args: list[str], *, timeout: float = 1800) -> None:
        self.echo(f"\n$ {self._show(args)}")
        if "eval" in args:
            (Path(args[args.index("--output") + 1]) / "run-1").mkdir(parents=True)
        if "pull" in args:
            out = Path(args[args.index("-o") + 1])
            shutil.copytree(self.workdir / "skills" / DEMO_SKILL, out / DEMO_SKILL)

    @contextmanager
    def background(self, args: list[str], ready_url: str, timeout: float = 60):
        yield None


@pytest.fixture
def empty_folder(tmp_path: Path, monkeypatch) -> Path:
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr(demo_mod, "throughput_sentence", lambda run_dir, seconds: "throughput")
    monkeypatch.setattr(demo_mod, "lift_sentence", lambda run_dir, skill: "lift")
    monkeypatch.setattr(demo_mod, "trigger_sentence", lambda run_dir, skill: "triggers")
    return here


def test_the_demo_from_an_empty_folder_names_folders_that_exist(empty_folder: Path) -> None:
    said: list[str] = []
    report = _Scripted(
        empty_folder / ".upskill-demo", model="scripted", kernels=False, space=False, echo=said.append
    ).go()
    assert report.ok
    assert said[0] == "The commands below run in .upskill-demo, on copies of the shipped files."
    (pulled,) = [line for line in said if "byte-identical" in line]
    assert (
        pulled == f"pulled files are byte-identical to the pushed skill (.upskill-demo/skills/{DEMO_SKILL})"
    )
    assert (empty_folder / ".upskill-demo" / "skills" / DEMO_SKILL).is_dir()
    assert not (empty_folder / "skills").exists()  # the folder the old line named


def test_a_workdir_elsewhere_is_named_in_full(tmp_path: Path, empty_folder: Path) -> None:
    said: list[str] = []
    elsewhere = tmp_path / "scratch"
    _Scripted(elsewhere, model="scripted", kernels=False, space=False, echo=said.append).go()
    assert said[0].startswith(f"The commands below run in {elsewhere},")
    assert f"({elsewhere}/skills/{DEMO_SKILL})" in next(line for line in said if "byte-identical" in line)


def test_counts_in_the_demos_sentences_agree_with_their_nouns(tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from upskill_hub import rundir

    one = SimpleNamespace(error=None, output_tokens=1)
    monkeypatch.setattr(rundir, "read_results", lambda run_dir: [one])
    assert demo_mod.throughput_sentence(tmp_path, 2.0).startswith("1 answer, 1 token in 2.0 s")
    monkeypatch.setattr(rundir, "read_results", lambda run_dir: [one] * 1200)
    assert demo_mod.throughput_sentence(tmp_path, 2.0).startswith("1,200 answers, 1,200 tokens in 2.0 s")
