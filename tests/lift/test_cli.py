"""``upskill-hub eval`` / ``runs``: one-line errors before any call, --json purity, run listing."""

from __future__ import annotations

import csv
import io
import json
import socket
from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import run_cli as run_main

from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" "test-0123456789abcdefghijklmnop"


def script(system, messages, params):
    return "BANANA {}" if "BANANA" in system else "hello"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills")


def test_bad_input_is_one_line_before_any_call(skill: Path, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    empty = tmp_path / "empty.json"
    empty.write_text('{"schema_version": 1, "cases": []}')
    badre = tmp_path / "badre.json"
    badre.write_text(json.dumps({"cases": [{"input": "x", "assert": [{"type": "regex", "value": "a(b"}]}]}))
    out_dir = tmp_path / "runs"
    with running_llm_server(script) as srv:
        cases = [
            (["--model", "nonsense-model-xyz"], "unknown model spec"),
            (["--model", "openai:gpt-4.1-mini"], "OPENAI_API_KEY"),
            (["--model", "anything", "--base-url", f"http://127.0.0.1:{_closed_port()}/v1"], "cannot reach"),
            (["--model", f"openai-compatible:m@{srv.openai_base_url}", "--tests", str(empty)], "no test cases"),
            (["--model", f"openai-compatible:m@{srv.openai_base_url}", "--tests", str(badre)], "does not compile"),
            (["--model", f"openai-compatible:m@{srv.openai_base_url}", "--runs", "0"], "--runs must be at least 1, got 0"),
            (["--model", f"openai-compatible:m@{srv.openai_base_url}", "--max-tokens", "0"], "Error: --max-tokens must be"),
        ]
        for extra, expected in cases:
            code, out, err = run_main(["eval", str(skill), "--output", str(out_dir), *extra], capsys, monkeypatch)
            assert code == 1, (extra, out, err)
            lines = [ln for ln in err.strip().splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("Error:"), err
            assert expected in lines[0], lines[0]
            assert "Traceback" not in err and out == ""
            assert KEY not in err
        assert srv.calls == 0
        assert not out_dir.exists()
        code, out, err = run_main(["eval", str(tmp_path / "nope"), "--output", str(out_dir)], capsys, monkeypatch)
        assert code == 1 and err.startswith("Error:") and "does not exist" in err


def test_json_prints_only_the_summary_and_runs_lists_it(skill: Path, tmp_path: Path, capsys, monkeypatch):
    out_dir = tmp_path / "runs"
    with running_llm_server(script) as srv:
        model = f"openai-compatible:toy@{srv.openai_base_url}"
        code, out, err = run_main(
            ["eval", str(skill), "--model", model, "--output", str(out_dir), "--json"], capsys, monkeypatch
        )
        assert code == 0, err
        summary = json.loads(out)  # stdout is the JSON and nothing else
        assert summary["skill_name"] == "greeting" and summary["models"] == ["toy"]
        assert {c["condition"] for c in summary["conditions"]} == {"baseline", "with_skill"}
        run_dirs = [p for p in out_dir.iterdir() if p.is_dir()]
        assert len(run_dirs) == 1
        assert {"run.json", "results.jsonl", "summary.json", "pass_rate.png", "tokens.png", "report.html"} <= {
            p.name for p in run_dirs[0].iterdir()
        }
        html = (run_dirs[0] / "report.html").read_text()
        assert "data:image/png;base64" in html and "greeting" in html

        # table output (second run is cached)
        code, out, err = run_main(["eval", str(skill), "--model", model, "--output", str(out_dir)], capsys, monkeypatch)
        assert code == 0, err
        assert "with skill" in out and "baseline" in out and "lift" in out and "from the response cache" in out
        assert srv.calls == 6

    code, out, err = run_main(["runs", str(out_dir)], capsys, monkeypatch)
    assert code == 0 and out.count("done") >= 2 and "toy" in out
    code, out, err = run_main(["runs", str(out_dir), "--csv"], capsys, monkeypatch)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 4 and {r["condition"] for r in rows} == {"baseline", "with_skill"}
    assert rows[0]["pass_rate"] and rows[0]["status"] == "complete"
    code, out, err = run_main(["runs", str(tmp_path / "none")], capsys, monkeypatch)
    assert code == 1 and "Error:" in err


def test_eval_help_lists_options(capsys, monkeypatch):
    code, out, _ = run_main(["eval", "--help"], capsys, monkeypatch)
    assert code == 0
    for opt in ("--model", "--runs", "--tests", "--no-baseline", "--concurrency", "--base-url", "--output",
                "--resume", "--json", "--no-cache", "--judge", "--temperature", "--max-tokens"):
        assert opt in out
