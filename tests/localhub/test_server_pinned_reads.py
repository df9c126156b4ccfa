"""A download of a branch reads the commit its HEAD resolved, even when a commit lands in between.

``huggingface_hub`` sends a HEAD, then GETs from where the HEAD ended and checks the size the
HEAD announced; the local Hub redirects a branch, tag or PR name to ``resolve/<commit>/...``
so that both requests read the same bytes.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx2
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url
from huggingface_hub.file_download import http_get

from upskill_hub._util.hashing import git_blob_sha1
from upskill_hub.localhub.testing import TEST_WRITE_TOKEN

AUTH = {"Authorization": f"Bearer {TEST_WRITE_TOKEN}"}


def _upload(repo_id: str, path: str, data: bytes, **kwargs) -> str:
    info = HfApi().upload_file(
        path_or_fileobj=data, path_in_repo=path, repo_id=repo_id, repo_type="dataset", **kwargs
    )
    return info.oid


def test_a_commit_between_head_and_get_does_not_change_what_the_get_reads(hub_server, hub_repo_id, tmp_path):
    HfApi().create_repo(hub_repo_id, repo_type="dataset")
    old = b"---\nlicense: mit\n---\nshort card\n"
    first = _upload(hub_repo_id, "README.md", old)
    meta = get_hf_file_metadata(hf_hub_url(hub_repo_id, "README.md", repo_type="dataset"))
    assert meta.commit_hash == first and meta.size == len(old)
    _upload(hub_repo_id, "README.md", old + b"a much longer card\n" * 50)  # lands between HEAD and GET

    target = tmp_path / "README.md"
    with open(target, "wb") as fh:  # what hf_hub_download does next: GET from the HEAD's location
        http_get(meta.location, fh, expected_size=meta.size)
    assert target.read_bytes() == old
    assert git_blob_sha1(old) == meta.etag
    # The branch itself moved on: a fresh download reads the new card.
    assert (
        Path(hf_hub_download(hub_repo_id, "README.md", repo_type="dataset"))
        .read_bytes()
        .endswith(b"a much longer card\n")
    )


def test_branch_tag_and_pr_names_redirect_to_their_commit_with_path_and_query(hub_server, hub_repo_id):
    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    sha = _upload(hub_repo_id, "sub dir/a+b #1.txt", b"hello")
    api.create_branch(hub_repo_id, branch="feat/x", repo_type="dataset")
    api.create_tag(hub_repo_id, tag="v1", repo_type="dataset")
    pr_sha = _upload(hub_repo_id, "sub dir/a+b #1.txt", b"from a pr", create_pr=True)
    base = f"{hub_server.url}/datasets/{hub_repo_id}/resolve"
    quoted = "sub%20dir/a%2Bb%20%231.txt"
    for rev, commit in [("main", sha), ("feat%2Fx", sha), ("v1", sha), ("refs%2Fheads%2Fmain", sha),
                        ("refs%2Fpr%2F1", pr_sha), ("refs/pr/1", pr_sha)]:  # fmt: skip
        for method in ("HEAD", "GET"):
            r = httpx2.request(method, f"{base}/{rev}/{quoted}?download=true", headers=AUTH)
            assert r.status_code == 307, (rev, method, r.status_code)
            assert r.headers["location"] == f"/datasets/{hub_repo_id}/resolve/{commit}/{quoted}?download=true"
            assert r.headers["x-repo-commit"] == commit
        followed = httpx2.get(f"{base}/{rev}/{quoted}", headers=AUTH, follow_redirects=True)
        assert followed.status_code == 200
        assert followed.content == (b"from a pr" if commit == pr_sha else b"hello")
    direct = httpx2.head(f"{base}/{sha}/{quoted}", headers=AUTH)  # a commit id is answered in place
    assert direct.status_code == 200 and direct.headers["content-length"] == "5"
    # A missing file is a 404 that names the commit, not a redirect.
    missing = httpx2.head(f"{base}/feat%2Fx/nope.txt", headers=AUTH)
    assert missing.status_code == 404 and missing.headers["x-repo-commit"] == sha
    # A private repo's branch is a 404 to strangers: no redirect, no commit id.
    api.update_repo_settings(hub_repo_id, repo_type="dataset", private=True)
    hidden = httpx2.head(f"{base}/main/{quoted}")
    assert (
        hidden.status_code == 404
        and "location" not in hidden.headers
        and "x-repo-commit" not in hidden.headers
    )
    # The unmodified client downloads through the redirect, by every kind of name.
    for rev, expected in [("feat/x", b"hello"), ("v1", b"hello"), ("refs/pr/1", b"from a pr")]:
        got = hf_hub_download(hub_repo_id, "sub dir/a+b #1.txt", repo_type="dataset", revision=rev)
        assert Path(got).read_bytes() == expected, rev


def test_an_lfs_file_redirects_with_its_linked_size_and_downloads(hub_server, hub_repo_id):
    HfApi().create_repo(hub_repo_id, repo_type="dataset")
    data = bytes(range(256)) * 64
    sha = _upload(hub_repo_id, "weights.bin", data)
    url = hf_hub_url(hub_repo_id, "weights.bin", repo_type="dataset")
    r = httpx2.head(url, headers=AUTH)
    assert r.status_code == 307 and r.headers["x-linked-size"] == str(len(data))
    assert f"/resolve/{sha}/weights.bin" in r.headers["location"]
    meta = get_hf_file_metadata(url)
    assert meta.size == len(data) and meta.commit_hash == sha and f"/resolve/{sha}/" in meta.location
    assert Path(hf_hub_download(hub_repo_id, "weights.bin", repo_type="dataset")).read_bytes() == data


def test_readers_never_see_a_size_mismatch_while_a_writer_commits(hub_server, hub_repo_id, tmp_path):
    """1 writer, 4 readers, bounded by the writer's commits: every download is whole and consistent."""
    HfApi().create_repo(hub_repo_id, repo_type="dataset")
    contents = [b"x" * (10 + 997 * (k % 7)) for k in range(24)]
    _upload(hub_repo_id, "data.txt", contents[0])
    done = threading.Event()
    failures: list[str] = []
    reads = [0]

    def writer() -> None:
        try:
            for data in contents[1:]:
                _upload(hub_repo_id, "data.txt", data)
        finally:
            done.set()

    def reader(k: int) -> None:
        while not done.is_set():
            try:
                got = hf_hub_download(
                    hub_repo_id, "data.txt", repo_type="dataset", force_download=True,
                    cache_dir=tmp_path / f"cache-{k}",
                )  # fmt: skip
                if Path(got).read_bytes() not in contents:
                    failures.append("unknown content")
            except OSError as exc:  # "Consistency check failed: file should be of size ..."
                failures.append(str(exc).splitlines()[0])
            reads[0] += 1

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(k,)) for k in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert reads[0] > 0
    assert failures == [], f"{len(failures)} of {reads[0]} downloads failed: {failures[:3]}"
