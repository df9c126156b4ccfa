"""Issue 33, round 3, the catalog area: attacks on catalog mode, test cases and scenarios.

Each attack runs the real ``upskill-hub`` in a child process (``hostile_inputs.cli``) and
prints one verdict line; :func:`attacks` returns the verdicts. The model is the scripted
server (:mod:`upskill_hub.testing.llm_server`) started inside the child, made to answer
every turn with the tool calls an attack names and, like the servers of the report, with
no usage (or usage 0). Classes covered here:

* 2 (read part): ``read_skill_file`` serves only the skill loader's file list;
* 3 (cases part): attached input files are budgeted where cases are parsed;
* 7: catalog caps count locally (tool calls per turn, tool output, request size, tokens);
* 10 (catalog part): empty or duplicate distractors, scenario skills checked up front.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hostile_inputs import cli, snapshot, verdict

TOKEN = "ghp_" + "h3CatalogT0ken0123456789abcdefghij"
KEY = "sk-" + "test-0123456789abcdefghijklmnop"
#: Attacks that must be refused before any call: a call would go to a closed local port.
NO_NETWORK = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}

#: Run first in the child: the scripted server, answering every turn with $H3_CALLS and no
#: usage ($H3_USAGE when set), whose requests are summed into $H3_LOG at exit.
SERVER = """
import atexit, json, os
from upskill_hub.testing import llm_server as _ls
_calls = json.loads(os.environ["H3_CALLS"])
_usage = json.loads(os.environ.get("H3_USAGE", "null"))
def _step(system, messages, tools):
    return ("attack", {}) if "load_skill" in tools else None
def _answer(api, step, n, system, messages, params):
    wire = [{"id": f"call_{n}_{i}", "type": "function",
             "function": {"name": c[0], "arguments": json.dumps(c[1])}} for i, c in enumerate(_calls)]
    out = {"id": "x", "object": "chat.completion", "created": 0, "model": params["model"],
           "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": wire},
                        "finish_reason": "tool_calls"}]}
    if _usage is not None:
        out["usage"] = _usage
    return out
_ls.tool_step, _ls._tool_answer = _step, _answer
_srv = _ls.ScriptedLLMServer().start()
os.environ["OPENAI_BASE_URL"] = _srv.openai_base_url
def _log():
    bodies = [json.dumps(r.body) for r in _srv.completion_requests]
    with open(os.environ["H3_LOG"], "w") as fh:
        json.dump({"n": len(bodies), "max": max(map(len, bodies), default=0),
                   "token": any(os.environ["H3_TOKEN"] in b for b in bodies)}, fh)
