"""On-disk state of the local Hub: content-addressed blobs plus per-repo git-like metadata.

Why a hand-rolled store and not a git repository: the Hub API the clients speak is not git
(NDJSON commits, LFS pointers addressed by sha256, refs/pr/N), and the server must survive a
restart, serialize concurrent commits and never show a half-written state. So:

```
ROOT/
  blobs/<sha256[:2]>/<sha256>          every file's bytes, written once, never changed
  repos/<type>/<namespace>/<name>/
    refs.json                          branches, tags, pull requests, visibility, sdk
    commits/<commit id>.json           parents, full tree (path -> entry), message, author, date
    objects/<sha256>                   empty marker: this repo uploaded or committed that blob
    .lock                              flock'ed while a commit is being made
  tmp/                                 partial uploads (same file system => atomic rename);
                                       swept at start and while running (see HubStore.sweep_tmp)
  .upskill-hub-store                   marks the folder as a store (see claim_root)
```

The root is a folder the user names (``--root``), so the store claims it before writing a
byte (:func:`claim_root`): an absent or empty folder, one carrying the marker, or one laid out
as an earlier version left it (no marker then) is used; any other folder is refused in one
line, so a mistyped ``--root`` never costs a user their files. The sweep of ``tmp/`` removes
only the entries the store makes there (:data:`SCRATCH_PREFIXES`), never anything else.

Blobs are shared between repos (stored once), but a repo may only *use* a blob it has
proved it holds: one it uploaded (content checked against the sha256) or committed
inline. Otherwise a commit naming another repo's hash would copy that repo's private
file into its own, and the LFS batch answer would reveal that the file exists.

Every JSON file is written to a temporary file and renamed into place, and a commit file
is written before the ref that points at it, so a crash leaves either the old or the new
state. Per-repo locks (a thread lock plus ``flock``) make concurrent commits serialize.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from upskill_hub._util.fsutil import claim_folder, shown_path, write_bytes_atomic, write_json_atomic
from upskill_hub.localhub.records import Commit, Entry, Operation

#: Repo types the server knows, with the URL prefix the clients put before the repo id.
REPO_TYPES = ("model", "dataset", "space", "kernel")
URL_PREFIXES = {"model": "", "dataset": "datasets/", "space": "spaces/", "kernel": "kernels/"}

_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_PR_RE = re.compile(r"^refs/pr/(\d+)$")
#: Seconds an entry of ``tmp/`` that this process does not hold is left alone (another process
#: sharing the root may be writing it); older ones are abandoned and swept.
SWEEP_GRACE_S = 60.0
#: Names the store gives what it makes in ``tmp/`` (received uploads, repos being deleted): the
#: sweep removes only these, so a file someone else put there is never deleted.
SCRATCH_PREFIXES = ("upload-", "deleted-")
#: The file that marks a folder as a local Hub store (written when the store is first opened).
STORE_MARKER = ".upskill-hub-store"
#: Everything a store's root holds (the server's signing key, Jobs' folders, lock files
#: included): a folder of only these, with ``blobs/`` and ``repos/``, is a store an earlier
#: version made before the marker existed.
STORE_ENTRIES = frozenset({"blobs", "repos", "tmp", "locks", "jobs", "server-secret", STORE_MARKER})
#: NUL, CR, LF and the other control characters: never part of a path or ref name.
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

#: The initial commit every new repo gets, like on the Hub (repo info must always have a sha).
_GITATTRIBUTES = b"""*.7z filter=lfs diff=lfs merge=lfs -text
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.gguf filter=lfs diff=lfs merge=lfs -text
*.gz filter=lfs diff=lfs merge=lfs -text
*.parquet filter=lfs diff=lfs merge=lfs -text
*.pt filter=lfs diff=lfs merge=lfs -text
*.pth filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.so filter=lfs diff=lfs merge=lfs -text
*.tar filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
"""


class StoreError(Exception):
    """A request the store refuses: carries the HTTP status and the Hub's ``X-Error-Code``."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def check_repo_path(path: str) -> str:
    """Return ``path`` if it is a safe file path inside a repo, else raise a 400 ``StoreError``."""
    bad = (
        not path
        or len(path) > 1000
        or "\\" in path
        or CONTROL_RE.search(path) is not None
        or path.startswith("/")
        or any(part in ("", ".", "..") for part in path.split("/"))
        or path.split("/")[0] == ".git"
    )
    if bad:
        raise StoreError(400, f"Invalid path in repo: {path!r}", "InvalidPath")
    return path


