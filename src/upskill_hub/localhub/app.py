"""The local Hub-compatible HTTP API (FastAPI), as the unmodified HF clients call it.

Why the catch-all router: the clients percent-encode revisions (``refs%2Fpr%2F1``) and tree
paths (``a%2Fb``) into single URL segments, and Starlette decodes the path before routing,
which would make ``refs/pr/1`` look like three segments. So repo routes are parsed from the
raw path, segment by segment. Fixed routes (``/api/whoami-v2``...) use FastAPI as usual.

Every handler that touches the disk runs in the thread pool; the store serializes commits.

Hostile callers: the token is checked before a body is read, bodies are read up to a cap
(``ServerConfig.max_json_bytes`` / ``max_commit_bytes``, 413 past it), every body is
validated into a typed model (:mod:`.payloads`: 400, never 500), YAML (cards,
``validate-yaml``) is parsed with size/depth/alias limits in the thread pool, and error
text never puts control characters into a response header.
Errors follow the Hub: JSON ``{"error": ...}`` plus ``X-Error-Code`` / ``X-Error-Message``
headers, which ``huggingface_hub`` turns into RepositoryNotFoundError, RevisionNotFoundError,
EntryNotFoundError...
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import logging
import os
import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote

import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from upskill_hub._util import safeyaml
from upskill_hub.localhub import jobs_http, lfs, payloads
from upskill_hub.localhub.auth import Access, AuthPolicy
from upskill_hub.localhub.faults import FaultInjector, RequestRecord
from upskill_hub.localhub.jobs import JobLimits, JobManager
from upskill_hub.localhub.paging import decode_cursor, encode_cursor
from upskill_hub.localhub.storage import (
    REPO_TYPES,
    URL_PREFIXES,
    Commit,
    Entry,
    HubStore,
    Operation,
    StoreError,
    check_repo_id,
    check_repo_path,
    folder_oid,
    parent_dirs,
)

logger = logging.getLogger("upskill_hub.localhub")

_TYPE_BY_PLURAL = {f"{t}s": t for t in REPO_TYPES}
_OID_RE = re.compile(r"^[0-9a-f]{64}$")
_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass(frozen=True)
class ServerConfig:
    """Everything that shapes one server instance."""

    root: Path
    write_tokens: tuple[str, ...] = ()
    read_tokens: tuple[str, ...] = ()
    trusted_publishers: tuple[str, ...] = ()
    user: str = "user"
    tree_page_size: int = 1000
    commits_page_size: int = 50
    #: Largest JSON body (create, settings, preupload, LFS batch, paths-info, validate-yaml).
    max_json_bytes: int = 16 * 1024 * 1024
    #: Largest NDJSON commit body (regular files travel inside it, base64-encoded).
    max_commit_bytes: int = 256 * 1024 * 1024
    #: Whether write tokens may run Jobs: commands on this machine, so off unless asked for.
    jobs_enabled: bool = False
    #: Bounds on Jobs (running at once, queue, log size, kill grace): see :class:`.jobs.JobLimits`.
    job_limits: JobLimits = field(default_factory=JobLimits)


# --------------------------------------------------------------------------- helpers
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def _header_safe(text: str) -> str:
    """``text`` fit for a header value: ASCII, no control characters (CR/LF/NUL end a response),
    and no space at either end (h11 refuses such a value, and cutting at 500 can leave one)."""
    return _CONTROL_RE.sub("?", text.encode("ascii", "replace").decode())[:500].strip()


def _error(
    status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    hdrs = {"X-Error-Message": _header_safe(message)}
    if code:
        hdrs["X-Error-Code"] = code
    hdrs.update(headers or {})
    return JSONResponse({"error": message}, status_code=status, headers=hdrs)


def _bool_param(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


def _split_revision(segs: list[str]) -> tuple[str, list[str]]:
    """Take a revision off the front of path segments; ``refs/pr/1`` may arrive unencoded."""
    if not segs:
        raise StoreError(400, "Missing revision", "InvalidRevision")
    if any(_CONTROL_RE.search(s) for s in segs):
        raise StoreError(400, "Control characters in a revision or path", "InvalidRevision")
    if segs[0] == "refs" and len(segs) >= 3 and segs[1] in ("pr", "heads", "tags", "convert"):
        return "/".join(segs[:3]), segs[3:]
    return segs[0], segs[1:]


class _Ctx:
    """Per-request view: who is asking and where the server lives (for absolute URLs)."""

    def __init__(self, request: Request, policy: AuthPolicy) -> None:
        self.access = policy.access(request.headers.get("authorization"))
        self.base = str(request.base_url).rstrip("/")
        self.query = request.query_params

    def require_valid(self) -> None:
        if self.access is Access.INVALID:
            raise StoreError(401, "Invalid credentials in Authorization header", "Unauthorized")

    def require_write(self) -> None:
        self.require_valid()
        if self.access is Access.ANONYMOUS:
            raise StoreError(
                401,
                "You must be authenticated to write: pass a token (HF_TOKEN or `hf auth login`)",
                "Unauthorized",
            )
        if self.access is Access.READ:
            raise StoreError(403, "This token is read-only: it cannot write to the Hub", "Forbidden")

    @property
    def sees_private(self) -> bool:
        return self.access in (Access.READ, Access.WRITE)


def _repo_url(base: str, repo_type: str, repo_id: str) -> str:
    return f"{base}/{URL_PREFIXES[repo_type]}{repo_id}"


class HubApp:
    """The request handlers, bound to one store and one configuration."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.store = HubStore(config.root)
        self.policy = AuthPolicy(tuple(config.write_tokens), tuple(config.read_tokens))
        self.secret = lfs.load_secret(self.store.root)
        self.jobs = JobManager(self.store.root, config.user, config.job_limits)
        self._cards: dict[str, dict[str, Any] | None] = {}  # README blob sha256 -> parsed card

    # ---------------------------------------------------------------- access
    def visible_refs(self, ctx: _Ctx, repo_type: str, repo_id: str) -> dict[str, Any]:
        """The repo's refs if the caller may see it; a private repo is 404 to strangers."""
        ctx.require_valid()
        refs = self.store.refs(repo_type, repo_id)
        if refs.get("private") and not ctx.sees_private:
            raise StoreError(404, f"Repository {repo_id} not found", "RepoNotFound")
        return refs

    def writable_refs(self, ctx: _Ctx, repo_type: str, repo_id: str) -> dict[str, Any]:
        ctx.require_write()
        return self.store.refs(repo_type, repo_id)

    # ---------------------------------------------------------------- repos
    def create_repo(self, ctx: _Ctx, body: payloads.CreateRepo) -> Response:
        ctx.require_write()
        repo_type = body.type or "model"
        repo_id = f"{body.organization or self.config.user}/{body.name}"
        check_repo_id(repo_id)
        private = body.visibility == "private" if body.visibility else bool(body.private)
        url = _repo_url(ctx.base, repo_type, repo_id)
        try:
            self.store.create_repo(repo_type, repo_id, private=private, author=self.config.user, sdk=body.sdk)
        except StoreError as exc:
            if exc.status == 409:
                return JSONResponse({"error": exc.message, "url": url}, status_code=409)
            raise
        return JSONResponse({"url": url, "name": repo_id, "id": repo_id})

    def delete_repo(self, ctx: _Ctx, body: payloads.DeleteRepo) -> Response:
        repo_type = body.type or "model"
        repo_id = f"{body.organization or self.config.user}/{body.name}"
        self.writable_refs(ctx, repo_type, repo_id)
        self.store.delete_repo(repo_type, repo_id)
        return JSONResponse({})

    def update_settings(self, ctx: _Ctx, repo_type: str, repo_id: str, body: payloads.Settings) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        wanted = {body.visibility == "private"} if body.visibility is not None else set()
        if body.private is not None:
            wanted.add(body.private)
        if len(wanted) > 1:
            raise StoreError(400, "'private' and 'visibility' disagree", "BadRequest")
        if wanted:
            self.store.set_private(repo_type, repo_id, wanted.pop())
        return JSONResponse({})

    def _card_data(self, commit: Commit) -> dict[str, Any] | None:
        """The README's YAML metadata (bounded: an alias bomb yields no card, not 659 MB)."""
        entry = commit.tree.get("README.md")
        if entry is None or entry.size > 1_000_000:
            return None
        if entry.sha256 in self._cards:
            return self._cards[entry.sha256]
        text = self.store.blob_path(entry.sha256).read_text(encoding="utf-8", errors="replace")
        data = _front_matter(text)
        card = data if isinstance(data, dict) else None
        if len(self._cards) > 1024:
            self._cards.clear()
        self._cards[entry.sha256] = card
        return card

    def info_json(self, refs: dict[str, Any], commit: Commit, *, siblings: bool = True) -> dict[str, Any]:
        repo_type, repo_id = refs["type"], refs["id"]
        card = self._card_data(commit)
        tags = card.get("tags") if card and isinstance(card.get("tags"), list) else []
        info: dict[str, Any] = {
            "_id": hashlib.sha1(f"{repo_type}/{repo_id}".encode()).hexdigest()[:24],
            "id": repo_id,
            "author": repo_id.split("/")[0],
            "sha": commit.id,
            "lastModified": commit.date,
            "createdAt": refs.get("createdAt"),
            "private": bool(refs.get("private")),
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [str(t) for t in tags],
        }
        if card is not None:
            info["cardData"] = card
        if repo_type == "model" and card:
            for key in ("library_name", "pipeline_tag"):
                if key in card:
                    info[key] = card[key]
        if repo_type == "space":
            info["sdk"] = refs.get("sdk") or (card or {}).get("sdk")
        if siblings:
            info["siblings"] = [
                {
                    "rfilename": path,
                    "size": e.size,
                    "blobId": e.oid,
                    **(
                        {"lfs": {"size": e.size, "sha256": e.sha256, "pointerSize": e.pointer_size}}
                        if e.lfs
                        else {}
                    ),
                }
                for path, e in sorted(commit.tree.items())
            ]
        return info

    def repo_info(self, ctx: _Ctx, repo_type: str, repo_id: str, revision: str | None) -> Response:
        refs = self.visible_refs(ctx, repo_type, repo_id)
        commit = self.store.resolve(repo_type, repo_id, revision or "main")
        return JSONResponse(self.info_json(refs, commit))

    def list_repos(self, ctx: _Ctx, repo_type: str) -> Response:
        ctx.require_valid()
        author = ctx.query.get("author")
        search = (ctx.query.get("search") or "").lower()
        full = _bool_param(ctx.query.get("full"))
        out = []
        for refs in self.store.list_repos(repo_type):
            if refs.get("private") and not ctx.sees_private:
                continue
            if author and refs["id"].split("/")[0] != author:
                continue
            if search and search not in refs["id"].lower():
                continue
            try:
                commit = self.store.resolve(repo_type, refs["id"], "main")
            except StoreError:
                continue
            out.append(self.info_json(refs, commit, siblings=full))
        limit = ctx.query.get("limit")
        if limit and limit.isdigit():
            out = out[: int(limit)]
        return JSONResponse(out)

    # ---------------------------------------------------------------- upload
    def preupload(
        self, ctx: _Ctx, repo_type: str, repo_id: str, revision: str, body: payloads.Preupload
    ) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        try:
            tree = self.store.resolve(repo_type, repo_id, revision).tree
        except StoreError:
            if not _bool_param(ctx.query.get("create_pr")):
                raise
            tree = self.store.resolve(repo_type, repo_id, "main").tree
        out = []
        for item in body.files:
            path = check_repo_path(item.path)
            try:
                sample = base64.b64decode(item.sample)
            except (binascii.Error, ValueError):
                raise StoreError(400, f"Invalid base64 sample for {path}", "BadRequest") from None
            size = item.size
            is_lfs = lfs.should_be_lfs(path, size, sample)
            existing = tree.get(path)
            oid = None if existing is None else (existing.sha256 if is_lfs else existing.oid)
            out.append(
                {
                    "path": path,
                    "uploadMode": "lfs" if is_lfs else "regular",
                    "shouldIgnore": False,
                    "oid": oid,
                }
            )
        return JSONResponse({"files": out, "commitOid": None})

    def lfs_batch(self, ctx: _Ctx, repo_type: str, repo_id: str, body: payloads.LfsBatch) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        if body.operation != "upload":
            raise StoreError(400, "Only the 'upload' LFS operation is supported", "BadRequest")
        objects = []
        for obj in body.objects:
            oid, size = obj.oid, obj.size
            if not _OID_RE.match(oid):
                objects.append(
                    {"oid": oid[:64], "size": size, "error": {"code": 422, "message": "Invalid oid or size"}}
                )
                continue
            item: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
            # Only this repo's own objects are skipped: another repo's blob must be uploaded
            # (proving its content) before this repo may use it, and its existence stays secret.
            if not self.store.repo_has_blob(repo_type, repo_id, oid, size):
                sig = lfs.sign(self.secret, repo_type, repo_id, oid, size)
                repo_url = _repo_url(ctx.base, repo_type, repo_id)
                href = f"{repo_url}.git/info/lfs/objects/upload/{oid}/{size}?sig={sig}"
                item["actions"] = {"upload": {"href": href, "header": {}, "expires_in": 3600}}
            objects.append(item)
        return JSONResponse(
            {"transfer": "basic", "objects": objects, "hash_algo": "sha256"},
            media_type="application/vnd.git-lfs+json",
        )

    def commit(self, ctx: _Ctx, repo_type: str, repo_id: str, revision: str, body: bytes) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        header: payloads.CommitHeader | None = None
        ops: list[Operation] = []
        for key, value in payloads.parse_commit_lines(body):
            if isinstance(value, payloads.CommitHeader):
                header = value
            elif isinstance(value, payloads.CommitFile):
                path = check_repo_path(value.path)
                try:
                    data = (
                        base64.b64decode(value.content, validate=True)
                        if value.encoding == "base64"
                        else value.content.encode()
                    )
                except (binascii.Error, ValueError):
                    raise StoreError(400, f"Invalid base64 content for {path}", "BadRequest") from None
                ops.append(Operation("add", path, Entry.regular(data), data=data))
            elif isinstance(value, payloads.CommitLfsFile):
                path = check_repo_path(value.path)
                oid = value.oid
                if not self.store.repo_has_blob(repo_type, repo_id, oid):
                    raise StoreError(
                        422,
                        f"LFS object {oid} for {path} was not uploaded: upload it first",
                        "LfsObjectNotFound",
                    )
                size = self.store.blob_path(oid).stat().st_size
                if value.size is not None and value.size != size:
                    raise StoreError(400, f"LFS object size mismatch for {path}", "BadRequest")
                ops.append(Operation("add", path, Entry.lfs_object(oid, size)))
            else:
                assert isinstance(value, payloads.CommitDeleted)
                path = value.path.rstrip("/") if key == "deletedFolder" else value.path
                check_repo_path(path)
                ops.append(Operation("delete_file" if key == "deletedFile" else "delete_folder", path))
        if header is None or not header.summary.strip():
            raise StoreError(400, "A commit needs a header with a non-empty summary", "BadRequest")
        create_pr = _bool_param(ctx.query.get("create_pr"))
        commit, pr_num = self.store.commit(
            repo_type,
            repo_id,
            revision=revision,
            operations=ops,
            title=header.summary,
            message=header.description or "",
            author=self.config.user,
            parent_commit=header.parentCommit,
            create_pr=create_pr,
        )
        url = _repo_url(ctx.base, repo_type, repo_id)
        out: dict[str, Any] = {
            "success": True,
            "commitOid": commit.id,
            "commitUrl": f"{url}/commit/{commit.id}",
            "commitMessage": commit.title,
            "hookOutput": "",
        }
        if pr_num is not None:
            out["pullRequestUrl"] = f"{url}/discussions/{pr_num}"
        return JSONResponse(out)

    # ----------------------------------------------------------------- reads
    def _entries(self, commit: Commit, path: str, recursive: bool) -> list[dict[str, Any]]:
        tree = commit.tree
        prefix = path.strip("/")
        if prefix:
            if prefix in tree:
                raise StoreError(404, f"{prefix} is a file, not a folder", "EntryNotFound")
            if not any(p.startswith(prefix + "/") for p in tree):
                raise StoreError(404, f"Folder {prefix} does not exist", "EntryNotFound")
        start = prefix + "/" if prefix else ""
        files: dict[str, Entry] = {}
        dirs: set[str] = set()
        for p, e in tree.items():
            if not p.startswith(start):
                continue
            rest = p[len(start) :]
            if recursive:
                files[p] = e
                dirs.update(d for d in parent_dirs(p) if d.startswith(start) and len(d) > len(prefix))
            elif "/" in rest:
                dirs.add(start + rest.split("/")[0])
            else:
                files[p] = e
        out = [self._folder_json(commit, d) for d in sorted(dirs)]
        out += [self._file_json(p, files[p]) for p in sorted(files)]
        return out

    @staticmethod
    def _file_json(path: str, e: Entry) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "file", "oid": e.oid, "size": e.size, "path": path}
        if e.lfs:
            d["lfs"] = {"oid": e.sha256, "size": e.size, "pointerSize": e.pointer_size}
        return d

    @staticmethod
    def _folder_json(commit: Commit, path: str) -> dict[str, Any]:
        return {"type": "directory", "oid": folder_oid(commit.tree, path), "size": 0, "path": path}

    def _add_last_commits(
        self, repo_type: str, repo_id: str, head: Commit, entries: list[dict[str, Any]]
    ) -> None:
        """Fill ``lastCommit`` (the newest commit that changed each path) for ``expand=True``."""
        wanted = {e["path"] for e in entries}
        found: dict[str, Commit] = {}
        for commit in self.store.history(repo_type, repo_id, head):
            parent_tree = (
                self.store.get_commit(repo_type, repo_id, commit.parents[0]).tree if commit.parents else {}
            )
            changed = {
                p for p in set(commit.tree) | set(parent_tree) if commit.tree.get(p) != parent_tree.get(p)
            }
            for p in changed:
                for candidate in [p, *parent_dirs(p)]:
                    if candidate in wanted and candidate not in found:
                        found[candidate] = commit
            if len(found) == len(wanted):
                break
        for e in entries:
            c = found.get(e["path"])
            if c is not None:
                e["lastCommit"] = {"id": c.id, "title": c.title, "date": c.date}

    def tree(self, ctx: _Ctx, repo_type: str, repo_id: str, revision: str, path: str, url: str) -> Response:
        self.visible_refs(ctx, repo_type, repo_id)
        commit = self.store.resolve(repo_type, repo_id, revision)
        expand = _bool_param(ctx.query.get("expand"))
        entries = self._entries(commit, path, _bool_param(ctx.query.get("recursive")))
        page_size = min(50, self.config.tree_page_size) if expand else self.config.tree_page_size
        limit = ctx.query.get("limit")
        if limit and limit.isdigit() and int(limit) > 0:
            page_size = min(page_size, int(limit))
        start = decode_cursor(ctx.query.get("cursor"))
        page = entries[start : start + page_size]
        if expand:
            self._add_last_commits(repo_type, repo_id, commit, page)
        headers = {}
        if start + page_size < len(entries):
            params = {k: v for k, v in ctx.query.items() if k != "cursor"}
            params["cursor"] = encode_cursor(start + page_size)
            query = "&".join(f"{quote(k)}={quote(str(v))}" for k, v in params.items())
            headers["Link"] = f'<{url}?{query}>; rel="next"'
        return JSONResponse(page, headers=headers)

    def paths_info(
        self, ctx: _Ctx, repo_type: str, repo_id: str, revision: str, paths: list[str], expand: bool
    ) -> Response:
        self.visible_refs(ctx, repo_type, repo_id)
        commit = self.store.resolve(repo_type, repo_id, revision)
        out = []
        for raw in paths:
            p = raw.strip("/")
            if p in commit.tree:
                out.append(self._file_json(p, commit.tree[p]))
            elif p and any(k.startswith(p + "/") for k in commit.tree):
                out.append(self._folder_json(commit, p))
        if expand:
            self._add_last_commits(repo_type, repo_id, commit, out)
        return JSONResponse(out)

    def refs(self, ctx: _Ctx, repo_type: str, repo_id: str) -> Response:
        refs = self.visible_refs(ctx, repo_type, repo_id)
        out: dict[str, Any] = {
            "branches": [
                {"name": b, "ref": f"refs/heads/{b}", "targetCommit": c}
                for b, c in sorted(refs["branches"].items())
            ],
            "tags": [
                {"name": t, "ref": f"refs/tags/{t}", "targetCommit": v["commit"]}
                for t, v in sorted(refs["tags"].items())
            ],
            "converts": [],
        }
        if _bool_param(ctx.query.get("include_prs")):
            out["pullRequests"] = [
                {"name": f"refs/pr/{n}", "ref": f"refs/pr/{n}", "targetCommit": c}
                for n, c in sorted(refs["prs"].items(), key=lambda kv: int(kv[0]))
            ]
        return JSONResponse(out)

    def commits(self, ctx: _Ctx, repo_type: str, repo_id: str, revision: str, url: str) -> Response:
        self.visible_refs(ctx, repo_type, repo_id)
        head = self.store.resolve(repo_type, repo_id, revision)
        raw_page = ctx.query.get("p") or "0"
        if not raw_page.isdigit() or len(raw_page) > 9:
            raise StoreError(400, f"Invalid page number {raw_page[:20]!r}", "BadRequest")
        page_no = int(raw_page)
        size = self.config.commits_page_size
        history = list(self.store.history(repo_type, repo_id, head))
        page = history[page_no * size : (page_no + 1) * size]
        out = [
            {
                "id": c.id,
                "title": c.title,
                "message": c.message,
                "authors": [{"user": c.author, "avatar": None}],
                "date": c.date,
                "parents": list(c.parents),
            }
            for c in page
        ]
        headers = {}
        if (page_no + 1) * size < len(history):
            headers["Link"] = f'<{url}?p={page_no + 1}>; rel="next"'
        return JSONResponse(out, headers=headers)

    def branch(
        self, ctx: _Ctx, method: str, repo_type: str, repo_id: str, name: str, body: payloads.Branch
    ) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        if method == "POST":
            self.store.create_branch(repo_type, repo_id, name, body.startingPoint)
        else:
            self.store.delete_branch(repo_type, repo_id, name)
        return JSONResponse({})

    def tag(
        self, ctx: _Ctx, method: str, repo_type: str, repo_id: str, rev_or_tag: str, body: payloads.Tag | None
    ) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        if method == "POST":
            assert body is not None
            self.store.create_tag(repo_type, repo_id, body.tag, rev_or_tag, body.message)
        else:
            self.store.delete_tag(repo_type, repo_id, rev_or_tag)
        return JSONResponse({})

    def resolve_file(
        self,
        ctx: _Ctx,
        method: str,
        repo_type: str,
        repo_id: str,
        revision: str,
        path: str,
        range_header: str | None,
    ) -> Response:
        self.visible_refs(ctx, repo_type, repo_id)
        commit = self.store.resolve(repo_type, repo_id, revision)
        entry = commit.tree.get(path)
        if entry is None:
            raise _EntryMissing(commit.id, path)
        headers = {
            "X-Repo-Commit": commit.id,
            "ETag": f'"{entry.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if entry.lfs:
            headers["X-Linked-Etag"] = f'"{entry.sha256}"'
            headers["X-Linked-Size"] = str(entry.size)
        start, end, status = 0, entry.size - 1, 200
        if range_header and "," not in range_header:
            m = _RANGE_RE.match(range_header.strip())
            if m and (m.group(1) or m.group(2)):
                if m.group(1):
                    start = int(m.group(1))
                    end = min(int(m.group(2)), entry.size - 1) if m.group(2) else entry.size - 1
                else:
                    start = max(entry.size - int(m.group(2)), 0)
                if start >= entry.size or start > end:
                    return _error(
                        416,
                        "Requested range not satisfiable",
                        None,
                        {"Content-Range": f"bytes */{entry.size}"},
                    )
                status = 206
                headers["Content-Range"] = f"bytes {start}-{end}/{entry.size}"
        length = max(end - start + 1, 0)
        headers["Content-Length"] = str(length)
        if method == "HEAD":
            return Response(status_code=status, headers=headers)
        blob = self.store.blob_path(entry.sha256)
        return StreamingResponse(_read_range(blob, start, length), status_code=status, headers=headers)

    # ---------------------------------------------------------------- misc
    def whoami(self, ctx: _Ctx) -> Response:
        ctx.require_valid()
        if ctx.access is Access.ANONYMOUS:
            raise StoreError(401, "Invalid credentials in Authorization header", "Unauthorized")
        role = "write" if ctx.access is Access.WRITE else "read"
        user = self.config.user
        return JSONResponse(
            {
                "type": "user",
                "id": hashlib.sha1(user.encode()).hexdigest()[:24],
                "name": user,
                "fullname": user,
                "email": None,
                "emailVerified": False,
                "isPro": False,
                "canPay": False,
                "avatarUrl": "",
                "orgs": [
                    {"type": "org", "name": org, "fullname": org, "roleInOrg": role}
                    for org in self.config.trusted_publishers
                ],
                "auth": {"type": "access_token", "accessToken": {"displayName": "local", "role": role}},
            }
        )

    def org_overview(self, ctx: _Ctx, org: str) -> Response:
        ctx.require_valid()
        counts = {
            t: sum(
                1 for r in self.store.list_repos(t) if r["id"].split("/")[0] == org and not r.get("private")
            )
            for t in REPO_TYPES
        }
        return JSONResponse(
            {
                "name": org,
                "fullname": org,
                "avatarUrl": "",
                "isVerified": False,
                "isFollowing": False,
                "numUsers": 1,
                "numModels": counts["model"],
                "numDatasets": counts["dataset"],
                "numSpaces": counts["space"],
                "numKernels": counts["kernel"],
                "numFollowers": 0,
                "numPapers": 0,
                "trustedKernelPublisher": org in self.config.trusted_publishers,
            }
        )

    @staticmethod
    def validate_yaml(ctx: _Ctx, body: payloads.ValidateYaml) -> Response:
        ctx.require_valid()
        match = _FRONT_MATTER_RE.match(body.content)
        if match:
            try:
                data = safeyaml.load(match.group(1))
            except yaml.YAMLError as exc:
                msg = f"Invalid YAML in README.md metadata: {(str(exc).splitlines() or ['?'])[0]}"
                return JSONResponse({"error": msg, "errors": [{"message": msg}]}, status_code=400)
            if data is not None and not isinstance(data, dict):
                msg = "README.md metadata must be a YAML mapping"
                return JSONResponse({"error": msg, "errors": [{"message": msg}]}, status_code=400)
        return JSONResponse({"errors": [], "warnings": []})


class _EntryMissing(StoreError):
    """404 EntryNotFound that still tells the client the commit it looked at (it caches that)."""

    def __init__(self, commit_id: str, path: str) -> None:
        super().__init__(404, f"Entry not found: {path}", "EntryNotFound")
        self.commit_id = commit_id



def _read_range(path: Path, start: int, length: int) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        fh.seek(start)
        left = length
        while left > 0:
            chunk = fh.read(min(1 << 20, left))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk


_FRONT_MATTER_RE = re.compile(r"^---\s*\n(.*?)\n---\s*(\n|$)", re.S)


def _front_matter(text: str) -> Any:
    """The YAML block at the top of a card, within :mod:`upskill_hub._util.safeyaml`'s limits; None if unreadable."""
    match = _FRONT_MATTER_RE.match(text)
    if not match:
        return None
    try:
        return safeyaml.load(match.group(1))
    except yaml.YAMLError:
        return None


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 once it passes ``limit`` bytes (never read in full first)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise StoreError(413, f"Request body larger than {limit} bytes", "PayloadTooLarge")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise StoreError(413, f"Request body larger than {limit} bytes", "PayloadTooLarge")
        chunks.append(chunk)
    return b"".join(chunks)


# --------------------------------------------------------------------------- ASGI
def _http_date() -> str:
    return formatdate(usegmt=True)


class _FaultAndLogMiddleware:
    """Answers armed faults before routing; logs each request without query string or headers.

    It also sets each response's ``Date`` to the moment the response starts (run uvicorn with
    ``date_header=False``): uvicorn's own is refreshed once a second, and ``fetch_job_logs``
    stops replaying a log at the first line stamped after ``Date`` + 1s, so a stale ``Date``
    would hide a finished Job's last lines.
    """

    def __init__(self, app: Any, injector: FaultInjector) -> None:
        self.app = app
        self.injector = injector

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        rule = self.injector.match(method, path)
        if rule is not None:
            headers = {"X-Error-Message": rule.message}
            if rule.retry_after is not None:
                headers["Retry-After"] = str(max(0, int(rule.retry_after)))  # clients parse whole seconds
            # Drain the request body so the client is not cut off mid-upload.
            more = True
            received = 0
            while more:
                msg = await receive()
                received += len(msg.get("body", b""))
                more = msg.get("more_body", False) and msg["type"] == "http.request"
            self.injector.record(RequestRecord(method, path, rule.status, received, injected=True))
            logger.info("%s %s %s (injected fault)", method, path, rule.status)
            response = JSONResponse({"error": rule.message}, status_code=rule.status, headers=headers)
            await response(scope, receive, send)
            return
        state = {"status": 0, "bytes_in": 0, "recorded": False}

        def record(status: int) -> None:
            # Recorded when the response starts, so a test that saw the response sees the record.
            if not state["recorded"]:
                state["recorded"] = True
                self.injector.record(RequestRecord(method, path, status, state["bytes_in"]))
                logger.info("%s %s %s", method, path, status)

        async def counting_receive() -> dict:
            msg = await receive()
            if msg["type"] == "http.request":
                state["bytes_in"] += len(msg.get("body", b""))
            return msg

        async def recording_send(msg: dict) -> None:
            if msg["type"] == "http.response.start":
                record(msg["status"])
                msg = {**msg, "headers": [*msg.get("headers", []), (b"date", _http_date().encode())]}
            await send(msg)

        try:
            await self.app(scope, counting_receive, recording_send)
        finally:
            record(500)


def create_app(config: ServerConfig) -> FastAPI:
    """Build the FastAPI application serving ``config.root``."""
    hub = HubApp(config)
    injector = FaultInjector()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await run_in_threadpool(hub.jobs.shutdown)  # no Job outlives the server

    app = FastAPI(
        title="upskill-hub local Hub",
        description="Hugging Face Hub-compatible API for offline work, air-gapped teams and tests.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.hub = hub
    app.state.faults = injector

    @app.exception_handler(StoreError)
    async def _store_error(request: Request, exc: StoreError) -> Response:
        headers = {"X-Repo-Commit": exc.commit_id} if isinstance(exc, _EntryMissing) else None
        return _error(exc.status, exc.message, exc.code, headers)

    @app.exception_handler(OSError)
    async def _disk_error(request: Request, exc: OSError) -> Response:
        """A full disk is 507 and a read-only one 503, with a message: never a 500 traceback.

        Every write is atomic (temporary file, then rename), so a failed request stored nothing.
        """
        if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1), errno.EFBIG):
            logger.warning("%s %s: disk full (%s)", request.method, request.url.path, exc.strerror)
            return _error(507, "Insufficient storage: the server's disk is full; nothing was stored. "
                          "Retry once the operator has freed space.", "InsufficientStorage")  # fmt: skip
        if exc.errno == errno.EROFS:
            logger.warning("%s %s: read-only storage", request.method, request.url.path)
            return _error(503, "The server's storage is read-only; nothing was stored. Retry later.",
                          "StorageReadOnly", {"Retry-After": "60"})  # fmt: skip
        raise exc

    def ctx(request: Request) -> _Ctx:
        return _Ctx(request, hub.policy)

    @app.get("/api/whoami-v2")
    def whoami(request: Request) -> Response:
        return hub.whoami(ctx(request))

    async def json_body(request: Request, model: type[payloads.M]) -> payloads.M:
        return payloads.parse_body(model, await _read_body(request, config.max_json_bytes))

    @app.post("/api/repos/create")
    async def create_repo(request: Request) -> Response:
        c = ctx(request)
        c.require_write()  # before the body is read: a stranger's upload costs nothing
        body = await json_body(request, payloads.CreateRepo)
        return await run_in_threadpool(hub.create_repo, c, body)

    @app.delete("/api/repos/delete")
    async def delete_repo(request: Request) -> Response:
        c = ctx(request)
        c.require_write()
        body = await json_body(request, payloads.DeleteRepo)
        return await run_in_threadpool(hub.delete_repo, c, body)

    @app.post("/api/validate-yaml")
    async def validate_yaml(request: Request) -> Response:
        c = ctx(request)
        c.require_valid()
        raw = await _read_body(request, min(config.max_json_bytes, 4 * safeyaml.MAX_CHARS))
        body = payloads.parse_body(payloads.ValidateYaml, raw)
        # Parsing a large document takes a while: never on the event loop other requests share.
        return await run_in_threadpool(hub.validate_yaml, c, body)

    @app.get("/api/organizations/{org}/overview")
    def org_overview(request: Request, org: str) -> Response:
        return hub.org_overview(ctx(request), org)

    _register_job_routes(app, hub)

    @app.get("/api/{plural}")
    def list_repos(request: Request, plural: str) -> Response:
        if plural not in _TYPE_BY_PLURAL:
            raise StoreError(404, f"Unknown endpoint /api/{plural}", "NotFound")
        return hub.list_repos(ctx(request), _TYPE_BY_PLURAL[plural])

    @app.api_route("/{full_path:path}", methods=["GET", "HEAD", "POST", "PUT", "DELETE"])
    async def dispatch(request: Request, full_path: str) -> Response:
        raw = request.scope.get("raw_path") or request.url.path.encode()
        raw_path = raw.decode("latin-1").split("?", 1)[0]
        segs = [unquote(s) for s in raw_path.strip("/").split("/")]
        return await _dispatch(hub, request, segs, raw_path)

    app.add_middleware(_FaultAndLogMiddleware, injector=injector)
    return app


