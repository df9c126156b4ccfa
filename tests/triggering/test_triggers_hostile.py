"""Issue 33 against ``upskill-hub triggers`` (one skill): endless and huge inputs, a plan that
streams, run folders that must not be followed or rewritten, and option values.

Everything runs against the scripted local server; child processes (with a timeout) stand in
wherever the code before the fix blocked forever (a FIFO) or had to be stopped by a limit.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.errors import UpskillError
from upskill_hub.rundir.trigger_rows import TRIGGERS_FILE
from upskill_hub.session.catalog import Catalog
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering import trigger_queries
from upskill_hub.triggering import triggers as trig

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
MODEL = "openai:gpt-4.1-mini"
CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]


def quiet(system: str, messages: list, params: dict) -> str:
    return "ok"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


def _skill(tmp_path: Path) -> Path:
    meta = parse_meta(
        {
            "schema_version": 1,
            "cases": [{"id": "c", "input": "tidy a csv", "assert": [{"type": "contains", "value": "x"}]}],
        }
    )
    return Skill.create("csv-tidy", "Tidy messy CSV exports.", "# Tidy\n\nSteps.\n", meta=meta).write(
        tmp_path / "skills" / "csv-tidy"
    )


def _queries(path: Path, n: int) -> Path:
    # Words the description does not share: the scripted model loads nothing, the script answers.
    path.write_text(
        json.dumps([{"query": f"plan the trip number {i}", "should_trigger": i % 2 == 0} for i in range(n)])
    )
    return path


def _cli(args: list[str], timeout: float = 60, preexec=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
        preexec_fn=preexec,
    )


def _one_line(proc: subprocess.CompletedProcess[str], must: str) -> None:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines and lines[-1].startswith("Error:") and must in lines[-1], proc.stderr


# --------------------------------------------------------------------------- class 3
def test_a_triggers_file_that_never_ends_is_refused_at_once(tmp_path: Path) -> None:
    """A FIFO (open blocked forever), /dev/zero (read forever) and a 3 GB sparse file: one line each."""
    skill = _skill(tmp_path)
    fifo = tmp_path / "set.json"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as fh:
        fh.truncate(3 * 1024**3)
    out = tmp_path / "out"
    with running_llm_server(quiet) as srv:
        common = [
            str(skill),
            "-m",
            MODEL,
            "--base-url",
            srv.openai_base_url,
            "--distractors",
            "none",
            "-o",
            str(out),
        ]
        for path, must in (
            (fifo, "FIFO"),
            ("/dev/zero", "character device"),
            (sparse, "UPSKILL_MAX_TRIGGERS_MB"),
        ):
            _one_line(_cli(["triggers", *common, "--triggers", str(path)], timeout=30), must)
        assert srv.calls == 0
    assert not out.exists() or not any(out.iterdir())


def test_more_queries_than_a_run_sends_are_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trigger_queries, "MAX_TRIGGER_QUERIES", 50)
    skill = _skill(tmp_path)
    with running_llm_server(quiet) as srv:
        with pytest.raises(UpskillError, match="holds 60 queries; a run sends at most 50"):
            trig.run_triggers(skill, [MODEL], base_url=srv.openai_base_url, triggers_file=_queries(tmp_path / "q.json", 60),
                              distractors="none", output_dir=tmp_path / "out", use_cache=False)  # fmt: skip
        with pytest.raises(UpskillError, match="= 120 calls; a run makes at most 100"):
            monkeypatch.setattr(trigger_queries, "MAX_TRIGGER_CALLS", 100)
            trig.run_triggers(skill, [MODEL], base_url=srv.openai_base_url, triggers_file=_queries(tmp_path / "q.json", 40),
                              distractors="none", output_dir=tmp_path / "out", use_cache=False, runs=3)  # fmt: skip
        assert srv.calls == 0
    assert not (tmp_path / "out").exists()


def test_the_plan_builds_each_prompt_when_it_is_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog prompt is built once, and when the first row lands only the calls in
    flight have been made up: before, all 120 prompts and cache keys were built up front."""
    skill = _skill(tmp_path)
    made, prompts, at_first_row = [0], [0], []
    real_key, real_prompt = trig.cache_key, Catalog.system_prompt

    def counting_key(**kw):
        made[0] += 1
        return real_key(**kw)

    def counting_prompt(self, base):
        prompts[0] += 1
        return real_prompt(self, base)

    monkeypatch.setattr(trig, "cache_key", counting_key)
    monkeypatch.setattr(Catalog, "system_prompt", counting_prompt)
    with running_llm_server(quiet) as srv:
        res = trig.run_triggers(
            skill, [MODEL], base_url=srv.openai_base_url, triggers_file=_queries(tmp_path / "q.json", 120),
            distractors="none", output_dir=tmp_path / "out", use_cache=False, concurrency=2,
            on_row=lambda _r: at_first_row.append(made[0]) if not at_first_row else None,
        )  # fmt: skip
        assert srv.calls == 120
    assert at_first_row[0] <= 4, at_first_row
    assert prompts[0] <= 2
    (s,) = res.stats
    assert (s.n_should, s.n_should_not, s.triggered_should, s.errors) == (60, 60, 0, 0)
    assert len(res.rows) == 120 and [r.query for r in res.rows[:2]] == [
        "plan the trip number 0",
        "plan the trip number 1",
    ]


