"""Must-show of issue 36, item 1: ``triggers --agent claude-code`` measures triggering inside the CLI.

A fake ``claude`` on PATH stands in for Claude Code: it answers ``--version``, reads its prompt
on stdin (``-p``), looks at the skills installed in ``.claude/skills/`` of its working folder,
and loads (a ``Skill`` tool call, or with ``LOAD_BY = "read"`` a ``Read`` of the installed
SKILL.md) every skill whose description shares a word of five letters or more with the
prompt; it prints Claude Code's ``stream-json`` events. For the "flaky" prompts every third
call loads nothing, so over ``--runs 3`` they trigger 2 runs of 3 whatever order the calls
run in. Prompts naming ``crash``, ``garbage``, ``lone`` or ``stall`` make it exit non-zero, print text
that is not JSON, print only the final ``result`` object (no tool calls shown), or hang. Every
figure below is counted by hand from those rules.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.rundir import read_run_json
from upskill_hub.rundir.trigger_rows import read_query_rates, read_trigger_rows
from upskill_hub.skill import Skill

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DESCRIPTION = "Greet visitors warmly. Use when greeting someone."
A = "greeting for the visitors"  # should; shares 'greeting', 'visitors': 3 of 3
B = "greeting card for grandma"  # should; shares 'greeting'; flaky: 2 of 3
C = "compose a farewell poem"  # should; shares nothing: 0 of 3
D = "visitors parking rules"  # should not; shares 'visitors' (and the distractor's 'parking'); flaky: 2 of 3
E = "sort these numbers"  # should not; shares nothing: 0 of 3
QUERIES = [(A, True), (B, True), (C, True), (D, False), (E, False)]
FLAKY = [B, D]
# By hand, --runs 3 at threshold 0.5: (triggered of 3, passes?) per query.
HAND = {A: (3, True), B: (2, True), C: (0, False), D: (2, False), E: (0, True)}
# Calls the fake cannot answer: each is an error, never a "did not trigger".
CRASH = "please crash the agent"  # exits 3
GARBAGE = "print garbage instead"  # exits 0, prints a banner that is not JSON
LONE = "lone result only"  # exits 0, prints only the result object: no tool call is visible

FAKE = r'''#!{python}
import fcntl, hashlib, json, re, sys, time
from pathlib import Path

STATE = Path({state!r})
LOAD_BY = {load_by!r}
FLAKY = {flaky!r}


def words(text):
    return {{w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 5}}


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")


def bump(name):
    """The number of earlier calls with this prompt (a counter file under a lock)."""
    with open(STATE / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = STATE / ("n-" + hashlib.sha256(name.encode()).hexdigest()[:12])
        n = int(path.read_text()) if path.exists() else 0
        path.write_text(str(n + 1))
        with open(STATE / "calls.log", "a") as log:
            log.write(json.dumps(name) + "\n")
        return n


def main():
    if sys.argv[1:] == ["--version"]:
        print("2.0.14 (Claude Code)")
        return
    assert "-p" in sys.argv and "stream-json" in sys.argv, sys.argv
    prompt = sys.stdin.read()
    n = bump(prompt)
    if (STATE / "broken").exists():
        print("API Error: 529 overloaded", file=sys.stderr)
        sys.exit(1)
    if "stall" in prompt:
        time.sleep(60)
    if "crash" in prompt:
        print("Error: something broke", file=sys.stderr)
        sys.exit(3)
    result = {{"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 1,
              "total_cost_usd": 0.001, "usage": {{"input_tokens": 10, "output_tokens": 2}}}}
    if "garbage" in prompt:
        print("Welcome to Claude Code! Press any key to continue.")
        return
    if "lone" in prompt:
        print(json.dumps(result))
        return
    found = []
    for md in sorted(Path(".claude/skills").glob("*/SKILL.md")):
        head = md.read_text().split("---")[1]
        meta = dict(line.split(":", 1) for line in head.strip().splitlines() if ":" in line)
        found.append((meta["name"].strip(), md, meta["description"].strip().strip("'\"")))
    picked = [(name, md) for name, md, desc in found if words(desc) & words(prompt)]
    if prompt in FLAKY and n % 3 == 2:
        picked = []
    emit({{"type": "system", "subtype": "init", "model": "claude-sonnet-4-5", "tools": ["Skill", "Read"]}})
    for i, (name, md) in enumerate(picked):
        if LOAD_BY == "read":
            use = {{"name": "Read", "input": {{"file_path": str(md.resolve())}}}}
        else:
            use = {{"name": "Skill", "input": {{"skill": name}}}}
        emit({{"type": "assistant", "message": {{"content": [{{"type": "tool_use", "id": f"t{{i}}", **use}}]}}}})
        emit({{"type": "user", "message": {{"content": [{{"type": "tool_result", "tool_use_id": f"t{{i}}",
                                                        "content": "loaded"}}]}}}})
    emit({{"type": "assistant", "message": {{"content": [{{"type": "text", "text": "done"}}]}}}})
    emit(result)


main()
'''


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson score interval, written out by hand."""
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def write_fake_claude(bin_dir: Path, state: Path, load_by: str = "skill") -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "claude"
    exe.write_text(FAKE.format(python=sys.executable, state=str(state), load_by=load_by, flaky=FLAKY))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe


