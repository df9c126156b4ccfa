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
That folder is named after the new version's own folder, so the skill's name check holds
even when the skill folder is the repository's root. A tree git itself would never write
(``git mktree`` accepts one: a file and a folder of one name, a name twice) and entries
that are no plain file (a symlink, a submodule) are refused in one line.

A revision (``git:REF``, ``OWNER/NAME@REVISION``) is checked before git, the file system or
the Hub sees it: a 10,000-character one is a clear error, not ``File name too long``.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from upskill_hub._util import fsutil, limits
from upskill_hub.errors import UpskillError
from upskill_hub.skill import Skill, require_skill

#: Bytes of files a ``git:REF`` version may hold (``UPSKILL_AGAINST_MAX_MB``), checked before reading.
GIT_MAX_BYTES = int(limits.env_number("UPSKILL_AGAINST_MAX_MB", 64) * 1_000_000)
#: Seconds each git command may take.
GIT_TIMEOUT_S = 60.0
#: Longest revision accepted after ``git:`` or ``@``: git's refs and the Hub's branch names
#: stay far below it, and it keeps every path and URL built from one within limits.
MAX_REVISION_CHARS = 256
#: A Hub revision: a branch or tag name (``main``, ``v1.0``, ``refs/pr/1``) or a commit sha.
_HUB_REVISION_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")
#: File modes of a plain file in a git tree (``ls-tree`` prints them as stored).
_FILE_MODES = {b"100644": 0o644, b"100755": 0o755}


class SkillAbsentAtRef(UpskillError):
    """The skill's folder holds no file at the git revision: the skill is newer than it.

    A comparison cannot go on without an old version, so this stays an error; upskill's CI
    mode (``eval --scenarios --gate upskill``) catches it and marks the skill NEW instead.
    """


@contextlib.contextmanager
def old_version(spec: str, new: Skill) -> Iterator[Skill]:
    """The skill ``spec`` names, loaded and valid, for as long as the ``with`` block runs."""
    if spec.startswith("git:"):
        ref = check_git_revision(spec, spec[len("git:") :])
        with tempfile.TemporaryDirectory(prefix="upskill-against-") as tmp:
            yield _from_git(spec, ref, new, Path(tmp))
        return
    if _is_folder(spec):
        yield require_skill(Path(spec).expanduser())
        return
    repo, _, revision = spec.partition("@")
    if repo.count("/") != 1 or repo.startswith((".", "/", "~")):
        raise UpskillError(
            f"--against {_shown(spec)}: no such folder, not git:REF, and not a Hub repo OWNER/NAME[@REVISION]"
        )
    from upskill_hub.hub.pull import fetch_skills

    (skill,), _ = fetch_skills(repo, [new.name], check_hub_revision(spec, revision) or None)
    yield skill


def _shown(spec: str) -> str:
    """``spec`` quoted for an error line, cut short: a hostile one may be 10,000 characters."""
    return repr(spec) if len(spec) <= 80 else repr(spec[:60]) + f"… ({len(spec):,} characters)"


def _is_folder(spec: str) -> bool:
    """Whether ``spec`` names an existing folder; a string no file system takes (too long) names none."""
    try:
        return Path(spec).expanduser().is_dir()
    except (OSError, ValueError, RuntimeError):  # ENAMETOOLONG, a NUL, "~nosuchuser"
        return False


def check_git_revision(spec: str, ref: str) -> str:
    """``ref`` when git may be asked about it; else one line saying what a revision looks like.

    Refused before git runs: nothing, an option (``--output=...``), control characters or
    bidirectional overrides (:func:`fsutil.name_problem`), and anything over
    :data:`MAX_REVISION_CHARS`.
    """
    if (
        not ref
        or len(ref) > MAX_REVISION_CHARS
        or ref.startswith("-")
        or fsutil.name_problem(ref) is not None
    ):
        raise UpskillError(
            f"--against {_shown(spec)}: name a git revision after git: (git:HEAD~1, git:main, a tag), "
            f"without control characters, up to {MAX_REVISION_CHARS} characters"
        )
    return ref


