"""Issue 33, the harness's classes: untrusted text as options, commands without consent,
a grader that follows the agent's symlinks, processes that outlive their call, bad options.

Each test plays the attack against the real code path (fake agent CLIs, ``run_eval``, the
CLI entry point) and checks the safe outcome: the text stays text, nothing runs without
consent, nothing outside the workspace is read, nothing is left running or on disk, and a
bad option is one line.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _harness_kit import CASES, SKILL_MD

from upskill_hub.errors import UpskillError
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness import process as process_mod
from upskill_hub.lift.harness import spec as spec_mod
from upskill_hub.lift.harness.process import run_process
from upskill_hub.lift.prepare import EvalOptions

sys.path.insert(0, str(Path(__file__).parents[2]))
from cli_runner import assert_one_line_errors, run_cli  # noqa: E402

HOSTILE_PROMPTS = ("--dangerously-bypass-approvals-and-sandbox", "-x", "--yolo", "mcp")


def _tests(tmp_path: Path, cases: list[dict]) -> Path:
    p = tmp_path / "tests.json"
    p.write_text(json.dumps({"cases": cases}))
    return p


def _options(tmp_path: Path, agents: list[str], tests: Path | None = None, **harness) -> EvalOptions:
    return EvalOptions(
        agents=agents, cases=tests, output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", plots=False,
        include_baseline=False, harness=HarnessOptions(**{"timeout": 60, **harness}),
    )  # fmt: skip


def _script(path: Path, body: str, *, version: bool = True) -> Path:
    """An executable Python script; with ``version`` it answers ``--version`` and does nothing else."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = (
        "import sys\nif sys.argv[1:] == ['--version']:\n    print('1.0')\n    sys.exit(0)\n"
        if version
        else ""
    )
    path.write_text(f"#!{sys.executable}\n{head}{body}")
    path.chmod(0o755)
    return path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _gone(pid: int, limit_s: float = 20.0) -> bool:
    """True once ``pid`` is dead (SIGKILL lands asynchronously; this only waits for that)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    return not _alive(pid)


# ----- class 1: untrusted text never becomes a command or an option ------------------------


def test_case_text_never_becomes_an_option_of_any_cli(agents_env, widget_skill, tmp_path):
    """A case's text that looks like a flag (or a subcommand) reaches each CLI as its prompt."""
    dumps = tmp_path / "argv"
    tests = _tests(tmp_path, [{"id": f"c{i}", "input": text, "assert": [{"type": "contains", "value": "zz"}]}
                              for i, text in enumerate(HOSTILE_PROMPTS)])  # fmt: skip
    agents = ["claude-code", "codex", "gemini", "opencode"]
    result = run_eval(
        widget_skill, [], _options(tmp_path, agents, tests, agent_env=[f"FAKE_AGENT_ARGV_DUMP={dumps}"])
    )
    assert len(result.rows) == len(agents) * len(HOSTILE_PROMPTS)
    assert [r.error for r in result.rows if r.error] == []
    seen = [json.loads(f.read_text()) for f in dumps.glob("*.json")]
    assert len(seen) == len(result.rows)
    for d in seen:
        assert d["flags"] == [], d  # no option was parsed out of the prompt
        assert d["prompt"] in HOSTILE_PROMPTS, d
    assert {(d["cli"], d["prompt"]) for d in seen} == {
        (cli, p) for cli in ("claude", "codex", "gemini", "opencode") for p in HOSTILE_PROMPTS
    }


def test_custom_command_refuses_a_prompt_it_could_read_as_an_option(agents_env, widget_skill, tmp_path):
    ran = tmp_path / "ran"
    _script(
        tmp_path / "bin" / "my-agent",
        f"import sys, pathlib\npathlib.Path({str(ran)!r}).touch()\nprint(sys.argv[1:])\n",
    )
    tests = _tests(tmp_path, [{"id": "c", "input": "--dangerously-bypass-approvals-and-sandbox",
                               "assert": [{"type": "contains", "value": "x"}]}])  # fmt: skip
    result = run_eval(widget_skill, [], _options(tmp_path, ["cmd:my-agent --task {prompt}"], tests))
    (row,) = result.rows
    assert row.error and "not run: the case's text starts with '--dangerously" in row.error
    assert "put -- before {prompt}" in row.error and not ran.exists()  # never started
    # After `--`, or inside an argument, the same text is safe and is passed as written.
    for i, template in enumerate(("my-agent -- {prompt}", "my-agent --task={prompt}")):
        opts = _options(tmp_path, [f"cmd:{template}"], tests)
        opts.output_dir = tmp_path / f"runs{i}"
        (row,) = run_eval(widget_skill, [], opts).rows
        assert row.error is None and "--dangerously-bypass-approvals-and-sandbox" in row.output


