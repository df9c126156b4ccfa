"""Every command line of the README's "A tour in ten lines" runs as written and does what it says.

Why: a README line that fails as written is the first thing a newcomer meets (issue 37: the
``push ... --results upskill-runs`` line once failed). The lines are read from README.md, so
a line added there is tested here without anyone editing this file; a line this test cannot
run fails it.

Each line runs through ``bash -c`` in a temporary folder holding copies of the repository's
``skills/`` and ``kernels_examples/rmsnorm`` (nothing is written into the checkout), with
``upskill-hub`` of this venv first on ``PATH``. The only changes to what a user would type or
have:

* ``OWNER`` becomes the namespace of the local Hub's user (``whoami``);
* ``HF_ENDPOINT`` / ``HF_TOKEN`` / ``HF_HUB_DISABLE_XET`` point the Hub clients at a local Hub
  started here with Jobs enabled, with its state in the temporary folder. It is this test's
  own server, not the session's ``hub_server``: the README's repo names are fixed
  (``OWNER/rmsnorm``), and ``tests/kernels/test_kernels_e2e.py`` publishes ``user/rmsnorm`` on
  the session Hub and expects its version 1 there;
* ``ANTHROPIC_BASE_URL`` (the documented override, ``models/endpoints.py``) and a dummy
  ``ANTHROPIC_API_KEY`` send ``haiku`` and ``sonnet`` to the scripted model server, which
  plays the teacher and the student for ``generate``;
* ``XDG_DATA_HOME`` / ``XDG_CONFIG_HOME`` in the temporary folder (``hub serve`` keeps its
  state in the user data folder), and ``GRADIO_SERVER_PORT`` (documented in ``space run
  --help``) a free port, so a busy 7860 on a shared machine is not a failure of the line.

``--model local`` is the real offline model: no documented setting points ``local`` at
another server, and it takes minutes on 2 cores, so lines naming it run in their own test
(same folder layout, same environment), marked slow. ``hub serve`` and ``space run`` are
started, must print their URL and answer an HTTP request there, and are then interrupted.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_runner import default_ctrl_c

from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, running_server
from upskill_hub.testing.llm_server import running_llm_server

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
HEADING = "## A tour in ten lines"
VENV_BIN = Path(sys.executable).parent
#: Lines that serve until stopped: what each prints once it answers.
SERVING = {
    "hub serve": re.compile(r"serving .* at (http://127\.0\.0\.1:\d+)"),
    "space run": re.compile(r"The Space runs at (http://127\.0\.0\.1:\d+/?)"),
}
#: Seconds one line may take: a hang detector, not a budget (the local model's line takes about
#: a minute on 2 cores, benchmarks/tour_eval.py; a local kernel build compiles C++; Jobs start
#: Python processes).
LINE_TIMEOUT_S = 900
#: Seconds a serving line may take to print its URL (the Space imports Gradio).
SERVE_TIMEOUT_S = 180
LOCAL_MODEL = re.compile(r"(--model|-m)[ =]local\b")
FAKE_ANTHROPIC_KEY = "sk-ant-readme-tour-" + "t" * 24


# --------------------------------------------------------------------------- the README block
def tour_lines(text: str) -> list[str]:
    """The command lines of the tour's ```bash block, as written (comments kept: bash drops them)."""
    start = text.find(HEADING)
    assert start >= 0, f"README.md has no {HEADING!r} section"
    fence = text.find("```bash", start)
    assert fence >= 0, f"{HEADING!r} has no ```bash block"
    end = text.find("```", fence + len("```bash"))
    assert end >= 0, f"{HEADING!r}: the ```bash block is not closed"
    found = command_lines(text[fence + len("```bash") : end])
    assert found, f"{HEADING!r}: the ```bash block holds no command line"
    return found


def command_lines(block: str) -> list[str]:
    """The command lines of a ```bash block's body, as written (comment lines dropped)."""
    lines = [line.strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def bash_blocks(text: str) -> list[str]:
    """The bodies of every ```bash block of a Markdown page, in order."""
    return re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)


def test_the_tour_block_is_found_and_holds_no_placeholder():
    """Cheap, not slow: a ``...`` left in a line (once ``kernels push ...``) cannot run as written."""
    lines = tour_lines(README.read_text(encoding="utf-8"))
    assert len(lines) >= 10
    for line in lines:
        assert not re.search(r"(^|\s)\.\.\.(\s|$)", line.split(" #")[0]), f"a placeholder in: {line!r}"


