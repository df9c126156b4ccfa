"""Issue 47 items 1 and 2: ``benchmark.json`` as skill-creator computes it, and ``runs export
--skill-creator`` writing a workspace its eval viewer opens as it is.

Anchor: anthropics/skills@9d2f1ae187231d8199c64b5b762e1bdf2244733d, skills/skill-creator:
``scripts/aggregate_benchmark.py`` (the formulas written out in :func:`aggregate` below),
``eval-viewer/generate_review.py`` and ``references/schemas.md`` (the files listed in
:data:`VIEWER_FILES`). skill-creator is no package on a registry, so its code is not run here:
what it reads and computes is written out, and the export is checked against that.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import assert_one_line_errors, run_cli

# Three cases x 3 runs; the assertions pass in part, so skill-creator's pass rate (share of
# expectations per answer) and upskill-hub's cases fully passed differ:
#   with the skill the model answers "hello BANANA": greet 2/3, fruit 2/3, banana 1/1
#   without it "hello there":                       greet 2/3, fruit 1/3, banana 0/1
CASES = [
    {"id": "greet", "input": "Greet me.", "assert": [
        {"type": "contains", "value": "hello"}, {"type": "contains", "value": "BANANA"}, {"type": "contains", "value": "there"}]},
    {"id": "fruit", "input": "Name fruit.", "assert": [
        {"type": "contains", "value": "BANANA"}, {"type": "contains", "value": "APPLE"}, {"type": "contains", "value": "hello"}]},
    {"id": "banana", "input": "Say banana.", "assert": [{"type": "contains", "value": "BANANA"}]},
]  # fmt: skip


def script(system: str, messages: list, params: dict) -> str:
    return "hello BANANA" if "BANANA" in system else "hello there"


def scripted_run(tmp_path: Path, monkeypatch, models: tuple[str, ...] = ("openai:gpt-4.1-mini",)) -> Path:
    """A real eval run (3 runs per case) against a scripted OpenAI-compatible server; its folder."""
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skill = make_skill(tmp_path / "skills", cases=CASES)
    with running_llm_server(script) as srv:
        res = run_eval(
            skill,
            list(models),
            EvalOptions(base_url=srv.openai_base_url, output_dir=tmp_path / "out", plots=False, runs=3),
        )
    return res.run_dir


def export(run_dir: Path, dest: Path, capsys, monkeypatch) -> None:
    code, _out, err = run_cli(
        ["runs", "export", str(run_dir), "--skill-creator", str(dest)], capsys, monkeypatch
    )
    assert code == 0, err


# --------------------------------------------------------------------------- skill-creator, written out
def stats(values: list[float]) -> dict[str, float]:
    """aggregate_benchmark.py's calculate_stats: mean, sample stddev (n - 1), min, max, rounded to 4."""
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1)) if n > 1 else 0.0
    return {
        "mean": round(mean, 4),
        "stddev": round(sd, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def aggregate(workspace: Path) -> dict:
    """aggregate_benchmark.py's run_summary recomputed from the workspace's files.

    Every ``eval-*/<configuration>/run-*`` entry counts once. Its pass rate is the share of its
    expectations passed (counted here from ``grading.json``'s ``expectations[]``, and equal to
    ``summary.pass_rate``); time and tokens come from ``timing.json`` (grading.json holds no
    timing). Configurations in the order first seen over sorted eval folders and sorted
    configuration folders; delta = first configuration's rounded mean minus the second's.
    """
    values: dict[str, dict[str, list[float]]] = {}
    for eval_dir in sorted(workspace.glob("eval-*")):
        for config_dir in sorted(p for p in eval_dir.iterdir() if p.is_dir() and list(p.glob("run-*"))):
            per = values.setdefault(config_dir.name, {"pass_rate": [], "time_seconds": [], "tokens": []})
            for run_dir in sorted(config_dir.glob("run-*")):
                grading = json.loads((run_dir / "grading.json").read_text())
                timing = json.loads((run_dir / "timing.json").read_text())
                exps = grading["expectations"]
                share = sum(1 for e in exps if e["passed"]) / len(exps)
                assert grading["summary"]["pass_rate"] == round(share, 4)
                assert (
                    "timing" not in grading
                )  # else aggregate_benchmark.py would not read timing.json's tokens
                per["pass_rate"].append(grading["summary"]["pass_rate"])
                per["time_seconds"].append(timing["total_duration_seconds"])
                per["tokens"].append(timing["total_tokens"])
    summary: dict = {c: {k: stats(v) for k, v in figs.items()} for c, figs in values.items()}
    configs = list(summary)
    a, b = summary[configs[0]], summary[configs[1]] if len(configs) > 1 else {}
    summary["delta"] = {
        "pass_rate": f"{a['pass_rate']['mean'] - (b['pass_rate']['mean'] if b else 0):+.2f}",
        "time_seconds": f"{a['time_seconds']['mean'] - (b['time_seconds']['mean'] if b else 0):+.1f}",
        "tokens": f"{a['tokens']['mean'] - (b['tokens']['mean'] if b else 0):+.0f}",
    }
    return summary


#: What skill-creator's viewer (generate_review.py) and aggregate_benchmark.py read, per
#: references/schemas.md: path inside an answer folder -> the keys read there.
VIEWER_FILES = {
    "outputs": None,  # find_runs: a folder with outputs/ is a run; its files are shown
    "eval_metadata.json": ("prompt", "eval_id"),  # build_run: in the run folder or its parent
    "grading.json": ("expectations", "summary"),  # expectations[]: text, passed, evidence
    "timing.json": ("total_tokens", "duration_ms", "total_duration_seconds"),
}
GRADING_SUMMARY = ("passed", "failed", "total", "pass_rate")
EXPECTATION = ("text", "passed", "evidence")
BENCHMARK_KEYS = ("metadata", "runs", "run_summary", "notes")
RUN_ENTRY = ("eval_id", "eval_name", "configuration", "run_number", "result", "expectations", "notes")
RESULT = ("pass_rate", "passed", "failed", "total", "time_seconds", "tokens", "tool_calls", "errors")
VIEWER_SKIPS = {"transcript.md", "user_notes.md", "metrics.json"}  # never listed as outputs


def answer_folders(workspace: Path) -> list[Path]:
    """The viewer's find_runs: every folder under the workspace that holds ``outputs/``."""
    return sorted(p.parent for p in workspace.rglob("outputs") if p.is_dir())


# --------------------------------------------------------------------------- tests
def test_benchmark_json_equals_skill_creators_formula_on_the_exported_layout(
    tmp_path: Path, capsys, monkeypatch
):
    run_dir = scripted_run(tmp_path, monkeypatch)
    export(run_dir, tmp_path / "ws", capsys, monkeypatch)
    recomputed = aggregate(tmp_path / "ws")
    own = json.loads((run_dir / "benchmark.json").read_text())
    exported = json.loads((tmp_path / "ws" / "benchmark.json").read_text())
    assert own["run_summary"] == recomputed == exported["run_summary"]
    assert list(recomputed) == ["with_skill", "without_skill", "delta"]
    # 9 entries each: with skill 2/3, 2/3, 1 per run; without 2/3, 1/3, 0
    assert recomputed["with_skill"]["pass_rate"]["mean"] == round(7 / 9, 4)
    assert recomputed["without_skill"]["pass_rate"]["mean"] == round(1 / 3, 4)
    assert recomputed["delta"]["pass_rate"] == "+0.44"
    # upskill-hub's own figure differs, and stays in summary.json: cases fully passed per repeat
    summary = json.loads((run_dir / "summary.json").read_text())
    case_level = {b["condition"]: b["pass_rate_mean"] for b in summary["benchmark"]}
    assert case_level == {"with_skill": pytest.approx(1 / 3), "baseline": 0.0}
    assert (
        "| Cases fully passed | 33% ± 0% (33–33%) | 0% ± 0% (0–0%) |"
        in (run_dir / "benchmark.md").read_text()
    )
    # runs[]: with_skill entries first, one per answer
    assert [e["configuration"] for e in exported["runs"]] == ["with_skill"] * 9 + ["without_skill"] * 9


def test_the_export_has_every_file_the_viewer_reads(tmp_path: Path, capsys, monkeypatch):
    run_dir = scripted_run(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    export(run_dir, ws, capsys, monkeypatch)
    folders = answer_folders(ws)
    rel = sorted(str(p.relative_to(ws)) for p in folders)
    assert rel == sorted(
        f"eval-{i}/{c}/run-{k}" for i in (1, 2, 3) for c in ("with_skill", "without_skill") for k in (1, 2, 3)
    )
    for folder in folders:
        for name, keys in VIEWER_FILES.items():
            path = folder / name
            if keys is None:
                shown = [f for f in path.iterdir() if f.is_file() and f.name not in VIEWER_SKIPS]
                assert shown and shown[0].read_text() in ("hello BANANA", "hello there")
                continue
            data = json.loads(path.read_text())
            assert all(k in data for k in keys), (path, data)
        grading = json.loads((folder / "grading.json").read_text())
        assert all(k in grading["summary"] for k in GRADING_SUMMARY)
        assert grading["expectations"] and all(set(EXPECTATION) <= set(e) for e in grading["expectations"])
        meta = json.loads((folder / "eval_metadata.json").read_text())
        assert meta["eval_id"] == int(folder.parts[-3].split("-")[1])
        assert meta["prompt"]
    for i in (1, 2, 3):  # aggregate_benchmark.py reads eval_id from the eval folder's metadata
        assert json.loads((ws / f"eval-{i}" / "eval_metadata.json").read_text())["eval_id"] == i
    bench = json.loads((ws / "benchmark.json").read_text())
    assert all(k in bench for k in BENCHMARK_KEYS)
    for entry in bench["runs"]:
        assert all(k in entry for k in RUN_ENTRY) and all(k in entry["result"] for k in RESULT)


def test_two_exports_pair_up_for_previous_workspace(tmp_path: Path, capsys, monkeypatch):
    """--previous-workspace pairs answers by their folder path under the workspace (the run id)."""
    run_dir = scripted_run(tmp_path, monkeypatch)
    export(run_dir, tmp_path / "a", capsys, monkeypatch)
    export(run_dir, tmp_path / "b", capsys, monkeypatch)
    ids = [
        sorted(str(p.relative_to(ws)) for p in answer_folders(ws)) for ws in (tmp_path / "a", tmp_path / "b")
    ]
    assert ids[0] == ids[1] and len(ids[0]) == 18
    # an earlier export is replaced as a whole: a stale answer folder does not survive
    stale = tmp_path / "a" / "eval-9" / "with_skill" / "run-1" / "outputs"
    stale.mkdir(parents=True)
    export(run_dir, tmp_path / "a", capsys, monkeypatch)
    assert not (tmp_path / "a" / "eval-9").exists() and len(answer_folders(tmp_path / "a")) == 18


def test_a_foreign_folder_is_refused_in_one_line_and_left_alone(tmp_path: Path, capsys, monkeypatch):
    run_dir = scripted_run(tmp_path, monkeypatch)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert_one_line_errors(
        [
            (
                ["runs", "export", str(run_dir), "--skill-creator", str(mine)],
                "not empty and not an earlier `runs export`",
            ),
            (
                ["runs", "export", str(tmp_path / "nope"), "--skill-creator", str(tmp_path / "x")],
                "is not a run folder",
            ),
            (["runs", "export", str(run_dir)], "--skill-creator DIR"),
        ],
        capsys,
        monkeypatch,
    )
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and not (tmp_path / "x").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mine")]  # no temporary sibling left
    # `runs DIR` still lists runs
    code, out, err = run_cli(["runs", str(tmp_path / "out"), "--json"], capsys, monkeypatch)
    assert code == 0 and len(json.loads(out)) == 2, err


def test_two_models_are_two_configurations_each_never_pooled(tmp_path: Path, capsys, monkeypatch):
    run_dir = scripted_run(tmp_path, monkeypatch, models=("openai:gpt-4.1-mini", "openai:gpt-4.1"))
    export(run_dir, tmp_path / "ws", capsys, monkeypatch)
    recomputed = aggregate(tmp_path / "ws")
    bench = json.loads((tmp_path / "ws" / "benchmark.json").read_text())
    assert bench["run_summary"] == recomputed
    assert list(recomputed) == [
        "gpt-4.1-mini-with_skill", "gpt-4.1-mini-without_skill", "gpt-4.1-with_skill", "gpt-4.1-without_skill", "delta"
    ]  # fmt: skip
    # 9 answers per configuration (not 18), and the delta is one model's with minus without
    assert all(sum(1 for e in bench["runs"] if e["configuration"] == c) == 9 for c in list(recomputed)[:4])
    assert recomputed["delta"]["pass_rate"] == "+0.44"