def test_custom_template_fills_placeholders_in_one_pass(agents_env, widget_skill, tmp_path):
    """``{model}`` or ``{prompt}`` inside the case's text stays as written."""
    _script(tmp_path / "bin" / "echo-agent", "import sys\nprint(repr(sys.argv[1:]))\n")
    text = "say {model} and {prompt} please"
    tests = _tests(tmp_path, [{"id": "c", "input": text, "assert": [{"type": "contains", "value": text}]}])
    (row,) = run_eval(
        widget_skill, [], _options(tmp_path, ["cmd:echo-agent --m {model} -- {prompt}"], tests)
    ).rows
    assert row.error is None and row.passed is True, row.output
    assert repr(["--m", "", "--", text]) in row.output


def _skill_with_command(tmp_path: Path, marker: Path) -> Path:
    d = tmp_path / "pulled" / "widget-report"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    cases = json.loads(json.dumps(CASES))
    cases["cases"][0]["assert"].append({"type": "command", "value": f"touch {marker}"})
    (d / "skill_meta.json").write_text(json.dumps(cases))
    return d


def test_a_skills_own_command_checks_need_consent(agents_env, tmp_path, capsys, monkeypatch):
    marker = tmp_path / "command-ran"
    skill = _skill_with_command(tmp_path, marker)
    base = ["eval", str(skill), "--agent", "codex", "--no-plots", "--cache-dir", str(tmp_path / "cache"),
            "--no-baseline", "--format", "agent"]  # fmt: skip
    code, _out, err = run_cli([*base, "-o", str(tmp_path / "runs")], capsys, monkeypatch)
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "skill 'widget-report' brings 1 'command' check in its skill_meta.json" in err
    assert "--allow-commands" in err
    assert not marker.exists() and not (tmp_path / "runs").exists()  # stopped before any call
    code, _out, err = run_cli([*base, "-o", str(tmp_path / "runs2"), "--allow-commands"], capsys, monkeypatch)
    assert marker.exists(), err  # with consent it runs


# ----- class 2: the grader's snapshot ------------------------------------------------------


def test_a_project_folder_swapped_for_a_symlink_is_not_graded(agents_env, widget_skill, tmp_path):
    outside = tmp_path / "outside"
    (outside / "out").mkdir(parents=True)
    (outside / "out" / "report.md").write_text("WX-42 from outside\n")
    before = sorted(p.name for p in outside.rglob("*"))
    _script(tmp_path / "bin" / "swap-agent", "import os, shutil\nproject = os.getcwd()\nos.chdir('..')\n"
            f"shutil.rmtree(project)\nos.symlink({str(outside)!r}, project)\nprint('done')\n")  # fmt: skip
    tests = _tests(tmp_path, [{"id": "c", "input": "write the report", "assert": [
        {"type": "file-contains", "path": "out/report.md", "value": "WX-42"},
        {"type": "command", "value": "rm -rf out"}]}])  # fmt: skip
    root = tmp_path / "ws"
    (row,) = run_eval(
        widget_skill, [], _options(tmp_path, ["cmd:swap-agent"], tests, workspace_root=root)
    ).rows
    assert row.error is None and row.passed is False
    details = json.loads(row.assertion_details)
    assert all(
        not d["passed"] and "not graded: project/ was replaced by a symlink" in d["evidence"] for d in details
    )
    assert sorted(p.name for p in outside.rglob("*")) == before  # the command never ran there
    assert list(root.iterdir()) == []  # the workspace is gone; the target of the link is not


def test_a_deep_tree_is_cut_in_the_evidence_and_removed(agents_env, widget_skill, tmp_path):
    _script(tmp_path / "bin" / "deep-agent", "import os\nos.makedirs('out', exist_ok=True)\n"
            "open('out/report.md', 'w').write('WX-42')\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
            "open('leaf', 'w').write('x')\nprint('done')\n")  # fmt: skip
    tests = _tests(tmp_path, [{"id": "c", "input": "go", "assert": [
        {"type": "file-contains", "path": "out/report.md", "value": "WX-42"}]}])  # fmt: skip
    root = tmp_path / "ws"
    (row,) = run_eval(
        widget_skill, [], _options(tmp_path, ["cmd:deep-agent"], tests, workspace_root=root)
    ).rows
    assert row.error is None and row.passed is True
    (detail,) = json.loads(row.assertion_details)
    assert "folders deeper than 64 levels not read" in detail["evidence"] and detail["snapshot_cut"]
    assert list(root.iterdir()) == []