# --------------------------------------------------------------------------- the scripted models
def _skill_reply() -> str:
    return (
        '<file path="SKILL.md">\n---\nname: dataset-cards\ndescription: Write dataset cards for '
        "Hugging Face datasets. Use when asked to document a dataset.\nlicense: Apache-2.0\n---\n"
        "# Dataset cards\n\n- Start with `yaml-frontmatter` holding license and task_categories.\n"
        "- Add a `dataset-structure` section listing splits and fields.\n</file>\n"
    )


_CASES = [
    {"id": f"case-{i}", "input": question, "assert": [{"type": "contains", "value": word}]}
    for i, (question, word) in enumerate(
        [
            ("What goes at the top of a dataset card?", "yaml-frontmatter"),
            ("How do I document the splits of my dataset?", "dataset-structure"),
            ("Where does the license of a dataset go?", "yaml-frontmatter"),
            ("Which section lists the fields?", "dataset-structure"),
        ]
    )
]


def tour_script(system: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """Teacher for ``generate`` (a skill, then its cases); student: names what its skill says."""
    from upskill_hub.generate.teacher import SKILL_SYSTEM_PROMPT, TESTS_SYSTEM_PROMPT

    if system == SKILL_SYSTEM_PROMPT:
        return _skill_reply()
    if system == TESTS_SYSTEM_PROMPT:
        return "```json\n" + json.dumps({"cases": _CASES}) + "\n```"
    words = [w for w in ("yaml-frontmatter", "dataset-structure") if f"`{w}`" in (system or "")]
    return "Use " + " and ".join(words) + "." if words else "I am not sure."


# --------------------------------------------------------------------------- running lines
@dataclass
class Tour:
    """The temporary folder, the environment the lines run in, and the local Hub they use."""

    cwd: Path
    env: dict[str, str]
    owner: str
    hub_url: str

    def api(self):
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.hub_url, token=TEST_WRITE_TOKEN)

    def substitute(self, line: str) -> str:
        return re.sub(r"\bOWNER\b", self.owner, line)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tour(tmp_path: Path) -> Iterator[Tour]:
    cwd = tmp_path / "tour"
    cwd.mkdir()
    shutil.copytree(REPO / "skills", cwd / "skills", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        REPO / "kernels_examples" / "rmsnorm",
        cwd / "kernels_examples" / "rmsnorm",
        ignore=shutil.ignore_patterns("__pycache__", "build", "result"),
    )
    with (
        running_server(tmp_path / "hub", write_tokens=(TEST_WRITE_TOKEN,), user="user") as hub,
        running_llm_server(tour_script) as llm,
    ):
        env = {
            **os.environ,
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HF_ENDPOINT": hub.url,
            "HF_TOKEN": TEST_WRITE_TOKEN,
            "HF_HUB_DISABLE_XET": "1",
            "HF_HOME": str(tmp_path / "hf_home"),
            "ANTHROPIC_BASE_URL": llm.url,
            "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY,
            "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
            "GRADIO_SERVER_PORT": str(_free_port()),
            "NO_COLOR": "1",
            "PYTHONUNBUFFERED": "1",
        }
        for name in (
            "HF_HUB_CACHE",
            "HF_DATASETS_CACHE",
            "HF_HUB_OFFLINE",
            "SKILLS_REPO",
            "GRADIO_SERVER_NAME",
        ):
            env.pop(name, None)
        owner = tour_owner(hub.url)
        yield Tour(cwd=cwd, env=env, owner=owner, hub_url=hub.url)


def tour_owner(hub_url: str) -> str:
    from huggingface_hub import HfApi

    return HfApi(endpoint=hub_url, token=TEST_WRITE_TOKEN).whoami()["name"]


def run_line(tour: Tour, line: str) -> str:
    """Run one README line as written; a non-zero exit fails the test with its output."""
    command = tour.substitute(line)
    for name, url_line in SERVING.items():
        if f"upskill-hub {name}" in command:
            return serve_line(tour, command, url_line)
    try:
        proc = subprocess.run(
            ["bash", "-c", command], cwd=tour.cwd, env=tour.env, capture_output=True, text=True,
            timeout=LINE_TIMEOUT_S, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"README line still running after {LINE_TIMEOUT_S} s: {line}\n{exc.stderr or ''}")
    assert proc.returncode == 0, (
        f"README line failed (exit {proc.returncode}): {line}\n--- stdout\n{proc.stdout[-4000:]}"
        f"\n--- stderr\n{proc.stderr[-4000:]}"
    )
    return proc.stdout + proc.stderr


