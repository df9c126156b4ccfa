"""Sizes beside the limit they broke differ visibly (issue 48, item 5)."""

from __future__ import annotations

import pytest

from upskill_hub._util.fsutil import FileRefused, read_capped, too_big
from upskill_hub._util.sizes import exact_size, size_and_limit


@pytest.mark.parametrize(
    ("size", "limit", "shown"),
    [
        (1_050_000, 1_000_000, ("1.05 MB", "1 MB")),  # was "is 1.0 MB; files over 1 MB"
        (1_048_576, 500_000, ("1.0 MB", "500 KB")),  # UPSKILL_MAX_FILE_MB=0.5 was "files over 0 MB"
        (1_000_001, 1_000_000, ("1.000001 MB", "1 MB")),
        (1_048_576, 64_000, ("1.0 MB", "64 KB")),
        (10, 9, ("10 bytes", "9 bytes")),
    ],
)
def test_size_and_limit_never_read_the_same(size: int, limit: int, shown: tuple[str, str]) -> None:
    assert size_and_limit(size, limit) == shown


def test_a_limit_is_shown_exactly() -> None:
    assert [exact_size(n) for n in (64_000, 500_000, 1_250_000, 50_000_000, 999)] == [
        "64 KB", "500 KB", "1.25 MB", "50 MB", "999 bytes"
    ]  # fmt: skip


def test_refusals_show_a_size_above_the_limit(tmp_path) -> None:
    assert too_big(1_050_000, 1_000_000).startswith("is 1.05 MB; files over 1 MB are not read")
    assert "files over 500 KB" in too_big(1_050_000, 500_000)
    big = tmp_path / "data.txt"
    big.write_bytes(b"x" * 1_050_000)
    with pytest.raises(FileRefused, match=r"is 1\.05 MB; files over 1 MB .*UPSKILL_MAX_FILE_MB"):
        read_capped(big, 1_000_000)
