"""Local Hub: state survives a restart, byte ranges, fault injection, concurrent commits."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, running_server


def test_state_survives_restart(tmp_path, hub_repo_id):
    from huggingface_hub import HfApi

    root = tmp_path / "root"
    weights = os.urandom(50_000)
    with running_server(root, write_tokens=(TEST_WRITE_TOKEN,)) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        api.create_repo(hub_repo_id, repo_type="kernel")
        api.create_repo(hub_repo_id, repo_type="dataset", private=True)
        first = api.upload_file(
            path_or_fileobj=weights, path_in_repo="build/w.bin", repo_id=hub_repo_id, repo_type="kernel"
        )
        api.create_branch(hub_repo_id, branch="v1", repo_type="kernel")
        api.create_tag(hub_repo_id, tag="1.0.0", repo_type="kernel")
        before = api.kernel_info(hub_repo_id)
        port = hub.port

    with running_server(root, write_tokens=(TEST_WRITE_TOKEN,), port=port) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        after = api.kernel_info(hub_repo_id)
        assert after.sha == before.sha == first.oid
        refs = api.list_repo_refs(hub_repo_id, repo_type="kernel")
        assert {b.name for b in refs.branches} == {"main", "v1"} and [t.name for t in refs.tags] == ["1.0.0"]
        assert api.dataset_info(hub_repo_id).private is True
        assert HfApi(endpoint=hub.url, token=False).repo_exists(hub_repo_id, repo_type="dataset") is False
        path = api.hf_hub_download(hub_repo_id, "build/w.bin", repo_type="kernel", cache_dir=tmp_path / "c")
        assert Path(path).read_bytes() == weights
        # The LFS object is still known: re-uploading the same content sends no bytes.
        hub.clear_requests()
        api.upload_file(
            path_or_fileobj=weights, path_in_repo="build/copy.bin", repo_id=hub_repo_id, repo_type="kernel"
        )
        assert not [r for r in hub.requests if r.method == "PUT"]
        assert len(api.list_repo_commits(hub_repo_id, repo_type="kernel")) == 3


def test_range_requests(hub_server, hub_repo_id):
    import httpx2
    from huggingface_hub import HfApi, HfFileSystem

    data = bytes(range(256)) * 40  # 10240 bytes, LFS (NUL bytes)
    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    api.upload_file(path_or_fileobj=data, path_in_repo="d/data.bin", repo_id=hub_repo_id, repo_type="dataset")
    url = f"{hub_server.url}/datasets/{hub_repo_id}/resolve/main/d/data.bin"

    full = httpx2.get(url, follow_redirects=True)  # a branch redirects to its commit
    assert full.status_code == 200 and full.content == data
    assert full.headers["content-length"] == str(len(data))
    assert full.headers["accept-ranges"] == "bytes"
    assert len(full.headers["x-repo-commit"]) == 40
    cases = {
        "bytes=0-9": data[:10],
        "bytes=100-": data[100:],
        "bytes=-16": data[-16:],
        "bytes=10200-99999": data[10200:],
    }
    for header, expected in cases.items():
        r = httpx2.get(url, headers={"Range": header}, follow_redirects=True)
        assert r.status_code == 206, header
        assert r.content == expected, header
        assert r.headers["content-length"] == str(len(expected))
        assert r.headers["content-range"].endswith(f"/{len(data)}")
    r = httpx2.get(url, headers={"Range": "bytes=20000-"}, follow_redirects=True)
    assert r.status_code == 416 and r.headers["content-range"] == f"bytes */{len(data)}"
    head = httpx2.head(url, follow_redirects=True)
    assert (
        head.status_code == 200 and head.headers["content-length"] == str(len(data)) and head.content == b""
    )

    # The real client reads byte ranges through HfFileSystem.
    fs = HfFileSystem()
    with fs.open(f"datasets/{hub_repo_id}/d/data.bin", "rb", block_size=64) as fh:
        fh.seek(5000)
        assert fh.read(100) == data[5000:5100]


def test_resolve_errors_carry_hub_error_codes(hub_server, hub_repo_id):
    import httpx2
    from huggingface_hub import HfApi

    HfApi().create_repo(hub_repo_id)
    base = f"{hub_server.url}/{hub_repo_id}/resolve"
    missing_file = httpx2.get(f"{base}/main/nope.txt")
    assert missing_file.status_code == 404
    assert missing_file.headers["x-error-code"] == "EntryNotFound"
    assert len(missing_file.headers["x-repo-commit"]) == 40
    assert httpx2.get(f"{base}/nobranch/x.txt").headers["x-error-code"] == "RevisionNotFound"
    assert (
        httpx2.get(f"{hub_server.url}/user/nothere-zz/resolve/main/x").headers["x-error-code"]
        == "RepoNotFound"
    )


def test_fault_injection_commit_fails_then_recovers(hub_server, hub_repo_id):
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    rule = hub_server.inject_faults(method="POST", path_regex=r"/commit/", status=500, count=1)
    ops = [CommitOperationAdd("r.parquet", b"PAR1" + b"\0" * 100), CommitOperationAdd("a.txt", b"a")]
    with pytest.raises(HfHubHTTPError) as exc:
        api.create_commit(hub_repo_id, ops, commit_message="one", repo_type="dataset")
    assert exc.value.response.status_code == 500 and rule.hits == 1
    # Nothing landed, but the LFS object was uploaded before the commit failed.
    assert api.list_repo_files(hub_repo_id, repo_type="dataset") == [".gitattributes"]
    hub_server.clear_requests()
    ops = [CommitOperationAdd("r.parquet", b"PAR1" + b"\0" * 100), CommitOperationAdd("a.txt", b"a")]
    api.create_commit(hub_repo_id, ops, commit_message="one", repo_type="dataset")
    assert set(api.list_repo_files(hub_repo_id, repo_type="dataset")) == {
        ".gitattributes",
        "r.parquet",
        "a.txt",
    }
    assert not [r for r in hub_server.requests if r.method == "PUT"]  # the retry re-used the stored object
    assert len(api.list_repo_commits(hub_repo_id, repo_type="dataset")) == 2


def test_fault_injection_on_lfs_is_retried_by_the_client(hub_server, hub_repo_id):
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(hub_repo_id)
    batch = hub_server.inject_faults(
        path_regex=r"/info/lfs/objects/batch$", status=429, count=1, retry_after=0
    )
    put = hub_server.inject_faults(method="PUT", path_regex=r"/info/lfs/objects/upload/", status=500, count=1)
    payload = os.urandom(20_000)
    api.upload_file(path_or_fileobj=payload, path_in_repo="m.bin", repo_id=hub_repo_id)
    assert batch.hits == 1 and put.hits == 1
    injected = [r for r in hub_server.requests if r.injected]
    assert {(r.method, r.status) for r in injected} >= {("POST", 429), ("PUT", 500)}
    assert Path(api.hf_hub_download(hub_repo_id, "m.bin")).read_bytes() == payload


def test_concurrent_commits_serialize(hub_server, hub_repo_id):
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            HfApi().create_commit(
                hub_repo_id,
                [CommitOperationAdd(f"data/{i}.txt", str(i).encode())],
                commit_message=f"c{i}",
                repo_type="dataset",
            )
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    files = api.list_repo_files(hub_repo_id, repo_type="dataset")
    assert {f"data/{i}.txt" for i in range(8)} <= set(files)
    commits = api.list_repo_commits(hub_repo_id, repo_type="dataset")
    assert len(commits) == 9 and len({c.commit_id for c in commits}) == 9
