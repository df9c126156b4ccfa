"""The Space end to end: launched on 127.0.0.1 against the local Hub, driven with gradio_client."""

from __future__ import annotations

import pytest
from gradio_client import Client
from space_helpers import model_specs


def _data(table) -> tuple[list[str], list[list]]:
    """gradio_client returns a Dataframe as {"headers": [...], "data": [[...]]} (inside an update when shown)."""
    if table.get("__type__") == "update":
        table = table["value"]
    return table["headers"], table["data"]


def test_browse_search_open_and_leaderboard(running_app, space_repo):
    import json
    import urllib.request

    # Gradio's run history (which would keep typed keys in the browser) is off.
    config = json.loads(urllib.request.urlopen(running_app + "config", timeout=10).read())
    assert config["run_history"] is False and "runs" not in config["footer_links"]
    client = Client(running_app, verbose=False)
    status, table, *_ = client.predict(space_repo, api_name="/load")
    assert "3 skills" in status and space_repo in status
    headers, rows = _data(table)
    assert headers[:5] == ["name", "best lift [95% CI]", "best model", "tests", "tokens"]  # key columns first
    assert headers[-1] == "description"
    by_name = {r[0]: r for r in rows}
    assert set(by_name) == {"greeting", "xss-demo", "json-helper"}
    assert rows[0][0] == "greeting"  # sorted by best lift: the only skill with results first
    assert by_name["greeting"][3] == 3 and by_name["greeting"][1].startswith("+67 pts")
    assert by_name["greeting"][2] == "scripted-a"
    assert by_name["json-helper"][1] == "–"

    found, note = client.predict(space_repo, "JSON", 0, False, "best lift", api_name="/search")
    assert [r[0] for r in _data(found)[1]] == ["json-helper"] and "1 of 3" in note
    none, note = client.predict(space_repo, "nothing-like-this", 0, False, "name", api_name="/search")
    assert _data(none)[1] == [] and "0 of 3" in note

    out = client.predict(space_repo, "greeting", api_name="/open_skill")
    header, html, files, cases, results, lift_svg, pass_svg, _, answers_model, answers = out
    assert "greeting" in header and "3 test cases" in header
    assert "<h1>Greeting</h1>" in html and "BANANA" in html
    assert {r[0] for r in _data(files)[1]} == {"SKILL.md", "skill_meta.json"}
    assert [r[0] for r in _data(cases)[1]] == ["greet", "wave", "plain"]
    rheaders, rrows = _data(results)
    assert rheaders[:4] == ["model", "baseline pass rate", "with skill pass rate", "lift"]
    per_model = {r[0]: r for r in rrows}
    # scripted-a says BANANA with the skill (3/3) and never without (1/3: only 'plain' passes).
    assert per_model["scripted-a"][1].startswith("33% [") and per_model["scripted-a"][2].startswith("100% [")
    assert per_model["scripted-a"][3].startswith("+67 pts")
    assert per_model["scripted-b"][3].startswith("+0 pts")
    base_tok, skill_tok = (int(x) for x in per_model["scripted-a"][5].split(" → "))
    assert 0 < base_tok < skill_tok  # the skill's text makes the prompt longer
    assert per_model["scripted-a"][6] == "–"  # a scripted model has no known price
    # The charts carry the same intervals as the table, as text a reader (and this test) can check.
    assert "<svg" in lift_svg and "scripted-a: +67 pts [" in lift_svg and "scripted-b: +0 pts" in lift_svg
    assert "<svg" in pass_svg and "scripted-a with skill: 100% [" in pass_svg
    # Answers side by side for the best model, with the assertion evidence.
    assert answers_model["value"] == "scripted-a"
    assert answers.count("<tr>") == 4 and "BANANA! hello there" in answers and "uh-fail" in answers
    assert "✗ contains" in answers and "✓ contains" in answers
    other = client.predict(space_repo, "greeting", "scripted-b", api_name="/answers")
    assert "hello there" in other and "BANANA! hello there" not in other  # scripted-b never says it

    header, html, *_ = client.predict(space_repo, "xss-demo", api_name="/open_skill")
    note = client.predict(space_repo, "xss-demo", "references/notes.md", api_name="/skill_file")
    assert note == "# Notes\n\nplain reference file\n"
    bad = client.predict(space_repo, "xss-demo", "../../etc/passwd", api_name="/skill_file")
    assert bad.startswith("Error:") and "root:" not in bad
    low = html.lower()
    assert "<script" not in low and "onerror" not in low and 'href="javascript:' not in low
    assert "Hostile skill" in html

    heat, lb = client.predict(space_repo, "scripted-b", "", api_name="/leaderboard")
    assert 'class="uh-heatmap"' in heat and "greeting on scripted-a: +67 pts" in heat
    assert "uh-unsure" in heat  # scripted-b's +0 pts: its interval crosses zero, so the cell is hatched
    lh, lrows = _data(lb)
    assert lh == ["skill", "best lift", "scripted-a", "scripted-b"]
    assert lrows[0][0] == "greeting" and lrows[0][2].startswith("+67 pts")


