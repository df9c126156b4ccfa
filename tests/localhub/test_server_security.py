"""Security of the local Hub: who may write, who may see private repos, no token in logs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from upskill_hub.localhub.testing import TEST_READ_TOKEN, TEST_WRITE_TOKEN


def _status(exc_info) -> int:
    return exc_info.value.response.status_code


def test_write_without_token_or_with_read_token_is_refused(hub_server, hub_repo_id):
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    writer = HfApi(token=TEST_WRITE_TOKEN)
    reader = HfApi(token=TEST_READ_TOKEN)
    anonymous = HfApi(token=False)
    stranger = HfApi(token="hf_notAKnownTokenAtAll000000000")

    with pytest.raises(HfHubHTTPError) as exc:
        anonymous.create_repo(hub_repo_id)
    assert _status(exc) == 401
    with pytest.raises(HfHubHTTPError) as exc:
        reader.create_repo(hub_repo_id)
    assert _status(exc) == 403
    with pytest.raises(HfHubHTTPError) as exc:
        stranger.create_repo(hub_repo_id)
    assert _status(exc) == 401

    writer.create_repo(hub_repo_id)
    for api, status in ((anonymous, 401), (reader, 403), (stranger, 401)):
        with pytest.raises(HfHubHTTPError) as exc:
            api.create_commit(hub_repo_id, [CommitOperationAdd("x.txt", b"x")], commit_message="nope")
        assert _status(exc) == status
        with pytest.raises(HfHubHTTPError) as exc:
            api.upload_file(
                path_or_fileobj=b"\0" * 100, path_in_repo="w.bin", repo_id=hub_repo_id
            )  # LFS path
        assert _status(exc) == status
        with pytest.raises(HfHubHTTPError) as exc:
            api.create_branch(hub_repo_id, branch="b")
        assert _status(exc) == status
        with pytest.raises(HfHubHTTPError) as exc:
            api.delete_repo(hub_repo_id)
        assert _status(exc) == status
    # Nothing was changed by the refused writes; reads still work for public repos.
    assert anonymous.list_repo_files(hub_repo_id) == [".gitattributes"]
    assert len(reader.list_repo_commits(hub_repo_id)) == 1
    assert reader.whoami()["auth"]["accessToken"]["role"] == "read"


def test_private_repo_invisible_without_token(hub_server, hub_repo_id):
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import RepositoryNotFoundError

    writer = HfApi(token=TEST_WRITE_TOKEN)
    writer.create_repo(hub_repo_id, repo_type="dataset", private=True)
    writer.upload_file(
        path_or_fileobj=b"secret", path_in_repo="s.txt", repo_id=hub_repo_id, repo_type="dataset"
    )
    assert writer.dataset_info(hub_repo_id).private is True

    anonymous = HfApi(token=False)
    assert hub_repo_id not in {d.id for d in anonymous.list_datasets(author="user")}
    assert hub_repo_id in {d.id for d in writer.list_datasets(author="user")}
    assert hub_repo_id in {d.id for d in HfApi(token=TEST_READ_TOKEN).list_datasets(author="user")}
    with pytest.raises(RepositoryNotFoundError):
        anonymous.dataset_info(hub_repo_id)
    with pytest.raises(RepositoryNotFoundError):
        list(anonymous.list_repo_tree(hub_repo_id, repo_type="dataset"))
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(hub_repo_id, "s.txt", repo_type="dataset", token=False)
    assert not anonymous.file_exists(hub_repo_id, "s.txt", repo_type="dataset")
    # The read token may read it.
    path = hf_hub_download(hub_repo_id, "s.txt", repo_type="dataset", token=TEST_READ_TOKEN)
    assert Path(path).read_bytes() == b"secret"

    writer.update_repo_settings(hub_repo_id, repo_type="dataset", private=False)
    assert anonymous.dataset_info(hub_repo_id).private is False


def test_open_mode_any_token_writes_and_says_so(tmp_path, hub_repo_id):
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    from upskill_hub.localhub.testing import running_server

    with running_server(tmp_path / "root", read_tokens=("hf_readOnlyTokenForOpenMode01",)) as hub:
        HfApi(endpoint=hub.url, token="hf_whateverTokenWorksHere0001").create_repo(hub_repo_id)
        with pytest.raises(HfHubHTTPError) as exc:
            HfApi(endpoint=hub.url, token=False).create_repo(hub_repo_id + "-2")
        assert _status(exc) == 401
        with pytest.raises(HfHubHTTPError) as exc:
            HfApi(endpoint=hub.url, token="hf_readOnlyTokenForOpenMode01").create_repo(hub_repo_id + "-3")
        assert _status(exc) == 403


def test_lfs_upload_url_needs_valid_signature_and_matching_content(hub_server, hub_repo_id):
    """The LFS PUT carries no token: only a signed href from the (authenticated) batch call works."""
    import hashlib

    import httpx2
    from huggingface_hub import HfApi

    HfApi().create_repo(hub_repo_id)
    data = b"\0payload" * 64
    oid = hashlib.sha256(data).hexdigest()
    base = hub_server.url
    auth = {"authorization": f"Bearer {TEST_WRITE_TOKEN}"}
    batch = httpx2.post(
        f"{base}/{hub_repo_id}.git/info/lfs/objects/batch",
        json={"operation": "upload", "objects": [{"oid": oid, "size": len(data)}], "hash_algo": "sha256"},
        headers=auth,
    ).json()
    href = batch["objects"][0]["actions"]["upload"]["href"]
    forged = href.split("?sig=")[0] + "?sig=" + "0" * 64
    assert httpx2.put(forged, content=data).status_code == 403
    assert httpx2.put(href, content=data[:-1] + b"X").status_code == 400  # sha256 mismatch
    assert httpx2.put(href, content=data).status_code == 200
    again = httpx2.post(
        f"{base}/{hub_repo_id}.git/info/lfs/objects/batch",
        json={"operation": "upload", "objects": [{"oid": oid, "size": len(data)}]},
        headers=auth,
    ).json()
    assert "actions" not in again["objects"][0]  # already there: nothing to upload
    anon = httpx2.post(
        f"{base}/{hub_repo_id}.git/info/lfs/objects/batch",
        json={"operation": "upload", "objects": [{"oid": oid, "size": len(data)}]},
    )
    assert anon.status_code == 401


def test_tokens_never_logged(hub_server, hub_repo_id, caplog):
    from huggingface_hub import HfApi

    caplog.set_level(logging.DEBUG, logger="upskill_hub.localhub")
    api = HfApi()
    api.create_repo(hub_repo_id)
    api.upload_file(path_or_fileobj=b"\0bin" * 10, path_in_repo="x.bin", repo_id=hub_repo_id)
    HfApi(token=TEST_READ_TOKEN).list_repo_files(hub_repo_id)
    text = caplog.text
    assert "/commit/main 200" in text and "/info/lfs/objects/upload/" in text
    for secret in (TEST_WRITE_TOKEN, TEST_READ_TOKEN, "sig=", "Bearer"):
        assert secret not in text


@pytest.mark.parametrize("bad", ["../x.txt", "/abs.txt", "a//b.txt", ".git/config", "a/./b"])
def test_unsafe_paths_are_refused(hub_server, hub_repo_id, bad):
    import base64
    import json

    import httpx2
    from huggingface_hub import HfApi

    HfApi().create_repo(hub_repo_id)
    lines = [
        {"key": "header", "value": {"summary": "evil"}},
        {
            "key": "file",
            "value": {"path": bad, "content": base64.b64encode(b"x").decode(), "encoding": "base64"},
        },
    ]
    r = httpx2.post(
        f"{hub_server.url}/api/models/{hub_repo_id}/commit/main",
        content=b"".join(json.dumps(x).encode() + b"\n" for x in lines),
        headers={"authorization": f"Bearer {TEST_WRITE_TOKEN}", "content-type": "application/x-ndjson"},
    )
    assert r.status_code == 400
    assert HfApi().list_repo_files(hub_repo_id) == [".gitattributes"]
