"""The Space on a repo holding old-schema shards and a catalog-mode run with trigger figures.

Browse shows each skill's trigger rate, the skill page a trigger table per model, and the
Answers tab which skills and files each catalog answer loaded; catalog answers are never
pooled with injected ones (``model (catalog)`` is its own line).
"""

from __future__ import annotations

import json

import pandas as pd
from catalog_runs import publish_old_run, write_catalog_run, write_skill

from upskill_hub.hub.push import push
from upskill_hub.space import answers, data, views
from upskill_hub.space.answers import answers_html


def test_old_and_catalog_runs_show_triggers_modes_and_what_was_loaded(hub_server, hub_repo_id, tmp_path, monkeypatch):
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skill = write_skill(tmp_path / "skills")
    publish_old_run(hub_repo_id, skill)
    push([skill], hub_repo_id, results=[write_catalog_run(tmp_path / "runs", "run-20261124-new", skill)])

    lib = data.load_library(hub_repo_id, token=None)
    assert set(lib.runs["run_id"]) == {"run-20261101-old", "run-20261124-new"}
    agg = lib.aggregates
    assert agg.labels["model-a (catalog)"] == ("model-a", "catalog")
    assert {"model-a", "model-a (catalog)"} <= set(agg.models)
    lifts = agg.lifts.set_index("model")
    assert lifts.loc["model-a (catalog)", "lift"] == 0.25  # catalog rows alone, not pooled with inject

    row = views.browse_table(views.search_skills(agg, "tiny"))[0]
    assert dict(zip(views.BROWSE_HEADERS, row, strict=True))["triggers (recall / false)"] == "70% / 20%"
    assert len(views.BROWSE_HEADERS) == len(views.BROWSE_WIDTHS)
    assert sum(float(w.rstrip("%")) for w in views.BROWSE_WIDTHS) == 100

    page = views.skill_summary_markdown(lib, "tiny-skill")
    assert "Triggering (run `run-20261124-new`)" in page
    line = next(x for x in page.splitlines() if x.startswith("| model-a |"))
    assert "(7/10)" in line and "(2/10)" in line

    cat = answers.answer_rows(lib, "tiny-skill", "model-a (catalog)")
    assert len(cat) == 8 and set(cat["mode"]) == {"catalog"}
    inj = answers.answer_rows(lib, "tiny-skill", "model-a")
    assert set(inj["mode"].fillna("inject")) == {"inject"}
    out = answers_html([{"id": f"case-{i}", "input": "q"} for i in range(4)], cat, "model-a (catalog)")
    assert "loaded: tiny-skill · read: tiny-skill/references/notes.md" in out
    assert "loaded no skill" in out and "loaded: other-skill" in out
    assert "loaded" not in answers_html([{"id": "case-0", "input": "q"}], inj, "model-a")


def test_a_library_without_triggers_shows_a_dash():
    from upskill_hub.space.aggregate import compute_aggregates

    skills = pd.DataFrame(
        {"name": ["a"], "description": ["d"], "version": ["v"], "token_estimate": [1], "n_cases": [0]}
    )
    results = pd.DataFrame(columns=list(data.RESULT_COLUMNS))
    agg = compute_aggregates(skills, results, pd.DataFrame({"run_id": ["r"], "skill_name": ["a"], "timestamp": ["t"], "triggers": [None]}))
    assert agg.skills["triggers_text"].tolist() == ["–"]
    assert views.trigger_markdown(agg, "a") == []


def test_hostile_loaded_lists_are_escaped_and_bounded():
    base = {"case_id": "c", "condition": "with_skill", "timestamp": "t", "run_id": "r", "repeat": 0, "passed": True,
            "output": "x", "mode": "catalog", "files_read": "[]"}  # fmt: skip
    evil = {**base, "loaded": json.dumps(["<script>alert(1)</script>"] * 50)}
    out = answers_html([{"id": "c", "input": "q"}], pd.DataFrame([evil]), "m")
    assert "<script>" not in out and "&lt;script&gt;" in out and "30 more" in out
    for junk in ("[" * 100_000, '{"a": 1}', "not json", None):
        out = answers_html([{"id": "c", "input": "q"}], pd.DataFrame([{**base, "loaded": junk}]), "m")
        assert "PASS" in out and "uh-loaded" not in out


def test_routing_tab_shows_the_matrix_and_the_pair(hub_server, hub_repo_id, tmp_path, monkeypatch):
    from upskill_hub.rundir.routing_rows import write_routing
    from upskill_hub.rundir.schema import TriggerRow
    from upskill_hub.space import routing_view
    from upskill_hub.triggering.routing import routing_report

    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    skills = ["sql-format", "sql-lint", "<b>csv</b>"]
    picks = {"sql-format": ["sql-format"] * 3, "sql-lint": ["sql-format", "sql-format", "sql-lint"], "<b>csv</b>": ["<b>csv</b>", None, None]}
    rows = [
        TriggerRow("lib-1", "t", "v", skill, "x", "m", "p", "{}", f"{skill}-{i}", f"q {i}", True, 0,
                   got == skill, json.dumps([got] if got else []))
        for skill, gots in picks.items() for i, got in enumerate(gots)
    ]  # fmt: skip
    run = tmp_path / "lib-1"
    run.mkdir()
    write_routing(run, [routing_report(rows, skills, "m")], "lib-1", "2026-11-24T10:00:00Z")
    push([write_skill(tmp_path / "skills", "sql-format")], hub_repo_id, results=[run])

    lib = data.load_library(hub_repo_id, token=None)
    assert routing_view.routing_models(lib) == ["m"]
    out = routing_view.routing_html(lib, "m")
    assert "<b>sql-format</b> ↔ <b>sql-lint</b>: 0 of sql-format's queries loaded sql-lint, 2 the other way" in out
    assert "&lt;b&gt;csv&lt;/b&gt;" in out and "<b>csv</b>" not in out
    assert "No routing run of other" in routing_view.routing_html(lib, "other")
    assert "Pick a model" in routing_view.routing_html(lib, None)
