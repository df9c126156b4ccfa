"""The local Hub against hostile requests: each test is named after the attack it stops.

Raw HTTP (``httpx2``) is used where the real clients would never send such a request.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from pathlib import Path

import httpx2
import pytest
from huggingface_hub import CommitOperationAdd, HfApi

from upskill_hub.localhub.testing import TEST_READ_TOKEN, TEST_WRITE_TOKEN, running_server

AUTH = {"Authorization": f"Bearer {TEST_WRITE_TOKEN}"}


def _ndjson(*lines: dict) -> bytes:
    return b"\n".join(json.dumps(x).encode() for x in lines)


def _header(summary: str = "s") -> dict:
    return {"key": "header", "value": {"summary": summary}}


def _file(path, content: bytes = b"x") -> dict:
    return {"key": "file", "value": {"path": path, "content": base64.b64encode(content).decode(), "encoding": "base64"}}


def _state(root: Path) -> dict[str, int]:
    """Every file of the store except scratch space: what a refused request must not change."""
    out = {}
    for sub in ("repos", "blobs"):
        for p in (root / sub).rglob("*"):
            if p.is_file():
                out[str(p.relative_to(root))] = p.stat().st_size
    return out


@pytest.fixture
def repo(hub_server, hub_repo_id) -> str:
    HfApi().create_repo(hub_repo_id)
    return hub_repo_id


def _commit_url(hub_server, repo: str, rev: str = "main") -> str:
    return f"{hub_server.url}/api/models/{repo}/commit/{rev}"


# ------------------------------------------------------------------ bodies and auth
def test_anonymous_400mb_body_is_refused_before_it_is_read(hub_server, repo):
    hub_server.clear_requests()
    sent = {"n": 0}

    def body():
        for _ in range(400):
            sent["n"] += 1
            yield b"\0" * (1 << 20)

    try:
        r = httpx2.post(_commit_url(hub_server, repo), content=body(), timeout=30)
        assert r.status_code == 401
    except httpx2.TransportError:
        pass  # the server answered and closed while we were still sending: fine as well
    rec = [x for x in hub_server.requests if x.path.endswith("/commit/main")]
    assert rec and rec[-1].status == 401
    assert rec[-1].bytes_in < 8 * (1 << 20)  # not the 400 MB


def test_oversized_authenticated_body_is_413(tmp_path):
    with running_server(tmp_path / "root", write_tokens=(TEST_WRITE_TOKEN,), max_json_bytes=1000,
                        max_commit_bytes=5000) as srv:  # fmt: skip
        r = httpx2.post(f"{srv.url}/api/repos/create", headers=AUTH, json={"name": "x" * 2000})
        assert r.status_code == 413 and "larger than 1000" in r.headers["x-error-message"]
        httpx2.post(f"{srv.url}/api/repos/create", headers=AUTH, json={"name": "r"}).raise_for_status()
        r = httpx2.post(f"{srv.url}/api/models/user/r/commit/main", headers=AUTH,
                        content=_ndjson(_header(), _file("a.txt", b"y" * 6000)))  # fmt: skip
        assert r.status_code == 413


def test_validate_yaml_of_30mb_does_not_stall_other_requests(hub_server, monkeypatch):
    """Parsing runs off the event loop; a 30 MB document is refused before any parsing.

    Race-free: the parser is held (it waits for ``release``) while another request is made.
    Had the parse run on the event loop, that request could not be answered until release.
    """
    from upskill_hub._util import safeyaml
    from upskill_hub.localhub import app as hub_app

    started, release, parsed = threading.Event(), threading.Event(), []
    real_load = safeyaml.load

    def held_load(text, *args, **kwargs):
        if len(text) > 100_000:  # only the big document (cards the listing reads pass through)
            parsed.append(len(text))
            started.set()
            assert release.wait(60)
        return real_load(text, *args, **kwargs)

    monkeypatch.setattr(hub_app.safeyaml, "load", held_load)
    big = "---\n" + "".join(f"key{i}: value{i}\n" for i in range(45_000)) + "---\n"  # ~0.8 MB: parsed
    huge = "---\n" + "a: b\n" * 6_000_000 + "---\n"  # 30 MB: refused by size
    r = httpx2.post(f"{hub_server.url}/api/validate-yaml", json={"content": huge}, timeout=60)
    assert r.status_code == 413 and parsed == []  # refused unread
    result = {}

    def post() -> None:
        result["r"] = httpx2.post(f"{hub_server.url}/api/validate-yaml", json={"content": big}, timeout=60)

    t = threading.Thread(target=post)
    t.start()
    try:
        assert started.wait(30), "the parse never started"
        httpx2.get(f"{hub_server.url}/api/models", timeout=10).raise_for_status()  # answered mid-parse
        assert "r" not in result  # the parse was indeed still held
    finally:
        release.set()
        t.join(60)
    assert result["r"].status_code == 200, result["r"].text[:200]


def test_deeply_nested_yaml_is_400_not_500(hub_server):
    for doc in ("a: " + "[" * 5000 + "]" * 5000, "a: " + "{b: " * 3000 + "1" + "}" * 3000):
        r = httpx2.post(f"{hub_server.url}/api/validate-yaml", json={"content": f"---\n{doc}\n---\n"})
        assert r.status_code == 400 and "deeper than" in r.json()["error"]


BOMB = "".join(
    f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9 if i else ['"lol"'] * 9) + "]\n"
    for i in range(9)
)


def test_yaml_alias_bomb_in_a_readme_gives_no_card_not_659mb(hub_server, repo):
    assert len(BOMB) < 500
    # huggingface_hub asks validate-yaml first (and refuses): a hostile client commits directly.
    readme = _file("README.md", f"---\n{BOMB}---\n# hi\n".encode())
    httpx2.post(_commit_url(hub_server, repo), headers=AUTH, content=_ndjson(_header(), readme)).raise_for_status()
    for url in (f"{hub_server.url}/api/models/{repo}", f"{hub_server.url}/api/models?full=true&search={repo[5:]}"):
        r = httpx2.get(url, timeout=30)
        assert r.status_code == 200 and len(r.content) < 20_000
    r = httpx2.post(f"{hub_server.url}/api/validate-yaml", json={"content": f"---\n{BOMB}---\n"})
    assert r.status_code == 400 and "alias" in r.json()["error"]


# ------------------------------------------------------------------ payloads
@pytest.mark.parametrize(
    ("what", "body"),
    [
        ("header given as a list", _ndjson({"key": "header", "value": ["summary"]}, _file("a.txt"))),
        ("summary as a number", _ndjson({"key": "header", "value": {"summary": 5}})),
        ("path given as a list", _ndjson(_header(), _file([".."]))),
        ("lfs size as text", _ndjson(_header(), {"key": "lfsFile", "value": {"path": "a.bin", "oid": "0" * 64,
                                                                              "size": "abc"}})),  # fmt: skip
        ("deep nesting", b'{"key": "header", "value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ("not JSON", b"\xff\xfe{"),
        ("unknown key", _ndjson(_header(), {"key": "copyEverything", "value": {}})),
        ("line is a list", b"[1, 2]"),
        ("NUL in a path", _ndjson(_header(), _file("a\u0000b.txt"))),
        ("CRLF in a path", _ndjson(_header(), _file("a\r\nX-Evil: 1.txt"))),
    ],
)
def test_malformed_commit_payload_is_400_and_changes_nothing(hub_server, repo, what, body):
    before = _state(hub_server.root)
    r = httpx2.post(_commit_url(hub_server, repo), headers=AUTH, content=body)
    assert r.status_code == 400, (what, r.status_code, r.text[:200])
    assert "\n" not in r.headers["x-error-message"]
    assert _state(hub_server.root) == before
    assert HfApi().list_repo_files(repo) == [".gitattributes"]


@pytest.mark.parametrize(
    ("suffix", "body"),
    [
        ("preupload/main", {"files": "a.txt"}),
        ("preupload/main", {"files": [{"path": "a.txt", "size": "abc"}]}),
        ("preupload/main", {"files": [{"path": ["a"], "size": 1}]}),
        ("preupload/main", {"files": [{"path": "a.txt", "size": -1}]}),
        ("settings", {"visibility": "secret"}),
        ("settings", {"private": "no"}),
        ("branch/b", {"startingPoint": ["main"]}),
        ("tag/main", {"tag": {"x": 1}}),
    ],
)
def test_malformed_json_payload_is_400(hub_server, repo, suffix, body):
    method = "PUT" if suffix == "settings" else "POST"
    r = httpx2.request(method, f"{hub_server.url}/api/models/{repo}/{suffix}", headers=AUTH, json=body)
    assert r.status_code == 400, r.text[:200]


def test_malformed_lfs_batch_is_400(hub_server, repo):
    url = f"{hub_server.url}/{repo}.git/info/lfs/objects/batch"
    for body in ({"operation": "upload", "objects": [{"oid": "a" * 64, "size": "abc"}]},
                 {"operation": "upload", "objects": "all"}, {"operation": ["upload"]}):  # fmt: skip
        r = httpx2.post(url, headers=AUTH, json=body)
        assert r.status_code == 400, r.text[:200]


def test_commits_page_given_as_text_is_400(hub_server, repo):
    r = httpx2.get(f"{hub_server.url}/api/models/{repo}/commits/main?p=abc")
    assert r.status_code == 400


@pytest.mark.parametrize("rev", ["main%00", "ma%0D%0Ain", "main%0AX-Injected:%201"])
def test_nul_or_crlf_in_a_revision_or_path_is_400_not_a_dropped_connection(hub_server, repo, rev):
    for url in (
        f"{hub_server.url}/api/models/{repo}/revision/{rev}",
        f"{hub_server.url}/{repo}/resolve/{rev}/README.md",
        f"{hub_server.url}/{repo}/resolve/main/a{rev}.txt",
        f"{hub_server.url}/api/models/{repo}/tree/{rev}",
    ):
        r = httpx2.get(url)
        assert r.status_code in (400, 404), (url, r.status_code)
        assert "x-injected" not in r.headers


def test_one_commit_cannot_add_both_f_and_f_slash_x(hub_server, repo):
    before = _state(hub_server.root)
    for lines in ((_file("f"), _file("f/x.txt")), (_file("f/x.txt"), _file("f"))):
        r = httpx2.post(_commit_url(hub_server, repo), headers=AUTH, content=_ndjson(_header(), *lines))
        assert r.status_code == 400 and "folder" in r.headers["x-error-message"]
    assert _state(hub_server.root) == before
    HfApi().create_commit(repo, [CommitOperationAdd("f", b"1")], commit_message="file f")
    r = httpx2.post(_commit_url(hub_server, repo), headers=AUTH, content=_ndjson(_header(), _file("f/x.txt")))
    assert r.status_code == 400 and "is a file" in r.headers["x-error-message"]


def test_unknown_visibility_value_leaves_a_private_repo_private(hub_server, hub_repo_id):
    api = HfApi()
    api.create_repo(hub_repo_id, private=True)
    for body in ({"visibility": "everyone"}, {"visibility": None, "private": "false"}, {"private": False,
                                                                                       "visibility": "private"}):  # fmt: skip
        r = httpx2.put(f"{hub_server.url}/api/models/{hub_repo_id}/settings", headers=AUTH, json=body)
        assert r.status_code == 400
    assert httpx2.get(f"{hub_server.url}/api/models/{hub_repo_id}").status_code == 404  # still private


def test_commit_cannot_use_another_repos_blob_by_hash(hub_server, hub_repo_id):
    import hashlib

    api = HfApi()
    secret_repo, thief = hub_repo_id, hub_repo_id + "-thief"
    api.create_repo(secret_repo, private=True)
    api.create_repo(thief)
    secret = b"\0private weights " * 1000
    api.upload_file(path_or_fileobj=secret, path_in_repo="w.bin", repo_id=secret_repo)
    oid = hashlib.sha256(secret).hexdigest()
    # The batch API does not reveal that the blob exists: it asks for an upload.
    r = httpx2.post(f"{hub_server.url}/{thief}.git/info/lfs/objects/batch", headers=AUTH,
                    json={"operation": "upload", "objects": [{"oid": oid, "size": len(secret)}]})  # fmt: skip
    assert "actions" in r.json()["objects"][0]
    line = {"key": "lfsFile", "value": {"path": "stolen.bin", "algo": "sha256", "oid": oid, "size": len(secret)}}
    r = httpx2.post(_commit_url(hub_server, thief), headers=AUTH, content=_ndjson(_header(), line))
    assert r.status_code == 422
    assert api.list_repo_files(thief) == [".gitattributes"]
    # Someone who really has the bytes uploads them and may then use them (dedup still works).
    api.upload_file(path_or_fileobj=secret, path_in_repo="mine.bin", repo_id=thief)
    assert "mine.bin" in api.list_repo_files(thief)


def test_partial_upload_killed_mid_way_is_swept_at_start(tmp_path):
    root = tmp_path / "root"
    with running_server(root) as srv:
        leftover = srv.root / "tmp" / "upload-killed"
        leftover.write_bytes(b"half")
        fresh = srv.root / "tmp" / "upload-live"
        fresh.write_bytes(b"in progress")
    old = time.time() - 3600
    os.utime(leftover, (old, old))
    with running_server(root):
        assert not leftover.exists()
        assert fresh.exists()  # written a moment ago: maybe another process's live upload


def test_read_token_still_cannot_write_with_a_body(hub_server, repo):
    r = httpx2.post(_commit_url(hub_server, repo), headers={"Authorization": f"Bearer {TEST_READ_TOKEN}"},
                    content=_ndjson(_header(), _file("a.txt")))  # fmt: skip
    assert r.status_code == 403


def test_repo_may_reuse_its_own_blobs_even_from_before_ownership_markers(hub_server, hub_repo_id):
    import shutil

    from huggingface_hub import CommitOperationCopy

    api = HfApi()
    api.create_repo(hub_repo_id)
    api.upload_file(path_or_fileobj=b"\0own weights" * 100, path_in_repo="w.bin", repo_id=hub_repo_id)
    shutil.rmtree(hub_server.root / "repos" / "model" / hub_repo_id / "objects")  # as a repo from an older server
    api.create_commit(hub_repo_id, [CommitOperationCopy("w.bin", "copy.bin")], commit_message="copy")
    assert {"w.bin", "copy.bin"} <= set(api.list_repo_files(hub_repo_id))