atexit.register(_log)
"""

#: Run first in the child: at most 2 GB of address space (a prompt of gigabytes dies here).
MEMORY_CAP = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"


def _skill(root: Path, name: str, body: str = "Say hello.", cases: int = 1) -> Path:
    d = root / name
    (d / "references").mkdir(parents=True)
    (d / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Greets people warmly. Use when someone wants a greeting.\n---\n# {name}\n\n{body}\n"
    )
    (d / "references" / "style.md").write_text("Bow slightly.\n" * 4000)  # 56 kB
    meta = {"schema_version": 1, "cases": [
        {"id": f"c{i}", "input": f"Please greet me ({i})", "assert": [{"type": "contains", "value": "hello"}]}
        for i in range(cases)
    ]}  # fmt: skip
    (d / "skill_meta.json").write_text(json.dumps(meta))
    return d


def _served(tmp: Path, label: str, calls: list, args: list[str], usage: object = None) -> tuple[tuple, dict]:
    """``upskill-hub eval ... --mode catalog`` against the scripted server answering ``calls``."""
    log = tmp / f"{label}.log.json"
    env = {"H3_CALLS": json.dumps(calls), "H3_LOG": str(log), "H3_TOKEN": TOKEN, "OPENAI_API_KEY": KEY,
           "UPSKILL_HUB_CACHE": str(tmp / f"{label}.cache"), "H3_USAGE": json.dumps(usage)}  # fmt: skip
    res = cli(args, budget_s=120, env=env, pre=SERVER)
    seen = json.loads(log.read_text()) if log.exists() else {"n": -1, "max": -1, "token": True}
    return res, seen


def _line(label: str, ok: bool, detail: str) -> bool:
    """One verdict line for an attack whose right outcome is a safe run, not an error."""
    print(f"  {'ok  ' if ok else 'FAIL'} {label}: {detail}")
    return ok


def _eval_args(skill: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", str(skill), "-m", "openai:gpt-4.1-mini", "--mode", "catalog", "--no-baseline",
            "--distractors", "none", "-o", str(out), "--no-plots", *extra]  # fmt: skip


def attacks(tmp: Path) -> list[bool]:
    """Every attack of the catalog area, one verdict line each."""
    tmp = Path(tmp)
    results: list[bool] = []

    print("class 2: read_skill_file serves only what the skill loader lists")
    skill = _skill(tmp / "c2", "greeter")
    (skill / ".git" / "refs").mkdir(parents=True)
    (skill / ".git" / "config").write_text(
        f"[credential]\n\thelper = store\n[remote]\n\turl = https://u:{TOKEN}@x/y\n"
    )
    (skill / ".git" / "refs" / "stash").write_text(TOKEN)
    (skill / ".hf-skill-manifest.json").write_text(json.dumps({"token": TOKEN}))
    probes = [".git/config", ".git/refs/stash", ".hf-skill-manifest.json", "references/style.md"]
    calls = [["read_skill_file", {"name": "greeter", "path": p}] for p in probes]
    (rc, took, err), seen = _served(tmp, "c2", calls, _eval_args(skill, tmp / "c2-out", "--max-turns", "2"))
    ok = rc == 0 and "Traceback" not in err and seen["n"] == 2 and not seen["token"]
    results.append(_line("catalog model asks for .git/ files and install markers", ok,
                         f"exit {rc} in {took:.1f}s, {seen['n']} requests, secret sent: {seen['token']}"))  # fmt: skip

    print("class 3: attached input files are budgeted where cases are parsed")
    bomb = _skill(tmp / "c3", "notes")
    files = bomb / "evals" / "files"
    files.mkdir(parents=True)
    for i in range(24):
        (files / f"part{i}.txt").write_text(f"{i}" * 120_000)
    (bomb / "skill_meta.json").unlink()  # evals/evals.json is read when skill_meta.json is absent
    many = {"evals": [{"id": k, "prompt": "Summarise", "files": [f"evals/files/part{i}.txt" for i in range(24)],
                       "assertions": ["It summarises"]} for k in range(400)]}  # fmt: skip
    (bomb / "evals" / "evals.json").write_text(json.dumps(many))
    before = snapshot(bomb)
    results.append(verdict("400 cases x 24 distinct 120 kB files (1.1 GB of prompt) under a 2 GB address cap",
                           cli(["skills", "validate", str(bomb)], pre=MEMORY_CAP), "a case may attach at most",
                           unchanged=bomb, before=before))  # fmt: skip
    shared = {"evals": [{"id": k, "prompt": "Summarise", "files": ["evals/files/part0.txt", "evals/files/part1.txt"],
                         "assertions": ["It summarises"]} for k in range(300)]}  # fmt: skip
    (bomb / "evals" / "evals.json").write_text(json.dumps(shared))
    before = snapshot(bomb)
    results.append(verdict("300 cases sharing two 120 kB files (72 MB of prompt), through eval --tests",
                           cli(["eval", str(bomb), "--tests", str(bomb / "evals" / "evals.json"), "-m",
                                "openai:gpt-4.1-mini", "--judge", "openai:j", "-o", str(tmp / "c3-out")],
                               env=NO_NETWORK, pre=MEMORY_CAP),
                           "a tests file may attach at most", unchanged=bomb, before=before))  # fmt: skip
    (files / "big.txt").write_text("b" * 300_000)
    (bomb / "evals" / "evals.json").write_text(
        json.dumps(
            {
                "evals": [
                    {"id": 1, "prompt": "Summarise", "files": ["evals/files/big.txt"], "assertions": ["ok"]}
                ]
            }
        )
    )
    results.append(
        verdict(
            "one 300 kB input file: the message names the real limit and variable",
            cli(["skills", "validate", str(bomb)]),
            "at most 262,144 bytes (UPSKILL_EVAL_FILE_MAX_KB=256",
        )
    )

    print("class 7: catalog caps count locally (no usage from the server)")
    skill = _skill(tmp / "c7", "greeter")
    reads = [["read_skill_file", {"name": "greeter", "path": "references/style.md"}]]
    (rc, took, err), seen = _served(tmp, "c7a", reads * 40, _eval_args(skill, tmp / "c7a-out", "--max-turns", "1000"),
                                    usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})  # fmt: skip
    ok = rc == 1 and "Traceback" not in err and seen["n"] == 1 and "40 tool calls in one turn" in err
    results.append(
        _line(
            "40 tool calls in one turn, usage 0",
            ok,
            f"exit {rc} in {took:.1f}s, {seen['n']} request(s), largest {seen['max']:,} bytes",
        )
    )
    (rc, took, err), seen = _served(
        tmp, "c7b", reads * 16, _eval_args(skill, tmp / "c7b-out", "--max-turns", "100000")
    )
    ok = rc in (0, 1) and "Traceback" not in err and 0 < seen["n"] <= 4 and seen["max"] < 8_000_000
    results.append(
        _line(
            "16 reads of 56 kB per turn, --max-turns 100000, no usage",
            ok,
            f"exit {rc} in {took:.1f}s, {seen['n']} requests, largest {seen['max']:,} bytes",
        )
    )

    print("class 10: distractors and scenarios")
    skill = _skill(tmp / "c10", "greeter")
    out = tmp / "c10-out"
    results.append(verdict("eval --mode catalog --distractors ' ' (whitespace, once the current folder)",
                           cli(["eval", str(skill), "-m", "openai:gpt-4.1-mini", "--mode", "catalog", "--distractors",
                                " ", "-o", str(out)], env=NO_NETWORK),
                           "not an empty value", unchanged=tmp / "c10", before=snapshot(tmp / "c10")))  # fmt: skip
    others = tmp / "c10-others"
    _skill(others / "north", "helper")
    _skill(others / "south", "helper")
    before = snapshot(tmp / "c10")
    triggers = [
        "triggers",
        str(skill),
        "-m",
        "openai:gpt-4.1-mini",
        "--distractors",
        str(others),
        "-o",
        str(out),
    ]
    (rc, took, err), seen = _served(tmp, "c10t", [["load_skill", {"name": "helper"}]], triggers)
    ok = verdict("triggers with two distractors named 'helper' (scripted server up)", (rc, took, err),
                 "two skills named 'helper'", unchanged=tmp / "c10", before=before)  # fmt: skip
    results.append(ok and seen["n"] == 0)
    repo = tmp / "c10-repo"
    for name in ("alpha", "beta"):
        _skill(repo / "skills", name)
    (repo / "skills" / "gamma").mkdir(parents=True)  # the third scenario's skill has no SKILL.md
    (repo / ".upskill").mkdir()
    tests = [{"input": "Please greet me", "assert": [{"type": "contains", "value": "hello"}]}]
    (repo / ".upskill" / "evals.json").write_text(
        json.dumps(
            {
                "scenarios": [
                    {"id": n, "skills": [f"skills/{n}"], "tests": tests} for n in ("alpha", "beta", "gamma")
                ]
            }
        )
    )
    (rc, took, err), seen = _served(
        tmp,
        "c10s",
        [],
        [
            "eval",
            "--scenarios",
            str(repo / ".upskill" / "evals.json"),
            "-m",
            "openai:gpt-4.1-mini",
            "-o",
            str(tmp / "c10s-out"),
        ],
    )
    ok = rc == 1 and "scenario 'gamma'" in err and "Traceback" not in err and seen["n"] == 0
    ok = ok and not (tmp / "c10s-out").exists()
    shown = next((ln for ln in err.splitlines() if "gamma" in ln), err.strip()[-150:])
    results.append(
        _line(
            "scenarios whose third skill is broken",
            ok,
            f"exit {rc} in {took:.1f}s, {seen['n']} calls spent: {shown.strip()[:150]}",
        )
    )
    return results


if __name__ == "__main__":
    import tempfile

    os.environ.setdefault("UPSKILL_HUB_CACHE", tempfile.mkdtemp(prefix="hostile3-cache-"))
    verdicts = attacks(Path(tempfile.mkdtemp(prefix="hostile3-catalog-")))
    print(f"{sum(verdicts)}/{len(verdicts)} held")
