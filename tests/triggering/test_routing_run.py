"""Must-show of library routing (``triggers DIR --library``) through the real SDK and the scripted server.

The scripted model loads the first catalog skill whose description shares a word (4+
letters, not a stop word) with the query. In the library below, ``csv-cleaner`` and
``csv-to-json`` both speak of spreadsheets, and ``csv-cleaner`` comes first in the
catalog: every spreadsheet query of ``csv-to-json`` is stolen by it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.errors import UpskillError
from upskill_hub.rundir.routing_rows import NONE, ROUTING_FILE, read_routing
from upskill_hub.rundir.trigger_rows import TRIGGERS_FILE, read_trigger_rows
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server
from upskill_hub.triggering.routing import ROUTING_PNG
from upskill_hub.triggering.routing_run import run_routing

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
MODEL = "openai:gpt-4.1-mini"
CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]

LIBRARY = {
    "csv-cleaner": ("Clean messy spreadsheet columns: trim, dedupe, fix types. Use when a spreadsheet needs tidying.",
                    ["tidy the spreadsheet columns", "dedupe these rows", "trim blanks in a spreadsheet"]),
    "csv-to-json": ("Convert spreadsheet rows into JSON records. Use when a spreadsheet must become JSON.",
                    ["turn this spreadsheet into JSON", "spreadsheet export as JSON please", "make JSON records"]),
    "git-helper": ("Resolve merge conflicts and draft commit messages. Use when working on git history.",
                   ["resolve this merge conflict", "draft a commit message", "squash my commits"]),
    "pdf-reader": ("Extract tables and text from PDF documents. Use when a PDF must be read.",
                   ["extract the tables from this PDF", "read the PDF text", "summarise this scanned report"]),
    "sql-lint": ("Lint and format SQL statements. Use when SQL looks wrong.",
                 ["lint my select", "format these statements", "is this statement valid"]),
}  # fmt: skip


def write_library(root: Path) -> Path:
    for name, (description, queries) in LIBRARY.items():
        meta = parse_meta({"schema_version": 1, "triggers": [{"id": f"q{i}", "query": q, "should_trigger": True}
                                                             for i, q in enumerate(queries)]})  # fmt: skip
        Skill.create(name, description, f"# {name}\n\nDo the {name} thing.\n", meta=meta).write(root / name)
    return root


def answer(system: str, messages: list, params: dict) -> str:
    return "done"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))


def test_the_matrix_names_the_overlapping_pair_with_its_queries(tmp_path: Path) -> None:
    lib = write_library(tmp_path / "lib")
    with running_llm_server(answer) as srv:
        run = run_routing(lib, [MODEL], base_url=srv.openai_base_url, output_dir=tmp_path / "out")
        assert len(srv.completion_requests) == 15
        # Every call saw the whole library in its catalog.
        assert all(r.system.count("<skill>") == 5 for r in srv.completion_requests)
    (report,) = run.reports
    assert report.skills == list(LIBRARY) and report.columns[-1] == NONE
    row = dict(zip(report.columns, report.matrix[report.skills.index("csv-to-json")], strict=True))
    assert row["csv-cleaner"] == 2 and row["csv-to-json"] == 1  # "make JSON records" stays home
    (pair,) = report.stealing
    assert (pair.a, pair.b, pair.a_to_b, pair.b_to_a) == ("csv-cleaner", "csv-to-json", 0, 2)
    assert pair.examples_b_to_a == ["turn this spreadsheet into JSON", "spreadsheet export as JSON please"]
    per = {p.skill: p for p in report.per_skill}
    assert (per["csv-to-json"].routed, per["csv-to-json"].n) == (1, 3)
    assert (per["pdf-reader"].routed, report.matrix[3][-1]) == (2, 1)  # the scanned report loads nothing
    assert per["sql-lint"].recall == pytest.approx(2 / 3)  # "is this statement valid": no word shared
    lo, hi = per["csv-to-json"].accuracy_ci_low, per["csv-to-json"].accuracy_ci_high
    assert (lo, hi) == pytest.approx((0.0615, 0.7923), abs=1e-4)  # Wilson 95%, 1 of 3
    assert (report.routed, report.n) == (10, 15)  # "squash my commits" shares no whole word either
    assert (run.run_dir / ROUTING_PNG).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert read_routing(run.run_dir)[2][0].matrix == report.matrix
    rows = read_trigger_rows(run.run_dir)
    assert len(rows) == 15 and {r.run_id for r in rows} == {run.run_dir.name}


def test_a_library_needs_two_skills_with_queries(tmp_path: Path) -> None:
    lib = write_library(tmp_path / "lib")
    with pytest.raises(UpskillError, match="at least two skills"):
        run_routing(lib / "sql-lint", [MODEL], base_url="http://127.0.0.1:9/v1", output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_routing_run_killed_mid_way_resumes_with_its_calls(tmp_path: Path) -> None:
    """kill -9 during the 8th call; --resume asks only the calls that were never answered."""
    lib = write_library(tmp_path / "lib")
    out = tmp_path / "out"
    with running_llm_server(answer, hold_after=7) as srv:
        args = [*CLI, "triggers", str(lib), "--library", "-m", MODEL, "--base-url", srv.openai_base_url,
                "-o", str(out), "-c", "1", "--format", "json"]  # fmt: skip
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
        try:
            _wait_for(lambda: len(srv.completion_requests) == 8, "the held 8th call")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        (run_dir,) = out.iterdir()
        assert not (run_dir / ROUTING_FILE).exists()
        assert len(read_trigger_rows(run_dir)) == 7
        srv.release()
        done = subprocess.run([*args, "--resume"], capture_output=True, text=True, env=os.environ.copy(), timeout=120)
        assert done.returncode == 0, done.stderr
        assert len(srv.completion_requests) == 8 + 8  # the held one again, and the 7 never asked
        again = subprocess.run([*args, "--resume"], capture_output=True, text=True, env=os.environ.copy(), timeout=120)
        assert len(srv.completion_requests) == 16  # nothing left to ask
    assert [p.name for p in out.iterdir()] == [run_dir.name]
    data = json.loads(done.stdout)
    assert data["run_dir"] == str(run_dir) and json.loads(again.stdout)["reports"] == data["reports"]
    rows = read_trigger_rows(run_dir)
    assert len(rows) == 15 and len({(r.skill_name, r.query_id) for r in rows}) == 15
    assert (run_dir / TRIGGERS_FILE).read_text().count("\n") == 15
    assert data["reports"][0]["stealing"][0]["examples_b_to_a"] == ["turn this spreadsheet into JSON",
                                                                     "spreadsheet export as JSON please"]  # fmt: skip