def test_file_contains_does_not_pass_through_a_symlink_to_an_input_file(agents_env, widget_skill, tmp_path):
    _script(tmp_path / "bin" / "link-agent", "import os\nos.makedirs('out', exist_ok=True)\n"
            "os.symlink('../notes.txt', 'out/report.md')\nprint('done')\n")  # fmt: skip
    tests = _tests(tmp_path, [{"id": "c", "input": "go", "files": {"notes.txt": "WX-42 was here\n"}, "assert": [
        {"type": "file-contains", "path": "out/report.md", "value": "WX-42"}]}])  # fmt: skip
    (row,) = run_eval(widget_skill, [], _options(tmp_path, ["cmd:link-agent"], tests)).rows
    assert row.passed is False
    (detail,) = json.loads(row.assertion_details)
    assert "leads to notes.txt, which existed before the agent ran" in detail["evidence"]


# ----- class 6: processes that outlive their call ------------------------------------------


def test_a_setsid_helper_holding_stdout_neither_times_out_the_call_nor_survives(tmp_path):
    pidfile = tmp_path / "helper.pid"
    helper = f"import os, time; os.setsid(); open({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid())); " \
             f"os.rename({str(pidfile)!r} + '.tmp', {str(pidfile)!r}); time.sleep(600)"  # fmt: skip
    cmd = f'{sys.executable} -c "{helper}" & while [ ! -s {pidfile} ]; do sleep 0.01; done; echo done'
    res = asyncio.run(
        run_process(["/bin/sh", "-c", cmd], cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout=30)
    )
    assert not res.timed_out and res.returncode == 0 and res.stdout == b"done\n"
    assert _gone(int(pidfile.read_text()))


def test_a_daemon_started_by_a_command_check_is_killed(tmp_path):
    from upskill_hub.cases import parse_assertion
    from upskill_hub.lift.harness.grading import WorkspaceChecker
    from upskill_hub.lift.harness.workspace import Workspace

    pidfile = tmp_path / "daemon.pid"
    daemon = f"import os, time; os.setsid(); open({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid())); " \
             f"os.rename({str(pidfile)!r} + '.tmp', {str(pidfile)!r}); time.sleep(600)"  # fmt: skip
    value = f'{sys.executable} -c "{daemon}" >/dev/null 2>&1 & while [ ! -s {pidfile} ]; do sleep 0.01; done'
    ws = Workspace.create(tmp_path / "ws", prefix="t-")
    try:
        ws.freeze()
        checker = WorkspaceChecker(ws, set(), ws.env({}), allow_commands=True)
        result = asyncio.run(checker(parse_assertion({"type": "command", "value": value}, "t")))
    finally:
        ws.remove()
    assert result.passed, result.evidence
    assert _gone(int(pidfile.read_text()))


def _probe_cli(tmp_path: Path, body: str) -> str:
    return str(_script(tmp_path / "probe" / "claude", body, version=False))


def test_a_version_probe_that_prints_forever_is_capped(tmp_path):
    exe = _probe_cli(tmp_path, "import sys, time\nwhile True:\n    sys.stdout.write('v' * 8191 + '\\n')\n"
                     "    sys.stdout.flush()\n    time.sleep(0.01)\n")  # fmt: skip
    t0 = time.monotonic()
    with pytest.raises(
        UpskillError, match=r"`claude --version` printed more than 64 KB \(stopped and killed\)"
    ):
        spec_mod.cli_version(spec_mod.ADAPTERS["claude-code"], exe)
    assert time.monotonic() - t0 < spec_mod.VERSION_TIMEOUT_S / 2
    custom = spec_mod.parse_agent_spec(f"cmd:{exe} {{prompt}}").adapter
    assert spec_mod.cli_version(custom, exe) == "unknown"


