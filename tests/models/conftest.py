"""Fixtures for model tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskill_hub.models import local

BACKENDS = Path(__file__).parent / "backends"


@pytest.fixture
def scripted_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The scripted backend (tests/models/backends) in the real worker, a fake model file,
    fresh workers, and ``tmp_path / "crash-marker"`` as the file that arms its crash."""
    monkeypatch.setenv("UPSKILL_LOCAL_BACKEND", "scripted_backend:ScriptedBackend")
    monkeypatch.setenv("PYTHONPATH", str(BACKENDS))
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SCRIPTED_CRASH_MARKER", str(tmp_path / "crash-marker"))
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    local.stop_workers()
    yield gguf
    local.stop_workers()
