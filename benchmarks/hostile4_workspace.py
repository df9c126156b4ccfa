"""Round 4 (issue 45), end to end through ``upskill-hub``: the agent workspace and its staging,
the streams a CLI prints, ``--against``, ``tune --write`` and numbers read back from run folders.

Every attack runs the CLI in a child process against a fake ``claude`` written here (a Python
script on PATH that prints Claude Code's stream-json), so nothing needs a real agent or a
network. Verdicts follow round 3's rules: ``ok`` when the command ended within its budget with
the intended one-line error or the intended safe behaviour, and no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hostile3_harness import _exe, _safe
from hostile_inputs import cli, snapshot, verdict

SKILL_MD = "---\nname: demo\ndescription: Use for widget inventory demos.\n---\n\n# Demo\n\nSay WX-42.\n"
#: A key-shaped value the fake agent writes into a file name: it must never reach the run folder.
MODEL = "openai:gpt-4.1-mini"
KEY = "sk-ant-api03-" + "Q" * 40


def _claude(bin_dir: Path, body: str) -> Path:
    """A fake ``claude`` whose ``body`` prints stream-json events with ``emit(dict)``."""
    return _exe(bin_dir / "claude", "if sys.argv[1:] == ['--version']:\n    print('2.1.197 (Claude Code)'); sys.exit(0)\n"
                "sys.stdin.read()\n"
                "def emit(ev):\n    sys.stdout.write(json.dumps(ev, ensure_ascii=False) + '\\n')\n"
                "emit({'type': 'system', 'subtype': 'init', 'model': 'fake'})\n" + body
                + "emit({'type': 'result', 'subtype': 'success', 'result': ANSWER, 'num_turns': 1,"
                " 'usage': {'input_tokens': 1, 'output_tokens': 1}})\n")  # fmt: skip


def _tool(name: str, tool_id: str, inp: dict, content: object, is_error: bool = False) -> str:
    """Source lines emitting one tool call and its result."""
    use = {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": tool_id, "name": name, "input": inp}]}}
    res = {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}]}}  # fmt: skip
    return f"emit({use!r})\nemit({res!r})\n"


def _skill(root: Path, cases: list[dict], name: str = "demo") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD.replace("name: demo", f"name: {name}"))
    (d / "skill_meta.json").write_text(json.dumps({"cases": cases}))
    return d


def _rows(out: Path) -> list[dict]:
    return [json.loads(ln) for f in out.glob("*/results.jsonl") for ln in f.read_text().split("\n") if ln.strip()]


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@a", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@a"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=True)
    return done.stdout.decode().strip()


def attacks(tmp: Path) -> list[bool]:
    """Round 4's workspace, stream, --against, tune and run-folder attacks, one verdict line each."""
    from upskill_hub.testing.llm_server import running_llm_server

    with running_llm_server(lambda system, messages, params: "WX-42") as llm:
        return _attacks(Path(tmp), llm.openai_base_url)


