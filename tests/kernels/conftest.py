"""Fixtures for the kernels tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The helpers are a plain module next to this file; make it importable in any import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_helpers import write_noarch_project  # noqa: E402


@pytest.fixture
def noarch_project(tmp_path: Path) -> Path:
    return write_noarch_project(tmp_path / "tiny-noarch")
