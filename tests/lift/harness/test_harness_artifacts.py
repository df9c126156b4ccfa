"""Issue 35, artifacts: what an ``--agent`` run wrote is graded, not only what it printed.

A stand-in agent CLI (``cmd:``) writes a spreadsheet, a document or a PDF and prints only
"done". The judge is a scripted model that passes only when the prompt it received holds
``=SUM(B2:B9)``: it can pass only by reading the file. The same agent writing the number
42 fails. Hostile files (a zip bomb named .xlsx, a 2 GB sparse file, a PDF of 100,000
pages, a symlink out of the workspace) each end as one line in the row, in bounded time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from upskill_hub.artifacts import render_one
from upskill_hub.cases import Assertion
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.grading import WorkspaceChecker
from upskill_hub.lift.harness.workspace import Workspace
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.testing.llm_server import running_llm_server

ART_FILES = Path(__file__).parents[2] / "artifacts"  # tests/artifacts/_artifact_files.py
sys.path.insert(0, str(ART_FILES))
from _artifact_files import make_xlsx, many_pages_pdf  # noqa: E402

SUM = "=SUM(B2:B9)"
RUBRIC = "the total row uses a SUM formula"


def judge(system: str, messages: list[dict[str, str]], params: dict) -> str:
    """PASS only if the prompt it got holds the formula: only the agent's file can put it there."""
    ok = SUM in messages[-1]["content"]
    return json.dumps({"pass": ok, "reason": "formula seen" if ok else "no formula in what I was shown"})


@pytest.fixture
def judge_server():
    with running_llm_server(judge) as server:
        yield server


def _agent(bin_dir: Path, name: str, body: str) -> None:
    """An executable agent: answers ``--version``, runs ``body`` in its workspace, prints "done"."""
    exe = bin_dir / name
    exe.write_text(
        f"#!{sys.executable}\nimport sys\nif sys.argv[1:] == ['--version']:\n    print('1.0')\n    sys.exit(0)\n"
        f"sys.path.insert(0, {str(ART_FILES)!r})\nfrom pathlib import Path\n"
        "from _artifact_files import make_docx, make_pdf, make_xlsx, many_pages_pdf, pdf_bytes, zip_bomb\n"
        f"{body}\nprint('done')\n"
    )
    exe.chmod(0o755)


def _options(tmp_path: Path, agents: list[str], tests: Path, judge_url: str) -> EvalOptions:
    return EvalOptions(
        agents=agents, cases=tests, output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", plots=False,
        include_baseline=False, judge=f"openai-compatible:scripted-model@{judge_url}",
        harness=HarnessOptions(timeout=120),
    )  # fmt: skip


WRITERS = {
    "xlsx": "make_xlsx(Path('report.xlsx'), total={total!r})",
    "docx": "make_docx(Path('report.docx'), total={total!r})",
    "pdf": "make_pdf(Path('report.pdf'), ['Sales by region', 'Total row: ' + str({total!r})])",
}


