"""What the Space downloads and reads from a repo a visitor names: measured first, bounded."""

from __future__ import annotations

import io
import resource

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from upskill_hub.errors import UpskillError
from upskill_hub.space import data, intake


def _bomb_parquet(mb: int) -> bytes:
    """A tiny parquet whose skills table decompresses to ``mb`` MB (one repeated character)."""
    rows = 64
    body = "a" * (mb * 1024 * 1024 // rows)
    table = pa.table({"name": [f"s{i}" for i in range(rows)], "description": ["d"] * rows, "body": [body] * rows})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", use_dictionary=False)
    return buf.getvalue()


def _hub_dataset(repo: str, files: dict[str, bytes]) -> None:
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi()
    api.create_repo(repo, repo_type="dataset")
    ops = [CommitOperationAdd(path, content) for path, content in files.items()]
    api.create_commit(repo, ops, commit_message="hostile", repo_type="dataset")


def test_parquet_bomb_in_a_visitor_repo_is_refused_from_its_footer(hub_server, hub_repo_id, monkeypatch):
    bomb = _bomb_parquet(400)
    assert len(bomb) < 200_000  # a small download ...
    _hub_dataset(hub_repo_id, {"data/skills/bomb.parquet": bomb})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(UpskillError, match=r"decompresses to 4\d\d MB; this Space reads at most 256 MB"):
        data.load_library(hub_repo_id, token=False, allow_local=False)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100  # ... that never gets decompressed
    assert not data._CACHE


def test_lying_footer_is_caught_by_the_batches_real_size(tmp_path, monkeypatch):
    (tmp_path / "data" / "skills").mkdir(parents=True)
    (tmp_path / "data" / "skills" / "x.parquet").write_bytes(_bomb_parquet(40))
    monkeypatch.setattr(intake, "measure_parquet", lambda files, columns: (1, 1))  # the footer claims 1 byte
    monkeypatch.setattr(intake, "MAX_READ_BYTES", 8 * intake.MB)
    with pytest.raises(UpskillError, match="more than 8 MB"):
        data.load_library_dir(tmp_path, source="someone/hostile")


def test_too_many_rows_are_refused(tmp_path, monkeypatch):
    (tmp_path / "data" / "results").mkdir(parents=True)
    pq.write_table(pa.table({"run_id": ["r"] * 5000}), tmp_path / "data" / "results" / "r.parquet")
    monkeypatch.setattr(intake, "MAX_ROWS", 1000)
    with pytest.raises(UpskillError, match="5000 rows"):
        data.load_library_dir(tmp_path, source="someone/rows")


def test_plan_download_measures_exactly_what_would_be_fetched(monkeypatch):
    mb = intake.MB
    listing = [
        ("README.md", 100),
        ("data/skills/a.parquet", 10 * mb),
        ("data/results/r.parquet", 10 * mb),
        ("skills/a/SKILL.md", 900 * mb),  # per skill, on demand: not part of the library load
        ("data/other/huge.bin", 900 * mb),  # not the layout: never fetched
    ]
    assert intake.plan_download("o/n", listing) == intake.ALLOW_PATTERNS
    monkeypatch.setattr(intake, "MAX_DOWNLOAD_BYTES", 15 * mb)
    with pytest.raises(UpskillError, match="holds 20 MB of tables"):
        intake.plan_download("o/n", listing)
    with pytest.raises(UpskillError, match="does not list the size"):
        intake.plan_download("o/n", [("data/skills/a.parquet", None)])
    monkeypatch.setattr(intake, "MAX_FILES", 2)
    many = [(f"data/skills/s{i}.parquet", 1) for i in range(3)]
    with pytest.raises(UpskillError, match="3 parquet files"):
        intake.plan_download("o/n", many)


def test_huge_skill_folder_is_not_downloaded(monkeypatch):
    sizes = {"skills/big/SKILL.md": 100, "skills/big/assets/blob.bin": 50 * intake.MB, "skills/other/x": 1}
    with pytest.raises(UpskillError, match="2 files, 50.0 MB"):
        intake.check_skill_download("o/n", "big", sizes)
    intake.check_skill_download("o/n", "other", sizes)  # small enough


def test_cache_holds_a_bounded_number_of_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "MAX_CACHED_BYTES", 3 * intake.MB)
    libs = []
    for i in range(4):
        root = tmp_path / f"lib{i}"
        (root / "data" / "skills").mkdir(parents=True)
        n = 2000
        pq.write_table(
            pa.table({"name": [f"s{j}" for j in range(n)], "description": ["x" * 500] * n}),
            root / "data" / "skills" / "s.parquet",
        )
        libs.append(data.load_library(str(root)))
    assert all(lib.nbytes > 1 * intake.MB for lib in libs)
    assert sum(lib.nbytes for lib in data._CACHE.values()) <= 3 * intake.MB
    assert list(data._CACHE.values())[-1] is libs[-1]  # the newest stays
