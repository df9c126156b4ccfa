"""Must-show of ``tune`` through the real SDK, the scripted server and a scripted teacher.

The scripted model loads the skill when the query shares a word (4+ letters, not a stop
word) with its description. The skill starts with a deliberately vague description that
shares no word with any query; the scripted teacher first proposes a description that
breaks the spec (rejected and counted), then one that names what the queries ask for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering.tune import HISTORY_FILE, TEACHER_SYSTEM
from upskill_hub.triggering.tune_run import PLAN_FILE, RESULT_FILE, run_tune

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
MODEL = "openai:gpt-4.1-mini"
TEACHER = "openai:gpt-4.1"
CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]
VAGUE = "Helps with stuff."
GOOD = "Convert spreadsheets into JSON records. Use when someone wants JSON from spreadsheet rows."
SHOULD = [
    "convert this sheet to JSON", "turn my spreadsheet into JSON records", "JSON please, from these rows",
    "parse a spreadsheet and give me JSON", "my spreadsheet needs to become JSON", "export rows as JSON objects",
    "read the columns into JSON", "spreadsheet export to a JSON array", "spreadsheet rows to JSON", "JSON from this sheet",
]  # fmt: skip
SHOULD_NOT = [
    "a haiku about autumn", "fix this python stack trace", "summarise the meeting notes",
    "what is the capital of peru", "draft an email to my landlord", "review my pull request",
    "explain quantum tunnelling", "plan a trip to rome", "translate hello to french", "tune my guitar",
]  # fmt: skip


def write_skill(root: Path, description: str = VAGUE) -> Path:
    triggers = [{"id": f"p{i}", "query": q, "should_trigger": True} for i, q in enumerate(SHOULD)]
    triggers += [{"id": f"n{i}", "query": q, "should_trigger": False} for i, q in enumerate(SHOULD_NOT)]
    meta = parse_meta({"schema_version": 1, "triggers": triggers})
    return Skill.create("sheet-to-json", description, "# Sheet to JSON\n\nRead the header row first.\n",
                        meta=meta).write(root / "sheet-to-json")  # fmt: skip


class ScriptedTeacher:
    """Answers teacher requests with ``proposals`` in turn, and everything else with plain text."""

    def __init__(self, proposals: list[str]) -> None:
        self.proposals = proposals
        self.asked: list[str] = []

    def __call__(self, system: str, messages: list, params: dict) -> str:
        if system != TEACHER_SYSTEM:
            return "ok"
        self.asked.append(messages[-1]["content"])
        return f"<description>{self.proposals[min(len(self.asked), len(self.proposals)) - 1]}</description>"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


def test_a_vague_description_is_tuned_and_held_out_recall_rises(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills")
    teacher = ScriptedTeacher(["x" * 1100, GOOD])
    with running_llm_server(teacher) as srv:
        run = run_tune(skill, MODEL, teacher=TEACHER, base_url=srv.openai_base_url, runs=2, iterations=5,
                       distractors="none", output_dir=tmp_path / "out")  # fmt: skip
    res = run.result
    assert len(teacher.asked) == 2 and len(res.rejected) == 1 and "1024" in res.rejected[0]["reason"]
    # The teacher saw train failures only: no held-out query ever reached it.
    by_id = {f"p{i}": q for i, q in enumerate(SHOULD)} | {f"n{i}": q for i, q in enumerate(SHOULD_NOT)}
    held = {by_id[i] for i in res.held_ids}
    assert held and not any(q in asked for q in held for asked in teacher.asked)
    before, after = res.original, res.winner
    assert after.description == GOOD and after.iteration == 2
    # 4 of 10 should-trigger queries are held out, each asked twice: 0/8 before, 8/8 after.
    assert (before.held_out.triggered_should, before.held_out.n_should) == (0, 8)
    assert (after.held_out.triggered_should, after.held_out.n_should) == (8, 8)
    assert (before.held_out.recall_ci_low, before.held_out.recall_ci_high) == pytest.approx((0.0, 0.3244), abs=1e-4)
    assert (after.held_out.recall_ci_low, after.held_out.recall_ci_high) == pytest.approx((0.6756, 1.0), abs=1e-4)
    assert after.held_out.false_trigger_rate == 0.0 and after.held_out.fpr_ci_high == pytest.approx(0.3244, abs=1e-4)
    assert not run.written and (skill / "SKILL.md").read_text().count(VAGUE) == 1
    history = [json.loads(line) for line in (run.run_dir / HISTORY_FILE).read_text().splitlines()]
    assert [h["kind"] for h in history] == ["split", "candidate", "rejected", "candidate"]
    saved = json.loads((run.run_dir / RESULT_FILE).read_text())
    assert saved["winner"] == 1 and saved["model"] == "gpt-4.1-mini" and saved["written"] is False


def test_resume_after_kill_9_reuses_every_answered_call(tmp_path: Path) -> None:
    """kill -9 while the 30th call is held; --resume asks only what was never answered, and
    ends where an uninterrupted run ends."""
    skill = write_skill(tmp_path / "skills")
    out = tmp_path / "out"

    def cli(base_url: str, output: Path) -> list[str]:
        return [*CLI, "tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", base_url, "--runs", "2",
                "--distractors", "none", "-o", str(output), "-c", "1", "--format", "json"]  # fmt: skip

    with running_llm_server(ScriptedTeacher([GOOD]), hold_after=29) as srv:
        args = cli(srv.openai_base_url, out)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
        try:
            deadline = time.monotonic() + 60
            while len(srv.completion_requests) < 30:
                assert time.monotonic() < deadline and proc.poll() is None, "the run never reached its 30th call"
                time.sleep(0.02)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        (run_dir,) = out.iterdir()
        assert (run_dir / PLAN_FILE).is_file() and not (run_dir / RESULT_FILE).exists()
        srv.release()
        done = subprocess.run([*args, "--resume"], capture_output=True, text=True, env=os.environ.copy(), timeout=120)
        assert done.returncode == 0, done.stderr
        # Original: 40 calls, the teacher: 1, the candidate: 40. 29 were answered before the kill.
        assert len(srv.completion_requests) == 30 + (81 - 29)
    assert [p.name for p in out.iterdir()] == [run_dir.name]
    resumed = json.loads(done.stdout)
    with running_llm_server(ScriptedTeacher([GOOD])) as srv2:  # the same run, never killed, cold cache
        env = {**os.environ, "UPSKILL_HUB_CACHE": str(tmp_path / "cache-2")}
        ref = subprocess.run(cli(srv2.openai_base_url, tmp_path / "ref"), capture_output=True, text=True, env=env,
                             timeout=120)  # fmt: skip
        assert ref.returncode == 0, ref.stderr
        assert len(srv2.completion_requests) == 81
    reference = json.loads(ref.stdout)
    assert resumed["candidates"] == reference["candidates"] and resumed["winner"] == reference["winner"] == 1
