"""Issue 47, build item 3: ``eval --scenarios --against git:BASE --gate upskill`` decides as upskill's CI.

upskill's CI (huggingface/skills ``scripts/upskill_ci.py`` at f5944d4, ``_compare_variants``
and ``_run_suite``; scenario selection from ``upskill.ci.select_scenarios``) fails a
scenario when the hard score dropped by more than 0 (``current + 0.0 < base``); when the
hard score did not rise, also when the judge score dropped by more than 0.1 or the mean
tokens grew by more than 20%. A skill with no files at the base ref is NEW and passes, and
only the scenarios whose skill changed run. With one case per smoke test the paired new − old
interval can never fire, so the old gate let a hard-score drop through.

The scripted model answers by the marker in the skill it was given: the base version makes
it meet all three verifiers (hard 3/3 = 1.000), the edit two of them (2/3 = 0.667).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.errors import UpskillError
from upskill_hub.lift.scenario_ci import ScoreChange
from upskill_hub.testing.llm_server import running_llm_server

FAKE_KEY = "sk-" + "test-0123456789abcdefghijklmnop"
NEEDLES = ["hf download", "bert-base-uncased", "--local-dir ./models"]
ANSWERS = {
    "MARKER-FULL": "hf download bert-base-uncased --local-dir ./models",  # 3/3 verifiers
    "MARKER-PART": "hf download bert-base-uncased",  # 2/3
    "MARKER-NEW": "hf download bert-base-uncased --local-dir ./models",
}
CASE = {"input": "Download bert-base-uncased into ./models with the hf CLI.",
        "verifiers": [{"type": "contains", "values": [n]} for n in NEEDLES]}  # fmt: skip


def skill_md(name: str, marker: str) -> str:
    return f"---\nname: {name}\ndescription: Use the hf CLI for downloads ({name}).\n---\n\n# {name}\n\n{marker}\n"


def script(system: str, messages: list[dict], params: dict) -> str:
    for marker, answer in ANSWERS.items():
        if marker in system:
            return answer
    return "no idea"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)  # fmt: skip


def add_skill(root: Path, name: str, marker: str) -> None:
    (root / "skills" / name).mkdir(parents=True, exist_ok=True)
    (root / "skills" / name / "SKILL.md").write_text(skill_md(name, marker))
    (root / "evals" / name).mkdir(parents=True, exist_ok=True)
    (root / "evals" / name / "smoke.json").write_text(json.dumps({"cases": [CASE]}))


def write_scenarios(root: Path, names: list[str]) -> Path:
    (root / ".upskill").mkdir(exist_ok=True)
    path = root / ".upskill" / "evals.json"
    path.write_text(json.dumps({"scenarios": [
        {"id": f"{n}-smoke", "skills": [f"skills/{n}"], "tests": f"evals/{n}/smoke.json"} for n in names]}))  # fmt: skip
    return path


@pytest.fixture
def llm(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with running_llm_server(script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        yield srv


def cli(path: Path, out: Path, *extra: str) -> list[str]:
    return [
        "eval",
        "--scenarios",
        str(path),
        "-m",
        "openai:gpt-4.1-mini",
        "-o",
        str(out),
        "--no-plots",
        *extra,
    ]


def test_a_hard_score_drop_fails_the_upskill_gate(tmp_path, llm, capsys, monkeypatch):
    root = tmp_path / "repo"
    add_skill(root, "hf-cli", "MARKER-FULL")
    path = write_scenarios(root, ["hf-cli"])
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (root / "skills" / "hf-cli" / "SKILL.md").write_text(skill_md("hf-cli", "MARKER-PART"))  # the PR's edit
    # The paired interval alone cannot see it: one case, new − old has no significance.
    code, _, err = run_cli(cli(path, tmp_path / "paired", "--against", "git:HEAD", "--fail-on-regression"),
                           capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    code, out, err = run_cli(cli(path, tmp_path / "out", "--against", "git:HEAD", "--gate", "upskill",
                                 "--format", "json"), capsys, monkeypatch)  # fmt: skip
    assert code == 1
    line = err.strip().splitlines()[-1]
    assert (
        "upskill CI gate: scenario hf-cli-smoke on gpt-4.1-mini: hard score dropped from 1.000 to 0.667"
        in line
    )
    assert "vs git:HEAD" in line and "Traceback" not in err
    (record,) = json.loads(out)
    assert record["ci"]["status"] == "FAIL"
    (change,) = record["compared"]["changes"]
    assert (change["hard_then"], change["hard_now"]) == (1.0, pytest.approx(2 / 3))
    assert record["versus"], "the paired new − old interval stays beside the verdict"
    # upskill's CI runs no no-skill answers
    assert {s["condition"] for s in record["scores"]} == {"with_skill"}
    # a drop within --max-hard-drop passes, status PASS
    code, out, err = run_cli(cli(path, tmp_path / "out2", "--against", "git:HEAD", "--gate", "upskill",
                                 "--max-hard-drop", "0.5", "--format", "agent"), capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    head, row = out.rstrip("\n").splitlines()
    cells = dict(zip(head.split("\t"), row.split("\t"), strict=True))
    assert cells["status"] == "PASS" and cells["scenario"] == "hf-cli-smoke"


def test_a_new_skill_is_new_and_passes_and_unchanged_skills_are_not_run(tmp_path, llm, capsys, monkeypatch):
    root = tmp_path / "repo"
    add_skill(root, "hf-cli", "MARKER-FULL")
    write_scenarios(root, ["hf-cli"])
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    add_skill(root, "brand-new", "MARKER-NEW")  # the pull request adds a skill
    path = write_scenarios(root, ["hf-cli", "brand-new"])
    git(root, "add", "-A")
    git(root, "commit", "-qm", "add brand-new")
    code, out, err = run_cli(cli(path, tmp_path / "out", "--against", "git:HEAD~1", "--gate", "upskill",
                                 "--format", "json"), capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    (record,) = json.loads(out)  # hf-cli did not change: its scenario is not run
    assert record["scenario"] == "brand-new-smoke" and record["ci"] == {"gate": "upskill", "status": "NEW",
                                                                        "reasons": []}  # fmt: skip
    assert record["compared"] is None
    assert "not run: 1 scenario(s) whose skills are unchanged since git:HEAD~1: hf-cli-smoke" in err
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "out").glob("*/summary.json")]
    assert [s["skill_name"] for s in summaries] == ["brand-new"]
    assert llm.calls == 1  # one case, with the new skill; no base version, no no-skill answer
    # --all-scenarios runs them all: the unchanged one passes against its base version
    code, out, err = run_cli(cli(path, tmp_path / "all", "--against", "git:HEAD~1", "--gate", "upskill",
                                 "--all-scenarios", "--format", "json"), capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    assert {r["scenario"]: r["ci"]["status"] for r in json.loads(out)} == {
        "hf-cli-smoke": "PASS", "brand-new-smoke": "NEW"}  # fmt: skip
    # nothing changed at all: nothing runs, exit 0
    calls = llm.calls
    code, out, err = run_cli(cli(path, tmp_path / "none", "--against", "git:HEAD", "--gate", "upskill",
                                 "--format", "json"), capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == [] and llm.calls == calls
    assert "no scenario's skill changed since git:HEAD: nothing to run" in err


def change(hard: tuple[float, float], judge: tuple[float | None, float | None], tokens: tuple[float, float]):
    """One model's with-skill figures: (base, now) pairs."""
    return ScoreChange("m", "inject", hard[0], hard[1], judge[0], judge[1], tokens[0], tokens[1])