def serve_line(tour: Tour, command: str, url_line: re.Pattern[str]) -> str:
    """Start a serving line, wait for its URL, check that the URL answers, then interrupt it."""
    proc = subprocess.Popen(
        ["bash", "-c", command], cwd=tour.cwd, env=tour.env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
        preexec_fn=default_ctrl_c,  # a suite started in the background would leave SIGINT ignored
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for text in proc.stdout:
            lines.put(text)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    said: list[str] = []
    url = None
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    try:
        while url is None:
            try:
                text = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no URL within {SERVE_TIMEOUT_S} s from: {command}\n{''.join(said)}")
            if text is None:
                pytest.fail(f"exited (code {proc.wait()}) before serving: {command}\n{''.join(said)}")
            said.append(text)
            m = url_line.search(text)
            url = m.group(1) if m else None
        status = _http_status(url)
        assert status is not None and status < 500, (
            f"{url} did not answer ({status}): {command}\n{''.join(said)}"
        )
    finally:
        _interrupt(proc)
    return "".join(said)


def _http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 (a 127.0.0.1 URL it printed)
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def _interrupt(proc: subprocess.Popen[str]) -> None:
    """Ctrl-C for the whole process group; kill it if it does not stop."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        pytest.fail("a serving line did not stop within 30 s of Ctrl-C")


# --------------------------------------------------------------------------- the README's claims
def _runs(folder: Path, skill: str) -> list[str]:
    found = []
    for run in sorted(folder.glob("*")) if folder.is_dir() else []:
        summary = run / "summary.json"
        if summary.is_file() and json.loads(summary.read_text()).get("skill_name") == skill:
            found.append(run.name)
    return found


def check_claims(tour: Tour, line: str, said: str, before: set[Path]) -> None:
    """The cheap checks of what a line says it does (lines without one only have to exit 0)."""
    cwd, owner = tour.cwd, tour.owner
    if " skills install " in line:
        for agent_dir in (".claude/skills", ".agents/skills"):
            assert (cwd / agent_dir / "hf-dataset-card" / "SKILL.md").is_file(), agent_dir
    elif " eval " in line and "--jobs" in line:
        assert _runs(cwd / "upskill-runs", "hf-dataset-card"), "eval --jobs left no finished run"
        shards = re.search(r"--jobs[ =](\d+)", line)
        n = shards.group(1) if shards else ""
        assert f"launched {n} Job(s)" in said and f"{n} shard(s) landed" in said, said[-4000:]
    elif " generate " in line:
        new = {p for p in (cwd / "skills").iterdir() if p.is_dir()} - before
        assert len(new) == 1 and (next(iter(new)) / "SKILL.md").is_file(), new
    elif " push " in line and "--results upskill-runs" in line:
        files = tour.api().list_repo_files(f"{owner}/my-skills", repo_type="dataset")
        assert "skills/hf-dataset-card/SKILL.md" in files, files
        runs = _runs(cwd / "upskill-runs", "hf-dataset-card")
        assert runs and all(any(r in f for f in files) for r in runs), (runs, files)
    elif " kernels push " in line:
        assert f"{owner}/rmsnorm@v1" in said, said[-4000:]
    elif " pull " in line:
        assert "hf-dataset-card" in said, said[-4000:]
        for path in sorted((REPO / "skills" / "hf-dataset-card").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                back = (
                    cwd / "skills" / "hf-dataset-card" / path.relative_to(REPO / "skills" / "hf-dataset-card")
                )
                assert back.read_bytes() == path.read_bytes(), back


def _skill_dirs(tour: Tour) -> set[Path]:
    return {p for p in (tour.cwd / "skills").iterdir() if p.is_dir()}


def run_tour(tour: Tour, lines: list[str]) -> list[tuple[str, float]]:
    timings = []
    for line in lines:
        before = _skill_dirs(tour)
        started = time.monotonic()
        said = run_line(tour, line)
        check_claims(tour, tour.substitute(line), said, before)
        timings.append((line, time.monotonic() - started))
    return timings


# --------------------------------------------------------------------------- the tests
@pytest.mark.slow
def test_every_tour_line_runs_as_written(tour: Tour):
    """All lines but those of the real local model, in the README's order (later lines use earlier ones)."""
    lines = [line for line in tour_lines(README.read_text(encoding="utf-8")) if not LOCAL_MODEL.search(line)]
    assert lines
    timings = run_tour(tour, lines)
    print("\n".join(f"{s:6.1f} s  {line}" for line, s in timings))


@pytest.mark.slow
def test_tour_lines_on_the_real_local_model_run_as_written(tour: Tour):
    """``--model local``: the real offline model, minutes on 2 cores; here apart from the rest."""
    lines = [line for line in tour_lines(README.read_text(encoding="utf-8")) if LOCAL_MODEL.search(line)]
    assert lines, "the tour has no --model local line any more: drop this test"
    run_tour(tour, lines)
    assert _runs(tour.cwd / "upskill-runs", "hf-dataset-card")