def _attacks(tmp: Path, base_url: str) -> list[bool]:
    results: list[bool] = []
    ws_root = tmp / "workspaces"
    ws_root.mkdir()
    bin_dir = tmp / "bin"
    env = {"UPSKILL_HUB_CACHE": str(tmp / "cache"), "TMPDIR": str(ws_root), "NO_COLOR": "1",
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "OPENAI_API_KEY": "sk-bench-0123456789abcdefghij"}  # fmt: skip
    common = ["--no-plots", "--no-cache"]

    def run(skill: Path, *extra: str, out: str, budget_s: float = 90, more_env: dict | None = None):
        return cli(["eval", str(skill), "--agent", "claude-code", "-o", str(tmp / out), *common, *extra],
                   budget_s, {**env, **(more_env or {})})  # fmt: skip

    def model_eval(skill: Path, *extra: str, out: str, budget_s: float = 120):
        return cli(["eval", str(skill), "-m", MODEL, "--base-url", base_url, "-o", str(tmp / out), *common, *extra],
                   budget_s, env)  # fmt: skip

    print("unsafe: a staged case file that git would follow")
    # An attacker's repository inside the skill: its config runs a command as a clean filter.
    skill = tmp / "u1" / "demo"
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    repo = skill / "evals" / "repo"
    _git(tmp, "init", "-q", str(repo))
    marker = tmp / "u1-filter-ran"
    with open(repo / "config", "a") as fh:
        fh.write(f'[filter "x"]\n\tclean = "touch {marker}; cat"\n')
    (skill / "evals" / "files" / ".git").write_text(f"gitdir: {repo}\n")
    (skill / "evals" / "files" / ".gitattributes").write_text("* filter=x\n")
    (skill / "evals" / "files" / "notes.txt").write_text("WX-42\n")
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "demo", "evals": [{
        "id": "stage", "prompt": "Commit the staged notes.", "expected_output": "a commit",
        "files": ["files/.git", "files/.gitattributes", "files/notes.txt"], "stage_files": True,
        "assertions": ["A commit was made"]}]}))  # fmt: skip
    before = snapshot(repo)
    _claude(bin_dir, "ANSWER = 'done'\n")
    res = cli(["skills", "validate", str(skill)], 30, env)
    results.append(verdict("evals.json stages files/.git (a gitfile) and .gitattributes: skills validate", res, ".git")
                   and not marker.exists())  # fmt: skip
    res = run(skill, "--judge", f"openai-compatible:judge@{base_url}", "--no-baseline", out="out-u1")
    results.append(verdict("the same skill: eval --agent claude-code", res, ".git", unchanged=repo, before=before)
                   and not marker.exists() and list(ws_root.iterdir()) == [])  # fmt: skip

    print("unsafe: a key in a file name the agent made")
    _claude(bin_dir, f"open({KEY!r} + '.txt', 'w').write('x')\nANSWER = 'WX-42'\n")
    skill = _skill(tmp / "u3", [{"id": "a", "input": "go", "assert": [{"type": "contains", "value": "WX-42"}]}])
    res = run(skill, "--no-baseline", out="out-u3", more_env={"ANTHROPIC_API_KEY": KEY})
    leaked = [str(p) for p in (tmp / "out-u3").rglob("*") if p.is_file() and KEY in p.read_text(errors="replace")]
    results.append(_safe("the agent writes a file named after ANTHROPIC_API_KEY", res, {
        "key in no run-folder file": not leaked, "graded": [r.get("passed") for r in _rows(tmp / "out-u3")] == [True]}))  # fmt: skip

    print("hang: a tool result of 200,000 empty text blocks")
    blocks = "[{'type': 'text', 'text': ''}] * 200_000"
    _claude(bin_dir, _tool("Bash", "t1", {"command": "ls"}, "__BLOCKS__").replace("'__BLOCKS__'", blocks)
            + "ANSWER = 'WX-42'\n")  # fmt: skip
    res = run(skill, "--no-baseline", out="out-h4", budget_s=60)
    results.append(_safe("6 MB stream, one tool result of 200,000 blocks", res, {
        "graded": [r.get("passed") for r in _rows(tmp / "out-h4")] == [True], "workspace removed": list(ws_root.iterdir()) == []}))  # fmt: skip

    print("misleading: stream lines, file names, transcripts")
    _claude(bin_dir, "ANSWER = 'WX-42 \\u2028 line \\u2029 para \\x85 next'\n"
            "sys.stdout.write(json.dumps({'type': 'assistant', 'message': {'content': [{'type': 'text', 'text': 'a\\u2028b'}]}}, ensure_ascii=False) + '\\n')\n")  # fmt: skip
    res = run(skill, "--no-baseline", out="out-m1")
    results.append(_safe("raw U+2028 / U+2029 / U+0085 inside stream-json lines", res, {
        "graded": [r.get("passed") for r in _rows(tmp / "out-m1")] == [True]}))  # fmt: skip
    _claude(bin_dir, "os.makedirs('out', exist_ok=True); open(b'out/\\xff\\xfe.txt', 'w').write('x')\n"
            "open('out/report.md', 'w').write('WX-42')\nANSWER = 'done'\n")  # fmt: skip
    skill = _skill(tmp / "m2", [{"id": "a", "input": "go", "assert": [
        {"type": "file-contains", "path": "out/report.md", "value": "WX-42"}]}])  # fmt: skip
    res = run(skill, "--no-baseline", out="out-m2")
    rows = _rows(tmp / "out-m2")
    results.append(_safe("a file with a non-UTF-8 name beside the graded report", res, {
        "graded, not an error row": [(r.get("passed"), r.get("error")) for r in rows] == [(True, None)]}))  # fmt: skip
    reads = "".join(_tool("Read", f"r{i}", {"file_path": f"f{i}.txt"}, "x") for i in range(100))
    others = "".join(_tool(f"Tool{i}", f"o{i}", {}, "x") for i in range(50))
    for label, body, check in (
        ("`Bash` as the 101st call under tool-not-called shell", reads, "shell"),
        ("`Bash` after 50 distinct dropped tool names under tool-not-called Bash", reads + others, "Bash"),
    ):
        _claude(bin_dir, body + _tool("Bash", "b", {"command": "rm -rf x"}, "ok") + "ANSWER = 'WX-42'\n")
        skill = _skill(tmp / f"m3-{check}", [{"id": "a", "input": "go", "assert": [
            {"type": "tool-not-called", "value": check}]}])  # fmt: skip
        res = run(skill, "--no-baseline", out=f"out-m3-{check}")
        rows = _rows(tmp / f"out-m3-{check}")
        results.append(_safe(label, res, {"not passed": bool(rows) and all(r.get("passed") is False for r in rows)}))
    skill = _skill(tmp / "m4", [{"id": "a", "input": "go", "files": {".claude/skills/demo/SKILL.md": "x"},
                                 "assert": [{"type": "contains", "value": "WX-42"}]}])  # fmt: skip
    res = run(skill, out="out-m4")
    results.append(verdict("a case file planted at .claude/skills/demo/SKILL.md", res, "cases[0].files")
                   and not (tmp / "out-m4").exists())  # fmt: skip

    print("tracebacks and wrong names: --against, tune --write")
    repo = tmp / "t5-repo"
    skill = _skill(repo, [{"id": "a", "input": "go", "assert": [{"type": "contains", "value": "WX-42"}]}])
    _git(repo, "init", "-q")
    blob = _git(repo, "hash-object", "-w", "--stdin", stdin=b"x")
    md = _git(repo, "hash-object", "-w", "--stdin", stdin=SKILL_MD.encode())
    sub = _git(repo, "mktree", stdin=f"100644 blob {blob}\tb\n".encode())
    demo = _git(repo, "mktree", stdin=f"100644 blob {md}\tSKILL.md\n100644 blob {blob}\ta\n040000 tree {sub}\ta\n".encode())
    top = _git(repo, "mktree", stdin=f"040000 tree {demo}\tdemo\n".encode())
    commit = _git(repo, "commit-tree", top, "-m", "clash")
    res = model_eval(skill, "--against", f"git:{commit}", out="out-t5")
    results.append(verdict("--against git:REF whose tree holds a file `a` and a folder `a/`", res, "git:"))
    res = model_eval(skill, "--against", "user/skills@" + "r" * 10_000, out="out-t6")
    results.append(verdict("--against OWNER/NAME@ with a 10,000-character revision", res, "revision"))
    skill = tmp / "t9"
    skill.mkdir()
    _git(skill, "init", "-q")
    (skill / "SKILL.md").write_text(SKILL_MD.replace("name: demo", "name: t9"))
    (skill / "skill_meta.json").write_text(json.dumps({"cases": [{"id": "a", "input": "go", "assert": [
        {"type": "contains", "value": "WX-42"}]}]}))  # fmt: skip
    _git(skill, "add", "-A")
    _git(skill, "commit", "-q", "-m", "skill at the repository root")
    res = model_eval(skill, "--against", "git:HEAD", out="out-t9")
    results.append(_safe("the skill is the repository root: --against git:HEAD", res, {
        "no folder-name complaint": "does not match its folder name" not in res[2]}))  # fmt: skip
    skill = tmp / "t8" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\nx: &d Use for widget demos.\ndescription: *d\n---\n\n# Demo\n")
    triggers = [{"id": f"q{i}", "query": q, "should_trigger": i < 2}
                for i, q in enumerate(["count my widgets", "widget inventory", "a haiku", "fix my bike"])]
    (skill / "skill_meta.json").write_text(json.dumps({"schema_version": 1, "triggers": triggers}))
    before = snapshot(skill)
    res = cli(["tune", str(skill), "-m", MODEL, "--teacher", "openai:gpt-4.1", "--base-url", base_url, "--write"],
              60, env)  # fmt: skip
    results.append(verdict("tune --write on a description that is a YAML alias", res, "alias", unchanged=skill,
                           before=before))  # fmt: skip

    print("numbers read back from a run folder")
    model_eval(_skill(tmp / "n1-skill", [{"id": "a", "input": "go", "assert": [
        {"type": "contains", "value": "WX-42"}]}]), out="n1")  # fmt: skip
    out = tmp / "n1"
    summaries = list(out.glob("*/summary.json"))
    if summaries:
        data = json.loads(summaries[0].read_text())
        text = json.dumps(data)
        for key in ("pass_rate", "pass_rate_mean"):
            text = text.replace(f'"{key}": 0.0', f'"{key}": 7.0').replace(f'"{key}": 1.0', f'"{key}": 7.0')
        summaries[0].write_text(text)
    results.append(verdict("summary.json with a pass rate of 7.0: runs", cli(["runs", str(out)], 30, env), "summary.json"))
    return results
