"""The Space's skill page shows a run's spread over repeats and its flagged assertions.

A repo holding a run pushed before these figures existed (no ``benchmark`` or
``assertion_flags`` columns) and a new 3-run eval, read back from the local Hub: the new
skill's page shows both sections with the run's numbers, the old one's shows neither and
still opens.
"""

from __future__ import annotations

from pathlib import Path

from _evalkit import InProcessClient, make_skill
from catalog_runs import publish_old_run, write_skill

from upskill_hub.hub.push import push
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.space import data, views

CASES = [
    {"id": "greet", "input": "Say hello.", "assert": [{"type": "contains", "value": "BANANA"}, {"type": "contains", "value": "|"}]},
    {"id": "plain", "input": "Just talk.", "assert": [{"type": "not-contains", "value": "ERROR"}]},
]  # fmt: skip


def test_skill_page_shows_the_spread_over_runs_and_flagged_assertions(hub_server, hub_repo_id, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    old = write_skill(tmp_path / "skills")
    publish_old_run(hub_repo_id, old)
    # with the skill: "BANANA |" in the 1st and 3rd repeat, BANANA alone in the 2nd (4 calls a repeat: greet is call 2, 6, 10)
    skill = make_skill(tmp_path / "skills", cases=CASES)
    client = InProcessClient(answer=lambda s, u, n: ("BANANA |" if n % 8 == 2 else "BANANA") if "BANANA" in s else "hi")
    res = run_eval(skill, [client], EvalOptions(runs=3, output_dir=tmp_path / "runs", plots=False, concurrency=1))
    push([old, skill], hub_repo_id, results=[res.run_dir])

    lib = data.load_library(hub_repo_id, token=None)
    page = views.skill_summary_markdown(lib, "greeting")
    run_id = res.summary.run_id
    assert f"### Spread over runs (run `{run_id}`, 3 runs per case)" in page
    # with skill: greet passes in repeats 1 and 3 (the "|" check), plain always: 100%, 50%, 100%
    assert "| toy | with skill | 83% ± 29% (50–100%) |" in page
    assert "| toy | baseline | 50% ± 0% (50–50%) |" in page
    assert "| toy | delta | +33 pts |" in page
    assert f"### Assertions to check (run `{run_id}`)" in page
    assert "- **non-discriminating** (passes in both conditions in ≥ 90% of calls: does not tell them apart): 1, cases plain" in page
    assert "- **flaky** (differs between repeats of the same case and condition: measures noise): 1, cases greet" in page
    # an assertion's text is escaped inside the table (its value is a pipe)
    assert "| flaky | toy | greet | 2 | contains: &#124; | 0/3 | 2/3 |" in page

    old_page = views.skill_summary_markdown(lib, "tiny-skill")
    assert "## tiny-skill" in old_page and "Spread over runs" not in old_page and "Assertions to check" not in old_page


def test_a_hostile_runs_row_is_escaped_and_nulls_are_dashes():
    import pandas as pd

    runs = pd.DataFrame([{
        "skill_name": "s", "run_id": "<b>r</b>", "timestamp": "2026-11-26T00:00:00Z", "runs_per_case": None,
        "benchmark": [{"model": "<img src=x onerror=alert(1)>|", "condition": None, "mode": None, "agent": None,
                       "runs": 2, "pass_rate_mean": 0.5, "pass_rate_stddev": 0.1, "pass_rate_min": 0.4, "pass_rate_max": 0.6}],
        "assertion_flags": [{"model": "m", "case_id": "<script>", "index": None, "assertion": "a|b", "kind": "<i>odd</i>",
                             "mode": None, "agent": None, "baseline_passed": None, "baseline_calls": 3,
                             "with_skill_passed": 1, "with_skill_calls": 3}],
        "assertions_checked": None,
    }])  # fmt: skip
    page = "\n".join(views.benchmark_markdown(runs, "s") + views.flagged_assertions_markdown(runs, "s"))
    assert "<img" not in page and "<script>" not in page and "<i>" not in page and "<b>" not in page
    assert "### Spread over runs (run `&lt;b&gt;r&lt;/b&gt;`)" in page
    assert "| 50% ± 10% (40–60%) |" in page and "&#124;" in page
    assert "| &lt;i&gt;odd&lt;/i&gt; | m | &lt;script&gt; | – | a&#124;b | –/3 | 1/3 |" in page
