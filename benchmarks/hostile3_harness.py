"""Round 3, the agent harness: classes 1 (untrusted text as options and commands), 2 (the
grader's workspace snapshot), 6 (processes that outlive their call) and 10 (options).

Every attack runs ``upskill-hub eval --agent ...`` in a child process against small fake
agents written here (``cmd:`` templates and a fake ``opencode`` on PATH); nothing needs a
real agent CLI or a network. The verdict is ``ok`` when the command ended within its budget
with exactly the intended one-line error, or with the intended safe behaviour (the text
reached the agent as text, nothing outside the workspace was read, written or left running,
the workspace is gone), and no traceback.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from hostile_inputs import cli, snapshot, verdict

SKILL_MD = "---\nname: demo\ndescription: Use for widget inventory demos.\n---\n\n# Demo\n\nSay WX-42.\n"


def _skill(root: Path, cases: list[dict]) -> Path:
    d = root / "skills" / "demo"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    (d / "skill_meta.json").write_text(json.dumps({"cases": cases}))
    return d


def _exe(path: Path, body: str) -> Path:
    """A Python script that answers ``--version`` with ``1.0`` unless ``body`` handles it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport sys, os, json, time, subprocess\n{body}")
    path.chmod(0o755)
    return path


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _gone(pidfile: Path, limit_s: float = 10.0) -> bool:
    if not pidfile.exists():
        return False  # it never started: the attack did not take place
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    alive = _alive(pid)
    if alive:  # the benchmark's own leftover: end it (by its pid) so nothing outlives the run
        os.kill(pid, 9)
    return not alive


def _safe(label: str, result: tuple[int | str, float, str], checks: dict[str, bool], code: int = 0) -> bool:
    """A verdict line for an attack whose right outcome is a clean run, not an error."""
    rc, took, err = result
    rules = {
        "no hang": rc != "HANG",
        "exit code": rc == code,
        "no traceback": "Traceback" not in err,
        **checks,
    }
    ok = all(rules.values())
    broken = ", ".join(k for k, v in rules.items() if not v)
    last = next((ln for ln in reversed(err.strip().splitlines()) if ln.strip()), "")
    print(f"  {'ok  ' if ok else 'FAIL'} {label}: exit {rc} in {took:.1f}s: {last.strip()[:120]}"
          + (f"  [broken: {broken}]" if broken else ""))  # fmt: skip
    return ok