def _register_job_routes(app: FastAPI, hub: HubApp) -> None:
    """The Jobs API (see :mod:`.jobs_http`); ``/hardware`` is declared before ``/{namespace}``."""
    jobs, config = hub.jobs, hub.config
    orgs = tuple(config.trusted_publishers)  # the organizations whoami reports for the token

    def ctx(request: Request) -> _Ctx:
        return _Ctx(request, hub.policy)

    @app.get("/api/jobs/hardware")
    def jobs_hardware() -> Response:
        return jobs_http.hardware()

    @app.post("/api/jobs/{namespace}")
    async def create_job(request: Request, namespace: str) -> Response:
        c = ctx(request)
        jobs_http.require_runner(c, namespace, config.user, orgs)  # before the body is read
        if not config.jobs_enabled:
            raise StoreError(403, jobs_http.JOBS_DISABLED, "Forbidden")
        body = payloads.parse_body(payloads.CreateJob, await _read_body(request, 1024 * 1024))
        return await run_in_threadpool(jobs_http.create_job, jobs, c, namespace, body, config.user, orgs)

    @app.get("/api/jobs/{namespace}")
    def list_jobs(request: Request, namespace: str) -> Response:
        url = f"{str(request.base_url).rstrip('/')}{request.url.path}"
        return jobs_http.list_jobs(jobs, ctx(request), namespace, request.query_params.multi_items(), url)

    @app.get("/api/jobs/{namespace}/{job_id}")
    def inspect_job(request: Request, namespace: str, job_id: str) -> Response:
        return jobs_http.inspect_job(jobs, ctx(request), namespace, job_id)

    @app.get("/api/jobs/{namespace}/{job_id}/logs")
    def job_logs(request: Request, namespace: str, job_id: str) -> Response:
        return jobs_http.job_logs(jobs, ctx(request), namespace, job_id, request.query_params.get("tail"))

    @app.post("/api/jobs/{namespace}/{job_id}/cancel")
    def cancel_job(request: Request, namespace: str, job_id: str) -> Response:
        return jobs_http.cancel_job(jobs, ctx(request), namespace, job_id, config.user, orgs)


