"""``triggers --agent`` through each of the four CLIs, with the harness tests' stand-ins.

The fakes of ``tests/lift/harness/fakes`` print each CLI's own output shape and load the
first installed skill whose description shares a word of six letters or more with the
prompt: Claude Code with its ``Skill`` tool, Codex by a shell command that prints the
installed SKILL.md, Gemini CLI with ``activate_skill``, OpenCode with its ``skill`` tool.
Each must find the skill in the folder that CLI reads, and the trigger in what it printed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.rundir.trigger_rows import read_trigger_rows
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering.agent_triggers import run_agent_triggers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lift" / "harness"))
from _harness_kit import API_KEY, write_fake_clis  # noqa: E402

AGENTS = ["claude-code", "codex", "gemini", "opencode"]
SHOULD = "Produce the inventory report for the widget."  # shares 'inventory' and 'widget'
DISTRACTOR = "Explain the garage parking plan."  # loads the distractor only (shares 'parking', 'garage')
NEITHER = "Sort these numbers."


def _answer(system: str, messages: list, params: dict) -> str:
    return "Done."


@pytest.fixture
def clis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with running_llm_server(_answer) as llm:
        bin_dir = write_fake_clis(tmp_path / "bin")
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        for name, value in (("ANTHROPIC_BASE_URL", llm.url), ("OPENAI_BASE_URL", llm.openai_base_url),
                            ("GOOGLE_GEMINI_BASE_URL", llm.url)):  # fmt: skip
            monkeypatch.setenv(name, value)
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
            monkeypatch.setenv(name, API_KEY)
        home = tmp_path / "userhome"  # a user-level skill there must never reach a call
        (home / ".claude" / "skills").mkdir(parents=True)
        monkeypatch.setenv("HOME", str(home))
        yield llm


def test_each_cli_triggers_from_its_own_output(tmp_path: Path, clis) -> None:
    meta = parse_meta({"schema_version": 1})
    skill = Skill.create("widget-report", "Writes widget inventory reports in the house format.", "# Widgets\n",
                         meta=meta).write(tmp_path / "widget-report")  # fmt: skip
    Skill.create("parking-plan", "Explain the parking plan of the office garage.", "# Parking\n", meta=meta).write(
        tmp_path / "others" / "parking-plan"
    )
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps([{"query": SHOULD, "should_trigger": True},
                                 {"query": DISTRACTOR, "should_trigger": False},
                                 {"query": NEITHER, "should_trigger": False}]))  # fmt: skip
    res = run_agent_triggers(
        skill, AGENTS, harness=HarnessOptions(timeout=60), triggers_file=qfile, distractors=tmp_path / "others",
        output_dir=tmp_path / "out", cache_dir=tmp_path / "cache", concurrency=2,
    )  # fmt: skip
    assert res.failed == 0, res.first_error
    assert [s.model for s in res.stats] == AGENTS
    for st in res.stats:
        assert (st.n_should, st.triggered_should, st.n_should_not, st.triggered_should_not) == (1, 1, 2, 0), st
    rows = {(r.agent, r.query): r for r in read_trigger_rows(res.run_dir)}
    assert len(rows) == 12
    for agent in AGENTS:
        assert json.loads(rows[(agent, SHOULD)].loaded) == ["widget-report"]
        # The distractor was installed beside the skill and loaded: that is no trigger of the skill.
        assert json.loads(rows[(agent, DISTRACTOR)].loaded) == ["parking-plan"]
        assert rows[(agent, DISTRACTOR)].triggered is False and rows[(agent, NEITHER)].triggered is False
        assert json.loads(rows[(agent, SHOULD)].params)["cli"] == {"claude-code": "claude"}.get(agent, agent)
    assert [(q.model, q.passed) for q in res.queries] == [(a, True) for a in AGENTS for _ in range(3)]
