"""``eval --compare`` and ``--fail-on-regression``: the paired test and the CI exit codes."""

from __future__ import annotations

import json

import pytest
from _evalkit import make_skill
from cli_runner import run_cli as run_main

from upskill_hub.errors import OptionError
from upskill_hub.lift.compare import compare_runs, z_for_level
from upskill_hub.rundir.schema import ResultRow
from upskill_hub.testing.llm_server import running_llm_server

#: 12 cases: 6 pass only when the answer says BANANA, 6 always pass.
CASES = [{"id": f"b{i}", "input": f"Greet {i}.", "assert": [{"type": "contains", "value": "BANANA"}]} for i in range(6)] + [
    {"id": f"p{i}", "input": f"Talk {i}.", "assert": [{"type": "not-contains", "value": "ERROR"}]} for i in range(6)
]


def helpful(system, messages, params):
    return "BANANA hello" if "BANANA" in system else "hello"


def useless(system, messages, params):
    return "hello"


def rows(run: str, outcomes: list[tuple[bool, bool]], repeats: int = 1) -> list[ResultRow]:
    out = []
    for i, (base, skill) in enumerate(outcomes):
        for cond, passed in (("baseline", base), ("with_skill", skill)):
            for k in range(repeats):
                out.append(ResultRow(run, "t", "v", "greeting", "ver", "m", "p", "{}", cond, f"c{i}", k, passed, 1, 1, "[]", ""))
    return out


def test_lift_drop_is_a_regression_and_noise_is_not():
    then = rows("a", [(False, True)] * 6 + [(True, True)] * 6)
    (drop,) = compare_runs(then, rows("b", [(False, False)] * 6 + [(True, True)] * 6))
    assert (drop.lift_then, drop.lift_now, drop.change, drop.n_cases) == (0.5, 0.0, -0.5, 12)
    assert drop.regression and drop.change_ci_high < 0 and drop.p_value < 0.05
    (same,) = compare_runs(then, then)
    assert same.change == 0 and not same.regression and same.p_value == 1.0
    # One case of 12 flipping is noise, not a regression.
    (one,) = compare_runs(then, rows("b", [(False, False)] + [(False, True)] * 5 + [(True, True)] * 6))
    assert one.change < 0 and not one.regression
    # A stricter level needs more evidence: the 6-case drop is not enough at 99.9%.
    (strict,) = compare_runs(then, rows("b", [(False, False)] * 6 + [(True, True)] * 6), level=0.999)
    assert not strict.regression
    # Repeats: the same drop over 3 runs per case is stronger evidence, never weaker.
    (rep,) = compare_runs(
        rows("a", [(False, True)] * 6 + [(True, True)] * 6, 3), rows("b", [(False, False)] * 6 + [(True, True)] * 6, 3)
    )
    assert rep.regression and rep.p_value <= drop.p_value
    assert abs(z_for_level(0.95) - 1.959964) < 1e-5
    with pytest.raises(OptionError) as exc:
        compare_runs(then, then, level=1.5)
    assert (exc.value.name, exc.value.value) == ("level", 1.5)


def test_only_shared_models_and_cases_are_compared():
    then = rows("a", [(False, True)] * 4)
    now = [r for r in rows("b", [(False, True)] * 6) if r.case_id != "c0"]
    (c,) = compare_runs(then, now)
    assert c.n_cases == 3  # c1..c3: c0 is missing now, c4/c5 were not there then
    other = [ResultRow(**{**r.to_dict(), "model": "other"}) for r in now]
    assert compare_runs(then, other) == []


