"""What the local Hub's store is made of: file entries, commits and a commit's operations, as
values apart from the store (:mod:`.storage`) that locks, reads and writes them."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from typing import Any

from upskill_hub._util.hashing import git_blob_sha1
from upskill_hub._util.timestamps import utc_now


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The git-lfs pointer file git stores in place of an LFS file."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class Entry:
    """One file in a commit's tree; ``oid`` is its git blob id (of the pointer for LFS files)."""

    sha256: str
    size: int
    lfs: bool
    oid: str

    @staticmethod
    def regular(data: bytes) -> Entry:
        return Entry(hashlib.sha256(data).hexdigest(), len(data), False, git_blob_sha1(data))

    @staticmethod
    def lfs_object(sha256: str, size: int) -> Entry:
        return Entry(sha256, size, True, git_blob_sha1(lfs_pointer(sha256, size)))

    @property
    def pointer_size(self) -> int:
        return len(lfs_pointer(self.sha256, self.size))

    @property
    def etag(self) -> str:
        """What resolve answers as ETag: the sha256 for LFS files, the git oid otherwise (as the Hub)."""
        return self.sha256 if self.lfs else self.oid

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size": self.size, "lfs": self.lfs, "oid": self.oid}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Entry:
        return Entry(data["sha256"], int(data["size"]), bool(data["lfs"]), data["oid"])


@dataclass(frozen=True)
class Commit:
    """An immutable commit: its tree maps every file path to an :class:`Entry`."""

    id: str
    parents: tuple[str, ...]
    tree: dict[str, Entry]
    title: str
    message: str
    author: str
    date: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parents": list(self.parents),
            "tree": {p: e.to_json() for p, e in sorted(self.tree.items())},
            "title": self.title,
            "message": self.message,
            "author": self.author,
            "date": self.date,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Commit:
        return Commit(
            id=data["id"],
            parents=tuple(data["parents"]),
            tree={p: Entry.from_json(e) for p, e in data["tree"].items()},
            title=data["title"],
            message=data["message"],
            author=data["author"],
            date=data["date"],
        )

    @staticmethod
    def new(
        parents: tuple[str, ...], tree: dict[str, Entry], title: str, message: str, author: str
    ) -> Commit:
        """A commit dated now, its id the sha1 of its content and a nonce (equal commits get distinct ids)."""
        draft = Commit("", parents, dict(tree), title, message, author, utc_now())
        body = json.dumps({**draft.to_json(), "nonce": os.urandom(8).hex()}, sort_keys=True).encode()
        return replace(draft, id=hashlib.sha1(body).hexdigest())


@dataclass
class Operation:
    """One line of an NDJSON commit, already validated."""

    kind: str  # "add" | "delete_file" | "delete_folder"
    path: str
    entry: Entry | None = None
    #: Inline content of an added regular file; stored only once the whole commit is valid.
    data: bytes | None = None
