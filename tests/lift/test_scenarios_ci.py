"""Issue 36, build item 5: upskill CI parity for ``eval --scenarios``.

huggingface/skills' CI (``scripts/upskill_ci.py``) reports per scenario a hard score from
the ``verifiers`` (assertions passed / graded) and, apart from it, a 0–1 judge score from
the judge criteria; it runs the skill as it was at the base git ref on the same tests and
fails on a token regression. The fixture below is ours, in the exact shape of that
repository's ``.upskill/evals.json`` and ``evals/hf-cli/smoke.json``: one case, three
``contains`` verifiers, three judge criteria. The scripted model meets 1 of the 3
verifiers with the skill and the judge passes all 3 criteria, so by hand: hard 1/3,
judge 3/3 = 1.0, and no answer passes every verifier.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.lift.grading.assertions import JUDGE_SYSTEM_PROMPT
from upskill_hub.testing.llm_server import running_llm_server

FAKE_KEY = "sk-" + "test-0123456789abcdefghijklmnop"

SKILL_MD = """---
name: hf-cli
description: Use the modern hf CLI for Hugging Face Hub downloads and uploads. Use when the user asks for hf commands.
---

# hf CLI

Always answer with the hf download command (MARKER-HF-CLI).
"""

#: The edit under review: the same skill with a longer body (more tokens with the skill).
LONGER = SKILL_MD + "\n" + " ".join(["Remember the modern command names and prefer them always."] * 20) + "\n"

CRITERIA = [
    "Uses the modern hf CLI, not deprecated huggingface-cli commands.",
    "Provides a concrete command that is directly executable.",
    "Stays focused on the user's request.",
]
NEEDLES = ["hf download", "bert-base-uncased", "--local-dir ./models"]
CASE_INPUT = (
    "A user wants the modern Hugging Face CLI command to download the model bert-base-uncased into ./models "
    "and explicitly does not want deprecated CLI names. Give the exact command."
)
SMOKE = {"cases": [{"input": CASE_INPUT, "verifiers": [{"type": "contains", "values": [n]} for n in NEEDLES]}]}
EVALS = {
    "scenarios": [
        {"id": "hf-cli-smoke", "skills": ["skills/hf-cli"], "tests": "evals/hf-cli/smoke.json",
         "judge": {"enabled": True, "criteria": CRITERIA}},
    ]
}  # fmt: skip

ANSWERS = {"with": "Run: HF DOWNLOAD the model.", "base": "Use huggingface-cli to fetch it."}


def script(system: str, messages: list[dict], params: dict) -> str:
    user = messages[-1]["content"]
    if system == JUDGE_SYSTEM_PROMPT:
        answer = user.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        rubric = user.split("<rubric>\n", 1)[1].split("\n</rubric>", 1)[0]
        ok = "hf download" in answer.lower() or rubric.startswith("Stays focused")
        return json.dumps({"pass": ok, "reason": "scripted"})
    return ANSWERS["with" if "MARKER-HF-CLI" in system else "base"]


def hand(cond: str) -> dict:
    """upskill's CI rules by hand: verifiers passed / graded; judge: share of criteria met."""
    answer = ANSWERS[cond].lower()
    hard = [n.lower() in answer for n in NEEDLES]  # upskill compares lower-cased
    met = ["hf download" in answer or c.startswith("Stays focused") for c in CRITERIA]
    return {"hard_score": sum(hard) / len(hard), "judge_score": sum(met) / len(met),
            "case_success_rate": float(all(hard))}  # fmt: skip


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "skills-repo"
    (root / "skills" / "hf-cli").mkdir(parents=True)
    (root / "skills" / "hf-cli" / "SKILL.md").write_text(SKILL_MD)
    (root / "evals" / "hf-cli").mkdir(parents=True)
    (root / "evals" / "hf-cli" / "smoke.json").write_text(json.dumps(SMOKE, indent=2))
    (root / ".upskill").mkdir()
    (root / ".upskill" / "evals.json").write_text(json.dumps(EVALS, indent=2))
    return root


