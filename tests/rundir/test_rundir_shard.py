"""The runner's ``results.parquet`` and its local record: what push may upload without reading the JSON."""

from __future__ import annotations

import io
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _evalkit import InProcessClient, make_skill

from upskill_hub import rundir
from upskill_hub._util.redact import secret_values
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.execute import RunResult
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.rundir import shardcheck


def _run(tmp_path: Path, client: InProcessClient | None = None, **opts) -> RunResult:
    options = EvalOptions(output_dir=tmp_path / "runs", plots=False, use_cache=False, **opts)
    return run_eval(make_skill(tmp_path), [client or InProcessClient()], options)


def _built_from_jsonl(run_dir: Path, tmp_path: Path) -> bytes:
    """What push builds from ``results.jsonl`` alone (the path of runs made without the shard)."""
    copy = tmp_path / "jsonl-only" / run_dir.name
    shutil.copytree(run_dir, copy)
    (copy / rundir.RESULTS_PARQUET).unlink()
    (copy / rundir.RESULTS_CHECK).unlink()
    bundle = dr.load_run_dir(copy)
    assert not bundle.uses_runner_shard
    data = dr.results_table_bytes(bundle)
    assert data is not None
    return data


def _push_bytes(run_dir: Path) -> tuple[bytes | None, bool]:
    """The ``results`` shard push would upload for ``run_dir``, and whether it is the runner's file."""
    bundle = dr.load_run_dir(run_dir)
    return dr.results_table_bytes(bundle), bundle.uses_runner_shard


def _record(run_dir: Path) -> dict:
    return json.loads((run_dir / rundir.RESULTS_CHECK).read_text(encoding="utf-8"))


def test_shard_and_record_are_written_when_a_run_ends_and_push_uploads_the_shard(tmp_path: Path):
    client = InProcessClient(answer=lambda s, u, n: "BANANA" if n % 3 else "hi", latency=0.001)
    res = _run(tmp_path, client, runs=3)
    shard = (res.run_dir / rundir.RESULTS_PARQUET).read_bytes()
    assert shard == _built_from_jsonl(res.run_dir, tmp_path)
    found = rundir.read_results_shard(res.run_dir)
    assert found is not None and found.data == shard and found.masked is None
    assert _push_bytes(res.run_dir) == (shard, True)


def test_the_record_holds_no_secret_only_salted_digests(tmp_path: Path, monkeypatch):
    key = "sk-" + "RunTimeProviderKey0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    res = _run(tmp_path)
    text = (res.run_dir / rundir.RESULTS_CHECK).read_text(encoding="utf-8")
    assert all(value not in text for value in secret_values())
    record = _record(res.run_dir)
    assert len(record["secrets"]) == len(secret_values()) >= 1
    again = _run(tmp_path / "again")  # same secrets, another salt: nothing to compare across runs
    assert not set(record["secrets"]) & set(_record(again.run_dir)["secrets"])


def test_shard_is_rewritten_after_resume(tmp_path: Path):
    skill_dir = make_skill(tmp_path)
    flaky = InProcessClient(answer=lambda s, u, n: "!error" if n % 4 == 0 else "BANANA")
    opts = EvalOptions(runs=2, output_dir=tmp_path / "runs", plots=False, use_cache=False)
    first = run_eval(skill_dir, [flaky], opts)
    assert any(r.error for r in first.rows)
    before = (first.run_dir / rundir.RESULTS_PARQUET).read_bytes()
    again = run_eval(
        skill_dir, [InProcessClient(answer=lambda s, u, n: "BANANA")], replace(opts, resume=True)
    )
    assert again.run_dir == first.run_dir and not any(r.error for r in again.rows)
    shard = (again.run_dir / rundir.RESULTS_PARQUET).read_bytes()
    assert shard != before
    assert shard == _built_from_jsonl(again.run_dir, tmp_path)
    assert rundir.rows_from_table(pq.read_table(io.BytesIO(shard))) == rundir.read_results(again.run_dir)
    assert _push_bytes(again.run_dir) == (shard, True)


def test_a_stale_shard_is_ignored_and_push_reads_the_appended_row(tmp_path: Path):
    res = _run(tmp_path)
    jsonl = res.run_dir / rundir.RESULTS_FILE
    lines = jsonl.read_text().splitlines(keepends=True)
    extra = json.loads(lines[0]) | {"repeat": 7}
    with jsonl.open("a") as fh:  # a later append (a resumed run killed before its end)
        fh.write(json.dumps(extra) + "\n")
    assert rundir.read_results_shard(res.run_dir) is None
    data, used_shard = _push_bytes(res.run_dir)
    assert not used_shard and data is not None
    pushed = pq.read_table(io.BytesIO(data))
    assert pushed.num_rows == len(lines) + 1 and 7 in pushed.column("repeat").to_pylist()


