"""The change set of one agent call: what it created, modified and deleted in its folder.

Built from the two snapshots the harness already takes (``path -> digest``, see
:mod:`upskill_hub.lift.harness.workspace`), so nothing is walked again: the snapshot's
digest is the file's sha256 when it hashed it, and each changed file is opened once (no
symlink followed, :mod:`~upskill_hub.artifacts.safeio`) for its size and its first bytes,
which give its kind. A file the "after" snapshot did not see is called deleted only when
it is really gone (a cut snapshot misses files that are still there). At most
:data:`~upskill_hub.artifacts.budgets.MAX_LISTED` files are listed; the rest are counted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub._util.fsutil import shown_path
from upskill_hub._util.redact import redact
from upskill_hub.artifacts import budgets
from upskill_hub.artifacts.kinds import HEAD_BYTES, guess_from_name, sniff
from upskill_hub.artifacts.safeio import Refused, exists_inside, open_inside, read_head

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ORDER = {"created": 0, "modified": 1, "deleted": 2}


@dataclass(frozen=True)
class ChangedFile:
    """One file the run created, modified or deleted.

    ``sha256`` is ``None`` where the snapshot compared the file by size and time only (over
    its hashing budget) or for a symlink; ``size`` is ``None`` for a deleted file; ``note``
    says anything odd in one line (a symlink's target, a file that could not be opened).
    """

    path: str
    status: str  # created | modified | deleted
    kind: str  # one of kinds.KINDS
    size: int | None
    sha256: str | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["note"]:
            d.pop("note")
        return d


@dataclass
class ChangeSet:
    """The listed changes (created first, then modified, then deleted, each by path), how many
    more were left out, and the snapshot's own notes on what it did not look at."""

    files: list[ChangedFile] = field(default_factory=list)
    omitted: int = 0
    cut: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"files": [f.to_dict() for f in self.files], "omitted": self.omitted, "cut": list(self.cut)}

    def masked(self, secrets: Sequence[str] = ()) -> ChangeSet:
        """A copy whose paths and notes are masked like answers (an agent may name a file, or
        point a symlink, with a key it was given): for everything shown or stored."""
        extra = list(secrets)
        files = [
            ChangedFile(masked_path(f.path, extra), f.status, f.kind, f.size, f.sha256, redact(f.note, extra))
            for f in self.files
        ]
        return ChangeSet(files, self.omitted, [redact(c, extra) for c in self.cut])

    def paths(self, status: str | None = None) -> list[str]:
        return [f.path for f in self.files if status is None or f.status == status]


def masked_path(path: str, secrets: Sequence[str] = ()) -> str:
    """A changed file's path as it may be shown or stored (a change set, ``changed.json``):
    one printable line (:func:`~upskill_hub._util.fsutil.shown_path`) with any key in it
    masked, since an agent may name a file with a key it was given."""
    return redact(shown_path(path), list(secrets))


def _symlink_note(rel: str, target: str) -> str:
    parent = os.path.dirname(rel)
    inside = not os.path.isabs(target) and not os.path.normpath(os.path.join(parent, target)).startswith("..")
    where = "inside the workspace" if inside else "outside the workspace"
    return f"symlink to {target[:200]!r} ({where}); not followed"


def _describe(root: Path, rel: str, status: str, digest: str, identity: tuple[int, int] | None) -> ChangedFile:
    if digest.startswith("symlink:"):
        target = digest[len("symlink:") :]
        return ChangedFile(rel, status, "symlink", len(target.encode()), None, _symlink_note(rel, target))
    sha = digest if _SHA256.match(digest) else None
    try:
        opened = open_inside(root, rel, identity)
    except Refused as exc:
        return ChangedFile(rel, status, guess_from_name(rel), None, sha, str(exc))
    try:
        kind = sniff(rel, read_head(opened, HEAD_BYTES))
        note = "" if sha else "not hashed (over the snapshot's hashing budget): compared by size and time"
        return ChangedFile(rel, status, kind, opened.size, sha, note)
    except OSError as exc:
        return ChangedFile(rel, status, guess_from_name(rel), opened.size, sha, f"cannot be read ({exc.strerror})")
    finally:
        os.close(opened.fd)


def change_set(
    root: Path,
    before: Mapping[str, str],
    after: Mapping[str, str],
    *,
    identity: tuple[int, int] | None = None,
    cut: Sequence[str] = (),
) -> ChangeSet:
    """What changed under ``root`` from the snapshot ``before`` to ``after`` (``path -> digest``).

    ``identity`` (``(st_dev, st_ino)`` of ``root``) guards against a folder swapped by the
    agent: then no file is opened. ``cut`` are the snapshots' notes, kept with the result.
    """
    entries = [(p, "created" if p not in before else "modified") for p, d in after.items() if before.get(p) != d]
    entries += [(p, "deleted") for p in before if p not in after]
    entries.sort(key=lambda e: (_ORDER[e[1]], e[0]))
    out = ChangeSet(cut=list(dict.fromkeys(cut)))
    for rel, status in entries:
        if len(out.files) >= budgets.MAX_LISTED:
            out.omitted += 1
            continue
        if status == "deleted":
            if exists_inside(root, rel, identity):
                continue  # the "after" snapshot did not reach it (cut): still there, not deleted
            digest = before[rel]
            sha = digest if _SHA256.match(digest) else None
            kind = "symlink" if digest.startswith("symlink:") else guess_from_name(rel)
            out.files.append(ChangedFile(rel, status, kind, None, sha))
            continue
        out.files.append(_describe(root, rel, status, after[rel], identity))
    return out
