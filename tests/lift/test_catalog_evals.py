"""Must-show: catalog-mode evals and trigger evals through the real SDKs against the scripted server.

The scripted server loads a catalog skill when the user text shares a word with its
description, reads a file the loaded body names, then answers BANANA only when the skill
body reached it (in the system prompt, inject mode, or through load_skill, catalog mode).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.rundir import read_results
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering.triggers import TRIGGERS_FILE, read_trigger_rows, run_triggers, wrong_queries

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
CASES = [
    {"id": f"q{i}", "input": f"Question Q{i}: please greet me", "assert": [{"type": "contains", "value": "BANANA"}]}
    for i in range(8)
]
BODY = "# Greeter\n\nAlways greet with BANANA. House style: references/style.md\n"


def script(system: str, messages: list[dict], params: dict) -> str:
    return "BANANA hello friend" if "BANANA" in system else "hello there friend"


def _write(root: Path, name: str, description: str, cases: list | None = None) -> Path:
    meta = parse_meta({"schema_version": 1, "cases": cases or CASES})
    path = Skill.create(name, description, BODY if name != "csv-cleaner" else "Clean columns.", meta=meta).write(root / name)
    (path / "references").mkdir()
    (path / "references" / "style.md").write_text("Bow slightly.\n")
    return path


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def distractors(tmp_path: Path) -> Path:
    root = tmp_path / "distractors"
    _write(root, "csv-cleaner", "Clean spreadsheet columns.",
           cases=[{"id": "c", "input": "Tidy my spreadsheet columns", "assert": [{"type": "contains", "value": "x"}]}])
    return root


def _spec(provider: str, srv) -> tuple[str, str]:
    if provider == "openai":
        return "openai:gpt-4.1-mini", srv.openai_base_url
    return "anthropic:claude-haiku-4-5", srv.url


def _eval(skill: Path, provider: str, srv, tmp_path: Path, distractors: Path):
    spec, base = _spec(provider, srv)
    opts = EvalOptions(base_url=base, output_dir=tmp_path / "out", plots=False,
                       modes=("inject", "catalog"), distractors=distractors)  # fmt: skip
    return run_eval(skill, [spec], opts)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_catalog_eval_end_to_end(provider: str, tmp_path: Path, distractors: Path) -> None:
    skill = _write(tmp_path / "skills", "greeter", "Greet people warmly in house style.")
    with running_llm_server(script) as srv:
        res = _eval(skill, provider, srv, tmp_path, distractors)
        requests = srv.completion_requests
        # Re-running replays the whole conversations from the cache: no model call.
        again = _eval(skill, provider, srv, tmp_path, distractors)
        assert len(srv.completion_requests) == len(requests)
    rows = read_results(res.run_dir)
    cat = [r for r in rows if r.mode == "catalog"]
    assert len(cat) == 16 and not any(r.error for r in rows)
    for r in cat:
        if r.condition == "with_skill":
            assert r.triggered is True and r.passed is True
            assert json.loads(r.loaded) == ["greeter"]
            assert json.loads(r.files_read) == ["greeter/references/style.md"]
            assert (r.turns, r.tool_calls) == (3, 2)
        else:
            assert r.triggered is False and r.passed is False and r.turns == 1 and json.loads(r.loaded) == []
    # Both conditions saw the distractor in the catalog; only with_skill saw the skill under test.
    systems = [(r.system or "") for r in requests if r.body.get("tools")]
    assert all("<name>csv-cleaner</name>" in s for s in systems)
    assert sum("<name>greeter</name>" in s for s in systems) == 8 * 3
    lifts = {x.mode: x for x in res.summary.lifts}
    assert lifts["inject"].lift == pytest.approx(1.0) and lifts["catalog"].lift == pytest.approx(1.0)
    (trig,) = res.summary.triggers
    assert (trig.n_should, trig.triggered_should, trig.recall) == (8, 8, 1.0)
    assert [r.passed for r in again.rows] == [r.passed for r in res.rows]


def test_description_that_never_matches_has_no_catalog_lift(tmp_path: Path, distractors: Path) -> None:
    skill = _write(tmp_path / "skills", "greeter", "Formats tax invoices.")
    with running_llm_server(script) as srv:
        res = _eval(skill, "openai", srv, tmp_path, distractors)
    lifts = {x.mode: x for x in res.summary.lifts}
    assert lifts["inject"].lift == pytest.approx(1.0)
    assert lifts["catalog"].lift == pytest.approx(0.0)
    (trig,) = res.summary.triggers
    assert (trig.recall, trig.recall_ci_low) == (0.0, 0.0)
    assert trig.recall_ci_high == pytest.approx(0.324408, abs=1e-6)  # Wilson 95%, 0 of 8


def test_trigger_eval_matches_hand_computed_wilson(tmp_path: Path, distractors: Path) -> None:
    skill = _write(tmp_path / "skills", "greeter", "Greet people warmly in house style.")
    should = [f"Please greet visitor {i}" for i in range(7)] + [f"Say something nice {i}" for i in range(3)]
    should_not = [f"Sort these numbers {i}" for i in range(8)] + ["greet the reviewer", "greet the auditor"]
    file = tmp_path / "trigger-set.json"
    file.write_text(json.dumps([{"query": q, "should_trigger": True} for q in should]
                               + [{"query": q, "should_trigger": False} for q in should_not]))  # fmt: skip
    with running_llm_server(script) as srv:
        res = run_triggers(skill, ["openai:gpt-4.1-mini"], base_url=srv.openai_base_url,
                           triggers_file=file, distractors=distractors, output_dir=tmp_path / "out")  # fmt: skip
        (s,) = res.stats
        assert (s.n_should, s.triggered_should, s.n_should_not, s.triggered_should_not) == (10, 7, 10, 2)
        # Hand-computed 95% Wilson intervals: 7/10 -> [0.396778, 0.892209], 2/10 -> [0.056682, 0.509838].
        assert (s.recall_ci_low, s.recall_ci_high) == pytest.approx((0.396778, 0.892209), abs=1e-6)
        assert (s.fpr_ci_low, s.fpr_ci_high) == pytest.approx((0.056682, 0.509838), abs=1e-6)
        assert s.precision == pytest.approx(7 / 9) and s.f1 == pytest.approx(2 * (7 / 9) * 0.7 / (7 / 9 + 0.7))
        wrong = {r.query for r in wrong_queries(res.rows)}
        assert wrong == {"Say something nice 0", "Say something nice 1", "Say something nice 2",
                         "greet the reviewer", "greet the auditor"}  # fmt: skip
        assert len(read_trigger_rows(res.run_dir)) == 20
        # Resume: a run folder that lost rows only calls for the missing ones.
        lines = (res.run_dir / TRIGGERS_FILE).read_text().splitlines()
        (res.run_dir / TRIGGERS_FILE).write_text("\n".join(lines[:15]) + "\n{torn")
        before = len(srv.completion_requests)
        again = run_triggers(skill, ["openai:gpt-4.1-mini"], base_url=srv.openai_base_url, use_cache=False,
                             triggers_file=file, distractors=distractors, output_dir=tmp_path / "out", resume=True)  # fmt: skip
        assert len(srv.completion_requests) - before == 5
    assert again.run_dir == res.run_dir and again.stats == res.stats


def test_trigger_queries_default_to_cases_and_distractor_cases(tmp_path: Path, distractors: Path) -> None:
    skill = _write(tmp_path / "skills", "greeter", "Greet people warmly in house style.")
    with running_llm_server(script) as srv:
        res = run_triggers(skill, ["openai:gpt-4.1-mini"], base_url=srv.openai_base_url,
                           distractors=distractors, output_dir=tmp_path / "out")  # fmt: skip
    (s,) = res.stats
    assert (s.n_should, s.recall, s.n_should_not, s.false_trigger_rate) == (8, 1.0, 1, 0.0)


def test_cli_eval_catalog_and_triggers_report(tmp_path: Path, distractors: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    skill = _write(tmp_path / "skills", "greeter", "Greet people warmly in house style.")
    monkeypatch.setenv("COLUMNS", "200")
    with running_llm_server(script) as srv:
        code, out, err = run_cli(
            ["eval", str(skill), "-m", "openai:gpt-4.1-mini", "--base-url", srv.openai_base_url, "--mode", "inject",
             "--mode", "catalog", "--distractors", str(distractors), "-o", str(tmp_path / "out"), "--no-plots"],
            capsys, monkeypatch,
        )  # fmt: skip
        assert code == 0, err
        assert "catalog" in out and "inject" in out and "skill loading" in out and "100% (8/8)" in out
        summary = json.loads(next((tmp_path / "out").glob("*/summary.json")).read_text())
        assert {x["mode"] for x in summary["lifts"]} == {"inject", "catalog"}
        assert summary["triggers"][0]["recall"] == 1.0
        code, out, err = run_cli(
            ["triggers", str(skill), "-m", "openai:gpt-4.1-mini", "--base-url", srv.openai_base_url,
             "--distractors", str(distractors), "-o", str(tmp_path / "trig")],
            capsys, monkeypatch,
        )  # fmt: skip
        assert code == 0, err
        assert "does the description trigger" in out and "100% (8/8)" in out and "0% (0/1)" in out
        code, out, err = run_cli(
            ["eval", str(skill), "-m", "openai:gpt-4.1-mini", "--base-url", srv.openai_base_url, "--mode", "nope"],
            capsys, monkeypatch,
        )  # fmt: skip
        assert code != 0 and "unknown --mode 'nope'" in err and "Traceback" not in err


def test_bad_catalog_input_is_one_line_and_calls_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    skill = _write(tmp_path / "skills", "greeter", "Greet people warmly in house style.")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"query": "hi"}]')
    with running_llm_server(script) as srv:
        common = ["-m", "openai:gpt-4.1-mini", "--base-url", srv.openai_base_url, "-o", str(tmp_path / "out")]
        cases = [
            (["eval", str(skill), *common, "--mode", "catalog", "--distractors", str(tmp_path / "nope")], "does not exist"),
            (["eval", str(skill), *common, "--mode", "catalog", "--max-turns", "0"], "--max-turns must be at least 1"),
            (["triggers", str(skill), *common, "--triggers", str(bad)], "should_trigger"),
            (["triggers", str(skill), *common, "--triggers", str(tmp_path / "missing.json")], "missing.json"),
        ]
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.completion_requests == []
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
