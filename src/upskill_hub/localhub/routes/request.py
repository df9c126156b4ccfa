"""What every handler of the local Hub shares: who is asking, what they sent, how answers look.

Errors follow the Hub: JSON ``{"error": ...}`` plus ``X-Error-Code`` / ``X-Error-Message``
headers, which ``huggingface_hub`` turns into RepositoryNotFoundError, RevisionNotFoundError,
EntryNotFoundError...
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from upskill_hub.localhub import payloads
from upskill_hub.localhub.auth import Access, AuthPolicy
from upskill_hub.localhub.jobs import JobManager
from upskill_hub.localhub.storage import CONTROL_RE, URL_PREFIXES, HubStore, StoreError

T = TypeVar("T")


def header_safe(text: str) -> str:
    """``text`` fit for a header value: ASCII, no control characters (CR/LF/NUL end a response),
    and no space at either end (h11 refuses such a value, and cutting at 500 can leave one)."""
    return CONTROL_RE.sub("?", text.encode("ascii", "replace").decode())[:500].strip()


def error(
    status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    hdrs = {"X-Error-Message": header_safe(message)}
    if code:
        hdrs["X-Error-Code"] = code
    hdrs.update(headers or {})
    return JSONResponse({"error": message}, status_code=status, headers=hdrs)


class EntryMissing(StoreError):
    """404 EntryNotFound that still tells the client the commit it looked at (it caches that)."""

    def __init__(self, commit_id: str, path: str) -> None:
        super().__init__(404, f"Entry not found: {path}", "EntryNotFound")
        self.commit_id = commit_id


def bool_param(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


def split_revision(segs: list[str]) -> tuple[str, list[str]]:
    """Take a revision off the front of path segments; ``refs/pr/1`` may arrive unencoded."""
    if not segs:
        raise StoreError(400, "Missing revision", "InvalidRevision")
    if any(CONTROL_RE.search(s) for s in segs):
        raise StoreError(400, "Control characters in a revision or path", "InvalidRevision")
    if segs[0] == "refs" and len(segs) >= 3 and segs[1] in ("pr", "heads", "tags", "convert"):
        return "/".join(segs[:3]), segs[3:]
    return segs[0], segs[1:]


def repo_url(base: str, repo_type: str, repo_id: str) -> str:
    return f"{base}/{URL_PREFIXES[repo_type]}{repo_id}"


async def read_body(request: Request, limit: int) -> bytes:
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


async def json_body(request: Request, model: type[payloads.M], limit: int) -> payloads.M:
    """A JSON body of at most ``limit`` bytes, validated into ``model`` (400 when it does not fit)."""
    return payloads.parse_body(model, await read_body(request, limit))


def paged(rows: list[T], size: int, url: str, query: list[tuple[str, str]]) -> tuple[list[T], dict[str, str]]:
    """The page of ``rows`` that ``query``'s ``cursor`` starts, and the ``Link`` header to the next page.

    Clients only echo the cursor back in the ``Link: <...>; rel="next"`` URL, so it is simply
    the offset, base64-encoded; a cursor someone made up is a 400, not a 500.
    """
    cursor = dict(query).get("cursor")
    try:
        start = max(int(base64.urlsafe_b64decode(cursor.encode()).decode()), 0) if cursor else 0
    except (ValueError, binascii.Error):
        raise StoreError(400, "Invalid cursor", "BadRequest") from None
    headers = {}
    if start + size < len(rows):
        params = [(k, v) for k, v in query if k != "cursor"]
        params.append(("cursor", base64.urlsafe_b64encode(str(start + size).encode()).decode()))
        headers["Link"] = f'<{url}?{urlencode(params, safe="/", quote_via=quote)}>; rel="next"'
    return rows[start : start + size], headers


class Ctx:
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


class HubBase:
    """The state and access checks the handlers share: :mod:`.repos`, :mod:`.commits` and
    :mod:`.lfs` are mixins of it, which ``app.HubApp`` combines and sets up from a ``ServerConfig``."""

    config: Any  # app.ServerConfig: app imports this module, so the type is not named here
    store: HubStore
    policy: AuthPolicy
    secret: bytes  # the key that signs LFS upload URLs
    jobs: JobManager
    cards: dict[str, dict[str, Any] | None]  # README blob sha256 -> parsed card

    def visible_refs(self, ctx: Ctx, repo_type: str, repo_id: str) -> dict[str, Any]:
        """The repo's refs if the caller may see it; a private repo is 404 to strangers."""
        ctx.require_valid()
        refs = self.store.refs(repo_type, repo_id)
        if refs.get("private") and not ctx.sees_private:
            raise StoreError(404, f"Repository {repo_id} not found", "RepoNotFound")
        return refs

    def writable_refs(self, ctx: Ctx, repo_type: str, repo_id: str) -> dict[str, Any]:
        ctx.require_write()
        return self.store.refs(repo_type, repo_id)
