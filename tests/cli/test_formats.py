"""``--format agent|quiet|json``: snapshots of skills list / validate, eval and runs.

The agent format is a contract with the agents that parse it (columns, order, number
formatting), so it is pinned here byte for byte; only run ids, which hold the time, are
normalised.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from _evalkit import make_skill
from typer.testing import CliRunner

from upskill_hub.cli._formats import OutputFormat, Printer, agent_cell, resolve_format
from upskill_hub.cli.app import app
from upskill_hub.errors import UpskillError
from upskill_hub.testing.llm_server import running_llm_server

RUN_ID = re.compile(r"\d{8}T\d{6}Z-greeting-[0-9a-f]{6}")

SKILLS_LIST_AGENT = (
    "name\tversion\ttoken_estimate\tn_cases\tvalid\tpath\tdescription\n"
    "Broken Name\t8c9d6b79bc51\t8\t0\tfalse\tbroken\t\n"
    "greeting\t03040344685f\t40\t3\ttrue\tgreeting\tGreets with BANANA. Use when greeting.\n"
    "second\tf492d4ed7532\t39\t3\ttrue\tsecond\tGreets with BANANA. Use when greeting.\n"
)
SKILLS_LIST_QUIET = "broken\ngreeting\nsecond\n"  # one line per skill folder (same-named skills stay distinct)
VALIDATE_AGENT = (
    "path\tvalid\tname\tversion\ttests\tproblem_text\n"
    "skills/broken\tfalse\tBroken Name\t8c9d6b79bc51\t0\terror: skills/broken: name: 'Broken Name' has capitals; "
    "use lowercase letters, digits and '-'; error: skills/broken: description: missing (required)\n"
    # Two skills validated together with the same description: each gets the library warning.
    "skills/greeting\ttrue\tgreeting\t03040344685f\t3\twarning: skills/greeting: description: nearly the same as the "
    "description of 'second' (100% of the content words shared): an agent cannot tell them apart, so one will take "
    "the other's queries\n"
    "skills/second\ttrue\tsecond\tf492d4ed7532\t3\twarning: skills/second: description: nearly the same as the "
    "description of 'greeting' (100% of the content words shared): an agent cannot tell them apart, so one will take "
    "the other's queries\n"
)
VALIDATE_QUIET = "skills/greeting\nskills/second\n"
EVAL_AGENT = (
    "run_id\tskill\tmodel\tbaseline\twith_skill\tlift\tlift_ci_low\tlift_ci_high\tp_value\tn_cases\tconclusive\n"
    "RUN_ID\tgreeting\tm\t0.3333\t0.6667\t0.3333\t-0.5477\t0.8747\t0.6171\t3\tfalse\n"
)
EVAL_QUIET = "RUN_ID\n"
RUNS_AGENT = (
    # New columns are appended, so an agent reading the old ones by position still works.
    "run_id\tstatus\tskill_name\tmodel\tcondition\tn\tpassed\terrors\tpass_rate\tlift\tlift_ci_low\tlift_ci_high\tp_value"
    "\tassertions_passed\tassertions_total\treason\tmode\ttrigger_recall\tfalse_trigger_rate\n"
    "RUN_ID\tcomplete\tgreeting\tm\tbaseline\t3\t1\t0\t0.3333\t0.3333\t-0.5477\t0.8747\t0.6171\t\t\t\tinject\t\t\n"
    "RUN_ID\tcomplete\tgreeting\tm\twith_skill\t3\t2\t0\t0.6667\t0.3333\t-0.5477\t0.8747\t0.6171\t\t\t\tinject\t\t\n"
)
RUNS_QUIET = "RUN_ID\n"


def script(system, messages, params):
    return "BANANA {}" if "BANANA" in system else "hello"


@pytest.fixture
def skills(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    make_skill(tmp_path / "skills")
    make_skill(tmp_path / "skills", name="second")
    (tmp_path / "skills" / "broken").mkdir()
    (tmp_path / "skills" / "broken" / "SKILL.md").write_text("---\nname: Broken Name\n---\nbody\n")
    return Path("skills")


def invoke(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_skills_list_and_validate_snapshots(skills: Path):
    assert invoke("skills", "list", "skills", "--format", "agent") == (0, SKILLS_LIST_AGENT, "")
    assert invoke("skills", "list", "skills", "--format", "quiet") == (0, SKILLS_LIST_QUIET, "")
    paths = ["skills/broken", "skills/greeting", "skills/second"]
    assert invoke("skills", "validate", *paths, "--format", "agent") == (1, VALIDATE_AGENT, "")
    code, out, err = invoke("skills", "validate", *paths, "--format", "quiet")
    assert (code, out) == (1, VALIDATE_QUIET)
    assert "has capitals" in err  # why it failed still reaches the user, on stderr
    code, out, _ = invoke("skills", "validate", *paths, "--json")
    assert code == 1 and json.loads(out)["valid"] is False
    assert json.loads(invoke("skills", "list", "skills", "--format", "json")[1])[1]["name"] == "greeting"


def test_eval_and_runs_snapshots(skills: Path, tmp_path: Path):
    with running_llm_server(script) as srv:
        spec = f"openai-compatible:m@{srv.openai_base_url}"
        code, out, err = invoke("eval", "skills/greeting", "-m", spec, "-o", "runs", "--format", "agent")
        assert (code, RUN_ID.sub("RUN_ID", out), err) == (0, EVAL_AGENT, "")
        run_id = out.splitlines()[1].split("\t")[0]
        assert (tmp_path / "runs" / run_id / "summary.json").is_file()
        code, out, err = invoke("runs", "runs", "--format", "agent")
        assert (code, RUN_ID.sub("RUN_ID", out), err) == (0, RUNS_AGENT, "")
        code, out, err = invoke("runs", "runs", "--format", "quiet")
        assert (code, out) == (0, f"{run_id}\n") and RUN_ID.sub("RUN_ID", out) == RUNS_QUIET
        code, out, err = invoke("eval", "skills/greeting", "-m", spec, "-o", "runs", "--format", "quiet")
        assert (code, RUN_ID.sub("RUN_ID", out), err) == (0, EVAL_QUIET, "")
        assert out.strip() != run_id  # a second run, a second id
        code, out, _ = invoke("eval", "skills/greeting", "-m", spec, "-o", "runs", "--json")
        assert code == 0 and json.loads(out)["skill_name"] == "greeting"


def test_resolve_format_rules(monkeypatch):
    assert resolve_format("agent") is OutputFormat.agent
    assert resolve_format("JSON") is OutputFormat.json
    assert resolve_format("auto", as_json=True) is OutputFormat.json
    with pytest.raises(UpskillError, match="contradict"):
        resolve_format("quiet", as_json=True)
    with pytest.raises(UpskillError, match="unknown --format"):
        resolve_format("yaml")
    monkeypatch.setattr("upskill_hub.cli._formats._detect_agent", lambda: True)
    assert resolve_format("auto") is OutputFormat.agent
    monkeypatch.setattr("upskill_hub.cli._formats._detect_agent", lambda: False)
    assert resolve_format(None) is OutputFormat.human


def test_agent_cells_are_single_line_and_stable():
    assert agent_cell("a\tb\nc") == "a b c"
    assert agent_cell("\x1b[31mred") == "\\x1b[31mred"
    assert (agent_cell(None), agent_cell(True), agent_cell(0.123456), agent_cell([1, "x"])) == ("", "true", "0.1235", "1,x")
    lines: list[str] = []
    Printer(OutputFormat.agent, lines.append).result("id1", name="n", skipped=None, ok=True)
    Printer(OutputFormat.quiet, lines.append).result("id1", name="n")
    assert lines == ["name=n ok=true", "id1"]


def test_bad_format_is_one_line_error(skills: Path, capsys, monkeypatch):
    from upskill_hub.cli.app import main

    monkeypatch.setattr(sys, "argv", ["upskill-hub", "skills", "list", "skills", "--json", "--format", "agent"])
    with pytest.raises(SystemExit) as exc:
        main()
    out, err = capsys.readouterr()
    assert exc.value.code == 1 and out == ""
    assert err.startswith("Error:") and "contradict" in err and len(err.strip().splitlines()) == 1


def test_kernels_init_and_update_formats(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke("kernels", "init", "my-relu", "--format", "quiet")
    assert (code, out) == (0, "my-relu\n"), err
    code, out, err = invoke("kernels", "init", "other-relu", "--json")
    assert code == 0 and "build.toml" in json.loads(out)["files"], err
    code, out, err = invoke("kernels", "update", "my-relu", "--format", "agent")
    assert (code, out) == (0, "path=my-relu/build.toml changed=false errors=0\n"), err