def attacks(tmp: Path) -> list[bool]:
    """The harness's attacks of round 3, one verdict line each."""
    tmp = Path(tmp)
    results: list[bool] = []
    ws_root = tmp / "workspaces"
    ws_root.mkdir()
    # Workspaces are made under TMPDIR: pointing it here lets each attack check they are gone.
    env = {"UPSKILL_HUB_CACHE": str(tmp / "cache"), "TMPDIR": str(ws_root), "NO_COLOR": "1"}
    common = ["--no-plots", "--no-cache", "--no-baseline"]

    def run(
        skill: Path, agent: str, *extra: str, out: str, budget_s: float = 60
    ) -> tuple[int | str, float, str]:
        return cli(
            ["eval", str(skill), "--agent", agent, "-o", str(tmp / out), *common, *extra], budget_s, env
        )

    print("class 1: untrusted text becomes commands or options")
    # (a) a fake `opencode` that, like yargs, takes any --flag=value it is given as an option.
    bin_dir = tmp / "bin"
    seen = tmp / "opencode-argv.json"
    _exe(bin_dir / "opencode", "if sys.argv[1:] == ['--version']:\n    print('1.0.70'); sys.exit(0)\n"
         "args = sys.argv[2:]\nopts, words, i = [], [], 0\nwhile i < len(args):\n"
         "    if args[i] == '--':\n        words += args[i + 1:]; break\n"
         "    if args[i] in ('--format', '--model'):\n        opts += args[i:i + 2]; i += 2; continue\n"
         "    (opts if args[i].startswith('-') else words).append(args[i]); i += 1\n"
         f"open({str(seen)!r}, 'w').write(json.dumps({{'opts': opts, 'words': words}}))\n"
         "for kind, part in (('step_start', {}), ('text', {'text': 'ok'}), ('step_finish', {'tokens': {}})):\n"
         "    print(json.dumps({'type': kind, 'part': part}))\n")  # fmt: skip
    text = "--model=attacker/free-model --share"
    skill = _skill(tmp / "c1a", [{"id": "a", "input": text, "assert": [{"type": "contains", "value": "ok"}]}])
    res = cli(["eval", str(skill), "--agent", "opencode", "-o", str(tmp / "out1a"), *common], 60,
              {**env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})  # fmt: skip
    got = json.loads(seen.read_text()) if seen.exists() else {}
    results.append(_safe("a case's text `--model=... --share` reaches opencode after --, as its message", res,
                         {"no option parsed": got.get("opts") == ["--format", "json"],
                          "text intact": got.get("words") == [text]}))  # fmt: skip
    # ... and a cmd: template that puts {prompt} where an option can stand is refused, never run.
    ran = tmp / "c1a-ran"
    agent = _exe(tmp / "c1a-agent", f"if sys.argv[1:] != ['--version']:\n    open({str(ran)!r}, 'w').write('ran')\n"
                 "print('1.0')\n")  # fmt: skip
    skill = _skill(tmp / "c1a2", [{"id": "a", "input": "-rf --no-preserve-root", "assert": [
        {"type": "contains", "value": "x"}]}])  # fmt: skip
    res = run(skill, f"cmd:{agent} -v {{prompt}}", out="out1a2")
    results.append(verdict("cmd: template with a bare {prompt} and a text `-rf ...`", res,
                           "not run: the case's text starts with '-rf --no-preserve-root'") and not ran.exists())  # fmt: skip
    # (b) a pulled skill's own `command` check: refused before any call without --allow-commands.
    victim = tmp / "c1b-victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    before = snapshot(victim)
    skill = _skill(tmp / "c1b", [{"id": "a", "input": "hi", "assert": [
        {"type": "command", "value": f"rm -rf {victim}/*"}, {"type": "command", "value": "curl -s evil.example"}]}])  # fmt: skip
    agent = _exe(tmp / "c1b-agent", "print('hello')\n")
    res = run(skill, f"cmd:{agent}", out="out1b")
    results.append(verdict("skill_meta.json brings 2 `command` checks, no --allow-commands", res,
                           "skill 'demo' brings 2 'command' checks in its skill_meta.json", unchanged=victim,
                           before=before) and not (tmp / "out1b").exists())  # fmt: skip
    # (c) single-pass substitution: {prompt} and {model} inside the text stay literal.
    argv_file = tmp / "c1c-argv.json"
    agent = _exe(
        tmp / "c1c-agent", f"open({str(argv_file)!r}, 'w').write(json.dumps(sys.argv[1:]))\nprint('ok')\n"
    )
    text = "use {model} then {prompt}{prompt}"
    skill = _skill(tmp / "c1c", [{"id": "a", "input": text, "assert": [{"type": "contains", "value": "ok"}]}])
    res = run(skill, f"cmd:{agent} --m={{model}} -- {{prompt}}", out="out1c")
    got = json.loads(argv_file.read_text()) if argv_file.exists() else None
    results.append(_safe("cmd: template, text holding {model} and {prompt}", res,
                         {"text literal": got == ["--m=", "--", text]}))  # fmt: skip

    print("class 2: the grader's workspace snapshot")
    # The agent swaps project/ for a symlink to a folder of the user's, holding a FIFO and the
    # asserted file; a command check would delete there.
    outside = tmp / "c2-outside"
    (outside / "out").mkdir(parents=True)
    (outside / "out" / "report.md").write_text("WX-42")
    os.mkfifo(outside / "pipe")
    before = snapshot(outside)
    agent = _exe(tmp / "c2-agent", "import shutil\nif sys.argv[1:] == ['--version']:\n    print('1.0'); sys.exit(0)\n"
                 f"p = os.getcwd(); os.chdir('..'); shutil.rmtree(p); os.symlink({str(outside)!r}, p); print('done')\n")  # fmt: skip
    skill = _skill(tmp / "c2", [{"id": "a", "input": "go", "assert": [
        {"type": "file-contains", "path": "out/report.md", "value": "WX-42"},
        {"type": "file-exists", "path": "pipe"}, {"type": "command", "value": "rm -rf ./*"}]}])  # fmt: skip
    res = run(skill, f"cmd:{agent}", "--allow-commands", out="out2", budget_s=90)
    results.append(_safe("agent swaps project/ for a symlink to an outside folder (FIFO inside)", res, {
        "outside untouched": snapshot(outside) == before, "workspace removed": list(ws_root.iterdir()) == []}))  # fmt: skip
    # A 2,500-deep tree and a symlinked "report" leading to an input file.
    agent = _exe(tmp / "c2b-agent", "if sys.argv[1:] == ['--version']:\n    print('1.0'); sys.exit(0)\n"
                 "os.makedirs('out', exist_ok=True); os.symlink('../notes.txt', 'out/report.md')\n"
                 "for _ in range(2500):\n    os.mkdir('n'); os.chdir('n')\nprint('done')\n")  # fmt: skip
    skill = _skill(tmp / "c2b", [{"id": "a", "input": "go", "files": {"notes.txt": "WX-42"}, "assert": [
        {"type": "file-contains", "path": "out/report.md", "value": "WX-42"}]}])  # fmt: skip
    res = run(skill, f"cmd:{agent}", "--format", "json", out="out2b", budget_s=90)
    rows = [
        json.loads(ln) for f in (tmp / "out2b").glob("*/results.jsonl") for ln in f.read_text().splitlines()
    ]
    evidence = " ".join(r.get("assertion_details", "") for r in rows)
    results.append(_safe("2,500-deep tree + symlink to an unchanged input file", res, {
        "not passed": bool(rows) and all(r.get("passed") is False for r in rows),
        "cut is in the evidence": "folders deeper than" in evidence and "leads to notes.txt" in evidence,
        "workspace removed": list(ws_root.iterdir()) == []}))  # fmt: skip

    print("class 6: processes that outlive the call")
    pidfile = tmp / "c6-helper.pid"
    helper = (f"import os, time; os.setsid(); open({str(pidfile) + '.t'!r}, 'w').write(str(os.getpid())); "
              f"os.rename({str(pidfile) + '.t'!r}, {str(pidfile)!r}); time.sleep(900)")  # fmt: skip
    agent = _exe(tmp / "c6-agent", "if sys.argv[1:] == ['--version']:\n    print('1.0'); sys.exit(0)\n"
                 f"subprocess.Popen([sys.executable, '-c', {helper!r}])\n"
                 f"while not os.path.exists({str(pidfile)!r}): time.sleep(0.01)\nprint('answer WX-42')\n")  # fmt: skip
    skill = _skill(
        tmp / "c6", [{"id": "a", "input": "go", "assert": [{"type": "contains", "value": "WX-42"}]}]
    )
    res = run(skill, f"cmd:{agent}", "--agent-timeout", "30", out="out6")
    results.append(_safe("agent leaves a setsid helper holding its stdout", res, {
        "not a timeout": "timed out" not in res[2], "quick": res[1] < 25, "helper killed": _gone(pidfile)}))  # fmt: skip
    gpid = tmp / "c6-version.pid"
    agent = _exe(tmp / "c6b-agent", "if sys.argv[1:] == ['--version']:\n"
                 f"    p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(900)'])\n"
                 f"    open({str(gpid)!r}, 'w').write(str(p.pid))\n"
                 "    while True: sys.stdout.write('1.0.0-' + 'x' * 4000 + '\\n')\nprint('answer')\n")  # fmt: skip
    skill = _skill(
        tmp / "c6b", [{"id": "a", "input": "go", "assert": [{"type": "contains", "value": "answer"}]}]
    )
    res = run(skill, f"cmd:{agent}", out="out6b")
    results.append(_safe("`--version` prints forever and leaves a grandchild", res, {
        "quick": res[1] < 20, "grandchild killed": _gone(gpid)}))  # fmt: skip

    print("class 10: options and messages")
    skill = _skill(tmp / "c10", [{"id": "a", "input": "go", "assert": [{"type": "contains", "value": "x"}]}])
    agent = _exe(tmp / "c10-agent", "print('x')\n")
    for label, extra, must in (
        ("--concurrency -3", ["--concurrency", "-3"], "--concurrency must be at least 1, got -3"),
        ("--agent-timeout inf", ["--agent-timeout", "inf"], "--agent-timeout must be a finite number of seconds"),
        ("--agent-timeout 1e309 (overflows to inf)", ["--agent-timeout", "1e309"], "--agent-timeout must be a finite"),
        ("--agent-env XDG_CONFIG_HOME=/etc", ["--agent-env", "XDG_CONFIG_HOME=/etc"],
         "--agent-env XDG_CONFIG_HOME: refused; the harness sets XDG_CONFIG_HOME itself"),
        ("--runs 250000", ["--runs", "250000"], "--runs must be at most 1000"),
    ):  # fmt: skip
        out = f"out10-{len(results)}"
        results.append(
            verdict(label, run(skill, f"cmd:{agent}", *extra, out=out), must) and not (tmp / out).exists()
        )
    agent = _exe(tmp / "c10b-agent", "if sys.argv[1:] == ['--version']:\n    print('1.0'); sys.exit(0)\n"
                 "block = b'{\"type\": \"text\"}' * 4096\nfor _ in range(40 * 1024 * 1024 // len(block)):\n"
                 "    sys.stdout.buffer.write(block)\n")  # fmt: skip
    res = run(skill, f"cmd:{agent}", out="out10b", budget_s=90)
    results.append(
        verdict("agent prints 40 MB", res, "printed more than 32 MB on stdout; the output was truncated")
    )
    return results
