"""Push reads the repo's ``skills``/``runs`` tables for the card from a local content-addressed cache."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import HfApi, hf_hub_download
from test_push_support import write_run, write_skill

from upskill_hub.hub import table_cache
from upskill_hub.hub.push import push


def _readme(repo_id: str) -> str:
    return Path(hf_hub_download(repo_id, "README.md", repo_type="dataset")).read_text(encoding="utf-8")


def _downloads(hub_server) -> list[str]:
    return [r.path for r in hub_server.requests if "/resolve/" in r.path]


def _repo_with_runs(tmp_path: Path, repo_id: str, n: int) -> Path:
    """A repo with skills ``skill-0``.. and one run each (``run-0``..); returns a further skill's folder.

    The card shows each skill's latest run, so every run named on it came from a table read back.
    """
    for k in range(n):
        skill_dir = write_skill(tmp_path / "skills", f"skill-{k}")
        push([skill_dir], repo_id, results=[write_run(tmp_path / "runs", f"run-{k}", skill_dir)])
    return write_skill(tmp_path / "skills", "skill-new")


def test_tables_pushed_from_this_machine_are_never_downloaded(hub_server, hub_repo_id, tmp_path):
    skill_dir = _repo_with_runs(tmp_path, hub_repo_id, 3)
    hub_server.clear_requests()
    push([skill_dir], hub_repo_id, results=[write_run(tmp_path / "runs", "run-new", skill_dir)])
    assert _downloads(hub_server) == []
    card = _readme(hub_repo_id)
    assert all(f"run `run-{k}`" in card and f"### skill-{k}" in card for k in range(3)) and "run-new" in card


def test_tables_pushed_elsewhere_are_downloaded_once_then_kept(
    hub_server, hub_repo_id, tmp_path, monkeypatch
):
    skill_dir = _repo_with_runs(tmp_path, hub_repo_id, 2)
    monkeypatch.setenv(table_cache.CACHE_ENV, str(tmp_path / "other-machine-cache"))
    hub_server.clear_requests()
    push([skill_dir], hub_repo_id, results=[write_run(tmp_path / "runs", "run-b", skill_dir)])
    assert len(_downloads(hub_server)) >= 4  # the earlier skills' and runs' tables
    assert all(f"run `run-{k}`" in _readme(hub_repo_id) for k in range(2))
    hub_server.clear_requests()
    push([skill_dir], hub_repo_id, results=[write_run(tmp_path / "runs", "run-c", skill_dir)])
    assert _downloads(hub_server) == []


def test_a_damaged_copy_is_a_miss_and_a_changed_table_is_read_anew(hub_server, hub_repo_id, tmp_path):
    skill_dir = _repo_with_runs(tmp_path, hub_repo_id, 1)
    for path in Path(table_cache.cache_dir()).rglob("*"):
        if path.is_file():
            path.write_bytes(b"damaged")
    # Someone else rewrites run-0's summary on the Hub: its hash changes, the old copy no longer applies.
    other = write_run(
        tmp_path / "elsewhere", "run-0", tmp_path / "skills" / "skill-0", models=("model-from-elsewhere",)
    )
    from upskill_hub.hub import dataset_repo as dr

    data = dr.runs_table_bytes(dr.load_run_dir(other))
    assert data is not None
    HfApi().upload_file(path_or_fileobj=data, path_in_repo=dr.runs_path("run-0"), repo_id=hub_repo_id,
                        repo_type="dataset")  # fmt: skip
    hub_server.clear_requests()
    push([skill_dir], hub_repo_id, results=[write_run(tmp_path / "runs", "run-1", skill_dir)])
    assert _downloads(hub_server)
    card = _readme(hub_repo_id)
    assert "model-from-elsewhere" in card and "run-1" in card


def test_cache_keys_never_name_a_path(tmp_path, monkeypatch):
    monkeypatch.setenv(table_cache.CACHE_ENV, str(tmp_path / "cache"))
    table_cache.put(b"x", "sha256-../../escape")
    assert table_cache.get("sha256-../../escape") is None
    assert not (tmp_path / "escape").exists() and not list(tmp_path.rglob("escape"))


def test_kept_rows_are_a_miss_unless_they_parse_and_name_their_key(tmp_path, monkeypatch):
    monkeypatch.setenv(table_cache.CACHE_ENV, str(tmp_path / "cache"))
    key = "sha256-" + "ab" * 32
    table_cache.put_rows(key, [{"run_id": "r1", "n": 3, "lifts": [{"model": "m"}]}])
    assert table_cache.get_rows(key) == [{"run_id": "r1", "n": 3, "lifts": [{"model": "m"}]}]
    [kept] = list((tmp_path / "cache").rglob("*.rows.json"))
    other = "sha256-" + "cd" * 32
    kept.write_text('{"key": "' + other + '", "rows": []}')
    assert table_cache.get_rows(key) is None
    kept.write_text('{"key": "' + key + '", "rows": [')
    assert table_cache.get_rows(key) is None
