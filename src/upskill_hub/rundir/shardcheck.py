"""The local record that lets push trust the runner's ``results.parquet`` without rereading the rows.

When the runner writes ``results.parquet`` it already holds every row and masks them; what
it checked is noted next to it in ``.results.parquet.check`` (a JSON file that stays in the
run folder: push builds parquet shards, it never uploads run-folder files). A push then
decides two things from this small file and a ``stat``, instead of reading 80 MB of JSON:

* **current**: ``results.jsonl`` still has the size and modification time it had when
  the parquet was written (any append, compaction or edit changes one of them), and the
  parquet's sha256 is the one recorded (a half-written or swapped file is not trusted);
* **checked for today's secrets**: every secret value push would mask now
  (:func:`upskill_hub._util.redact.secret_values`) was masked when the parquet was written, and
  with the same token patterns. The values themselves are never stored: only an HMAC-SHA256
  of each under a random salt of this record, which tells "this value was checked" and
  nothing that helps recover it.

Anything else (no record, a record that does not parse, another format version, a stale
stamp, a secret exported after the run) makes push fall back to checking the rows.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub._util.fsutil import FileRefused, write_json_atomic
from upskill_hub._util.hashing import sha256_hex
from upskill_hub._util.redact import rules_fingerprint
from upskill_hub.rundir.files import RESULTS_CHECK, RESULTS_FILE, read_run_file

#: Bumped whenever the record's meaning changes; a record of another version is ignored.
FORMAT = 1
#: (size, modification time in ns) of ``results.jsonl``; (-1, -1) when it does not exist.
Stamp = tuple[int, int]


def jsonl_stamp(run_dir: Path) -> Stamp:
    """Size and modification time of the run's ``results.jsonl``: it changes when a row is added."""
    try:
        st = (Path(run_dir) / RESULTS_FILE).lstat()  # a symlink's own stamp: push refuses it anyway
    except FileNotFoundError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def _digest(salt: bytes, value: str) -> str:
    return hmac.new(salt, value.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class ShardRecord:
    """What ``results.parquet`` was built from and checked against (see the module docstring)."""

    stamp: Stamp
    parquet_sha256: str
    rules: str
    salt: bytes
    secret_digests: frozenset[str]

    @classmethod
    def new(cls, stamp: Stamp, parquet: bytes, values: Iterable[str]) -> ShardRecord:
        """A record for ``parquet``, built from the jsonl at ``stamp`` and masked for ``values``."""
        salt = secrets.token_bytes(16)
        digests = frozenset(_digest(salt, v) for v in values)
        return cls(stamp, sha256_hex(parquet), rules_fingerprint(), salt, digests)

    def describes(self, stamp: Stamp, parquet: bytes) -> bool:
        """True when ``parquet`` is the file recorded here and the jsonl has not changed since."""
        return (
            self.stamp == stamp
            and self.rules == rules_fingerprint()
            and self.parquet_sha256 == sha256_hex(parquet)
        )

    def covers(self, values: Iterable[str]) -> bool:
        """True when every one of ``values`` was among the secrets masked when the parquet was made."""
        return all(_digest(self.salt, v) in self.secret_digests for v in values)

    def adding(self, values: Iterable[str]) -> ShardRecord:
        """This record, noting that the parquet was since checked for ``values`` too."""
        return replace(self, secret_digests=self.secret_digests | {_digest(self.salt, v) for v in values})

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "jsonl_size": self.stamp[0],
            "jsonl_mtime_ns": self.stamp[1],
            "parquet_sha256": self.parquet_sha256,
            "rules": self.rules,
            "salt": self.salt.hex(),
            "secrets": sorted(self.secret_digests),
        }

    @classmethod
    def from_json(cls, data: Any) -> ShardRecord | None:
        """The record in ``data``, or ``None`` for anything malformed (never an exception)."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        stamp = (data.get("jsonl_size"), data.get("jsonl_mtime_ns"))
        texts = (data.get("parquet_sha256"), data.get("rules"), data.get("salt"))
        digests = data.get("secrets")
        if not (
            all(type(n) is int for n in stamp)
            and all(isinstance(t, str) for t in texts)
            and isinstance(digests, list)
            and all(isinstance(d, str) for d in digests)
        ):
            return None
        sha, rules, salt = texts
        try:
            return cls((stamp[0], stamp[1]), sha, rules, bytes.fromhex(salt), frozenset(digests))
        except ValueError:  # a salt that is not hex
            return None


def read_record(run_dir: Path) -> ShardRecord | None:
    """The run folder's record; ``None`` when missing, unreadable or malformed."""
    try:
        data = safejson.loads(read_run_file(Path(run_dir) / RESULTS_CHECK, limits.MAX_CONFIG_BYTES))
    except (OSError, ValueError, FileRefused):  # ValueError: not JSON, not UTF-8, too deep
        return None
    return ShardRecord.from_json(data)


def write_record(run_dir: Path, record: ShardRecord) -> None:
    write_json_atomic(Path(run_dir) / RESULTS_CHECK, record.to_json())