def test_the_judge_and_file_contains_read_what_the_agent_wrote(agents_env, widget_skill, tmp_path, judge_server):
    agents = []
    for kind, writer in WRITERS.items():
        for label, total in (("sum", SUM), ("42", "42")):
            _agent(agents_env, f"{kind}-{label}-agent", writer.format(total=total if label == "sum" else 42))
            agents.append(f"cmd:{kind}-{label}-agent {{prompt}}")
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"cases": [{"id": "total", "input": "Write the sales report with a total row.",
        "assert": [{"type": "llm-rubric", "value": RUBRIC}]}]}))  # fmt: skip
    result = run_eval(widget_skill, [], _options(tmp_path, agents, tests, judge_server.openai_base_url))
    rows = {r.model.removeprefix("cmd:").removesuffix("-agent"): r for r in result.rows}
    for kind in WRITERS:
        good, bad = rows[f"{kind}-sum"], rows[f"{kind}-42"]
        assert good.output == bad.output == "done", (good.error, bad.error)  # the answer alone tells nothing
        assert good.error is None and good.passed is True, good.assertion_details
        assert bad.error is None and bad.passed is False
        (detail,) = json.loads(good.assertion_details)
        prompt = detail["judge_prompt"]
        assert prompt.startswith("<task>\nWrite the sales report with a total row.\n</task>\n\n<answer>\ndone\n</answer>")
        assert f"<artifacts>\n=== report.{kind} (created, {kind}, " in prompt and f"</artifacts>\n\n<rubric>\n{RUBRIC}" in prompt
        (bad_detail,) = json.loads(bad.assertion_details)
        assert "42" in bad_detail["judge_prompt"] and SUM not in bad_detail["judge_prompt"]
    xlsx_prompt = json.loads(rows["xlsx-sum"].assertion_details)[0]["judge_prompt"]
    assert "A10: Total\nB10: =SUM(B2:B9) (no cached value)" in xlsx_prompt
    assert "| Total | =SUM(B2:B9) |" in json.loads(rows["docx-sum"].assertion_details)[0]["judge_prompt"]
    assert "## page 1\nSales by region\n## page 2\nTotal row: =SUM(B2:B9)" in json.loads(
        rows["pdf-sum"].assertion_details)[0]["judge_prompt"]  # fmt: skip
    # The run folder keeps the change set and the renderings, per row.
    art = result.run_dir / "agents" / "cmd_xlsx-sum-agent__with_skill__total__r0"
    listing = json.loads((art / "changes.json").read_text())
    (entry,) = [e for e in listing["files"] if e["path"] == "report.xlsx"]
    assert entry["status"] == "created" and entry["kind"] == "xlsx" and entry["size"] > 1000
    assert len(entry["sha256"]) == 64 and entry["rendered"] == "rendered/000-report.xlsx.txt"
    assert "B10: =SUM(B2:B9)" in (art / entry["rendered"]).read_text()
    # ... and the row itself records what the call changed (pushed with the results).
    (in_row,) = [e for e in json.loads(rows["xlsx-sum"].changes)["files"] if e["path"] == "report.xlsx"]
    assert (in_row["status"], in_row["kind"], in_row["sha256"]) == ("created", "xlsx", entry["sha256"])


def test_file_contains_checks_the_rendered_text_of_office_files(agents_env, widget_skill, tmp_path, judge_server):
    _agent(agents_env, "sum-agent", WRITERS["xlsx"].format(total=SUM) + "\nPath('plain.csv').write_text('B10,=SUM(B2:B9)')")
    _agent(agents_env, "num-agent", WRITERS["xlsx"].format(total=42) + "\nPath('plain.csv').write_text('B10,42')")
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"cases": [{"id": "c", "input": "Write the sales report.", "assert": [
        {"type": "file-contains", "path": "report.xlsx", "value": ["B10: =SUM(B2:B9)", "Notes"]},
        {"type": "file-contains", "path": "plain.csv", "value": "B10,=SUM"}]}]}))  # fmt: skip
    result = run_eval(widget_skill, [], _options(tmp_path, ["cmd:sum-agent {prompt}", "cmd:num-agent {prompt}"],
                                                 tests, judge_server.openai_base_url))  # fmt: skip
    by = {r.model: r for r in result.rows}
    good = json.loads(by["cmd:sum-agent"].assertion_details)
    assert [d["passed"] for d in good] == [True, True]
    assert good[0]["evidence"] == "report.xlsx (its rendered xlsx text): contains 'B10: =SUM(B2:B9)', 'Notes'"
    assert good[1]["evidence"] == "plain.csv: contains 'B10,=SUM'"  # plain text: the raw bytes, as before
    bad = json.loads(by["cmd:num-agent"].assertion_details)
    assert [d["passed"] for d in bad] == [False, False]
    assert bad[0]["evidence"] == "report.xlsx (its rendered xlsx text): missing 'B10: =SUM(B2:B9)'"


HOSTILE = """
outside = Path({outside!r})
zip_bomb(Path('bomb.xlsx'), inflated_mb=200)
with open('big.xlsx', 'wb') as f:
    f.write(b'PK\\x03\\x04')
    f.truncate(2 * 1024**3)
Path('huge.pdf').write_bytes(many_pages_pdf(100_000))
Path('claims.pdf').write_bytes(pdf_bytes(['only page'], claimed=100_000))
Path('link.xlsx').symlink_to(outside / 'secret.xlsx')
"""