def test_an_edit_of_the_same_size_is_caught_by_the_time(tmp_path: Path):
    res = _run(tmp_path)
    jsonl = res.run_dir / rundir.RESULTS_FILE
    st = jsonl.stat()
    jsonl.write_text(jsonl.read_text().replace('"hi"', '"ho"'))
    assert jsonl.stat().st_size == st.st_size
    os.utime(jsonl, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert rundir.read_results_shard(res.run_dir) is None
    data, used_shard = _push_bytes(res.run_dir)
    assert (
        not used_shard
        and data is not None
        and "ho" in pq.read_table(io.BytesIO(data)).column("output").to_pylist()
    )


@pytest.mark.parametrize(
    "damage",
    ["missing", "not-json", "not-an-object", "wrong-types", "odd-text", "bad-salt", "other-format", "other-rules", "parquet-swapped",
     "parquet-truncated", "from-another-run"],
)  # fmt: skip
def test_a_missing_or_untrustworthy_record_means_push_checks_the_rows(tmp_path: Path, damage: str):
    res = _run(tmp_path, runs=2)
    other = _run(tmp_path / "other", InProcessClient(answer=lambda s, u, n: "something else"), runs=2)
    expected = _built_from_jsonl(res.run_dir, tmp_path)
    check, shard = res.run_dir / rundir.RESULTS_CHECK, res.run_dir / rundir.RESULTS_PARQUET
    record = _record(res.run_dir)
    writes = {
        "not-json": "{nope",
        "not-an-object": "[1, 2]",
        "wrong-types": json.dumps(record | {"jsonl_size": "12", "secrets": "abc"}),
        "odd-text": json.dumps(record | {"parquet_sha256": "é" * 64}),
        "bad-salt": json.dumps(record | {"salt": "not hex"}),
        "other-format": json.dumps(record | {"format": 99}),
        "other-rules": json.dumps(record | {"rules": "0" * 64}),
    }
    if damage == "missing":
        check.unlink()
    elif damage in writes:
        check.write_text(writes[damage])
    elif damage == "parquet-swapped":
        shard.write_bytes((other.run_dir / rundir.RESULTS_PARQUET).read_bytes())
    elif damage == "parquet-truncated":
        shard.write_bytes(shard.read_bytes()[:-100])
    else:  # the record of another run copied over this one's
        shutil.copy(other.run_dir / rundir.RESULTS_CHECK, check)
    assert rundir.read_results_shard(res.run_dir) is None
    assert _push_bytes(res.run_dir) == (expected, False)


def test_a_secret_exported_after_the_run_and_found_in_a_row_is_masked_at_push(tmp_path: Path, monkeypatch):
    leaked = "zebra-quartz-secret-4711"
    res = _run(tmp_path, InProcessClient(answer=lambda s, u, n: f"the key is {leaked}"))
    assert leaked in pq.read_table(res.run_dir / rundir.RESULTS_PARQUET).column("output")[0].as_py()
    record_before = (res.run_dir / rundir.RESULTS_CHECK).read_bytes()
    monkeypatch.setenv("OPENAI_API_KEY", leaked)  # the user exports the key before pushing
    data, used_shard = _push_bytes(res.run_dir)
    assert not used_shard and data is not None
    outputs = pq.read_table(io.BytesIO(data)).column("output").to_pylist()
    assert all(leaked not in o and "***" in o for o in outputs)
    # Nothing was noted as checked: the next push masks it again.
    assert (res.run_dir / rundir.RESULTS_CHECK).read_bytes() == record_before
    assert _push_bytes(res.run_dir)[0] == data


def test_a_new_secret_found_in_no_row_is_checked_once_then_noted(tmp_path: Path, monkeypatch):
    res = _run(tmp_path)
    shard = (res.run_dir / rundir.RESULTS_PARQUET).read_bytes()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "NotInAnyRow0123456789")
    record = shardcheck.read_record(res.run_dir)
    assert record is not None and not record.covers(secret_values())
    assert _push_bytes(res.run_dir) == (shard, True)
    noted = shardcheck.read_record(res.run_dir)
    assert noted is not None and noted.covers(secret_values()) and noted.salt == record.salt
    assert "NotInAnyRow" not in (res.run_dir / rundir.RESULTS_CHECK).read_text(encoding="utf-8")


def test_an_older_run_without_the_shard_still_pushes(tmp_path: Path):
    res = _run(tmp_path, runs=2)
    shard = (res.run_dir / rundir.RESULTS_PARQUET).read_bytes()
    (res.run_dir / rundir.RESULTS_PARQUET).unlink()
    (res.run_dir / rundir.RESULTS_CHECK).unlink()
    assert _push_bytes(res.run_dir) == (shard, False)


def test_run_ids_come_from_the_statistics_when_they_tell(tmp_path: Path):
    rows = rundir.read_results(_run(tmp_path, runs=2).run_dir)
    one = rundir.table_parquet_bytes(rundir.rows_table(rows))
    assert rundir.shard_run_ids(one) == {rows[0].run_id}
    mixed = rundir.table_parquet_bytes(rundir.rows_table([*rows, replace(rows[0], run_id="another-run")]))
    assert rundir.shard_run_ids(mixed) is None  # min != max: the caller reads the column


def test_a_runner_shard_holding_another_runs_rows_is_refused(tmp_path: Path):
    from upskill_hub.errors import UpskillError

    res = _run(tmp_path)
    rows = rundir.read_results(res.run_dir)
    rundir.write_results_parquet(res.run_dir, [replace(r, run_id="someone-else") for r in rows])
    with pytest.raises(UpskillError, match="several runs"):
        dr.load_run_dir(res.run_dir)
