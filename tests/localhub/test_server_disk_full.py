"""The local Hub on a full or read-only disk: 507 / 503 with a message, never a 500 (issue 29, class 4)."""

from __future__ import annotations

import subprocess

import pytest
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError
from small_fs import small_fs

from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, running_server


def _http_error(exc: BaseException) -> HfHubHTTPError:
    """The HTTP error behind ``exc`` (an LFS upload's error arrives wrapped in a RuntimeError)."""
    while exc is not None and not isinstance(exc, HfHubHTTPError):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None
    return exc


def test_full_disk_is_507_then_the_same_commit_succeeds_once_space_is_freed(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    blob = bytes(range(256)) * 1024  # 256 KB, more than the disk has left
    with small_fs(tmp_path / "small", "128k") as (mnt, grow), running_server(
        mnt / "hub", write_tokens=(TEST_WRITE_TOKEN,)
    ) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        api.create_repo("user/data", repo_type="dataset")
        before = api.list_repo_commits("user/data", repo_type="dataset")
        for path in ("notes.txt", "table.parquet"):  # an inline file and an LFS upload
            with pytest.raises((HfHubHTTPError, RuntimeError)) as exc:
                api.create_commit("user/data", [CommitOperationAdd(path, blob)], commit_message="big", repo_type="dataset")
            http = _http_error(exc.value)
            assert http.response.status_code == 507, http
            assert "disk is full; nothing was stored" in str(http)
        assert api.list_repo_commits("user/data", repo_type="dataset") == before  # no half commit
        assert not [p.name for p in (mnt / "hub" / "tmp").iterdir() if p.name.startswith("upload-")]
        grow()
        api.create_commit("user/data", [CommitOperationAdd("table.parquet", blob)], commit_message="big", repo_type="dataset")
        assert "table.parquet" in api.list_repo_files("user/data", repo_type="dataset")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        with pytest.raises((HfHubHTTPError, RuntimeError)) as exc:
            api.create_commit("user/data", [CommitOperationAdd("more.txt", b"x")], commit_message="ro", repo_type="dataset")
        http = _http_error(exc.value)
        assert http.response.status_code == 503 and "read-only" in str(http)
        assert api.list_repo_files("user/data", repo_type="dataset")  # reads still work
