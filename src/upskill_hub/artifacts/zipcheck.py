"""Refusing a zip bomb before any reader opens it.

xlsx, docx and pptx files are zips; openpyxl, python-docx and python-pptx inflate their
members as they parse. A zip's central directory declares every member's compressed and
uncompressed size, and Python's ``zipfile`` never inflates a member past its declared size
(a member that lies fails its CRC check instead), so checking the declared sizes first
bounds what any of those readers can inflate. Reading the directory inflates nothing.
"""

from __future__ import annotations

import io
import zipfile

from upskill_hub.artifacts.safeio import human_size

#: Members smaller than this may have any ratio (tiny XML parts compress very well).
_RATIO_FLOOR = 1_000_000


class ZipRefused(Exception):
    """The archive is not opened; ``str(exc)`` says why in one line."""


def check_zip(data: bytes, *, max_total: int, max_ratio: float, max_members: int) -> None:
    """Raise :class:`ZipRefused` unless ``data`` is a zip whose declared sizes stay in bounds."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise ZipRefused(f"not a readable zip archive ({exc})") from None
    if len(infos) > max_members:
        raise ZipRefused(f"{len(infos)} members in the archive, over the limit of {max_members}; not opened")
    total = 0
    for info in infos:
        total += info.file_size
        if total > max_total:
            raise ZipRefused(
                f"declares {human_size(total)}+ uncompressed, over the {human_size(max_total)} limit "
                "(a zip bomb?); not opened"
            )
        if info.file_size > _RATIO_FLOOR:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > max_ratio:
                raise ZipRefused(
                    f"member {info.filename[:80]!r} inflates {ratio:.0f}x ({human_size(info.file_size)} "
                    f"from {human_size(info.compress_size)}), over the {max_ratio:g}x limit (a zip bomb?); not opened"
                )
