"""What the real-CLI tests share: where the pinned CLIs are, the skill and the scripted command.

``bash .ci/setup`` installs the four pinned CLIs into ``.ci/agent-clis/`` (ignored by git).
Where one is missing a test is skipped with the line that installs it; under
``UPSKILL_REQUIRE_REAL_CLIS=1`` (what ``.ci/run`` sets) a missing CLI fails the test instead,
so CI can never pass by skipping them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.base import CallSetup
from upskill_hub.rundir.trigger_rows import read_trigger_rows
from upskill_hub.session.transcript import ToolEvent, Transcript
from upskill_hub.skill import Skill
from upskill_hub.testing.agent_server import AgentScript, ScriptedAgentServer, running_agent_server
from upskill_hub.triggering.agent_triggers import run_agent_triggers

ROOT = Path(__file__).resolve().parents[4]
CLI_DIR = ROOT / ".ci" / "agent-clis" / "node_modules" / ".bin"
#: The pinned packages (``.ci/setup`` installs exactly these).
PACKAGES = {
    "claude": "@anthropic-ai/claude-code@2.1.197",
    "codex": "@openai/codex@0.171.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "opencode": "opencode-ai@1.18.33",
}
API_KEY = "sk-test-real-cli-0123456789abcdef"
SKILL = "hello-skill"
SKILL_MD = """---
name: hello-skill
description: Writes the team's hello file. Use when asked to say hello in a file.
---
# Hello skill

Write `hello.txt` containing `HELLO-FROM-SKILL`.
"""
#: What the scripted model runs in step 2 (the file the case checks).
COMMAND = "printf 'HELLO-FROM-SKILL\\n' > hello.txt"


def cli_bin(binary: str) -> Path:
    """The pinned CLI's executable; skipped (or failed, in CI) with its install line when absent."""
    exe = CLI_DIR / binary
    if exe.exists() and shutil.which("node"):
        return exe
    line = f"bash .ci/setup (or: npm install --prefix .ci/agent-clis {PACKAGES[binary]})"
    if os.environ.get("UPSKILL_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(f"the real `{binary}` CLI is not installed; {line}")
    pytest.skip(f"the real `{binary}` CLI is not installed; {line}")


def check_triggers(agent: str, script_for: Callable[[str], AgentScript],
                   point_at: Callable[[ScriptedAgentServer], None], protocol: Any, tmp_path: Path) -> None:  # fmt: skip
    """``triggers --agent AGENT`` with the real CLI: the model loads the installed skill (a
    trigger: recall 1), then tries an absent one (a failed load, not a trigger: false-trigger
    rate 0); ``point_at`` sets the CLI's documented variables for the server."""
    skill = Skill.create(SKILL, "Writes the team's hello file. Use when asked to say hello in a file.",
                         "# Hello\n", meta=parse_meta({"schema_version": 1})).write(tmp_path / SKILL)  # fmt: skip
    stats = {}
    for tried, should in ((SKILL, True), ("other-skill", False)):
        qfile = tmp_path / f"{tried}.json"
        qfile.write_text(json.dumps([{"query": "Say hello in a file.", "should_trigger": should}]))
        with running_agent_server(script_for(tried), protocols=[protocol]) as server:
            point_at(server)
            res = run_agent_triggers(skill, [agent], harness=HarnessOptions(timeout=120), triggers_file=qfile,
                                     output_dir=tmp_path / f"out-{tried}", cache_dir=tmp_path / "cache")  # fmt: skip
        assert res.failed == 0, res.first_error
        (stats[tried],) = res.stats
        (row,) = read_trigger_rows(res.run_dir)
        assert row.triggered is should, (agent, tried, row.loaded)
    assert (stats[SKILL].n_should, stats[SKILL].triggered_should, stats[SKILL].recall) == (1, 1, 1.0)
    other = stats["other-skill"]
    assert (other.n_should_not, other.triggered_should_not, other.false_trigger_rate) == (1, 0, 0.0)


def lift_rows(result: Any) -> tuple[Any, Any]:
    """The with-skill and baseline rows of a one-case ``eval --agent`` run, checked for what every
    CLI must show: no error rows; with the skill passed and triggered; the baseline not triggered,
    failing only ``skill-loaded``; the one file the command wrote as the change (no bookkeeping);
    lift +100."""
    rows = {r.condition: r for r in result.rows}
    assert [r.error for r in result.rows] == [None, None], [r.error for r in result.rows]
    with_skill, baseline = rows["with_skill"], rows["baseline"]
    assert with_skill.passed is True and with_skill.triggered is True
    assert baseline.passed is False and baseline.triggered is False
    details = {d["type"]: d["passed"] for d in json.loads(baseline.assertion_details)}
    assert details == {"skill-loaded": False, "file-contains": True}
    for row in (with_skill, baseline):
        assert [(f["path"], f["status"]) for f in json.loads(row.changes)["files"]] == [("hello.txt", "created")]
    (lift,) = result.summary.lifts
    assert lift.lift == pytest.approx(1.0)
    return with_skill, baseline


def events(row: Any) -> tuple[ToolEvent, ...]:
    """The tool calls of a row's transcript."""
    return Transcript.from_dict(json.loads(row.transcript)).events


def script_for(skills_folder: str) -> Callable[..., AgentScript]:
    """The scripted agent for a CLI that installs skills in ``skills_folder``: load the skill
    (by default the one under test), run :data:`COMMAND`, answer."""

    def script(skill: str = SKILL) -> AgentScript:
        return AgentScript(skill=skill, skill_file=f"{skills_folder}/{skill}/SKILL.md", command=COMMAND)

    return script


def call_setup(tmp_path: Path, env: dict[str, str], real_home: bool = False) -> CallSetup:
    """What ``Adapter.prepare`` gets for one call: a throwaway home and project (0700, as made)."""
    root = tmp_path / "ws"
    root.mkdir(mode=0o700, parents=True)
    for d in ("home", "project"):
        (root / d).mkdir()
    return CallSetup(home=root / "home", project=root / "project", env=env, model=None, real_home=real_home)
