"""Repos and their files: create, delete, settings, info and listings (with the card's metadata),
refs, branches and tags, the file tree, paths-info, resolve (downloads); whoami and org overviews.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import yaml
from fastapi.responses import JSONResponse, Response, StreamingResponse

from upskill_hub._util import safeyaml
from upskill_hub.localhub import payloads
from upskill_hub.localhub.auth import Access
from upskill_hub.localhub.records import Commit, Entry
from upskill_hub.localhub.routes.request import Ctx, EntryMissing, HubBase, bool_param, error, paged, repo_url
from upskill_hub.localhub.storage import REPO_TYPES, StoreError, check_repo_id, folder_oid, parent_dirs

_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
_FRONT_MATTER_RE = re.compile(r"^---\s*\n(.*?)\n---\s*(\n|$)", re.S)


class RepoRoutes(HubBase):
    """The repo and file handlers (a mixin of ``app.HubApp``)."""

    # ---------------------------------------------------------------- repos
    def create_repo(self, ctx: Ctx, body: payloads.CreateRepo) -> Response:
        ctx.require_write()
        repo_type = body.type or "model"
        repo_id = f"{body.organization or self.config.user}/{body.name}"
        check_repo_id(repo_id)
        private = body.visibility == "private" if body.visibility else bool(body.private)
        url = repo_url(ctx.base, repo_type, repo_id)
        try:
            self.store.create_repo(repo_type, repo_id, private=private, author=self.config.user, sdk=body.sdk)
        except StoreError as exc:
            if exc.status == 409:
                return JSONResponse({"error": exc.message, "url": url}, status_code=409)
            raise
        return JSONResponse({"url": url, "name": repo_id, "id": repo_id})

    def delete_repo(self, ctx: Ctx, body: payloads.DeleteRepo) -> Response:
        repo_type = body.type or "model"
        repo_id = f"{body.organization or self.config.user}/{body.name}"
        self.writable_refs(ctx, repo_type, repo_id)
        self.store.delete_repo(repo_type, repo_id)
        return JSONResponse({})

    def update_settings(self, ctx: Ctx, repo_type: str, repo_id: str, body: payloads.Settings) -> Response:
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
        if entry.sha256 in self.cards:
            return self.cards[entry.sha256]
        text = self.store.blob_path(entry.sha256).read_text(encoding="utf-8", errors="replace")
        data = _front_matter(text)
        card = data if isinstance(data, dict) else None
        if len(self.cards) > 1024:
            self.cards.clear()
        self.cards[entry.sha256] = card
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

    def repo_info(self, ctx: Ctx, repo_type: str, repo_id: str, revision: str | None) -> Response:
        refs = self.visible_refs(ctx, repo_type, repo_id)
        commit = self.store.resolve(repo_type, repo_id, revision or "main")
        return JSONResponse(self.info_json(refs, commit))

    def list_repos(self, ctx: Ctx, repo_type: str) -> Response:
        ctx.require_valid()
        author = ctx.query.get("author")
        search = (ctx.query.get("search") or "").lower()
        full = bool_param(ctx.query.get("full"))
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

    def whoami(self, ctx: Ctx) -> Response:
        """The caller as the Hub describes a token's owner (``/api/whoami-v2``)."""
        if ctx.access in (Access.INVALID, Access.ANONYMOUS):
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

    def org_overview(self, ctx: Ctx, org: str) -> Response:
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
    def validate_yaml(ctx: Ctx, body: payloads.ValidateYaml) -> Response:
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

    # ----------------------------------------------------------------- refs
    def refs(self, ctx: Ctx, repo_type: str, repo_id: str) -> Response:
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
        if bool_param(ctx.query.get("include_prs")):
            out["pullRequests"] = [
                {"name": f"refs/pr/{n}", "ref": f"refs/pr/{n}", "targetCommit": c}
                for n, c in sorted(refs["prs"].items(), key=lambda kv: int(kv[0]))
            ]
        return JSONResponse(out)

    def branch(
        self, ctx: Ctx, method: str, repo_type: str, repo_id: str, name: str, body: payloads.Branch
    ) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        if method == "POST":
            self.store.create_branch(repo_type, repo_id, name, body.startingPoint)
        else:
            self.store.delete_branch(repo_type, repo_id, name)
        return JSONResponse({})

    def tag(
        self, ctx: Ctx, method: str, repo_type: str, repo_id: str, rev_or_tag: str, body: payloads.Tag | None
    ) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        if method == "POST":
            assert body is not None
            self.store.create_tag(repo_type, repo_id, body.tag, rev_or_tag, body.message)
        else:
            self.store.delete_tag(repo_type, repo_id, rev_or_tag)
        return JSONResponse({})

    # ---------------------------------------------------------------- files
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

    def tree(self, ctx: Ctx, repo_type: str, repo_id: str, revision: str, path: str, url: str) -> Response:
        self.visible_refs(ctx, repo_type, repo_id)
        commit = self.store.resolve(repo_type, repo_id, revision)
        expand = bool_param(ctx.query.get("expand"))
        entries = self._entries(commit, path, bool_param(ctx.query.get("recursive")))
        page_size = min(50, self.config.tree_page_size) if expand else self.config.tree_page_size
        limit = ctx.query.get("limit")
        if limit and limit.isdigit() and int(limit) > 0:
            page_size = min(page_size, int(limit))
        page, headers = paged(entries, page_size, url, list(ctx.query.items()))
        if expand:
            self._add_last_commits(repo_type, repo_id, commit, page)
        return JSONResponse(page, headers=headers)

    def paths_info(
        self, ctx: Ctx, repo_type: str, repo_id: str, revision: str, paths: list[str], expand: bool
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

    def resolve_file(
        self,
        ctx: Ctx,
        method: str,
        repo_type: str,
        repo_id: str,
        revision: str,
        path: str,
        range_header: str | None,
        pinned_url: Callable[[str], str],
    ) -> Response:
        """Serve a file; a branch, tag or PR name is first redirected to the commit it names now.

        Why the redirect: ``huggingface_hub`` sends a HEAD, checks the size it announced
        against the GET that follows, and GETs from where the HEAD ended. Answered in place,
        a commit landing between the two made the GET read the new head ("Consistency check
        failed"). ``307`` to ``resolve/<commit>/<path>`` (``pinned_url``, a path without the
        host, query kept) pins both to one commit, as the Hub's own redirects do; GET answers
        like HEAD (HTTP wants them alike) and clients follow the redirect. A missing file stays
        a 404 with the commit, never a redirect.
        """
        self.visible_refs(ctx, repo_type, repo_id)
        commit = self.store.resolve(repo_type, repo_id, revision)
        entry = commit.tree.get(path)
        if entry is None:
            raise EntryMissing(commit.id, path)
        headers = {"X-Repo-Commit": commit.id, "ETag": f'"{entry.etag}"'}
        if entry.lfs:
            headers["X-Linked-Etag"] = f'"{entry.sha256}"'
            headers["X-Linked-Size"] = str(entry.size)
        if revision != commit.id:
            headers["Location"] = pinned_url(commit.id)
            return Response(status_code=307, headers={**headers, "Content-Length": "0"})
        headers.update({"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"})
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
                    return error(
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


def parse_paths_info(content_type: str, body: bytes) -> tuple[list[str], bool]:
    if "json" in content_type:
        data = payloads.parse_body(payloads.PathsInfo, body)
        return ([data.paths] if isinstance(data.paths, str) else list(data.paths)), data.expand
    try:
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=100_000)
    except ValueError:
        raise StoreError(400, "Too many form fields", "BadRequest") from None
    return form.get("paths", []), bool_param((form.get("expand") or ["false"])[0])


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


def _front_matter(text: str) -> Any:
    """The YAML block at the top of a card, within :mod:`upskill_hub._util.safeyaml`'s limits; None if unreadable."""
    match = _FRONT_MATTER_RE.match(text)
    if not match:
        return None
    try:
        return safeyaml.load(match.group(1))
    except yaml.YAMLError:
        return None