def check_repo_id(repo_id: str) -> tuple[str, str]:
    """Split ``namespace/name`` and validate both parts like the Hub does (no ``..``, no ``.git``)."""
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(_NAME_RE.match(p) and ".." not in p and "--" not in p for p in parts):
        raise StoreError(400, f"Invalid repo id {repo_id!r}: expected 'namespace/name'", "InvalidRepoId")
    if parts[1].endswith(".git"):
        raise StoreError(400, f"Invalid repo name {parts[1]!r}", "InvalidRepoId")
    return parts[0], parts[1]


def is_store(folder: Path) -> bool:
    """Is ``folder`` a local Hub store: it carries :data:`STORE_MARKER`, or an earlier version's layout?"""
    if (folder / STORE_MARKER).is_file():
        return True
    try:
        names = set(os.listdir(folder))
    except OSError:
        return False
    legacy = {"blobs", "repos"} <= names and names <= STORE_ENTRIES
    return legacy and all((folder / d).is_dir() and not (folder / d).is_symlink() for d in ("blobs", "repos"))


def claim_root(root: Path | str) -> Path:
    """Check, before a byte is written, that ``root`` may be a store; return it resolved.

    The store writes into its root and sweeps its ``tmp/``, so a user's own folder named as
    ``--root`` must never be used: an absent or empty folder is taken, a store (see
    :func:`is_store`) is reused, anything else is refused in one line (an ``UpskillError``).
    The check is on the resolved path, so a root reached through a symlink still works.
    """
    real = Path(root).expanduser().resolve()
    claim_folder(
        real, option="--root", maker="the local Hub", ours=is_store, shown=shown_path(root),
        then="name a new or empty folder, or the folder of an existing local Hub",
    )  # fmt: skip
    return real


def _atomic_write_json(path: Path, obj: Any) -> None:
    write_json_atomic(path, obj, indent=1, sort_keys=True)