@pytest.fixture
def llm(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with running_llm_server(script) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        yield srv


def common(repo: Path, out: Path) -> list[str]:
    return ["eval", "--scenarios", str(repo / ".upskill" / "evals.json"), "-m", "openai:gpt-4.1-mini",
            "--judge", "openai:judge", "-o", str(out), "--no-plots"]  # fmt: skip


def with_tokens(run_dir: Path) -> float:
    """Mean input + output tokens of the with-skill answers, read from results.jsonl by hand."""
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]
    mine = [r["input_tokens"] + r["output_tokens"] for r in rows if r["condition"] == "with_skill"]
    return sum(mine) / len(mine)


def test_hf_cli_scenario_reports_hard_and_judge_scores_apart(repo, llm, tmp_path, capsys, monkeypatch):
    code, out, err = run_cli([*common(repo, tmp_path / "out"), "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    (record,) = json.loads(out)
    assert record["scenario"] == "hf-cli-smoke"
    scores = {s["condition"]: s for s in record["scores"]}
    for cond, key in (("with_skill", "with"), ("baseline", "base")):
        want = hand(key)
        for name, value in want.items():
            assert scores[cond][name] == pytest.approx(value), (cond, name)
    assert scores["with_skill"]["hard_score"] == pytest.approx(1 / 3)  # verifiers 1/3
    assert scores["with_skill"]["judge_score"] == 1.0  # criteria 3/3
    assert (scores["with_skill"]["verifiers_passed"], scores["with_skill"]["verifiers_total"]) == (1, 3)
    # summary.json holds the same figures, beside the run summary
    (run_dir,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    saved = json.loads((run_dir / "summary.json").read_text())
    assert saved["scenario"] == "hf-cli-smoke" and saved["skill_name"] == "hf-cli"
    assert {s["condition"]: s["judge_score"] for s in saved["scores"]} == {
        "with_skill": 1.0, "baseline": pytest.approx(1 / 3)}  # fmt: skip
    # the people's table: hard and judge in their own columns, no skill -> skill
    code, out, err = run_cli(common(repo, tmp_path / "out2"), capsys, monkeypatch)
    assert code == 0, err
    assert "hard score (verifiers) and judge score (criteria)" in out
    assert "0.000 → 0.333" in out and "0.333 → 1.000" in out
    # agent rows carry both scores as columns
    code, out, err = run_cli([*common(repo, tmp_path / "out3"), "--format", "agent"], capsys, monkeypatch)
    head, row = out.strip().splitlines()
    cells = dict(zip(head.split("\t"), row.split("\t"), strict=True))
    assert float(cells["hard_score"]) == pytest.approx(1 / 3, abs=1e-4) and float(cells["judge_score"]) == 1.0


def test_against_the_base_ref_and_the_token_gate(repo, llm, tmp_path, capsys, monkeypatch):
    """The CI flow: the skill at the base ref runs on the same tests; tokens that grew by more
    than --max-token-increase fail in one line naming the scenario, the model and the growth."""
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "skills" / "hf-cli" / "SKILL.md").write_text(LONGER)  # the pull request's edit
    code, out, err = run_cli([*common(repo, tmp_path / "out"), "--against", "git:HEAD", "--max-token-increase", "1000",
                              "--format", "json"], capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    (record,) = json.loads(out)
    assert record["compared"]["version"] == "git:HEAD" and record["against"] == "git:HEAD"
    (change,) = record["compared"]["changes"]
    new_dir = tmp_path / "out" / record["run_id"]
    old_dir = tmp_path / "out" / record["against_run_id"]
    now, then = with_tokens(new_dir), with_tokens(old_dir)
    assert now > then
    assert change["tokens_now"] == pytest.approx(now) and change["tokens_then"] == pytest.approx(then)
    assert change["token_change_pct"] == pytest.approx((now - then) / then * 100)
    assert change["hard_now"] == change["hard_then"] == pytest.approx(1 / 3)
    assert change["judge_now"] == change["judge_then"] == 1.0
    # a tighter gate fails, in one line (cached answers: the same figures)
    limit = round((now - then) / then * 100) - 1
    code, out, err = run_cli([*common(repo, tmp_path / "out2"), "--against", "git:HEAD",
                              "--max-token-increase", str(limit)], capsys, monkeypatch)  # fmt: skip
    assert code != 0
    line = err.strip().splitlines()[-1]
    assert "token regression: scenario hf-cli-smoke on gpt-4.1-mini" in line
    assert f"+{(now - then) / then * 100:.1f}%" in line and f"--max-token-increase {limit}%" in line
    assert "git:HEAD" in line
    assert "FAIL" in out  # the table's status column


def test_compare_with_an_earlier_scenarios_run(repo, llm, tmp_path, capsys, monkeypatch):
    """--compare FOLDER: each scenario against its latest run in an earlier --output folder."""
    code, _, err = run_cli(common(repo, tmp_path / "before"), capsys, monkeypatch)
    assert code == 0, err
    (before,) = [p for p in (tmp_path / "before").iterdir() if p.is_dir()]
    (repo / "skills" / "hf-cli" / "SKILL.md").write_text(LONGER)
    code, out, err = run_cli([*common(repo, tmp_path / "after"), "--compare", str(tmp_path / "before"),
                              "--format", "json"], capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    (record,) = json.loads(out)
    assert record["comparison"]["reference_run"] == before.name
    (change,) = record["compared"]["changes"]
    now, then = with_tokens(tmp_path / "after" / record["run_id"]), with_tokens(before)
    assert (change["tokens_then"], change["tokens_now"]) == (pytest.approx(then), pytest.approx(now))
    code, out, err = run_cli([*common(repo, tmp_path / "after2"), "--compare", str(tmp_path / "before"),
                              "--max-token-increase", "0"], capsys, monkeypatch)  # fmt: skip
    assert code != 0 and "token regression: scenario hf-cli-smoke" in err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--against", "git:HEAD", "--max-token-increase", "-5"], "max-token-increase must be a percentage of at least 0"),
        (["--against", "git:HEAD", "--max-token-increase", "nan"], "max-token-increase must be a percentage"),
        (["--max-token-increase", "10"], "needs a version to compare with"),
        (["--against", "git:HEAD"], "does not exist at HEAD"),
        (["--compare", "EMPTY"], "no finished run of skill 'hf-cli'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_writes_nothing(repo, llm, tmp_path, capsys, monkeypatch, extra, expected):
    git(repo, "init", "-q")
    (repo / "other.txt").write_text("x")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-qm", "before the skill existed")
    (tmp_path / "empty").mkdir()
    extra = [str(tmp_path / "empty") if x == "EMPTY" else x for x in extra]
    code, out, err = run_cli([*common(repo, tmp_path / "out"), *extra], capsys, monkeypatch)
    assert code != 0 and expected in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists() and llm.calls == 0


def test_single_skill_against_with_the_token_gate(repo, llm, tmp_path, capsys, monkeypatch):
    """The gate is not only for scenarios: ``eval SKILL --against git:REF --max-token-increase``."""
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "skills" / "hf-cli" / "SKILL.md").write_text(LONGER)
    args = ["eval", str(repo / "skills" / "hf-cli"), "--tests", str(repo / "evals" / "hf-cli" / "smoke.json"),
            "-m", "openai:gpt-4.1-mini", "-o", str(tmp_path / "out"), "--no-plots", "--against", "git:HEAD",
            "--max-token-increase", "0"]  # fmt: skip
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code != 0
    assert "token regression: skill hf-cli on gpt-4.1-mini" in err.strip().splitlines()[-1]
