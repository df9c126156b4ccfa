"""Content hashes in the forms the Hub uses, shared by push, the skills table and the local Hub.

The Hub identifies a regular file by its git blob id and an LFS file by its sha256: a push
compares these with the local bytes to tell "unchanged" without downloading, and the local
Hub must report the very same ids, so both sides compute them here.
"""

from __future__ import annotations

import hashlib


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of ``data`` (an LFS file's oid, a skill file's recorded digest)."""
    return hashlib.sha256(data).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a file: what the Hub reports as a regular file's oid and ETag."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