def check_hub_revision(spec: str, revision: str) -> str:
    """``revision`` (after ``@``; empty means the default branch) when the Hub may be asked for it.

    A branch, tag or commit: letters, digits, ``.``, ``_``, ``-`` and ``/`` between names
    (``refs/pr/1``), up to :data:`MAX_REVISION_CHARS`; no ``..`` or ``//``, as git refs allow.
    """
    if revision and (
        len(revision) > MAX_REVISION_CHARS
        or not _HUB_REVISION_RE.fullmatch(revision)
        or ".." in revision
        or "//" in revision
        or revision.endswith(("/", "."))
    ):
        raise UpskillError(
            f"--against {_shown(spec)}: the revision after @ must be a branch, tag or commit "
            f"(letters, digits, '.', '_', '-', '/'), up to {MAX_REVISION_CHARS} characters"
        )
    return revision


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
    """The files of ``new``'s folder at ``ref``, written under ``tmp`` and loaded from there.

    They go to ``tmp/<the new version's folder name>``, whatever the folder's place in the
    repository: a temporary name would fail the skill's name check when the skill folder is
    the repository's root (its path in the repository is then ``.``).
    """
    if new.path is None:
        raise UpskillError(f"--against {spec}: the new version must be a folder in a git repository")
    folder = Path(new.path).resolve()
    if folder.is_file():
        folder = folder.parent
    top = Path(_git(spec, folder, "rev-parse", "--show-toplevel").decode().strip())
    rel = folder.relative_to(top.resolve()).as_posix()
    prefix = "" if rel == "." else rel + "/"
    sha = _git(spec, top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    listing = _git(spec, top, "ls-tree", "-r", "-z", "--long", "--full-name", sha, "--", rel)
    blobs: list[tuple[str, str, int]] = []
    total = 0
    for entry in filter(None, listing.split(b"\0")):
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, oid, size = meta.split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if not path.startswith(prefix):
            continue
        path = fsutil.check_relpath(path[len(prefix) :])
        if kind != b"blob" or mode not in _FILE_MODES:
            what = {b"120000": "a symlink", b"160000": "a submodule"}.get(mode, f"mode {mode.decode()}")
            raise UpskillError(
                f"--against {spec}: {prefix}{fsutil.shown_path(path)} at {ref} is {what}: "
                "only plain files are read from git (compare against a checked-out folder instead)"
            )
        total += int(size)
        if total > GIT_MAX_BYTES:
            raise UpskillError(
                f"--against {spec}: {rel} at {ref} holds over {GIT_MAX_BYTES:,} bytes "
                "(raise UPSKILL_AGAINST_MAX_MB to allow more)"
            )
        blobs.append((oid.decode(), path, _FILE_MODES[mode]))
    if not blobs:
        raise SkillAbsentAtRef(
            f"--against {spec}: {rel if prefix else 'the skill folder'} does not exist at {ref}"
        )
    _check_tree_shape(spec, ref, prefix, [path for _, path, _ in blobs])
    root = tmp / fsutil.check_relpath(folder.name)
    data = _git(spec, top, "cat-file", "--batch", stdin="".join(f"{oid}\n" for oid, _, _ in blobs).encode())
    pos = 0
    for oid, path, file_mode in blobs:
        header_end = data.index(b"\n", pos)
        got, kind, size_text = data[pos:header_end].split()
        if got.decode() != oid or kind != b"blob":  # cat-file answers in the order asked
            raise UpskillError(f"--against {spec}: git cat-file answered {got.decode()} for {oid}")
        size = int(size_text)
        content = data[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
        dest = root / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(content)
        dest.chmod(file_mode)
    return require_skill(root)


def _check_tree_shape(spec: str, ref: str, prefix: str, paths: list[str]) -> None:
    """Refuse a tree no checkout could hold: a name twice, or a file where a folder goes.

    ``git mktree`` writes such trees (``git fsck`` flags them); writing one out would end in
    ``FileExistsError`` halfway through, so it is refused before anything is written.
    """
    files: set[str] = set()
    for path in paths:
        if path in files:
            raise UpskillError(
                f"--against {spec}: the tree at {ref} holds {prefix}{fsutil.shown_path(path)} twice"
            )
        files.add(path)
    for path in paths:
        parts = path.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in files:
                clash = fsutil.shown_path("/".join(parts[:i]))
                raise UpskillError(
                    f"--against {spec}: the tree at {ref} holds both a file and a folder named {prefix}{clash}"
                )