def test_triggers_prints_progress_from_the_start(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    skill = _skill(tmp_path)
    with running_llm_server(quiet) as srv:
        code, _out, err = run_cli(
            ["triggers", str(skill), "-m", MODEL, "--base-url", srv.openai_base_url, "--distractors", "none",
             "--triggers", str(_queries(tmp_path / "q.json", 12)), "-o", str(tmp_path / "out"), "--format", "human"],
            capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    assert "Sending 12 trigger calls..." in err and "12/12 trigger calls" in err


# --------------------------------------------------------------------------- class 4
def _finished_run(tmp_path: Path, srv, n: int = 30) -> tuple[Path, Path, dict]:
    skill = _skill(tmp_path)
    kw = dict(base_url=srv.openai_base_url, triggers_file=_queries(tmp_path / "q.json", n), distractors="none",
              output_dir=tmp_path / "out", use_cache=False)  # fmt: skip
    res = trig.run_triggers(skill, [MODEL], **kw)
    return skill, res.run_dir, kw


def test_resume_refuses_a_symlinked_rows_file_and_leaves_its_target_alone(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    with running_llm_server(quiet) as srv:
        skill, run_dir, kw = _finished_run(tmp_path, srv)
        (run_dir / TRIGGERS_FILE).unlink()
        (run_dir / TRIGGERS_FILE).symlink_to(outside)
        calls = srv.calls
        with pytest.raises(UpskillError, match="is a symlink"):
            trig.run_triggers(skill, [MODEL], resume=True, **kw)
        assert srv.calls == calls
    assert outside.read_text() == "precious\n"


def test_resume_refuses_a_run_folder_that_is_a_symlink(tmp_path: Path) -> None:
    with running_llm_server(quiet) as srv:
        skill, run_dir, kw = _finished_run(tmp_path, srv)
        before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
        linked = tmp_path / "linked"
        linked.mkdir()
        (linked / run_dir.name).symlink_to(run_dir)
        with pytest.raises(UpskillError, match="symlink"):
            trig.run_triggers(skill, [MODEL], resume=True, **{**kw, "output_dir": linked})
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_fifos_in_a_run_folder_are_refused_without_waiting(tmp_path: Path) -> None:
    with running_llm_server(quiet) as srv:
        skill, run_dir, kw = _finished_run(tmp_path, srv)
        args = ["triggers", str(skill), "-m", MODEL, "--base-url", srv.openai_base_url, "--distractors", "none",
                "--triggers", str(kw["triggers_file"]), "--no-cache", "--resume"]  # fmt: skip
        (run_dir / TRIGGERS_FILE).unlink()
        os.mkfifo(run_dir / TRIGGERS_FILE)
        _one_line(_cli([*args, "-o", str(tmp_path / "out")], timeout=30), "FIFO")
        other = tmp_path / "other" / "20260101T000000Z-x"
        other.mkdir(parents=True)
        os.mkfifo(other / trig.PLAN_FILE)
        _one_line(_cli([*args, "-o", str(other.parent)], timeout=30), "could not be read; first: ")


def test_a_resume_under_a_file_size_limit_keeps_every_row(tmp_path: Path) -> None:
    """The rows file used to be rewritten with open(..., "w"): under ``ulimit -f`` it lost rows."""
    with running_llm_server(quiet) as srv:
        skill, run_dir, kw = _finished_run(tmp_path, srv, n=60)
        path = run_dir / TRIGGERS_FILE
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:40]) + lines[40][:30])  # 40 rows and a torn one
        limit = path.stat().st_size // 2

        def small_files() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

        args = ["triggers", str(skill), "-m", MODEL, "--base-url", srv.openai_base_url, "--distractors", "none",
                "--triggers", str(kw["triggers_file"]), "--no-cache", "-o", str(tmp_path / "out"), "--resume"]  # fmt: skip
        proc = _cli(args, preexec=small_files)
        _one_line(proc, "over the size limit")
        kept = path.read_text().splitlines()
        assert len(kept) >= 40 and all(json.loads(ln)["query_id"] for ln in kept)
        done = _cli(args)
        assert done.returncode == 0, done.stderr
    assert len(path.read_text().splitlines()) == 60


# --------------------------------------------------------------------------- class 10
def test_bad_option_values_are_one_line_and_call_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    skill = _skill(tmp_path)
    with running_llm_server(quiet) as srv:
        common = [str(skill), "-m", MODEL, "--base-url", srv.openai_base_url, "-o", str(tmp_path / "out")]
        cases = [
            (["triggers", *common, "--concurrency", "-1"], "--concurrency must be at least 1, got -1"),
            (["triggers", *common, "-c", "0"], "--concurrency must be at least 1, got 0"),
            (["triggers", *common, "-c", "100000"], "--concurrency must be at most"),
            (["triggers", *common, "--runs", str(10**12)], "--runs must be at most"),
            (["triggers", *common, "--distractors", ""], "--distractors is empty"),
            (["triggers", *common, "--distractors", "  ", "--library"], "--distractors is empty"),
        ]
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.calls == 0
    assert not (tmp_path / "out").exists()
