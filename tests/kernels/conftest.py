"""Fixtures for the kernels tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_helpers import write_noarch_project


@pytest.fixture
def noarch_project(tmp_path: Path) -> Path:
    return write_noarch_project(tmp_path / "tiny-noarch")
