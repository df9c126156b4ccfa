"""An earlier version of a skill, from wherever authors keep one: a folder, a git ref, the Hub.

``eval NEW --against OLD`` names OLD as

* a folder holding the skill (a copy set aside, another checkout);
* ``git:REF``: the same skill path at ``REF`` of the git repository that holds NEW
  (``git:HEAD~1``, ``git:main``, a tag or a commit), the comparison upskill's CI makes
  between a pull request's base and head;
* ``OWNER/NAME[@REVISION]``: a skills dataset repo on the Hub, read with ``pull``'s checks
  (every file's size and sha256 against the repo's skills table).

A git version is read with ``git ls-tree`` and ``git cat-file``, never checked out: the
work tree stays as it is, and every path is checked before anything is written into the
temporary folder the old version is loaded from. The blobs are sized before one is read.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from upskill_hub._util import limits
from upskill_hub._util.fsutil import check_relpath
from upskill_hub.errors import UpskillError
from upskill_hub.skill import Skill, require_skill

#: Bytes of files a ``git:REF`` version may hold (``UPSKILL_AGAINST_MAX_MB``), checked before reading.
GIT_MAX_BYTES = int(limits.env_number("UPSKILL_AGAINST_MAX_MB", 64) * 1_000_000)
#: Seconds each git command may take.
GIT_TIMEOUT_S = 60.0


@contextlib.contextmanager
def old_version(spec: str, new: Skill) -> Iterator[Skill]:
    """The skill ``spec`` names, loaded and valid, for as long as the ``with`` block runs."""
    if spec.startswith("git:"):
        with tempfile.TemporaryDirectory(prefix="upskill-against-") as tmp:
            yield _from_git(spec, spec[len("git:") :], new, Path(tmp))
        return
    if Path(spec).expanduser().is_dir():
        yield require_skill(Path(spec).expanduser())
        return
    repo, _, revision = spec.partition("@")
    if repo.count("/") != 1 or repo.startswith((".", "/", "~")):
        raise UpskillError(f"--against {spec!r}: no such folder, not git:REF, and not a Hub repo OWNER/NAME[@REVISION]")
    from upskill_hub.hub.pull import fetch_skills

    (skill,), _ = fetch_skills(repo, [new.name], revision or None)
    yield skill


def _git(spec: str, repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """One git command's output; a failure is one line naming ``--against``."""
    try:
        res = subprocess.run(
            ["git", "-C", str(repo), *args], input=stdin, capture_output=True, timeout=GIT_TIMEOUT_S, check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )  # fmt: skip
    except FileNotFoundError:
        raise UpskillError(f"--against {spec}: git is not installed") from None
    except subprocess.TimeoutExpired:
        raise UpskillError(f"--against {spec}: git {args[0]} took over {GIT_TIMEOUT_S:g} s") from None
    if res.returncode != 0:
        why = (res.stderr.decode("utf-8", "replace").strip().splitlines() or ["failed"])[-1]
        raise UpskillError(f"--against {spec}: {why[:300]}")
    return res.stdout


def _from_git(spec: str, ref: str, new: Skill, tmp: Path) -> Skill:
    """The files of ``new``'s folder at ``ref``, written under ``tmp`` and loaded from there."""
    if not ref or ref.startswith("-") or any(ord(ch) < 32 for ch in ref):
        raise UpskillError(f"--against {spec!r}: name a git revision after git: (git:HEAD~1, git:main, a tag)")
    if new.path is None:
        raise UpskillError(f"--against {spec}: the new version must be a folder in a git repository")
    folder = Path(new.path).resolve()
    if folder.is_file():
        folder = folder.parent
    top = Path(_git(spec, folder, "rev-parse", "--show-toplevel").decode().strip())
    rel = folder.relative_to(top.resolve()).as_posix()
    sha = _git(spec, top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    listing = _git(spec, top, "ls-tree", "-r", "-z", "--long", sha, "--", rel)
    blobs: list[tuple[str, str]] = []
    total = 0
    for entry in filter(None, listing.split(b"\0")):
        meta, _, path = entry.partition(b"\t")
        mode, kind, oid, size = meta.split()
        if kind != b"blob" or mode == b"120000":  # no submodules, no symlinks: a skill's files only
            continue
        total += int(size)
        if total > GIT_MAX_BYTES:
            raise UpskillError(
                f"--against {spec}: {rel} at {ref} holds over {GIT_MAX_BYTES:,} bytes "
                "(raise UPSKILL_AGAINST_MAX_MB to allow more)"
            )
        blobs.append((oid.decode(), path.decode("utf-8", "surrogateescape")))
    if not blobs:
        raise UpskillError(f"--against {spec}: {rel or 'the skill folder'} does not exist at {ref}")
    data = _git(spec, top, "cat-file", "--batch", stdin="".join(f"{oid}\n" for oid, _ in blobs).encode())
    pos = 0
    for oid, path in blobs:
        header_end = data.index(b"\n", pos)
        got, kind, size_text = data[pos:header_end].split()
        if got.decode() != oid or kind != b"blob":  # cat-file answers in the order asked
            raise UpskillError(f"--against {spec}: git cat-file answered {got.decode()} for {oid}")
        size = int(size_text)
        content = data[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
        check_relpath(path)
        dest = tmp / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(content)
    return require_skill(tmp / rel)
