"""The local Hub sweeps abandoned partial uploads out of ``tmp/`` while it runs, never a live one."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest

from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, running_server

AUTH = {"Authorization": f"Bearer {TEST_WRITE_TOKEN}"}
LONG_AGO = time.time() - 24 * 3600


def _wait_for(condition: Callable[[], bool], what: str, limit_s: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail after ``limit_s`` (a bound, not a timing assumption)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


def _backdate(path: Path) -> None:
    os.utime(path, (LONG_AGO, LONG_AGO))


def test_abandoned_partial_uploads_are_swept_while_the_server_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("UPSKILL_HUB_SWEEP_S", "0.05")
    with running_server(tmp_path / "hub") as hub:
        tmp = hub.root / "tmp"
        # Left after the server started (a client cut off mid-upload, a crash of another process).
        abandoned = tmp / "upload-abandoned"
        abandoned.write_bytes(b"x" * 4096)
        half_deleted = tmp / "deleted-abc"
        (half_deleted / "repo").mkdir(parents=True)
        for path in (abandoned, half_deleted):
            _backdate(path)
        fresh = tmp / "upload-another-process"  # young: another process may be writing it now
        fresh.write_bytes(b"y")
        _wait_for(lambda: not abandoned.exists() and not half_deleted.exists(), "the sweep")
        assert fresh.exists()


def test_a_live_upload_is_never_swept_however_old_its_file_looks(tmp_path, monkeypatch):
    monkeypatch.setenv("UPSKILL_HUB_SWEEP_S", "0.02")
    data = os.urandom(200_000)
    oid = hashlib.sha256(data).hexdigest()
    with running_server(tmp_path / "hub", write_tokens=(TEST_WRITE_TOKEN,)) as hub:
        tmp = hub.root / "tmp"
        created = httpx2.post(
            f"{hub.url}/api/repos/create", headers=AUTH, json={"name": "big", "type": "model"}
        )
        assert created.status_code == 200
        batch = httpx2.post(
            f"{hub.url}/user/big.git/info/lfs/objects/batch",
            headers=AUTH,
            json={"operation": "upload", "objects": [{"oid": oid, "size": len(data)}]},
        )
        href = batch.json()["objects"][0]["actions"]["upload"]["href"]
        release = threading.Event()

        def body() -> Iterator[bytes]:
            yield data[:1000]
            release.wait(30)  # a slow client: the rest comes later
            yield data[1000:]

        answer: dict[str, httpx2.Response] = {}
        sender = threading.Thread(
            target=lambda: answer.update(r=httpx2.put(href, content=body(), timeout=60))
        )
        sender.start()
        try:
            _wait_for(lambda: any(tmp.glob("upload-*")), "the upload's temporary file")
            (live,) = tmp.glob("upload-*")
            _backdate(live)  # as old as an abandoned one: only being held keeps it
            runs = hub.sweeper.runs
            _wait_for(lambda: hub.sweeper.runs >= runs + 3, "three sweeps")
            assert hub.sweeper.sweep() == []
            assert live.exists()
        finally:
            release.set()
            sender.join(60)
        assert answer["r"].status_code == 200
        assert (hub.root / "blobs" / oid[:2] / oid).read_bytes() == data
        assert list(tmp.iterdir()) == []  # the received file became the blob