@pytest.mark.parametrize(
    ("c", "expected"),
    [
        (change((1.0, 2 / 3), (None, None), (100, 100)), ["hard score dropped from 1.000 to 0.667"]),
        (change((0.5, 0.5), (1.0, 0.8), (100, 100)), ["judge score dropped from 1.000 to 0.800"]),
        (change((0.5, 0.5), (1.0, 0.95), (100, 100)), []),  # within the 0.1 allowed
        (change((0.5, 1.0), (1.0, 0.0), (100, 500)), []),  # the hard score rose: judge and tokens excused
        (change((0.5, 0.5), (None, None), (100, 130)),
         ["average tokens increased from 100.0 to 130.0 (+30.0%, over +20%)"]),
        (change((0.5, 0.5), (None, None), (100, 119)), []),
        (change((0.5, 0.5), (None, None), (0, 500)), []),  # no base tokens: no token rule
    ],
)  # fmt: skip
def test_upskill_gate_rules_by_hand(c, expected):
    from upskill_hub.lift.scenario_ci import UpskillGate

    assert UpskillGate().reasons(c) == expected


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"gate": "paired"}, "--gate must be 'upskill'"),
        ({"gate": "upskill", "scenarios": False}, "add --scenarios FILE"),
        ({"gate": "upskill", "against": None}, "add --against git:BASE"),
        ({"gate": "upskill", "against": "old-folder"}, "add --against git:BASE"),
        ({"gate": None, "all_scenarios": True}, "--all-scenarios goes with --gate upskill"),
        ({"gate": None, "max_hard_drop": 0.1}, "--max-hard-drop goes with --gate upskill"),
        ({"gate": "upskill", "max_judge_drop": 2.0}, "--max-judge-drop must be a score drop between 0 and 1"),
    ],
)  # fmt: skip
def test_gate_options_are_checked_in_one_line(tmp_path, capsys, monkeypatch, kw, expected):
    args = {"gate": None, "scenarios": True, "against": "git:HEAD", "compare": None, "all_scenarios": False,
            "max_hard_drop": None, "max_judge_drop": None, "max_token_increase": None, **kw}  # fmt: skip
    path = write_scenarios(tmp_path, ["x"])
    argv = cli(path, tmp_path / "out")
    if args["gate"]:
        argv += ["--gate", args["gate"]]
    if args["against"]:
        argv += ["--against", args["against"]]
    for flag in ("max_hard_drop", "max_judge_drop"):
        if args[flag] is not None:
            argv += [f"--{flag.replace('_', '-')}", str(args[flag])]
    if args["all_scenarios"]:
        argv.append("--all-scenarios")
    if not args["scenarios"]:
        argv = ["eval", str(tmp_path), *argv[3:]]  # a folder without a scenarios file
        (tmp_path / ".upskill" / "evals.json").unlink()
    code, _, err = run_cli(argv, capsys, monkeypatch)
    assert code != 0 and expected in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    from upskill_hub.lift.scenario_ci import check_gate_options

    with pytest.raises(UpskillError):
        check_gate_options(**args)


def test_github_null_base_sha_is_the_parent_commit():
    """upskill's CI reads the all-zero base GitHub sends for a new branch as HEAD~1."""
    from upskill_hub.lift.scenario_ci import check_gate_options

    _, against = check_gate_options("upskill", scenarios=True, against="git:" + "0" * 40, compare=None,
                                    all_scenarios=False, max_hard_drop=None, max_judge_drop=None,
                                    max_token_increase=None)  # fmt: skip
    assert against == "git:HEAD~1"