async def _dispatch(hub: HubApp, request: Request, segs: list[str], raw_path: str) -> Response:
    """Route repo URLs by hand (see the module docstring for why)."""
    method = request.method
    c = _Ctx(request, hub.policy)
    url = f"{c.base}{raw_path}"
    limit = hub.config.max_json_bytes

    async def body_as(model: type[payloads.M]) -> payloads.M:
        return payloads.parse_body(model, await _read_body(request, limit))

    if method in ("POST", "PUT", "DELETE"):
        c.require_valid()  # a bad token is refused before any body is read
    # /api/{type}s/{ns}/{name}/...
    if len(segs) >= 4 and segs[0] == "api" and segs[1] in _TYPE_BY_PLURAL:
        repo_type, repo_id, rest = _TYPE_BY_PLURAL[segs[1]], f"{segs[2]}/{segs[3]}", segs[4:]
        check_repo_id(repo_id)
        action = rest[0] if rest else ""
        if method == "GET" and not rest:
            return await run_in_threadpool(hub.repo_info, c, repo_type, repo_id, None)
        if method == "GET" and action == "revision":
            rev, _ = _split_revision(rest[1:])
            return await run_in_threadpool(hub.repo_info, c, repo_type, repo_id, rev)
        if method == "PUT" and action == "settings":
            c.require_write()
            body = await body_as(payloads.Settings)
            return await run_in_threadpool(hub.update_settings, c, repo_type, repo_id, body)
        if method == "POST" and action == "preupload":
            rev, _ = _split_revision(rest[1:])
            c.require_write()
            body = await body_as(payloads.Preupload)
            return await run_in_threadpool(hub.preupload, c, repo_type, repo_id, rev, body)
        if method == "POST" and action == "commit":
            rev, _ = _split_revision(rest[1:])
            c.require_write()
            body_bytes = await _read_body(request, hub.config.max_commit_bytes)
            return await run_in_threadpool(hub.commit, c, repo_type, repo_id, rev, body_bytes)
        if method == "GET" and action == "tree":
            rev, path = _split_revision(rest[1:])
            return await run_in_threadpool(hub.tree, c, repo_type, repo_id, rev, "/".join(path), url)
        if method == "POST" and action == "paths-info":
            rev, _ = _split_revision(rest[1:])
            paths, expand = _parse_paths_info(
                request.headers.get("content-type", ""), await _read_body(request, limit)
            )
            return await run_in_threadpool(hub.paths_info, c, repo_type, repo_id, rev, paths, expand)
        if method == "GET" and action == "refs":
            return await run_in_threadpool(hub.refs, c, repo_type, repo_id)
        if method == "GET" and action == "commits":
            rev, _ = _split_revision(rest[1:])
            return await run_in_threadpool(hub.commits, c, repo_type, repo_id, rev, url)
        if method in ("POST", "DELETE") and action == "branch" and len(rest) >= 2:
            c.require_write()
            body = await body_as(payloads.Branch) if method == "POST" else payloads.Branch()
            return await run_in_threadpool(
                hub.branch, c, method, repo_type, repo_id, "/".join(rest[1:]), body
            )
        if method in ("POST", "DELETE") and action == "tag" and len(rest) >= 2:
            c.require_write()
            body = await body_as(payloads.Tag) if method == "POST" else None
            target = _split_revision(rest[1:])[0] if method == "POST" else "/".join(rest[1:])
            return await run_in_threadpool(hub.tag, c, method, repo_type, repo_id, target, body)
        raise StoreError(404, f"Unknown endpoint {method} {raw_path}", "NotFound")

    repo_type, segs2 = "model", segs
    if segs and segs[0] in _TYPE_BY_PLURAL and segs[0] != "models":
        repo_type, segs2 = _TYPE_BY_PLURAL[segs[0]], segs[1:]
    # /{prefix}{ns}/{name}.git/info/lfs/objects/...
    if len(segs2) >= 6 and segs2[1].endswith(".git") and segs2[2:5] == ["info", "lfs", "objects"]:
        repo_id = f"{segs2[0]}/{segs2[1][: -len('.git')]}"
        check_repo_id(repo_id)
        if method == "POST" and segs2[5:] == ["batch"]:
            c.require_write()
            body = await body_as(payloads.LfsBatch)
            return await run_in_threadpool(hub.lfs_batch, c, repo_type, repo_id, body)
        if method == "PUT" and len(segs2) == 8 and segs2[5] == "upload":
            return await _lfs_put(hub, request, repo_type, repo_id, segs2[6], segs2[7])
    # /{prefix}{ns}/{name}/resolve/{rev}/{path}
    if len(segs2) >= 5 and segs2[2] == "resolve" and method in ("GET", "HEAD"):
        repo_id = f"{segs2[0]}/{segs2[1]}"
        check_repo_id(repo_id)
        rev, path = _split_revision(segs2[3:])
        if not path:
            raise StoreError(404, "Missing file path", "EntryNotFound")
        return await run_in_threadpool(
            hub.resolve_file, c, method, repo_type, repo_id, rev, "/".join(path), request.headers.get("range")
        )
    raise StoreError(404, f"Unknown endpoint {method} {raw_path}", "NotFound")