class HubStore:
    """All repos of one server root. Thread-safe; safe against crashes at any point."""

    def __init__(self, root: Path | str) -> None:
        self.root = claim_root(root)
        self.blobs = self.root / "blobs"
        self.repos = self.root / "repos"
        self.tmp = self.root / "tmp"
        self.root.mkdir(parents=True, exist_ok=True)
        # The marker first: another process opening this root meanwhile then sees a store.
        with (
            contextlib.suppress(FileExistsError),
            open(self.root / STORE_MARKER, "x", encoding="utf-8") as fh,
        ):
            fh.write("upskill-hub local Hub store: `upskill-hub hub serve --root` keeps its state here\n")
        for d in (self.blobs, self.repos, self.tmp):
            d.mkdir(parents=True, exist_ok=True)
        #: Names in ``tmp/`` this process is writing or reading now: never swept, whatever their age.
        self._held: set[str] = set()
        self._held_guard = threading.Lock()
        self.sweep_tmp()
        self._locks: dict[str, threading.RLock] = {}
        self._locks_guard = threading.Lock()
        self._commit_cache: dict[str, Commit] = {}
        self._head_blob_cache: dict[tuple[str, str, tuple[str, ...]], frozenset[str]] = {}

    def sweep_tmp(self, grace_s: float = SWEEP_GRACE_S) -> list[str]:
        """Remove what no live request holds in ``tmp/`` (uploads cut off mid-way, half-deleted repos).

        Runs at start and then periodically while the server runs (``app.TmpSweeper``): a client that
        dies mid-upload must not leave its bytes there until the next restart. Only what the
        store makes there (names starting with one of :data:`SCRATCH_PREFIXES`) is ever
        removed: any other entry was put there by someone else and stays. What this
        process holds (:meth:`scratch_file`, :meth:`_holding`) stays however old it is (a
        slow upload); anything else stays while younger than ``grace_s``: another process
        sharing this root may be writing it (a live upload keeps its mtime fresh). Returns the
        names removed.
        """
        cutoff = time.time() - grace_s
        removed = []
        for p in self.tmp.iterdir():
            if not p.name.startswith(SCRATCH_PREFIXES):
                continue
            with self._held_guard:  # a holder registers under this lock as it creates its entry
                if p.name in self._held:
                    continue
            try:
                if p.lstat().st_mtime > cutoff:
                    continue
            except FileNotFoundError:
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
            removed.append(p.name)
        return removed

    @contextlib.contextmanager
    def _holding(self, make: Callable[[], str]) -> Iterator[Path]:
        """Create an entry in ``tmp/`` with ``make`` (returns its path), keep sweeps off it, remove it at the end."""
        with self._held_guard:
            path = Path(make())
            self._held.add(path.name)
        try:
            yield path
        finally:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            with self._held_guard:
                self._held.discard(path.name)

    @contextlib.contextmanager
    def scratch_file(self, prefix: str) -> Iterator[Path]:
        """A new empty file in ``tmp/`` that no sweep removes while the block runs; removed after.

        Uploads are received here, so a blob is adopted by an atomic rename on the same file system.
        ``prefix`` is one of :data:`SCRATCH_PREFIXES`, so that a sweep removes the file once abandoned.
        """
        if not prefix.startswith(SCRATCH_PREFIXES):
            raise ValueError(f"scratch file prefix {prefix!r} is not one of {SCRATCH_PREFIXES}")

        def make() -> str:
            fd, name = tempfile.mkstemp(prefix=prefix, dir=self.tmp)
            os.close(fd)
            return name

        with self._holding(make) as path:
            yield path

    # ------------------------------------------------------------------ blobs
    def blob_path(self, sha256: str) -> Path:
        return self.blobs / sha256[:2] / sha256

    def has_blob(self, sha256: str, size: int | None = None) -> bool:
        path = self.blob_path(sha256)
        return path.is_file() and (size is None or path.stat().st_size == size)

    def put_bytes(self, data: bytes) -> Entry:
        """Store ``data`` (idempotent) and return a regular-file entry for it."""
        entry = Entry.regular(data)
        if not self.has_blob(entry.sha256, entry.size):
            write_bytes_atomic(self.blob_path(entry.sha256), data)
        return entry

    def adopt_upload(self, tmp_path: Path, sha256: str, repo_type: str, repo_id: str) -> None:
        """Move a fully received and verified LFS upload (under ``self.tmp``) into the blob store.

        The upload proved that ``repo_id`` holds the content, so the repo may use the blob.
        """
        dest = self.blob_path(sha256)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp_path, dest)
        self._mark_owned(repo_type, repo_id, [sha256])

    def _mark_owned(self, repo_type: str, repo_id: str, sha256s: list[str]) -> None:
        folder = self.repo_dir(repo_type, repo_id) / "objects"
        folder.mkdir(parents=True, exist_ok=True)
        for sha in sha256s:
            (folder / sha).touch()

    def repo_has_blob(self, repo_type: str, repo_id: str, sha256: str, size: int | None = None) -> bool:
        """Does the store hold ``sha256`` *and* may ``repo_id`` use it (uploaded or committed there)?"""
        if not self.has_blob(sha256, size):
            return False
        if (self.repo_dir(repo_type, repo_id) / "objects" / sha256).is_file():
            return True
        # Repos written before markers existed: any blob in one of their heads is theirs.
        with contextlib.suppress(StoreError):
            return sha256 in self._head_blobs(repo_type, repo_id)
        return False

    def _head_blobs(self, repo_type: str, repo_id: str) -> frozenset[str]:
        """sha256 of every file in the repo's branch, tag and PR heads (cached per set of heads)."""
        refs = self.refs(repo_type, repo_id)
        heads = tuple(
            sorted(
                {
                    *refs["branches"].values(),
                    *(t["commit"] for t in refs["tags"].values()),
                    *refs["prs"].values(),
                }
            )
        )
        key = (repo_type, repo_id, heads)
        found = self._head_blob_cache.get(key)
        if found is None:
            found = frozenset(
                e.sha256 for h in heads for e in self.get_commit(repo_type, repo_id, h).tree.values()
            )
            if len(self._head_blob_cache) > 256:
                self._head_blob_cache.clear()
            self._head_blob_cache[key] = found
        return found

    # ------------------------------------------------------------------ repos
    def repo_dir(self, repo_type: str, repo_id: str) -> Path:
        ns, name = check_repo_id(repo_id)
        if repo_type not in REPO_TYPES:
            raise StoreError(400, f"Invalid repo type {repo_type!r}", "InvalidRepoType")
        return self.repos / repo_type / ns / name

    @contextlib.contextmanager
    def lock(self, repo_type: str, repo_id: str) -> Iterator[None]:
        """Serialize writers of one repo, across threads and across processes sharing the root."""
        key = f"{repo_type}/{repo_id}"
        with self._locks_guard:
            tlock = self._locks.setdefault(key, threading.RLock())
        with tlock:
            lock_dir = self.root / "locks" / repo_type
            lock_dir.mkdir(parents=True, exist_ok=True)
            with open(lock_dir / (repo_id.replace("/", "--") + ".lock"), "a+b") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    def exists(self, repo_type: str, repo_id: str) -> bool:
        return (self.repo_dir(repo_type, repo_id) / "refs.json").is_file()

    def refs(self, repo_type: str, repo_id: str) -> dict[str, Any]:
        """The repo's mutable state (branches, tags, prs, private...); 404 if the repo is unknown."""
        path = self.repo_dir(repo_type, repo_id) / "refs.json"
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            raise StoreError(404, f"Repository {repo_id} not found", "RepoNotFound") from None

    def _write_refs(self, repo_type: str, repo_id: str, refs: dict[str, Any]) -> None:
        _atomic_write_json(self.repo_dir(repo_type, repo_id) / "refs.json", refs)

    @contextlib.contextmanager
    def _editing_refs(self, repo_type: str, repo_id: str) -> Iterator[dict[str, Any]]:
        """Lock the repo and yield its refs; they are written back when the block ends without error."""
        with self.lock(repo_type, repo_id):
            refs = self.refs(repo_type, repo_id)
            yield refs
            self._write_refs(repo_type, repo_id, refs)

    def create_repo(
        self, repo_type: str, repo_id: str, *, private: bool, author: str, sdk: str | None = None
    ) -> dict[str, Any]:
        """Create a repo with its initial ``.gitattributes`` commit; 409 when it exists."""
        with self.lock(repo_type, repo_id):
            if self.exists(repo_type, repo_id):
                raise StoreError(409, f"You already created this {repo_type} repo: {repo_id}", "RepoExists")
            rdir = self.repo_dir(repo_type, repo_id)
            (rdir / "commits").mkdir(parents=True, exist_ok=True)
            entry = self.put_bytes(_GITATTRIBUTES)
            commit = Commit.new((), {".gitattributes": entry}, "initial commit", "", "system")
            self._save_commit(repo_type, repo_id, commit)
            refs = {
                "type": repo_type,
                "id": repo_id,
                "private": bool(private),
                "sdk": sdk,
                "createdAt": commit.date,
                "branches": {"main": commit.id},
                "tags": {},
                "prs": {},
            }
            self._write_refs(repo_type, repo_id, refs)
            return refs

    def delete_repo(self, repo_type: str, repo_id: str) -> None:
        """Delete a repo's metadata (blobs are shared and stay)."""
        with self.lock(repo_type, repo_id):
            rdir = self.repo_dir(repo_type, repo_id)
            if not (rdir / "refs.json").is_file():
                raise StoreError(404, f"Repository {repo_id} not found", "RepoNotFound")
            with self._holding(lambda: tempfile.mkdtemp(prefix="deleted-", dir=self.tmp)) as trash:
                os.replace(rdir, trash / "repo")

    def set_private(self, repo_type: str, repo_id: str, private: bool) -> None:
        with self._editing_refs(repo_type, repo_id) as refs:
            refs["private"] = bool(private)

    def list_repos(self, repo_type: str) -> list[dict[str, Any]]:
        """Every repo of a type (refs dicts), sorted by id."""
        out = []
        base = self.repos / repo_type
        if not base.is_dir():
            return out
        for refs_file in sorted(base.glob("*/*/refs.json")):
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                out.append(json.loads(refs_file.read_text()))
        return out

    # ---------------------------------------------------------------- commits
    def _commit_path(self, repo_type: str, repo_id: str, commit_id: str) -> Path:
        return self.repo_dir(repo_type, repo_id) / "commits" / f"{commit_id}.json"

    def get_commit(self, repo_type: str, repo_id: str, commit_id: str) -> Commit:
        key = f"{repo_type}/{repo_id}@{commit_id}"
        cached = self._commit_cache.get(key)
        if cached is not None:
            return cached
        try:
            commit = Commit.from_json(
                json.loads(self._commit_path(repo_type, repo_id, commit_id).read_text())
            )
        except FileNotFoundError:
            raise StoreError(404, f"Invalid rev id: {commit_id}", "RevisionNotFound") from None
        if len(self._commit_cache) > 4096:
            self._commit_cache.clear()
        self._commit_cache[key] = commit
        return commit

    def resolve(self, repo_type: str, repo_id: str, revision: str) -> Commit:
        """Turn a branch, tag, ``refs/...`` name or commit id into a commit; 404 RevisionNotFound."""
        refs = self.refs(repo_type, repo_id)
        # Ref names never start with "refs/" (see _check_ref_name): either spelling finds the same ref.
        branch, tag = revision.removeprefix("refs/heads/"), revision.removeprefix("refs/tags/")
        commit_id: str | None = None
        if branch in refs["branches"]:
            commit_id = refs["branches"][branch]
        elif tag in refs["tags"]:
            commit_id = refs["tags"][tag]["commit"]
        elif (m := _PR_RE.match(revision)) and m.group(1) in refs["prs"]:
            commit_id = refs["prs"][m.group(1)]
        elif _COMMIT_RE.match(revision) and self._commit_path(repo_type, repo_id, revision).is_file():
            commit_id = revision
        if commit_id is None:
            raise StoreError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return self.get_commit(repo_type, repo_id, commit_id)

    def _save_commit(self, repo_type: str, repo_id: str, commit: Commit) -> None:
        _atomic_write_json(self._commit_path(repo_type, repo_id, commit.id), commit.to_json())

    def commit(
        self,
        repo_type: str,
        repo_id: str,
        *,
        revision: str,
        operations: list[Operation],
        title: str,
        message: str,
        author: str,
        parent_commit: str | None = None,
        create_pr: bool = False,
    ) -> tuple[Commit, int | None]:
        """Apply ``operations`` on top of branch ``revision`` as one commit.

        Returns the commit and, with ``create_pr``, the new pull-request number (the branch
        itself then does not move). ``parent_commit`` that is not the branch head -> 412.
        """
        with self._editing_refs(repo_type, repo_id) as refs:
            branch = revision.removeprefix("refs/heads/")
            pr_match = _PR_RE.match(revision)
            if pr_match and pr_match.group(1) in refs["prs"]:
                head_id = refs["prs"][pr_match.group(1)]
            elif branch in refs["branches"]:
                head_id = refs["branches"][branch]
            else:
                raise StoreError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
            if parent_commit is not None and parent_commit != head_id:
                raise StoreError(
                    412,
                    "A commit has happened since. Please refresh and try again. "
                    f"(parent commit {parent_commit} is not the head {head_id} of {revision})",
                    "PreconditionFailed",
                )
            head = self.get_commit(repo_type, repo_id, head_id)
            tree = dict(head.tree)
            for op in operations:
                if op.kind == "add":
                    assert op.entry is not None
                    if any(p.startswith(op.path + "/") for p in tree):
                        raise StoreError(
                            400, f"Cannot add {op.path!r}: a folder with that name exists", "InvalidPath"
                        )
                    clash = next((d for d in parent_dirs(op.path) if d in tree), None)
                    if clash is not None:
                        raise StoreError(
                            400, f"Cannot add {op.path!r}: {clash!r} is a file, not a folder", "InvalidPath"
                        )
                    tree[op.path] = op.entry
                elif op.kind == "delete_file":
                    if op.path not in tree:
                        raise StoreError(
                            404, f"A file with this name doesn't exist: {op.path}", "EntryNotFound"
                        )
                    del tree[op.path]
                elif op.kind == "delete_folder":
                    prefix = op.path.rstrip("/") + "/"
                    doomed = [p for p in tree if p.startswith(prefix)]
                    if not doomed:
                        raise StoreError(
                            404, f"A folder with this name doesn't exist: {op.path}", "EntryNotFound"
                        )
                    for p in doomed:
                        del tree[p]
            for op in operations:  # every operation checked: now the new blobs may be written
                if op.data is not None:
                    self.put_bytes(op.data)
            commit = Commit.new((head_id,), tree, title, message, author)
            self._save_commit(repo_type, repo_id, commit)
            self._mark_owned(repo_type, repo_id, sorted({op.entry.sha256 for op in operations if op.entry}))
            pr_num: int | None = None
            if create_pr:
                pr_num = max((int(n) for n in refs["prs"]), default=0) + 1
                refs["prs"][str(pr_num)] = commit.id
            elif pr_match and pr_match.group(1) in refs["prs"]:
                refs["prs"][pr_match.group(1)] = commit.id
            else:
                refs["branches"][branch] = commit.id
            return commit, pr_num

    def history(self, repo_type: str, repo_id: str, head: Commit) -> Iterator[Commit]:
        """Commits reachable from ``head`` along first parents, newest first."""
        commit: Commit | None = head
        while commit is not None:
            yield commit
            commit = self.get_commit(repo_type, repo_id, commit.parents[0]) if commit.parents else None

    # ------------------------------------------------------------------- refs
    def create_branch(self, repo_type: str, repo_id: str, branch: str, starting_point: str | None) -> None:
        _check_ref_name(branch)
        with self._editing_refs(repo_type, repo_id) as refs:
            if branch in refs["branches"]:
                raise StoreError(409, f"Reference already exists: refs/heads/{branch}", "RefExists")
            start = self.resolve(repo_type, repo_id, starting_point or "main")
            refs["branches"][branch] = start.id

    def delete_branch(self, repo_type: str, repo_id: str, branch: str) -> None:
        with self._editing_refs(repo_type, repo_id) as refs:
            if branch not in refs["branches"]:
                raise StoreError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
            if branch == "main":
                raise StoreError(403, "Cannot delete the default branch 'main'", "Forbidden")
            del refs["branches"][branch]

    def create_tag(self, repo_type: str, repo_id: str, tag: str, revision: str, message: str | None) -> None:
        _check_ref_name(tag)
        with self._editing_refs(repo_type, repo_id) as refs:
            if tag in refs["tags"]:
                raise StoreError(409, f"Tag already exists: {tag}", "RefExists")
            target = self.resolve(repo_type, repo_id, revision)
            refs["tags"][tag] = {"commit": target.id, "message": message or ""}

    def delete_tag(self, repo_type: str, repo_id: str, tag: str) -> None:
        with self._editing_refs(repo_type, repo_id) as refs:
            if tag not in refs["tags"]:
                raise StoreError(404, f"Invalid rev id: {tag}", "RevisionNotFound")
            del refs["tags"][tag]


def _check_ref_name(name: str) -> None:
    """Refuse ref names git would refuse (and ones that would alias commit ids or refs/)."""
    bad = (
        not name
        or len(name) > 200
        or name.startswith(("/", "-", "refs/"))
        or name.endswith(("/", ".", ".lock"))
        or ".." in name
        or "//" in name
        or any(c in name for c in " ~^:?*[\\")
        or CONTROL_RE.search(name) is not None
        or _COMMIT_RE.match(name) is not None
    )
    if bad:
        raise StoreError(400, f"Invalid reference name: {name!r}", "InvalidRef")


def folder_oid(tree: dict[str, Entry], prefix: str) -> str:
    """A stable id for a folder: hash of its descendants' paths and oids."""
    h = hashlib.sha1()
    for path in sorted(p for p in tree if p.startswith(prefix + "/")):
        h.update(f"{path}\0{tree[path].sha256}\n".encode())
    return h.hexdigest()


def parent_dirs(path: str) -> list[str]:
    """``a/b/c.txt`` -> ``["a", "a/b"]``."""
    parents = [str(p) for p in PurePosixPath(path).parents if str(p) != "."]
    return sorted(parents, key=len)
