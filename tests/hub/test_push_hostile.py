"""``push --results`` of hostile run folders (issue 33, classes 4 and 8), against the local Hub.

Class 4: no file of a run folder is followed through a symlink (an outside file's rows
would be published), a FIFO is refused instead of hanging or being skipped as absent, and
one huge row is refused before Arrow allocates for it (a 900 MB row ended in
``std::bad_alloc``). Class 8: rows are checked on read (types, finite numbers, one row per
call) with one line naming the file and the line, and nothing reaches the Hub: the repo
is not even created.
"""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest
from catalog_runs import write_catalog_run, write_skill
from huggingface_hub import HfApi

from upskill_hub import rundir
from upskill_hub.errors import UpskillError
from upskill_hub.hub.push import push
from upskill_hub.rundir import RESULTS_FILE, SUMMARY_FILE
from upskill_hub.rundir.schema import ResultRow
from upskill_hub.rundir.trigger_rows import TRIGGERS_FILE

RUN_ID = "run-20261126-hostile"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_catalog_run(tmp_path / "runs", RUN_ID, write_skill(tmp_path / "skills"))


def _refused(repo_id: str, run: Path, match: str) -> str:
    """Push ``run``; it must fail with one line matching ``match`` and leave no repo behind."""
    with pytest.raises(UpskillError, match=match) as err:
        push([], repo_id, results=[run])
    assert "\n" not in str(err.value)
    assert not HfApi().repo_exists(repo_id, repo_type="dataset")
    return str(err.value)


def _lines(run: Path, name: str = RESULTS_FILE) -> list[dict]:
    return [json.loads(line) for line in (run / name).read_text().splitlines()]


def _write_lines(run: Path, rows: list[dict], name: str = RESULTS_FILE) -> None:
    (run / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


# --------------------------------------------------------------------------- class 4
@pytest.mark.parametrize("name", [TRIGGERS_FILE, RESULTS_FILE, SUMMARY_FILE])
def test_a_symlinked_run_file_is_refused_and_the_outside_file_never_published(
    hub_server, hub_repo_id, tmp_path, run, name
):
    outside = tmp_path / "someone-elses" / name
    outside.parent.mkdir()
    os.replace(run / name, outside)
    (run / name).symlink_to(outside)
    message = _refused(hub_repo_id, run, "symlink")
    assert name in message


def test_a_fifo_results_file_is_refused_not_skipped_or_waited_on(hub_server, hub_repo_id, run):
    (run / RESULTS_FILE).unlink()
    os.mkfifo(run / RESULTS_FILE)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            push([], hub_repo_id, results=[run])
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)  # a blocked open() cannot be cancelled
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "push blocked on a FIFO"
    assert (
        isinstance(outcome[0], UpskillError) and "FIFO" in str(outcome[0]) and RESULTS_FILE in str(outcome[0])
    )
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")


def test_one_huge_row_is_refused_before_arrow_sees_it(hub_server, hub_repo_id, run, monkeypatch):
    monkeypatch.setattr(rundir.files, "MAX_ROW_BYTES", 200_000)  # UPSKILL_MAX_ROW_MB, set small
    rows = _lines(run)
    rows[2]["output"] = "x" * 300_000
    _write_lines(run, rows)
    _refused(
        hub_repo_id,
        run,
        r"results.jsonl: line 3 is 0.3 MB; rows over 0.2 MB are not read \(raise UPSKILL_MAX_ROW_MB",
    )


# --------------------------------------------------------------------------- class 8
@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("cost_usd", math.nan, "'cost_usd' is nan"),
        ("latency_s", math.inf, "'latency_s' is inf"),
        ("case_id", ["a", "list"], "'case_id' is a list, not text"),
        ("passed", "no", "'passed' is text, not true/false"),
    ],
)
def test_a_result_row_of_the_wrong_type_names_its_line(hub_server, hub_repo_id, run, field, value, why):
    rows = _lines(run)
    rows[4][field] = value
    _write_lines(run, rows)
    _refused(hub_repo_id, run, rf"results.jsonl: line 5 is not a valid result row \(field {why}")


def test_a_duplicated_result_row_is_refused(hub_server, hub_repo_id, run):
    rows = _lines(run)
    _write_lines(run, [*rows, rows[1]])
    _refused(hub_repo_id, run, rf"results.jsonl: line {len(rows) + 1} repeats the call of line 2")


def test_nan_figures_in_the_summary_are_not_published(hub_server, hub_repo_id, run):
    summary = json.loads((run / SUMMARY_FILE).read_text())
    summary["conditions"][0]["pass_rate"] = math.nan
    (run / SUMMARY_FILE).write_text(json.dumps(summary))
    _refused(
        hub_repo_id,
        run,
        r"summary.json: not a valid run summary \(field 'conditions' item 0 field 'pass_rate'",
    )


def test_the_runners_parquet_is_checked_too(hub_server, hub_repo_id, run):
    """A ``results.parquet`` whose record says it is current is uploaded as is: checked first."""
    rows = [ResultRow.from_dict(r) for r in _lines(run)]
    rows[0].cost_usd = math.inf
    _write_lines(run, [r.to_dict() for r in rows])
    rundir.write_results_parquet(run, rows)
    assert rundir.read_results_shard(run) is not None  # push would trust it
    _refused(hub_repo_id, run, "results.parquet: 1 row.s. hold NaN or Infinity in 'cost_usd'")


def test_a_clean_run_still_pushes(hub_server, hub_repo_id, run):
    result = push([], hub_repo_id, results=[run])
    assert result.committed and f"data/results/{RUN_ID}.parquet" in {c.path for c in result.changes}