def test_a_version_probe_that_times_out_takes_its_grandchild_along(tmp_path, monkeypatch):
    monkeypatch.setattr(spec_mod, "VERSION_TIMEOUT_S", 2.0)
    pidfile = tmp_path / "grandchild.pid"
    exe = _probe_cli(tmp_path, "import subprocess, sys, time, os\n"
                     "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                     f"open({str(pidfile)!r} + '.tmp', 'w').write(str(p.pid))\nos.rename({str(pidfile)!r} + '.tmp', "
                     f"{str(pidfile)!r})\ntime.sleep(600)\n")  # fmt: skip
    with pytest.raises(UpskillError, match=r"`claude --version` did not finish within 2 s \(killed\)"):
        spec_mod.cli_version(spec_mod.ADAPTERS["claude-code"], exe)
    assert _gone(int(pidfile.read_text()))


# ----- class 10: options and messages ------------------------------------------------------


def test_bad_harness_options_are_one_line_errors(agents_env, widget_skill, tmp_path, capsys, monkeypatch):
    base = ["eval", str(widget_skill), "--agent", "codex", "-o", str(tmp_path / "runs"), "--no-plots",
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert_one_line_errors([
        ([*base, "--concurrency", "-1"], "--concurrency must be at least 1, got -1"),
        ([*base, "--concurrency", "0"], "--concurrency must be at least 1, got 0"),
        ([*base, "--agent-timeout", "nan"], "--agent-timeout must be a finite number of seconds"),
        ([*base, "--agent-timeout", "inf"], "--agent-timeout must be a finite number of seconds"),
        ([*base, "--agent-timeout", "-3"], "--agent-timeout must be positive, got -3"),
        ([*base, "--agent-env", "HOME=/"], "--agent-env HOME: refused; the harness sets HOME itself"),
        ([*base, "--agent-env", "TMPDIR=/tmp"], "--agent-env TMPDIR: refused; the harness sets TMPDIR itself"),
    ], capsys, monkeypatch)  # fmt: skip
    assert not (tmp_path / "runs").exists()


def test_runs_above_the_cap_are_refused_before_planning(agents_env, widget_skill, tmp_path):
    """`--runs 5000` would plan (and run) 20,000 agent calls: refused in one line at once."""
    cmd = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()", "eval", str(widget_skill),
           "--agent", "codex", "--runs", "5000", "-o", str(tmp_path / "runs"), "--no-plots",
           "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("--runs 5000 was not refused: the eval started")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "Error: --runs must be at most 1000 (raise UPSKILL_MAX_RUNS to allow more), got 5000"
    )
    assert not (tmp_path / "runs").exists()


def test_output_over_the_cap_is_reported_as_truncated(agents_env, widget_skill, tmp_path, monkeypatch):
    monkeypatch.setattr(process_mod, "MAX_STDOUT_BYTES", 1024 * 1024)
    _script(tmp_path / "bin" / "flood-agent", "import sys\nsys.stdout.write('WX-42 ' * 400_000)\n")
    tests = _tests(tmp_path, [{"id": "c", "input": "go", "assert": [{"type": "contains", "value": "WX-42"}]}])
    (row,) = run_eval(widget_skill, [], _options(tmp_path, ["cmd:flood-agent"], tests)).rows
    assert row.error and "printed more than 1 MB on stdout; the output was truncated at that cap" in row.error
    assert "UPSKILL_AGENT_MAX_STDOUT_MB" in row.error


def test_snapshot_budgets_are_named_and_removal_survives_read_only_folders(tmp_path, monkeypatch):
    from upskill_hub.lift.harness import workspace as ws_mod
    from upskill_hub.lift.harness.tree import remove_tree

    monkeypatch.setattr(ws_mod, "MAX_SNAPSHOT_FILES", 50)
    ws = ws_mod.Workspace.create(tmp_path / "ws", prefix="t-")
    for i in range(200):
        (ws.project / f"f{i:03d}").write_text("x")
    locked = ws.project / "locked" / "inner"
    locked.mkdir(parents=True)
    (locked / "file").write_text("x")
    os.symlink("/proc/self", ws.project / "proc")  # recorded as a link, never walked
    locked.chmod(0o500)
    locked.parent.chmod(0o000)
    snap = ws.snapshot()
    assert snap.broken is None and "stopped after 50 entries" in snap.cut and len(snap.files) < 60
    assert ws.remove() and not ws.root.exists()
    # A symlink in the place of a folder to remove: the link goes, its target stays.
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("x")
    os.symlink(target, tmp_path / "link")
    assert remove_tree(tmp_path / "link") and (target / "keep").exists()


def test_the_installed_skill_carries_no_test_material(tmp_path):
    """The agent must not find the expected answers it is graded on in the skill it was given."""
    from upskill_hub.lift.harness.workspace import Workspace
    from upskill_hub.skill import load_skill

    d = tmp_path / "skills" / "demo"
    (d / "evals").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: demo\ndescription: Use for demos.\n---\n\n# Demo\n\nSteps.\n")
    case = {"id": "c", "input": "q", "assert": [{"type": "contains", "value": "SECRET-ANSWER"}]}
    (d / "skill_meta.json").write_text(json.dumps({"cases": [case]}))
    (d / "evals" / "evals.json").write_text(json.dumps({"evals": [{"id": 1, "prompt": "q", "expected_output": "x"}]}))
    skill = load_skill(d).skill
    assert skill is not None
    ws = Workspace.create(tmp_path / "ws", "call-")
    try:
        installed = ws.install(skill, ".claude/skills")
        on_disk = sorted(p.relative_to(installed).as_posix() for p in installed.rglob("*") if p.is_file())
        assert "SKILL.md" in on_disk
        assert not [p for p in on_disk if p == "skill_meta.json" or p.startswith("evals")], on_disk
    finally:
        ws.remove()
