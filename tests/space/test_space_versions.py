"""The Space's skill page lists each published version's lift, oldest to newest.

Version 1 is evaluated and pushed; version 2 (one more instruction) is evaluated against
version 1 and pushed to the same repo: the runs table keeps both versions' hashes, and the
page shows version 1's lift, then version 2's with its lift over version 1.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pandas as pd
from _evalkit import InProcessClient

from upskill_hub.cases import parse_meta
from upskill_hub.hub.push import push
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.lift.versus import run_versus_async
from upskill_hub.skill import Skill, require_skill
from upskill_hub.space import data, views

CASES = [{"id": f"q{i}", "input": f"Question {i}.", "assert": [{"type": "contains", "value": "WX-42"}]} for i in range(8)]
BODY = "# Widget answers\n\nAnswer in one short sentence.\n"


def _write(folder: Path, body: str) -> Path:
    meta = parse_meta({"schema_version": 1, "cases": CASES})
    return Skill.create("widget-answers", "Answers widget questions. Use for widgets.", body, meta=meta).write(folder)


def test_skill_page_shows_each_published_version_oldest_first(hub_server, hub_repo_id, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    client = InProcessClient(answer=lambda s, u, n: "ok WX-42" if "WX-42" in s else "ok")
    opts = EvalOptions(output_dir=tmp_path / "runs", plots=False)
    v1 = _write(tmp_path / "v1" / "widget-answers", BODY + "Mention the widget code.\n")
    first = run_eval(v1, [client], opts)
    push([v1], hub_repo_id, results=[first.run_dir])
    v2 = _write(tmp_path / "v2" / "widget-answers", BODY + "Mention the widget code WX-42.\n")
    second = asyncio.run(run_versus_async(v2, require_skill(v1), str(v1), [client], opts))
    push([v2], hub_repo_id, results=[second.new.run_dir])

    lib = data.load_library(hub_repo_id, token=None)
    runs = lib.runs[lib.runs["skill_name"] == "widget-answers"]
    assert set(runs["skill_version"]) == {first.summary.skill_version, second.new.summary.skill_version}
    assert second.new.summary.against_version == first.summary.skill_version  # both hashes recorded
    page = views.skill_summary_markdown(lib, "widget-answers")
    assert "### Versions, oldest to newest" in page
    old_line = f"| `{first.summary.skill_version[:12]}` | `{first.summary.run_id}` | toy | +0 pts [-40, +40] | – | – |"
    new_line = (f"| `{second.new.summary.skill_version[:12]}` | `{second.new.summary.run_id}` | toy | +100 pts "
                f"[+27, +100] | {first.summary.skill_version[:12]} | +100 pts [+27, +100] |")  # fmt: skip
    assert old_line in page and new_line in page
    assert page.index(old_line) < page.index(new_line)


def test_hostile_version_rows_are_escaped_and_bounded():
    runs = pd.DataFrame([{
        "skill_name": "s", "skill_version": "<b>v|1</b>", "run_id": "r|<i>", "timestamp": "2026-11-26T00:00:00Z",
        "lifts": [{"model": f"<m{i}>|", "mode": "inject", "lift": 0.5, "ci_low": None, "ci_high": "x"} for i in range(500)],
        "versus": "not a list", "against_version": None,
    }])  # fmt: skip
    lines = views.versions_markdown(runs, "s")
    text = "\n".join(lines)
    assert "<b>" not in text and "<m0>" not in text and "&#124;" in text
    assert sum(line.startswith("| `") for line in lines) == views.MAX_MODELS_PER_VERSION
    assert "+50 pts" in text
    assert views.versions_markdown(pd.DataFrame(), "s") == [] and views.versions_markdown(None, "s") == []
