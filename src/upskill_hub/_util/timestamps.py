"""UTC time stamps in one format: ISO 8601 with milliseconds and ``Z``.

Result rows, summaries, run plans and the local Hub's commit dates all use it, so they
sort as text and compare across machines and time zones.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """Now, e.g. ``2026-11-23T11:41:14.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
