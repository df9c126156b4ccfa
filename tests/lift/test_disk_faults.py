"""A full disk, a file-size limit and a read-only run folder during ``eval`` (issue 29, class 4).

Each ends in one ``Error:`` line that says what to do, leaves nothing half-written, and
``eval --resume`` finishes the run once space is back. The full disk is a real one: a small
tmpfs mounted for the test (the suite runs as root, as CI does; where ``mount`` is not
allowed that test is skipped). The file-size limit (``RLIMIT_FSIZE``, EFBIG) needs no
privileges and always runs, in a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import run_cli
from small_fs import small_fs as mounted_small_fs

from upskill_hub import rundir
from upskill_hub.testing.llm_server import running_llm_server

CASES = [{"id": f"c{i}", "input": f"question {i}", "assert": [{"type": "contains", "value": "x"}]} for i in range(12)]
PLANNED = len(CASES) * 2  # with skill + baseline


def long_answer(system, messages, params) -> str:
    return "x" * 3000  # about 3 KB per row: a dozen rows fill the small disk


@pytest.fixture
def small_fs(tmp_path: Path):
    """A 40 KB file system; ``grow()`` frees space by making it larger (a remount keeps the files)."""
    with mounted_small_fs(tmp_path / "small") as fs:
        yield fs


def _one_error_line(err: str) -> str:
    """The one ``Error:`` line, last on stderr (progress lines may come before it)."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], err
    assert "Traceback" not in err
    return errors[0]


def _eval_args(skill: Path, out: Path, srv) -> list[str]:
    return ["eval", str(skill), "--model", f"openai-compatible:m@{srv.openai_base_url}", "-o", str(out),
            "--no-cache", "--no-plots", "--concurrency", "2"]  # fmt: skip


def _check_complete(out: Path) -> None:
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    rows = rundir.read_results(run)
    assert len(rows) == PLANNED and len({r.key for r in rows}) == PLANNED
    assert all(r.error is None for r in rows)
    assert rundir.read_summary(run) is not None
    assert not [p.name for p in run.iterdir() if ".tmp-" in p.name]  # no temporary file left behind


def test_disk_full_during_eval_is_one_line_and_resume_finishes(small_fs, tmp_path, capsys, monkeypatch):
    mnt, grow = small_fs
    skill = make_skill(tmp_path / "skills", cases=CASES)
    out = mnt / "runs"
    with running_llm_server(long_answer) as srv:
        code, _, err = run_cli(_eval_args(skill, out, srv), capsys, monkeypatch)
        assert code == 1
        line = _one_error_line(err)
        assert "the disk is full" in line and "--resume" in line, line
        (run,) = [p for p in out.iterdir() if p.is_dir()]
        kept = rundir.read_results(run)
        assert 0 < len(kept) < PLANNED  # the disk filled up part way through
        assert rundir.read_plan(run) is not None  # the plan is whole: the run can be resumed
        calls_before = srv.calls

        grow()  # space is freed
        code, _, err = run_cli([*_eval_args(skill, out, srv), "--resume"], capsys, monkeypatch)
        assert code == 0, err
        # Only the calls whose rows were lost are made again.
        assert srv.calls - calls_before == PLANNED - len(kept)
    _check_complete(out)


def test_file_size_limit_during_eval_is_one_line_and_resume_finishes(tmp_path):
    """EFBIG: the same run in a child process whose files may not grow past 16 KB."""
    skill = make_skill(tmp_path / "skills", cases=CASES)
    out = tmp_path / "runs"
    child = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (16384, resource.RLIM_INFINITY))\n"
        "from upskill_hub.cli.app import entry\n"
        "sys.argv = ['upskill-hub'] + sys.argv[1:]\n"
        "entry()\n"
    )
    env = {**os.environ, "UPSKILL_HUB_CACHE": str(tmp_path / "cache")}
    with running_llm_server(long_answer) as srv:
        args = _eval_args(skill, out, srv)
        proc = subprocess.run([sys.executable, "-c", child, *args], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 1, proc.stderr
        line = _one_error_line(proc.stderr)
        assert "over the size limit" in line and "--resume" in line, line
        proc = subprocess.run([sys.executable, "-c", child.replace("16384", "-1").replace(
            "resource.setrlimit(resource.RLIMIT_FSIZE, (-1, resource.RLIM_INFINITY))\n", ""), *args, "--resume"],
            capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    _check_complete(out)


def test_resume_on_a_read_only_run_folder_is_one_line(small_fs, tmp_path, capsys, monkeypatch):
    mnt, grow = small_fs
    grow()
    skill = make_skill(tmp_path / "skills", cases=CASES[:2])
    out = mnt / "runs"
    with running_llm_server(long_answer) as srv:
        code, _, err = run_cli(_eval_args(skill, out, srv), capsys, monkeypatch)
        assert code == 0, err
        (run,) = [p for p in out.iterdir() if p.is_dir()]
        before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        code, _, err = run_cli([*_eval_args(skill, out, srv), "--resume"], capsys, monkeypatch)
    assert code == 1
    line = _one_error_line(err)
    assert "read-only" in line, line
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    json.loads((run / rundir.RUN_FILE).read_text())


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_an_implausible_token_count_is_an_error_row_and_the_run_finishes(api, tmp_path, capsys, monkeypatch):
    """Issue 29 class 3: usage of 10**30 tokens made a run unfinishable (OverflowError, again on --resume)."""
    from upskill_hub.testing.llm_server import Reply

    field = "prompt_tokens" if api == "openai" else "input_tokens"

    def huge(system, messages, params):
        if "question 0" in messages[-1]["content"]:
            return Reply("x", usage={field: 10**30})
        return "x"

    skill = make_skill(tmp_path / "skills", cases=CASES[:3])
    out = tmp_path / "runs"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "x" * 30)
    with running_llm_server(huge) as srv:
        spec = f"openai-compatible:m@{srv.openai_base_url}" if api == "openai" else "anthropic:claude-haiku-4-5"
        base = [] if api == "openai" else ["--base-url", srv.url]
        args = ["eval", str(skill), "--model", spec, *base, "-o", str(out), "--no-cache", "--no-plots"]
        for extra in ([], ["--resume"]):
            code, _, err = run_cli([*args, *extra], capsys, monkeypatch)
            line = _one_error_line(err)
            assert code == 1 and "2 of 6 calls failed" in line, err
            assert f"implausible token count in the reply: usage.{field} = {10**30}" in line
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    rows = rundir.read_results(run)
    bad = [r for r in rows if r.error]
    assert len(rows) == 6 and len(bad) == 2 and all(r.input_tokens is None for r in bad)
    assert str(10**30) in bad[0].error  # the raw value, kept as text
    assert rundir.read_summary(run) is not None and (run / rundir.RESULTS_PARQUET).is_file()
