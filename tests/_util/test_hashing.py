"""The Hub's file ids: git blob sha1 for regular files, sha256 for LFS files."""

from __future__ import annotations

import hashlib

from upskill_hub._util.hashing import git_blob_sha1, sha256_hex


def test_git_blob_sha1_matches_git():
    # `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_sha1(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    # `git hash-object /dev/null`
    assert git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_sha256_hex_is_the_plain_digest():
    assert sha256_hex(b"abc") == hashlib.sha256(b"abc").hexdigest()