def test_run_an_evaluation_and_get_the_table_with_lift(running_app, space_repo, llm_server):
    client = Client(running_app, verbose=False)
    client.predict(space_repo, api_name="/load")
    job = client.submit(
        space_repo, "library", "greeting", "", "", "\n".join(model_specs(llm_server)), "", "", "", "", "", 2,
        api_name="/run_eval",
    )  # fmt: skip
    outputs = list(job)  # every streamed update
    final = job.result()
    assert len(outputs) >= 2  # progress came before the end
    status, progress, live, summary, lift_svg, pass_svg, run_handle = final
    assert "24 / 24 calls done" in progress
    assert status.startswith("Finished **greeting**: 24 calls")
    assert len(_data(live)[1]) == 24  # 3 cases x 2 conditions x 2 models x 2 runs
    sh, srows = _data(summary)
    assert sh[:4] == ["model", "baseline pass rate", "with skill pass rate", "lift"]
    per_model = {r[0]: r for r in srows}
    assert per_model["scripted-a"][3].startswith("+67 pts") and per_model["scripted-b"][3].startswith(
        "+0 pts"
    )
    assert (
        "scripted-a: +67 pts" in lift_svg and "<svg" in pass_svg and run_handle and "/" not in run_handle
    )  # a handle, not a server path

    # Without signing in, nothing is pushed.
    assert "sign in" in client.predict(space_repo, run_handle, api_name="/push_results").lower()


def test_an_evaluation_past_the_spaces_limit_is_refused_at_once(running_app, space_repo):
    """SECURITY.md: the Space runs MAX_EVALS evaluations at once and refuses more (not queues them)."""
    import time

    from space_helpers import banana_script

    from upskill_hub.space import session
    from upskill_hub.testing.llm_server import running_llm_server

    # Every model call is held until release(): the running evaluations cannot finish first.
    with running_llm_server(banana_script, models=("held",), hold_after=0) as held:
        args = (space_repo, "library", "greeting", "", "", model_specs(held)[0], "", "", "", "", "", 1)
        running = [Client(running_app, verbose=False).submit(*args, api_name="/run_eval")
                   for _ in range(session.MAX_EVALS)]  # fmt: skip
        deadline = time.monotonic() + 120
        while session._EVAL_SLOTS._value > 0:  # every slot taken (the app runs in this process)
            assert time.monotonic() < deadline, "the evaluations never all started"
            time.sleep(0.05)
        extra = Client(running_app, verbose=False).submit(*args, api_name="/run_eval")
        status = extra.result(timeout=60)[0]  # before: queued behind the others until they ended
        assert (
            status.startswith("**Error:**") and f"running {session.MAX_EVALS} evaluations already" in status
        )
        held.release()
        for job in running:
            assert "**Error:**" not in job.result(timeout=300)[0]
    assert session._EVAL_SLOTS._value == session.MAX_EVALS  # every slot given back


