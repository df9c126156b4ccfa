"""Push of a run folder with the runner's ``results.parquet``, read back from the local Hub.

The parquet and its local record (``.results.parquet.check``) let push skip reading the
JSON; these tests check what a user of the repo sees: the runner's bytes when they are
current, the appended rows when they are not, masked secrets either way, and never the
record itself.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
from cli_runner import run_cli
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from test_push_support import write_run, write_skill

from upskill_hub import rundir
from upskill_hub._util.hashing import sha256_hex
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.push import push


def _runner_made_run(tmp_path: Path, run_id: str, **kwargs) -> tuple[Path, Path]:
    """A skill and a run folder with the ``results.parquet`` and record the runner writes when a run ends."""
    skill_dir = write_skill(tmp_path / "skills")
    run = write_run(tmp_path / "runs", run_id, skill_dir, **kwargs)
    rundir.write_results_parquet(run, rundir.read_results(run))
    return skill_dir, run


def _pushed_results(repo_id: str, run_id: str) -> bytes:
    return Path(hf_hub_download(repo_id, dr.results_path(run_id), repo_type="dataset")).read_bytes()


def test_push_uploads_the_runner_parquet_and_never_its_record(hub_server, hub_repo_id, tmp_path):
    skill_dir, run = _runner_made_run(tmp_path, "run-shard")
    local = (run / rundir.RESULTS_PARQUET).read_bytes()
    record = json.loads((run / rundir.RESULTS_CHECK).read_text(encoding="utf-8"))

    assert push([skill_dir], hub_repo_id, results=[run]).committed

    assert _pushed_results(hub_repo_id, "run-shard") == local
    files = HfApi().list_repo_files(hub_repo_id, repo_type="dataset")
    assert not [f for f in files if "check" in f or f.startswith(".results")]
    folder = Path(snapshot_download(hub_repo_id, repo_type="dataset", cache_dir=str(tmp_path / "snap")))
    stored = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    for needle in [record["salt"], record["parquet_sha256"], *record["secrets"]]:
        assert needle.encode() not in stored
    # Stored on the server: the blobs are the files of the commit, nothing else of the run folder.
    assert sha256_hex(local) in {
        e.lfs.sha256 for e in HfApi().list_repo_tree(hub_repo_id, repo_type="dataset", recursive=True)
        if getattr(e, "lfs", None)
    }  # fmt: skip


def test_rows_appended_after_the_parquet_are_pushed(hub_server, hub_repo_id, tmp_path):
    skill_dir, run = _runner_made_run(tmp_path, "run-stale")
    jsonl = run / rundir.RESULTS_FILE
    lines = jsonl.read_text(encoding="utf-8").splitlines(keepends=True)
    with jsonl.open("a", encoding="utf-8") as fh:  # e.g. a resumed run killed before its end
        fh.write(json.dumps(json.loads(lines[0]) | {"case_id": "appended-later"}) + "\n")

    push([skill_dir], hub_repo_id, results=[run])

    table = pq.read_table(io.BytesIO(_pushed_results(hub_repo_id, "run-stale")))
    assert table.num_rows == len(lines) + 1 and "appended-later" in table.column("case_id").to_pylist()


def test_a_secret_exported_only_before_the_push_is_masked_on_the_hub(
    hub_server, hub_repo_id, tmp_path, monkeypatch
):
    leaked = "plain-looking-secret-value-0042"  # not token-shaped: only the env makes it a secret
    skill_dir, run = _runner_made_run(tmp_path, "run-late-secret", output=f"the key is {leaked}")
    assert leaked in pq.read_table(run / rundir.RESULTS_PARQUET).column("output")[0].as_py()
    monkeypatch.setenv("UPSKILL_API_KEY", leaked)

    push([skill_dir], hub_repo_id, results=[run])

    outputs = pq.read_table(io.BytesIO(_pushed_results(hub_repo_id, "run-late-secret"))).column("output")
    assert all(leaked not in o and "***" in o for o in outputs.to_pylist())


def test_a_corrupt_record_still_pushes_every_row_without_a_traceback(
    hub_server, hub_repo_id, tmp_path, capsys, monkeypatch
):
    skill_dir, run = _runner_made_run(tmp_path, "run-corrupt")
    expected = (run / rundir.RESULTS_PARQUET).read_bytes()
    (run / rundir.RESULTS_CHECK).write_bytes(b"\xff\x00 not a record")

    code, out, err = run_cli(
        ["push", str(skill_dir), "--repo", hub_repo_id, "--results", str(run)], capsys, monkeypatch
    )

    assert code == 0 and "Traceback" not in err, err
    assert _pushed_results(hub_repo_id, "run-corrupt") == expected  # built from the jsonl: the same bytes
