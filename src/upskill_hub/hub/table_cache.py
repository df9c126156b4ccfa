"""Local, content-addressed copies of the repo's small tables, so a push need not fetch them again.

Every push renders the card from the repo's ``skills`` and ``runs`` tables: one small
parquet file per skill and per run. Fetching them through the Hub's file API costs a
request or two per file on every push (the files are the same, but each push plans
against a new commit), so a repo with 100 runs made a push 100+ requests long.

The repo's file listing, which push reads anyway, gives each file's hash (LFS sha256 or
git blob id). A file is kept here under that hash and checked against it when read, so a
copy is valid for any repo and commit that lists the same hash, and a damaged copy is
just a miss. Push puts the tables it commits here too: on the machine that pushed them
they are never downloaded at all. Next to each file its rows are kept as JSON (decoding
a small parquet file with dozens of nested columns takes a couple of milliseconds, a
hundred of them a noticeable part of a push); a rows file that does not parse or names
another key is a miss too. Writes are best effort (a read-only cache only costs the
downloads).

``$UPSKILL_HUB_TABLE_CACHE`` names the folder; by default it is ``hub-tables`` in the
user's cache folder for upskill-hub.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from upskill_hub._util.fsutil import write_bytes_atomic
from upskill_hub._util.hashing import git_blob_sha1, sha256_hex

CACHE_ENV = "UPSKILL_HUB_TABLE_CACHE"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("upskill-hub")) / "hub-tables"


def key_of(remote_file) -> str | None:
    """The cache key of a listed repo file (``RepoFile``): its LFS sha256, else its git blob id."""
    lfs = getattr(remote_file, "lfs", None)
    if lfs is not None and getattr(lfs, "sha256", None):
        return f"sha256-{lfs.sha256}"
    blob_id = getattr(remote_file, "blob_id", None)
    return f"gitblob-{blob_id}" if blob_id else None


def _matches(key: str, data: bytes) -> bool:
    kind, _, digest = key.partition("-")
    return digest == (sha256_hex(data) if kind == "sha256" else git_blob_sha1(data))


def _path(key: str) -> Path:
    kind, _, digest = key.partition("-")
    return cache_dir() / kind / digest[:2] / digest


def _valid(key: str) -> bool:
    """Keys come from the Hub's file listing: letters, digits and '-' only, never a path."""
    return bool(key) and all(c.isalnum() or c == "-" for c in key)


def get(key: str) -> bytes | None:
    """The cached bytes for ``key``; ``None`` when absent, unreadable or not matching the key."""
    if not _valid(key):
        return None
    try:
        data = _path(key).read_bytes()
    except OSError:
        return None
    return data if _matches(key, data) else None


def put(data: bytes, key: str | None = None) -> None:
    """Keep ``data`` (under ``key``, or its sha256 when none is given); never raises for a write error."""
    key = key or f"sha256-{sha256_hex(data)}"
    if not _valid(key) or not _matches(key, data):
        return
    with contextlib.suppress(OSError):
        write_bytes_atomic(_path(key), data, fsync=False)


def get_rows(key: str) -> list[dict[str, Any]] | None:
    """The decoded rows of the table file ``key``, when kept; ``None`` for a miss."""
    if not _valid(key):
        return None
    try:
        doc = json.loads(_path(key).with_suffix(".rows.json").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("rows"), list):
        return None
    return doc["rows"]


def put_rows(key: str, rows: list[dict[str, Any]]) -> None:
    """Keep the decoded rows of the table file ``key`` (plain JSON values only); never raises for a write error."""
    if not _valid(key):
        return
    with contextlib.suppress(OSError, TypeError, ValueError):  # a value JSON cannot hold: not kept
        text = json.dumps({"key": key, "rows": rows}, allow_nan=False)
        write_bytes_atomic(_path(key).with_suffix(".rows.json"), text.encode("utf-8"), fsync=False)