def test_hostile_artifacts_are_one_line_each_and_bounded(agents_env, widget_skill, tmp_path, judge_server):
    outside = tmp_path / "outside"
    outside.mkdir()
    make_xlsx(outside / "secret.xlsx", total="TOP-SECRET-7731")
    _agent(agents_env, "hostile-agent", HOSTILE.format(outside=str(outside)))
    files = ("bomb.xlsx", "big.xlsx", "huge.pdf", "claims.pdf", "link.xlsx")
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"cases": [{"id": "c", "input": "Write the reports.", "assert": [
        *({"type": "file-contains", "path": p, "value": "x"} for p in files),
        {"type": "llm-rubric", "value": RUBRIC}]}]}))  # fmt: skip
    t0 = time.monotonic()
    (row,) = run_eval(widget_skill, [], _options(tmp_path, ["cmd:hostile-agent {prompt}"], tests,
                                                 judge_server.openai_base_url)).rows  # fmt: skip
    assert time.monotonic() - t0 < 90
    assert row.error is None and row.passed is False
    details = json.loads(row.assertion_details)
    evidence = {d["path"]: d["evidence"] for d in details if "path" in d}
    assert evidence == {
        "bomb.xlsx": "bomb.xlsx: declares 209.7 MB+ uncompressed, over the 100.0 MB limit (a zip bomb?); not opened",
        "big.xlsx": "big.xlsx: 2.1 GB, over the 20.0 MB rendering limit; not read",
        "huge.pdf": "huge.pdf (its rendered pdf text): missing 'x'",
        "claims.pdf": "claims.pdf (its rendered pdf text): missing 'x'",
        "link.xlsx": "link.xlsx: points outside the workspace",
    }
    prompt = details[-1]["judge_prompt"]
    for line in (
        "=== big.xlsx (created, xlsx, 2.1 GB) ===\n(2.1 GB, over the 20.0 MB rendering limit; not read)",
        "(declares 209.7 MB+ uncompressed, over the 100.0 MB limit (a zip bomb?); not opened)",
        "… truncated: 99950 more pages (read 50 of 100000 declared)",
        "… truncated: 99999 more pages (read 1 of 100000 declared)",
        f"=== link.xlsx (created, symlink, {len(str(outside / 'secret.xlsx'))} bytes) ===\n"
        f"(symlink to {str(outside / 'secret.xlsx')!r} (outside the workspace); not followed)",
    ):
        assert line in prompt
    art = next((tmp_path / "runs").iterdir()) / "agents" / "cmd_hostile-agent__with_skill__c__r0"
    kept = "\n".join(p.read_text() for p in art.rglob("*") if p.is_file())
    for text in (kept, row.assertion_details, row.output):
        assert "TOP-SECRET-7731" not in text and "Traceback" not in text
    listing = {e["path"]: e for e in json.loads((art / "changes.json").read_text())["files"]}
    assert listing["big.xlsx"]["sha256"] is None and listing["big.xlsx"]["size"] == 2 * 1024**3
    huge = listing["huge.pdf"]
    assert huge["sha256"] == hashlib.sha256(many_pages_pdf(100_000)).hexdigest()  # hashed once, by the snapshot


def test_a_file_contains_target_beyond_the_rendered_files_is_rendered_on_demand(tmp_path):
    ws = Workspace.create(tmp_path, "t-")
    ws.freeze()
    make_xlsx(ws.project / "out" / "report.xlsx")
    env = {"PATH": os.environ["PATH"]}
    check = Assertion("file-contains", "B10: =SUM(B2:B9)", path="out/report.xlsx")
    on_demand = WorkspaceChecker(ws, ws.changed(), env, rendered={},
                                 render=partial(render_one, ws.project, identity=ws.project_id))  # fmt: skip
    assert asyncio.run(on_demand(check)).passed
    raw = WorkspaceChecker(ws, ws.changed(), env)  # without a renderer: the zip's raw bytes, as before
    r = asyncio.run(raw(check))
    assert not r.passed and r.evidence == "out/report.xlsx: missing 'B10: =SUM(B2:B9)'"
