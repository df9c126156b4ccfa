"""Fixtures for eval tests (helpers live in _evalkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _evalkit import make_skill


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the user's real response cache from tests."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(cache))
    return cache
