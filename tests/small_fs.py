"""A real, small file system for disk-full tests: a tmpfs mounted for one test.

The suite runs as root (as CI does); where ``mount`` is not allowed the test is skipped
with the reason. ``grow()`` frees space the way a user would see it (the files stay).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_fs(path: Path, size: str = "40k") -> Iterator[tuple[Path, Callable[[], None]]]:
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({proc.stderr.decode().strip()})")

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=20m", str(path)], check=True)

    try:
        yield path, grow
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
