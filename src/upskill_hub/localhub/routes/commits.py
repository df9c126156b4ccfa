"""Commits: which files go inline (preupload), the NDJSON commit itself, and the history.

An LFS file a commit names must have been uploaded to *this* repo first (:mod:`.lfs`).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from fastapi.responses import JSONResponse, Response

from upskill_hub.localhub import payloads
from upskill_hub.localhub.records import Entry, Operation
from upskill_hub.localhub.routes.lfs import should_be_lfs
from upskill_hub.localhub.routes.request import Ctx, HubBase, bool_param, repo_url
from upskill_hub.localhub.storage import StoreError, check_repo_path


class CommitRoutes(HubBase):
    """The commit handlers (a mixin of ``app.HubApp``)."""

    def preupload(
        self, ctx: Ctx, repo_type: str, repo_id: str, revision: str, body: payloads.Preupload
    ) -> Response:
        self.writable_refs(ctx, repo_type, repo_id)
        try:
            tree = self.store.resolve(repo_type, repo_id, revision).tree
        except StoreError:
            if not bool_param(ctx.query.get("create_pr")):
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
            is_lfs = should_be_lfs(path, size, sample)
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

    def commit(self, ctx: Ctx, repo_type: str, repo_id: str, revision: str, body: bytes) -> Response:
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
        create_pr = bool_param(ctx.query.get("create_pr"))
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
        url = repo_url(ctx.base, repo_type, repo_id)
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

    def commits(self, ctx: Ctx, repo_type: str, repo_id: str, revision: str, url: str) -> Response:
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