def test_push_results_with_a_caller_chosen_run_dir_reads_nothing(running_app, space_repo, tmp_path):
    """A path typed by the caller is not a run: same answer whether it exists or not (no oracle)."""
    client = Client(running_app, verbose=False)
    real = tmp_path / "runs" / "r1"
    real.mkdir(parents=True)
    answers = {
        client.predict(space_repo, p, api_name="/push_results") for p in (str(real), "/etc", "/nope/x", "..")
    }
    assert len(answers) == 1
    assert "no such evaluation" in answers.pop()


def test_bad_input_is_one_clear_line(running_app, space_repo, monkeypatch):
    from upskill_hub.space.safety import ALLOW_PRIVATE_ENV

    client = Client(running_app, verbose=False)
    status, *_ = client.predict("not a repo id!", api_name="/load")
    assert status.startswith("**Error:**") and "\n" not in status
    status, *_ = client.predict("someone/missing", api_name="/load")
    assert "not found" in status
    # A visitor cannot make the Space read a folder on its disk, even one in the dataset layout.
    from upskill_hub.space import data

    local = str(data.load_library(space_repo, token=None).root)
    status, table, *_ = client.predict(local, api_name="/load")
    assert status.startswith("**Error:**") and "OWNER/NAME" in status and not table["data"]
    out = client.predict(space_repo, "library", "greeting", "", "", "openai:gpt-4.1-mini", "", "", "", "", "", 1,
                         api_name="/run_eval")  # fmt: skip
    assert out[0].startswith("**Error:**") and "OpenAI key" in out[0]
    monkeypatch.delenv(ALLOW_PRIVATE_ENV)  # as on a public Space
    out = client.predict(space_repo, "library", "greeting", "", "", "my-model", "http://169.254.169.254/v1", "", "",
                         "", "", 1, api_name="/run_eval")  # fmt: skip
    assert "**Error:**" in out[0] and "internal address" in out[0]


def test_huge_or_deep_test_cases_for_a_library_skill_are_one_line_errors(running_app, space_repo, llm_server):
    client = Client(running_app, verbose=False)
    spec = model_specs(llm_server)[0]
    for meta, needle in (
        ("[" * 300_000, "larger than"),
        ('{"cases": ' + "[" * 5000 + "]" * 5000 + "}", "deeper than"),
    ):
        out = client.predict(space_repo, "library", "greeting", "", meta, spec, "", "", "", "", "", 1,
                             api_name="/run_eval")  # fmt: skip
        assert out[0].startswith("**Error:**") and needle in out[0] and "\n" not in out[0]


@pytest.mark.parametrize("skill", ["json-helper"])
def test_skill_without_cases_cannot_be_evaluated(running_app, space_repo, llm_server, skill):
    client = Client(running_app, verbose=False)
    out = client.predict(space_repo, "library", skill, "", "", model_specs(llm_server)[0], "", "", "", "", "", 1,
                         api_name="/run_eval")  # fmt: skip
    assert "no test cases" in out[0]


def test_evaluate_a_pasted_skill(running_app, space_repo, llm_server):
    client = Client(running_app, verbose=False)
    skill_md = "---\nname: pasted-banana\ndescription: Say BANANA. Use always.\n---\n# Pasted\n\nAlways say BANANA.\n"
    meta = (
        '{"cases": [{"id": "hi", "input": "Say hi.", "assert": [{"type": "contains", "value": "BANANA"}]}]}'
    )
    out = client.predict(space_repo, "paste", "", skill_md, meta, model_specs(llm_server)[0], "", "", "", "", "", 1,
                         api_name="/run_eval")  # fmt: skip
    assert out[0].startswith("Finished **pasted-banana**: 2 calls")
    assert _data(out[3])[1][0][3].startswith("+100 pts")