def calls_made(state: Path) -> list[str]:
    log = state / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake ``claude`` first on PATH; its state folder (call log, counters) is returned."""
    state = tmp_path / "state"
    exe = write_fake_claude(tmp_path / "bin", state)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("COLUMNS", "220")
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    return state


def _skills(tmp_path: Path) -> tuple[Path, Path]:
    """The skill under test, and a folder holding one distractor (installed beside it)."""
    meta = parse_meta({"schema_version": 1})
    skill = Skill.create("greeter", DESCRIPTION, "# Greeter\n\nSay hello.\n", meta=meta).write(tmp_path / "greeter")
    others = tmp_path / "distractors"
    Skill.create("parking-rules", "Explain parking rules for the office garage.", "# Parking\n", meta=meta).write(
        others / "parking-rules"
    )
    return skill, others


def _args(tmp_path: Path, queries: list[tuple[str, bool]], *more: str) -> list[str]:
    skill, others = _skills(tmp_path)
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps([{"query": q, "should_trigger": s} for q, s in queries]))
    return ["triggers", str(skill), "--agent", "claude-code", "--distractors", str(others), "--triggers", str(qfile),
            "--runs", "3", "-o", str(tmp_path / "out"), *more]  # fmt: skip


def _run_dir(tmp_path: Path) -> Path:
    (run_dir,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    return run_dir


def test_recall_false_triggers_and_per_query_verdicts_equal_a_hand_count(tmp_path, fake, capsys, monkeypatch):
    from cli_runner import run_cli

    args = _args(tmp_path, QUERIES)
    code, out, err = run_cli([*args, "--format", "human"], capsys, monkeypatch)
    assert code == 0, err
    assert len(calls_made(fake)) == 15  # 5 queries x 3 runs, one CLI run each
    # Pooled, by hand: should-trigger 3 + 2 + 0 of 9, should-not 2 + 0 of 6.
    assert "56% (5/9)" in out and "33% (2/6)" in out
    assert "claude-code: 3 of 5 queries pass at threshold 0.5" in out
    lines = out.splitlines()
    (c_line,) = [ln for ln in lines if C in ln]
    (d_line,) = [ln for ln in lines if D in ln]
    assert "should trigger" in c_line and "0/3 (0%)" in c_line
    assert "should not" in d_line and "2/3 (67%)" in d_line
    assert A not in out and B not in out and E not in out  # they pass (B at 2 of 3)

    # --resume --json reads the same run folder: no CLI runs again, every figure is there.
    code, out_j, err_j = run_cli([*args, "--resume", "--json"], capsys, monkeypatch)
    assert code == 0, err_j
    assert len(calls_made(fake)) == 15
    (row,) = json.loads(out_j)
    assert row["model"] == "claude-code" and row["errors"] == 0
    assert (row["n_should"], row["triggered_should"], row["n_should_not"], row["triggered_should_not"]) == (9, 5, 6, 2)
    assert (row["recall"], row["false_trigger_rate"]) == pytest.approx((5 / 9, 2 / 6))
    assert (row["recall_ci_low"], row["recall_ci_high"]) == pytest.approx(wilson(5, 9), abs=1e-9)
    assert (row["fpr_ci_low"], row["fpr_ci_high"]) == pytest.approx(wilson(2, 6), abs=1e-9)
    assert (row["precision"], row["f1"]) == pytest.approx((5 / 7, 0.625))
    assert (row["threshold"], row["queries_passed"], row["queries_failed"]) == (0.5, 3, 2)
    assert [q["query"] for q in row["queries"]] == [q for q, _ in QUERIES]
    for q in row["queries"]:
        k, passed = HAND[q["query"]]
        assert (q["runs"], q["triggered"], q["errors"], q["passed"]) == (3, k, 0, passed), q
        assert (q["ci_low"], q["ci_high"]) == pytest.approx(wilson(k, 3), abs=1e-9)

    # The run folder: rows in harness mode, per-query verdicts, the plan and each call's transcript.
    run_dir = _run_dir(tmp_path)
    rows = read_trigger_rows(run_dir)
    assert len(rows) == 15 and {(r.mode, r.agent, r.provider) for r in rows} == {("harness", "claude-code", "agent:claude-code")}
    assert json.loads(rows[0].params)["cli_version"] == "2.0.14 (Claude Code)"
    by_query = {q: sum(bool(r.triggered) for r in rows if r.query == q) for q, _ in QUERIES}
    assert by_query == {q: k for q, (k, _) in HAND.items()}
    d_loads = {r.loaded for r in rows if r.query == D and r.triggered}
    assert d_loads == {json.dumps(["greeter", "parking-rules"])}  # installed beside it, and loaded too
    doc, rates = read_query_rates(run_dir)
    assert doc["mode"] == "harness" and [(r.triggered, r.passed) for r in rates] == [HAND[q] for q, _ in QUERIES]
    plan = read_run_json(run_dir / "triggers-plan.json")
    assert plan["catalog"] == ["greeter", "parking-rules"] and plan["agents"][0]["skills_folder"] == ".claude/skills"
    calls = sorted((run_dir / "agents").iterdir())
    assert len(calls) == 15 and all(c.name.startswith("claude-code__trigger__") for c in calls)
    a_call = next(c for c in calls if (c / "transcript.json").exists() and "Skill" in (c / "transcript.json").read_text())
    assert json.loads((a_call / "call.json").read_text())["exit_code"] == 0
    assert "--- stdin ---" in (a_call / "command.txt").read_text()


def test_a_read_of_the_installed_skill_md_counts_as_a_trigger(tmp_path, fake, capsys, monkeypatch):
    from cli_runner import run_cli

    write_fake_claude(tmp_path / "bin", fake, load_by="read")  # reads SKILL.md instead of calling Skill
    code, out, err = run_cli([*_args(tmp_path, [(A, True), (E, False)]), "--runs", "1", "--json"], capsys, monkeypatch)
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["n_should"], row["triggered_should"], row["n_should_not"], row["triggered_should_not"]) == (1, 1, 1, 0)
    (hit,) = [r for r in read_trigger_rows(_run_dir(tmp_path)) if r.query == A]
    assert hit.triggered is True and json.loads(hit.loaded) == ["greeter"]


def test_a_candidate_description_is_what_the_agent_sees_and_skill_md_is_unchanged(tmp_path, fake, capsys, monkeypatch):
    from cli_runner import run_cli

    args = _args(tmp_path, [(A, True), (C, True)])
    skill_md = (tmp_path / "greeter" / "SKILL.md").read_bytes()
    code, out, err = run_cli([*args, "--runs", "1", "--description", "Compose farewell poems.", "--json"],
                             capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    (row,) = json.loads(out)
    # By hand: the candidate shares 'compose' and 'farewell' with C, nothing with A.
    assert {q["query"]: q["triggered"] for q in row["queries"]} == {A: 0, C: 1}
    assert row["candidate_description"] == "Compose farewell poems."
    assert (tmp_path / "greeter" / "SKILL.md").read_bytes() == skill_md


def test_calls_that_fail_or_print_garbage_are_errors_never_not_triggered(tmp_path, fake, capsys, monkeypatch):
    from cli_runner import run_cli

    queries = [(A, True), (CRASH, True), (LONE, True), (GARBAGE, False), (E, False)]
    code, out, err = run_cli([*_args(tmp_path, queries), "--json"], capsys, monkeypatch)
    assert code == 1
    assert "9 trigger calls failed" in err and "rerun with --resume" in err
    (row,) = json.loads(out)
    # Only A (3 of 3) and E (0 of 3) were answered; 9 failed calls sit apart from the rates.
    assert (row["n_should"], row["triggered_should"], row["n_should_not"], row["triggered_should_not"]) == (3, 3, 3, 0)
    assert row["errors"] == 9 and (row["recall"], row["false_trigger_rate"]) == (1.0, 0.0)
    per = {q["query"]: q for q in row["queries"]}
    for q in (CRASH, LONE, GARBAGE):
        assert (per[q]["runs"], per[q]["triggered"], per[q]["errors"]) == (0, 0, 3)
        assert per[q]["rate"] is None and per[q]["passed"] is None  # no verdict, not a fail or a pass
    rows = read_trigger_rows(_run_dir(tmp_path))
    errors = {r.query: r.error for r in rows if r.error is not None}
    assert set(errors) == {CRASH, LONE, GARBAGE}
    assert all(r.triggered is None for r in rows if r.error is not None)
    assert "exited with code 3" in errors[CRASH] and "something broke" in errors[CRASH]
    assert "not JSON" in errors[GARBAGE]
    assert "shows no tool calls" in errors[LONE]


def test_a_cli_past_the_agent_timeout_is_killed_and_counted_as_an_error(tmp_path, fake, capsys, monkeypatch):
    from cli_runner import run_cli

    args = _args(tmp_path, [(A, True), ("stall on this greeting", True)])
    t0 = time.monotonic()
    code, out, err = run_cli([*args, "--runs", "1", "--agent-timeout", "1", "--concurrency", "1", "--json"],
                             capsys, monkeypatch)  # fmt: skip
    assert code == 1 and time.monotonic() - t0 < 30
    (row,) = json.loads(out)
    assert (row["n_should"], row["triggered_should"], row["errors"]) == (1, 1, 1)
    (stalled,) = [r for r in read_trigger_rows(_run_dir(tmp_path)) if r.error is not None]
    assert stalled.triggered is None and "timed out after 1 s" in stalled.error


def test_resume_asks_only_the_failed_calls_and_the_cache_spares_the_cli(tmp_path, fake, capsys, monkeypatch):
    from cli_runner import run_cli

    (fake / "broken").write_text("")  # every call fails: the CLI exits 1
    args = _args(tmp_path, [(A, True), (E, False)])
    code, out, err = run_cli([*args, "--json"], capsys, monkeypatch)
    assert code == 1 and "6 trigger calls failed" in err
    (row,) = json.loads(out)
    assert (row["n_should"], row["n_should_not"], row["errors"]) == (0, 0, 6)
    (fake / "broken").unlink()
    code, out, err = run_cli([*args, "--resume", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert len(calls_made(fake)) == 12  # the 6 failed calls, asked again
    (row,) = json.loads(out)
    assert (row["triggered_should"], row["n_should"], row["triggered_should_not"], row["n_should_not"]) == (3, 3, 0, 3)
    assert row["errors"] == 0
    # A new run of the same plan: every answer comes from the harness cache, no CLI starts.
    before = set((tmp_path / "out").iterdir())
    code, out, err = run_cli([*args, "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert len(calls_made(fake)) == 12
    assert json.loads(out)[0]["recall"] == 1.0
    (newest,) = set((tmp_path / "out").iterdir()) - before
    rows = read_trigger_rows(newest)
    assert len(rows) == 6 and all(r.cached for r in rows)
    # --no-cache runs the CLI again.
    code, _, err = run_cli([*args, "--json", "--no-cache"], capsys, monkeypatch)
    assert code == 0, err
    assert len(calls_made(fake)) == 18


def test_refusals_are_one_line_and_write_nothing(tmp_path, fake, capsys, monkeypatch):
    from cli_runner import assert_one_line_errors

    args = _args(tmp_path, [(A, True)])
    assert_one_line_errors(
        [
            ([*args, "-m", "haiku"], "--agent cannot be used with --model"),
            ([*args, "--library"], "--agent cannot be used with --library"),
            ([*args, "--base-url", "http://x"], "--base-url applies to --model calls"),
            ([*args[:3], "cmd:my-agent {prompt}", *args[4:]], "a cmd: agent prints no transcript"),
            ([*args[:3], "nope", *args[4:]], "unknown agent 'nope'"),
            ([*args[:3], "codex", *args[4:]], "codex: `codex` is not on PATH; install it with"),
            ([*args, "--agent-timeout", "0"], "--agent-timeout must be positive"),
            ([a for a in args if a not in ("--agent", "claude-code")] + ["--agent-timeout", "5"],
             "--agent-timeout only applies to --agent runs"),
        ],
        capsys,
        monkeypatch,
    )  # fmt: skip
    assert not (tmp_path / "out").exists() and calls_made(fake) == []
    # Without claude on PATH: one line, nothing written.
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert_one_line_errors([(args, "claude-code: `claude` is not on PATH; install it with")], capsys, monkeypatch)
    assert not (tmp_path / "out").exists()
