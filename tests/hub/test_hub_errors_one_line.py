"""Every failure the Hub client hands ``push``, ``pull`` and ``kernels push`` is one line (issue 50).

``huggingface_hub`` wraps a failed LFS upload in ``RuntimeError("Error while uploading …")``
and a failed download in ``LocalEntryNotFoundError``; the server's own message (a full
disk's 507, a moved branch's 412) sits in the chained exception. The CLI must print one
``Error:`` line carrying that message and what to do, with no traceback, and the repo must
have no new commit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli
from huggingface_hub import HfApi
from test_push_support import write_skill

from upskill_hub.hub.push import push

LFS_UPLOAD = r"/info/lfs/objects/upload/"


def _commits(repo_id: str, repo_type: str = "dataset", revision: str | None = None) -> list[str]:
    return [c.commit_id for c in HfApi().list_repo_commits(repo_id, repo_type=repo_type, revision=revision)]


def _one_error_line(code: int, err: str, *expected: str) -> str:
    """The single ``Error:`` line of a failed command, holding each of ``expected``."""
    assert code == 1, err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), err
    for text in expected:
        assert text in lines[0], err
    return lines[0]


@pytest.fixture
def pushed(hub_server, hub_repo_id, tmp_path) -> tuple[Path, str, list[str]]:
    """A skill already in the repo, then changed so the next push must upload its parquet over LFS."""
    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    (skill_dir / "SKILL.md").write_text((skill_dir / "SKILL.md").read_text() + "\nOne more line.\n")
    return skill_dir, hub_repo_id, _commits(hub_repo_id)


def test_push_507_on_the_lfs_upload_is_one_line_with_the_servers_message(
    hub_server, pushed, capsys, monkeypatch
):
    skill_dir, repo_id, before = pushed
    rule = hub_server.inject_faults(
        method="PUT", path_regex=LFS_UPLOAD, status=507, count=50, message="Quota exceeded: disk is full here"
    )
    code, _out, err = run_cli(["push", str(skill_dir), "--repo", repo_id], capsys, monkeypatch)
    hub_server.clear_faults()
    assert rule.hits >= 1  # the parquet really went over LFS and met the fault
    line = _one_error_line(code, err, "Quota exceeded: disk is full here", "507", "free space")
    assert "data/skills/" in line or repo_id in line
    assert _commits(repo_id) == before  # nothing half-pushed


def test_push_507_on_the_commit_is_one_line_with_the_servers_message(hub_server, pushed, capsys, monkeypatch):
    skill_dir, repo_id, before = pushed
    hub_server.inject_faults(
        method="POST", path_regex=r"/commit/", status=507, count=50, message="disk is full"
    )
    code, _out, err = run_cli(["push", str(skill_dir), "--repo", repo_id], capsys, monkeypatch)
    hub_server.clear_faults()
    _one_error_line(code, err, "disk is full", "free space")
    assert _commits(repo_id) == before


def test_push_412_on_every_commit_says_to_run_it_again(hub_server, pushed, capsys, monkeypatch):
    skill_dir, repo_id, before = pushed
    rule = hub_server.inject_faults(
        method="POST", path_regex=r"/commit/", status=412, count=50, retry_after=0,
        message="A commit has happened since. Please refresh and try again.",
    )  # fmt: skip
    code, _out, err = run_cli(["push", str(skill_dir), "--repo", repo_id], capsys, monkeypatch)
    hub_server.clear_faults()
    assert rule.hits >= 2  # re-planned and retried before giving up
    _one_error_line(code, err, "A commit has happened since", "run the command again")
    assert _commits(repo_id) == before


def test_push_disconnected_during_every_lfs_upload_retries_then_is_one_line(
    hub_server, pushed, capsys, monkeypatch
):
    """An LFS upload whose connection drops arrives as RuntimeError around a transport error."""
    import httpx
    from huggingface_hub import lfs

    from upskill_hub.hub import push as push_module

    skill_dir, repo_id, before = pushed
    uploads = []

    def drop(*_args, **_kwargs):
        uploads.append(1)
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    monkeypatch.setattr(lfs, "_upload_single_part", drop)
    real_policy = push_module.RetryPolicy  # no waits between the attempts: the test stays fast
    monkeypatch.setattr(push_module, "RetryPolicy", lambda **kw: real_policy(**{**kw, "backoff_cap": 0.0}))
    code, _out, err = run_cli(["push", str(skill_dir), "--repo", repo_id], capsys, monkeypatch)
    _one_error_line(code, err, "Server disconnected", "cannot reach the Hub", "network")
    assert (
        len(uploads) == push_module.DEFAULT_MAX_ATTEMPTS
    )  # a dropped upload is retried like a dropped commit
    assert _commits(repo_id) == before


def test_only_a_runtime_error_around_a_hub_error_becomes_one_line(hub_server, hub_repo_id):
    from huggingface_hub.errors import HfHubHTTPError

    from upskill_hub.errors import HubError
    from upskill_hub.hub.client import hub_errors

    hub_server.inject_faults(path_regex=r"/api/datasets/", status=507, count=1, message="no room left")
    with pytest.raises(HubError) as exc, hub_errors(hub_repo_id, action="push to"):
        try:
            HfApi().dataset_info(hub_repo_id)
        except HfHubHTTPError as http:  # what huggingface_hub does around a failed LFS upload
            raise RuntimeError("Error while uploading 'data/x.parquet' to the Hub.") from http
    assert exc.value.status == 507 and "uploading 'data/x.parquet'" in str(exc.value)
    assert "no room left" in str(exc.value) and "free space" in str(exc.value)
    # A RuntimeError of our own is a bug: it keeps its traceback.
    with pytest.raises(RuntimeError, match="a bug of ours"), hub_errors(hub_repo_id, action="push to"):
        raise RuntimeError("a bug of ours") from ValueError("unrelated")


@pytest.fixture
def no_client_waits(monkeypatch) -> None:
    """``huggingface_hub`` retries a 5xx download five times, sleeping in between: not here."""
    import time
    import types

    from huggingface_hub.utils import _http

    monkeypatch.setattr(_http, "time", types.SimpleNamespace(**{**vars(time), "sleep": lambda _s: None}))


def test_pull_with_5xx_on_downloads_is_one_line_and_writes_nothing(
    hub_server, hub_repo_id, tmp_path, capsys, monkeypatch, no_client_waits
):
    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    out = tmp_path / "out"
    rule = hub_server.inject_faults(
        path_regex=r"/resolve/", status=503, count=1000, retry_after=0, message="The Hub is overloaded"
    )
    code, _stdout, err = run_cli(["pull", hub_repo_id, "-o", str(out)], capsys, monkeypatch)
    hub_server.clear_faults()
    assert rule.hits >= 1
    _one_error_line(code, err, "The Hub is overloaded", "503", "retry later")
    assert not out.exists()


def test_pull_run_with_5xx_on_downloads_is_not_a_missing_run(
    hub_server, hub_repo_id, tmp_path, no_client_waits
):
    """A download the Hub failed is a Hub error, never "no run in the repo"."""
    from test_push_support import write_run

    from upskill_hub.errors import HubError
    from upskill_hub.hub.pull import pull_run

    skill_dir = write_skill(tmp_path / "skills")
    run = write_run(tmp_path / "runs", "run-5xx", skill_dir, output=hub_repo_id)
    push([skill_dir], hub_repo_id, results=[run])
    hub_server.inject_faults(
        path_regex=r"/resolve/", status=502, count=1000, retry_after=0, message="Bad gateway"
    )
    with pytest.raises(HubError, match="Bad gateway") as exc:
        pull_run(hub_repo_id, "run-5xx", out_dir=tmp_path / "pulled")
    hub_server.clear_faults()
    assert exc.value.status == 502
    assert not (tmp_path / "pulled").exists()


# --------------------------------------------------------------------------- kernels push
@pytest.fixture
def built_kernel(tmp_path: Path) -> Path:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))
    from kernel_helpers import write_noarch_project

    from upskill_hub.kernels.builders.local import build_local

    project = write_noarch_project(tmp_path / "tiny-noarch")
    build_local(project, smoke=False)
    # A binary file goes through LFS, as a compiled extension would.
    (project / "benchmarks" / "baseline.bin").write_bytes(bytes(range(256)) * 16 + tmp_path.name.encode())
    return project


def _kernel_branches(repo_id: str) -> set[str]:
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        return {b.name for b in HfApi().list_repo_refs(repo_id, repo_type="kernel").branches}
    except RepositoryNotFoundError:
        return set()


def test_kernels_push_507_on_the_lfs_upload_is_one_line_and_leaves_no_branch(
    hub_server, hub_repo_id, built_kernel, capsys, monkeypatch
):
    rule = hub_server.inject_faults(
        method="PUT", path_regex=LFS_UPLOAD, status=507, count=50, message="disk is full on the kernel Hub"
    )
    code, _out, err = run_cli(
        ["kernels", "push", str(built_kernel), "--repo", hub_repo_id], capsys, monkeypatch
    )
    hub_server.clear_faults()
    assert rule.hits >= 1
    _one_error_line(code, err, "disk is full on the kernel Hub", "nothing was committed", "free space")
    assert "v1" not in _kernel_branches(hub_repo_id)  # nothing half-pushed: no empty v1 for get_kernel


def test_push_to_a_really_full_disk_is_one_line(tmp_path, capsys, monkeypatch):
    """The local Hub on a small file system (needs mount): its own 507 reaches the user in one line."""
    from small_fs import small_fs

    from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, running_server

    # 256 KB over LFS, more than the disk has left.
    skill_dir = write_skill(tmp_path / "skills", extra={"references/big.parquet": bytes(range(256)) * 1024})
    with (
        small_fs(tmp_path / "small", "128k") as (mnt, _grow),
        running_server(mnt / "hub", write_tokens=(TEST_WRITE_TOKEN,)) as hub,
    ):
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", hub.url)
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        api.create_repo("user/full", repo_type="dataset")
        before = api.list_repo_commits("user/full", repo_type="dataset")
        code, _out, err = run_cli(["push", str(skill_dir), "--repo", "user/full"], capsys, monkeypatch)
        _one_error_line(code, err, "disk is full", "free space")
        assert api.list_repo_commits("user/full", repo_type="dataset") == before
