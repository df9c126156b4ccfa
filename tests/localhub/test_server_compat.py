"""Client-compatibility suite: the unmodified huggingface_hub client against the local Hub.

Every test goes through ``HfApi`` / ``hf_hub_download`` / ``snapshot_download`` with
``HF_ENDPOINT`` pointing at the session server (see tests/conftest.py), over all four repo
types where the behaviour is type-independent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_TYPES = ["model", "dataset", "space", "kernel"]


def _create(api, repo_id: str, repo_type: str, **kw):
    extra = {"space_sdk": "gradio"} if repo_type == "space" else {}
    return api.create_repo(repo_id, repo_type=repo_type, **extra, **kw)


def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "sub" / "deep").mkdir(parents=True)
    (src / "README.md").write_text("---\nlicense: apache-2.0\ntags: [agent-skills]\n---\n# Hello\n")
    (src / "a.txt").write_text("hello world\n")
    (src / "sub" / "c.md").write_text("# c\n")
    (src / "sub" / "deep" / "weights.safetensors").write_bytes(os.urandom(3000))  # LFS by extension
    (src / "sub" / "blob.dat").write_bytes(b"\x00\x01binary" * 100)  # LFS: NUL bytes
    return src


@pytest.mark.parametrize("repo_type", REPO_TYPES)
def test_roundtrip_all_repo_types(hub_server, hub_repo_id, repo_type, tmp_path):
    from huggingface_hub import HfApi, hf_hub_download, snapshot_download

    api = HfApi()
    url = _create(api, hub_repo_id, repo_type)
    assert url.repo_id == hub_repo_id
    assert url.repo_type == repo_type
    src = _folder(tmp_path)

    commit = api.upload_folder(folder_path=src, repo_id=hub_repo_id, repo_type=repo_type)
    api.upload_file(
        path_or_fileobj=b"single\n", path_in_repo="single.txt", repo_id=hub_repo_id, repo_type=repo_type
    )

    files = set(api.list_repo_files(hub_repo_id, repo_type=repo_type))
    assert files == {
        ".gitattributes",
        "README.md",
        "a.txt",
        "single.txt",
        "sub/c.md",
        "sub/blob.dat",
        "sub/deep/weights.safetensors",
    }

    info = api.repo_info(hub_repo_id, repo_type=repo_type)
    assert info.sha and info.sha != commit.oid  # upload_file made a newer commit
    # KernelInfo keeps siblings as raw dicts; the other info classes parse them.
    siblings = {
        (s["rfilename"] if isinstance(s, dict) else s.rfilename): (
            s.get("lfs") if isinstance(s, dict) else s.lfs
        )
        for s in info.siblings
    }
    assert siblings["sub/deep/weights.safetensors"] is not None
    assert siblings["sub/blob.dat"] is not None
    assert siblings["a.txt"] is None
    assert info.private is False
    if repo_type != "kernel":
        assert info.card_data is not None and info.card_data.get("license") == "apache-2.0"

    assert api.file_exists(hub_repo_id, "sub/c.md", repo_type=repo_type)
    assert not api.file_exists(hub_repo_id, "sub/missing.md", repo_type=repo_type)

    local = hf_hub_download(hub_repo_id, "sub/deep/weights.safetensors", repo_type=repo_type)
    assert Path(local).read_bytes() == (src / "sub" / "deep" / "weights.safetensors").read_bytes()
    snap = Path(snapshot_download(hub_repo_id, repo_type=repo_type))
    for rel in ("a.txt", "sub/c.md", "sub/blob.dat", "sub/deep/weights.safetensors", "README.md"):
        assert (snap / rel).read_bytes() == (src / rel).read_bytes(), rel

    api.delete_file("sub/c.md", hub_repo_id, repo_type=repo_type)
    assert "sub/c.md" not in api.list_repo_files(hub_repo_id, repo_type=repo_type)
    commits = api.list_repo_commits(hub_repo_id, repo_type=repo_type)
    assert [c.title for c in commits][-1] == "initial commit"
    assert len(commits) == 4


def test_tree_listing_recursive_and_paths_info(hub_server, hub_repo_id, tmp_path):
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile, RepoFolder

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    api.upload_folder(folder_path=_folder(tmp_path), repo_id=hub_repo_id, repo_type="dataset")

    top = {(e.path, type(e)) for e in api.list_repo_tree(hub_repo_id, repo_type="dataset")}
    assert ("sub", RepoFolder) in top and ("a.txt", RepoFile) in top
    assert not any(p.startswith("sub/") for p, _ in top)

    sub = {e.path for e in api.list_repo_tree(hub_repo_id, "sub", repo_type="dataset")}
    assert sub == {"sub/c.md", "sub/blob.dat", "sub/deep"}

    rec = {e.path: e for e in api.list_repo_tree(hub_repo_id, recursive=True, repo_type="dataset")}
    assert isinstance(rec["sub/deep"], RepoFolder)
    weights = rec["sub/deep/weights.safetensors"]
    assert weights.lfs is not None and weights.lfs.size == 3000 and len(weights.lfs.sha256) == 64

    expanded = list(api.list_repo_tree(hub_repo_id, "sub", expand=True, repo_type="dataset"))
    assert all(e.last_commit is not None for e in expanded)

    info = api.get_paths_info(hub_repo_id, ["a.txt", "sub", "missing"], repo_type="dataset")
    assert [(type(e), e.path) for e in info] == [(RepoFile, "a.txt"), (RepoFolder, "sub")]

    from huggingface_hub.errors import RemoteEntryNotFoundError

    with pytest.raises(RemoteEntryNotFoundError):
        list(api.list_repo_tree(hub_repo_id, "nope", repo_type="dataset"))


def test_tree_pagination(tmp_path, hub_repo_id):
    """A page size of 3 forces the client to follow the Link header."""
    from huggingface_hub import CommitOperationAdd, HfApi

    from upskill_hub.localhub.testing import running_server

    with running_server(tmp_path / "root", tree_page_size=3, commits_page_size=2) as hub:
        api = HfApi(endpoint=hub.url, token="hf_anyTokenMayWriteHere0001")
        api.create_repo(hub_repo_id)
        ops = [CommitOperationAdd(f"f{i:02d}.txt", f"{i}".encode()) for i in range(10)]
        api.create_commit(hub_repo_id, ops, commit_message="ten files")
        for i in range(3):
            api.upload_file(path_or_fileobj=b"x%d" % i, path_in_repo="more.txt", repo_id=hub_repo_id)
        hub.clear_requests()
        files = api.list_repo_files(hub_repo_id)
        tree_calls = [r for r in hub.requests if "/tree/" in r.path]
        assert len(files) == 12 and len(set(files)) == 12
        assert len(tree_calls) == 4  # 12 entries / 3 per page
        assert len(api.list_repo_commits(hub_repo_id)) == 5  # initial + ten files + 3 uploads


def test_branches_tags_refs_and_revisions(hub_server, hub_repo_id):
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, RevisionNotFoundError

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="model")
    first = api.upload_file(path_or_fileobj=b"v1", path_in_repo="x.txt", repo_id=hub_repo_id)
    api.create_branch(hub_repo_id, branch="v1")
    api.create_tag(hub_repo_id, tag="release-1", tag_message="first")
    api.upload_file(path_or_fileobj=b"v2", path_in_repo="x.txt", repo_id=hub_repo_id)
    api.upload_file(path_or_fileobj=b"on-branch", path_in_repo="x.txt", repo_id=hub_repo_id, revision="v1")

    with pytest.raises(HfHubHTTPError) as exc:
        api.create_branch(hub_repo_id, branch="v1")
    assert exc.value.response.status_code == 409
    api.create_branch(hub_repo_id, branch="v1", exist_ok=True)

    refs = api.list_repo_refs(hub_repo_id)
    assert {b.name for b in refs.branches} == {"main", "v1"}
    assert [(t.name, t.target_commit) for t in refs.tags] == [("release-1", first.oid)]
    assert refs.converts == []

    assert Path(hf_hub_download(hub_repo_id, "x.txt", revision="release-1")).read_bytes() == b"v1"
    assert Path(hf_hub_download(hub_repo_id, "x.txt", revision="v1")).read_bytes() == b"on-branch"
    assert Path(hf_hub_download(hub_repo_id, "x.txt")).read_bytes() == b"v2"
    assert Path(hf_hub_download(hub_repo_id, "x.txt", revision=first.oid)).read_bytes() == b"v1"
    assert api.model_info(hub_repo_id, revision="release-1").sha == first.oid

    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(hub_repo_id, "x.txt", revision="nope")
    assert not api.revision_exists(hub_repo_id, "nope")

    api.delete_branch(hub_repo_id, branch="v1")
    api.delete_tag(hub_repo_id, tag="release-1")
    refs = api.list_repo_refs(hub_repo_id)
    assert [b.name for b in refs.branches] == ["main"] and refs.tags == []


def test_create_repo_conflict_and_delete(hub_server, hub_repo_id):
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    with pytest.raises(HfHubHTTPError) as exc:
        api.create_repo(hub_repo_id, repo_type="dataset")
    assert exc.value.response.status_code == 409
    assert api.create_repo(hub_repo_id, repo_type="dataset", exist_ok=True).repo_id == hub_repo_id
    # Same name, other type: a different repo.
    assert not api.repo_exists(hub_repo_id, repo_type="model")

    api.delete_repo(hub_repo_id, repo_type="dataset")
    assert not api.repo_exists(hub_repo_id, repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info(hub_repo_id)
    with pytest.raises(RepositoryNotFoundError):
        api.delete_repo(hub_repo_id, repo_type="dataset")
    api.delete_repo(hub_repo_id, repo_type="dataset", missing_ok=True)


def test_parent_commit_conflict_is_refused(hub_server, hub_repo_id):
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    base = api.dataset_info(hub_repo_id).sha
    api.create_commit(
        hub_repo_id,
        [CommitOperationAdd("a.txt", b"a")],
        commit_message="a",
        repo_type="dataset",
        parent_commit=base,
    )
    with pytest.raises(HfHubHTTPError) as exc:
        api.create_commit(
            hub_repo_id,
            [CommitOperationAdd("b.txt", b"b")],
            commit_message="b",
            repo_type="dataset",
            parent_commit=base,
        )
    assert exc.value.response.status_code == 412
    assert "b.txt" not in api.list_repo_files(hub_repo_id, repo_type="dataset")


def test_create_pr_makes_pr_ref(hub_server, hub_repo_id):
    from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    info = api.create_commit(
        hub_repo_id,
        [CommitOperationAdd("p.txt", b"pr")],
        commit_message="pr",
        repo_type="dataset",
        create_pr=True,
    )
    assert info.pr_num == 1 and info.pr_revision == "refs/pr/1"
    assert "p.txt" not in api.list_repo_files(hub_repo_id, repo_type="dataset")
    assert "p.txt" in api.list_repo_files(hub_repo_id, repo_type="dataset", revision="refs/pr/1")
    path = hf_hub_download(hub_repo_id, "p.txt", repo_type="dataset", revision="refs/pr/1")
    assert Path(path).read_bytes() == b"pr"
    refs = api.list_repo_refs(hub_repo_id, repo_type="dataset", include_pull_requests=True)
    assert [p.ref for p in refs.pull_requests] == ["refs/pr/1"]


def test_unchanged_upload_makes_no_commit(hub_server, hub_repo_id, tmp_path):
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="dataset")
    src = _folder(tmp_path)
    first = api.upload_folder(folder_path=src, repo_id=hub_repo_id, repo_type="dataset")
    hub_server.clear_requests()
    second = api.upload_folder(folder_path=src, repo_id=hub_repo_id, repo_type="dataset")
    assert second.oid == first.oid
    assert len(api.list_repo_commits(hub_repo_id, repo_type="dataset")) == 2
    sent = [
        r
        for r in hub_server.requests
        if r.method in ("PUT", "POST") and "/commit/" in r.path or r.method == "PUT"
    ]
    assert sent == []


def test_whoami_validate_yaml_and_listing(hub_server, hub_repo_id):
    from huggingface_hub import HfApi

    api = HfApi()
    me = api.whoami()
    assert me["name"] == "user" and me["auth"]["accessToken"]["role"] == "write"
    api.create_repo(hub_repo_id, repo_type="model")
    assert hub_repo_id in {m.id for m in api.list_models(author="user")}
    assert hub_repo_id not in {m.id for m in api.list_models(author="someone-else")}
    with pytest.raises(ValueError, match="Invalid metadata"):
        api.upload_file(path_or_fileobj=b"---\n: : bad\n---\n", path_in_repo="README.md", repo_id=hub_repo_id)
