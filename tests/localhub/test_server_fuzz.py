"""Hypothesis against the local Hub's commit and LFS payloads: no 500, state unchanged on error."""

from __future__ import annotations

import json

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, running_server

AUTH = {"Authorization": f"Bearer {TEST_WRITE_TOKEN}"}

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30)
json_values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4), max_leaves=12)  # fmt: skip
paths = st.sampled_from(["a.txt", "d/b.txt", "../x", "a\x00b", "a\r\nb", "", "/abs", ".git/config", "d", "d/"]) | st.text(max_size=40)  # fmt: skip
oids = st.sampled_from(["0" * 64, "f" * 64, "zz", ""]) | st.text(alphabet="0123456789abcdef", min_size=63, max_size=65)  # fmt: skip

commit_values = st.fixed_dictionaries(
    {},
    optional={
        "summary": st.text(max_size=20) | json_values,
        "path": paths | json_values,
        "content": st.sampled_from(["eA==", "!!", ""]) | json_values,
        "encoding": st.sampled_from(["base64", "utf-8", "rot13"]) | json_values,
        "oid": oids | json_values,
        "algo": st.sampled_from(["sha256", "md5"]),
        "size": st.integers(-5, 10**12) | json_values,
        "parentCommit": st.text(max_size=41) | json_values,
    },
)
commit_lines = st.fixed_dictionaries(
    {"key": st.sampled_from(["header", "file", "lfsFile", "deletedFile", "deletedFolder", "other"]) | json_values,
     "value": commit_values | json_values}  # fmt: skip
)
lfs_bodies = st.fixed_dictionaries(
    {},
    optional={
        "operation": st.sampled_from(["upload", "download"]) | json_values,
        "objects": st.lists(st.fixed_dictionaries({}, optional={"oid": oids | json_values,
                                                                "size": st.integers(-5, 10**15) | json_values}),
                            max_size=3) | json_values,  # fmt: skip
        "transfers": json_values,
    },
)


def _state(root) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for sub in ("repos", "blobs") for p in (root / sub).rglob("*")
            if p.is_file() and p.parent.name != "objects"}  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("fuzz"), write_tokens=(TEST_WRITE_TOKEN,)) as srv:
        httpx2.post(f"{srv.url}/api/repos/create", headers=AUTH, json={"name": "fuzz"}).raise_for_status()
        yield srv


_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])  # fmt: skip


@_FUZZ
@given(lines=st.lists(commit_lines, max_size=4), raw_tail=st.binary(max_size=20))
def test_fuzzed_commit_payloads_never_500_and_refusals_change_nothing(server, lines, raw_tail):
    body = b"\n".join(json.dumps(x).encode() for x in lines) + b"\n" + raw_tail
    before = _state(server.root)
    r = httpx2.post(f"{server.url}/api/models/user/fuzz/commit/main", headers=AUTH, content=body, timeout=30)
    assert r.status_code < 500, (r.status_code, r.text[:300])
    assert "\n" not in r.headers.get("x-error-message", "")
    if r.status_code >= 400:
        assert _state(server.root) == before


@_FUZZ
@given(body=lfs_bodies | json_values)
def test_fuzzed_lfs_batch_payloads_never_500(server, body):
    before = _state(server.root)
    r = httpx2.post(f"{server.url}/user/fuzz.git/info/lfs/objects/batch", headers=AUTH, json=body, timeout=30)
    assert r.status_code < 500, (r.status_code, r.text[:300])
    assert _state(server.root) == before  # the batch API never writes


def test_an_error_message_cut_at_a_space_still_answers(server):
    """Found by the fuzzer above: the 500-character cut of X-Error-Message landed on a space,
    h11 refused the trailing blank and the client saw the connection drop instead of a 400."""
    prefix = "Unknown commit operation " + repr("")  # the message up to the key's repr
    key = "k" * (500 - len(prefix) - 3) + " " * 40  # the cut falls inside the spaces
    body = json.dumps({"key": key, "value": {}}).encode() + b"\n"
    r = httpx2.post(f"{server.url}/api/models/user/fuzz/commit/main", headers=AUTH, content=body, timeout=30)
    assert r.status_code == 400
    assert r.headers["x-error-message"].startswith("Unknown commit operation")
