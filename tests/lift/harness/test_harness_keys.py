"""What an agent call's cache key holds, what its text masks, and what counts as its work (issue 46)."""

from __future__ import annotations

import json
from dataclasses import replace

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions, claude_code, spec
from upskill_hub.lift.harness.workspace import Snapshot
from upskill_hub.lift.prepare import EvalOptions


def _options(tmp_path, agents=("claude-code",), **harness) -> EvalOptions:
    return EvalOptions(
        agents=list(agents), output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", plots=False,
        harness=HarnessOptions(**{"timeout": 60, **harness}),
    )  # fmt: skip


def test_another_base_url_makes_new_calls_the_same_settings_use_the_cache(
    agents_env, widget_skill, tmp_path, llm, monkeypatch
):
    first = run_eval(widget_skill, [], _options(tmp_path))
    assert not any(r.cached for r in first.rows)
    calls = llm.calls
    again = run_eval(widget_skill, [], _options(tmp_path))
    assert all(r.cached for r in again.rows) and llm.calls == calls
    # The same server under another name: another endpoint as far as the key knows.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm.url.replace("127.0.0.1", "localhost"))
    moved = run_eval(widget_skill, [], _options(tmp_path))
    assert not any(r.cached for r in moved.rows) and llm.calls > calls
    # The key holds digests, never the values: nothing in the cache names the key or the URL.
    for f in (tmp_path / "cache").rglob("*.json"):
        text = f.read_text()
        assert "localhost" not in text and "sk-test-harness" not in text


def test_only_secret_looking_variables_are_masked(agents_env, widget_skill, tmp_path):
    settings = tmp_path / "insecure" / "system-settings.json"
    token = "tok-do-not-show-0123456789"
    opts = _options(
        tmp_path, agents=("gemini",),
        agent_env=["FAKE_AGENT_MODE=leak", f"GEMINI_CLI_SYSTEM_SETTINGS_PATH={settings}", f"FAKE_AGENT_TOKEN={token}"],
    )  # fmt: skip
    result = run_eval(widget_skill, [], opts)
    assert result.rows and all(r.error for r in result.rows)
    tails = [f.read_text() for f in (result.run_dir / "agents").rglob("stderr.tail")]
    assert tails and all(f"Skipping system settings file '{settings}'" in t for t in tails)  # the cause, readable
    everything = "".join(tails) + (result.run_dir / "results.jsonl").read_text()
    assert token not in everything and "***" in everything


def test_a_clis_bookkeeping_files_are_not_the_agents_work(agents_env, widget_skill, tmp_path, monkeypatch):
    # As if Claude Code wrote out/report.md for itself: it is then no change of the agent's.
    adapter = replace(claude_code.ADAPTER, bookkeeping=("out/report.md",))
    monkeypatch.setitem(spec.ADAPTERS, "claude-code", adapter)
    result = run_eval(widget_skill, [], _options(tmp_path))
    row = next(r for r in result.rows if r.condition == "with_skill" and r.case_id == "report")
    changes = json.loads(row.changes)
    assert "out/report.md" not in json.dumps(changes)
    details = json.loads(row.assertion_details)
    assert [d["passed"] for d in details if d["type"] == "file-contains"] == [False]


def test_snapshot_without_restores_the_before_state():
    before = Snapshot({"a": "1", "b": "2"})
    after = Snapshot({"a": "9", "b": "2", "c": "3", "d": "4"})
    kept = after.without(["a", "c"], before)
    assert kept.files == {"a": "1", "b": "2", "d": "4"}
    assert kept.changed_since(before) == {"d"}
    # A folder entry covers everything under it (a CLI's own package cache).
    nested = Snapshot({"x/.cache/a": "1", "x/.cache/b/c": "2", "x/keep": "3"})
    assert nested.without(["x/.cache/"], Snapshot({})).files == {"x/keep": "3"}


def test_file_read_evidence_is_workspace_relative(agents_env, tmp_path, llm):
    """The evidence of ``file-read`` names paths as the transcript does (``./notes.txt``), never /tmp/..."""
    d = tmp_path / "skills" / "notes-reader"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: notes-reader\ndescription: Reads the inventory notes file.\n---\nRead it.\n")
    case = {"id": "read", "input": "Check the inventory notes.", "files": {"notes.txt": "stock: 3\n"},
            "assert": [{"type": "file-read", "value": "notes.txt"}]}  # fmt: skip
    (d / "skill_meta.json").write_text(json.dumps({"schema_version": 1, "cases": [case]}))
    llm.script = lambda system, messages, params: "READ notes.txt\nstock is 3"
    opts = _options(tmp_path)
    opts.include_baseline = False
    row = run_eval(d, [], opts).rows[0]
    detail = json.loads(row.assertion_details)[0]
    assert detail["passed"] is True, detail
    assert detail["evidence"] == "read ./notes.txt"