def test_fail_on_regression_against_the_published_run(hub_server, hub_repo_id, tmp_path, capsys, monkeypatch):
    skill = make_skill(tmp_path / "skills", cases=CASES)
    base = ["eval", str(skill), "--no-cache", "--no-plots", "-o", str(tmp_path / "runs")]
    with running_llm_server(helpful) as srv:
        code, out, err = run_main([*base, "-m", f"openai-compatible:m@{srv.openai_base_url}", "--format", "quiet"], capsys, monkeypatch)
        assert code == 0, err
        published = tmp_path / "runs" / out.strip()
        code, out, err = run_main(["push", str(skill), "--repo", hub_repo_id, "--results", str(published), "--format", "quiet"], capsys, monkeypatch)
        assert code == 0, err
    with running_llm_server(useless) as srv:
        model = ["-m", f"openai-compatible:m@{srv.openai_base_url}"]
        code, out, err = run_main([*base, *model, "--compare", hub_repo_id, "--fail-on-regression", "--format", "quiet"], capsys, monkeypatch)
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1, err
        assert lines[0].startswith("Error: regression: skill greeting on m: lift +0.50 -> +0.00")
        assert published.name in lines[0] and "Traceback" not in err
        # The same reference given as a run folder, and its agent table.
        code, out, err = run_main([*base, *model, "--compare", str(published), "--format", "agent"], capsys, monkeypatch)
        assert code == 0, err  # no --fail-on-regression: the table only
        header, row = out.strip().splitlines()
        cells = dict(zip(header.split("\t"), row.split("\t"), strict=True))
        assert (cells["lift_then"], cells["lift_now"], cells["change"], cells["regression"]) == ("0.5", "0", "-0.5", "true")
        code, out, err = run_main([*base, *model, "--compare", str(published), "--format", "human"], capsys, monkeypatch)
        assert code == 0 and f"Lift compared with {published.name}" in out and "regression" in out, err
        assert "+50 [" in out and "-50 [" in out
    with running_llm_server(helpful) as srv:
        model = ["-m", f"openai-compatible:m@{srv.openai_base_url}"]
        code, out, err = run_main([*base, *model, "--compare", hub_repo_id, "--fail-on-regression", "--json"], capsys, monkeypatch)
        assert code == 0, err
        comp = json.loads(out)["comparison"]
        assert comp["reference_run"] == published.name
        assert [(m["lift_then"], m["lift_now"], m["regression"]) for m in comp["models"]] == [(0.5, 0.5, False)]


def test_compare_mistakes_are_one_line_before_any_call(tmp_path, capsys, monkeypatch):
    skill = make_skill(tmp_path / "skills", cases=CASES)
    with running_llm_server(helpful) as srv:
        base = ["eval", str(skill), "-o", str(tmp_path / "runs"), "-m", f"openai-compatible:m@{srv.openai_base_url}"]
        for extra, expected in (
            (["--fail-on-regression"], "needs --compare"),
            (["--compare", "no/such/dir"], "no such run folder"),
            (["--compare", "x/y", "--level", "2"], "--level"),
        ):
            code, out, err = run_main([*base, *extra], capsys, monkeypatch)
            assert code == 1 and out == "" and err.startswith("Error:") and expected in err, (extra, err)
            assert len(err.strip().splitlines()) == 1
        assert srv.calls == 0


def test_a_garbage_parquet_in_data_runs_is_skipped_or_one_line(hub_server, hub_repo_id, tmp_path, capsys, monkeypatch):
    """Issue 29 class 5: garbage bytes named data/runs/*.parquet crashed --compare with ArrowInvalid."""
    from huggingface_hub import CommitOperationAdd, HfApi

    skill = make_skill(tmp_path / "skills", cases=CASES[:2])
    base = ["eval", str(skill), "--no-cache", "--no-plots", "-o", str(tmp_path / "runs")]
    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    garbage = [CommitOperationAdd("data/runs/zz-garbage.parquet", b"PAR1 this is not parquet PAR1")]
    api.create_commit(hub_repo_id, garbage, commit_message="garbage", repo_type="dataset")
    with running_llm_server(helpful) as srv:
        model = ["-m", f"openai-compatible:m@{srv.openai_base_url}"]
        code, out, err = run_main([*base, *model, "--compare", hub_repo_id, "--format", "quiet"], capsys, monkeypatch)
        lines = [ln for ln in err.strip().splitlines() if ln.startswith("Error:")]
        assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
        assert "no published run of skill 'greeting'" in lines[0]
        assert "data/runs/zz-garbage.parquet is not a readable parquet table" in lines[0]
        # A good run published beside the garbage is still found.
        code, out, err = run_main([*base, *model, "--format", "quiet"], capsys, monkeypatch)
        published = tmp_path / "runs" / out.strip()
        code, out, err = run_main(["push", str(skill), "--repo", hub_repo_id, "--results", str(published), "--format", "quiet"], capsys, monkeypatch)
        assert code == 0, err
        code, out, err = run_main([*base, *model, "--compare", hub_repo_id, "--json"], capsys, monkeypatch)
        assert code == 0, err
        assert json.loads(out)["comparison"]["reference_run"] == published.name