def _parse_paths_info(content_type: str, body: bytes) -> tuple[list[str], bool]:
    if "json" in content_type:
        data = payloads.parse_body(payloads.PathsInfo, body)
        return ([data.paths] if isinstance(data.paths, str) else list(data.paths)), data.expand
    try:
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=100_000)
    except ValueError:
        raise StoreError(400, "Too many form fields", "BadRequest") from None
    return form.get("paths", []), _bool_param((form.get("expand") or ["false"])[0])


async def _lfs_put(
    hub: HubApp, request: Request, repo_type: str, repo_id: str, oid: str, size_s: str
) -> Response:
    """Receive one LFS object: check the signed URL, stream to disk, verify sha256 and size."""
    if not _OID_RE.match(oid) or not size_s.isdigit():
        raise StoreError(400, "Invalid LFS object id or size", "BadRequest")
    size = int(size_s)
    if not lfs.verify(hub.secret, repo_type, repo_id, oid, size, request.query_params.get("sig", "")):
        raise StoreError(403, "Invalid or missing upload signature", "Forbidden")
    fd, tmp_name = tempfile.mkstemp(prefix="upload-", dir=hub.store.tmp)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    received = 0
    try:
        with os.fdopen(fd, "wb") as fh:
            async for chunk in request.stream():
                received += len(chunk)
                if received > size:
                    raise StoreError(400, f"Upload larger than announced ({size} bytes)", "ChecksumMismatch")
                digest.update(chunk)
                fh.write(chunk)
        if received != size or digest.hexdigest() != oid:
            raise StoreError(400, "Uploaded content does not match its sha256/size", "ChecksumMismatch")
        await run_in_threadpool(hub.store.adopt_upload, tmp, oid, repo_type, repo_id)
    finally:
        tmp.unlink(missing_ok=True)
    return Response(status_code=200)
