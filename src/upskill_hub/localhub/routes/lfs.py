"""Git LFS on the local Hub: which files go through it, the batch API, the signed upload.

``preupload`` tells the client per file whether to send it inline (base64 in the commit)
or through the LFS batch API. The Hub decides from ``.gitattributes``; we apply the same
kind of rules directly: binary and data formats, anything >= 10 MB, and anything whose
first bytes contain NUL. ``datasets.push_to_hub`` needs parquet to be LFS.

The LFS ``PUT`` carries no Authorization header (the client treats the href as a presigned
URL), so the batch endpoint — which does check the write token — hands out an href signed
with an HMAC over (repo, oid, size) using a per-root secret. The upload is streamed to disk
and kept only if its sha256 and size are the ones signed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path, PurePosixPath
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from upskill_hub.localhub import payloads
from upskill_hub.localhub.routes.request import Ctx, HubBase, repo_url
from upskill_hub.localhub.storage import StoreError

_OID_RE = re.compile(r"^[0-9a-f]{64}$")

#: Files at least this large are always LFS (the Hub's limit for regular files is 10 MB).
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024

LFS_SUFFIXES = frozenset(
    [
        ".7z",
        ".arrow",
        ".avro",
        ".bin",
        ".bz2",
        ".ckpt",
        ".db",
        ".feather",
        ".ftz",
        ".gguf",
        ".ggml",
        ".gz",
        ".h5",
        ".joblib",
        ".lz4",
        ".mlmodel",
        ".model",
        ".msgpack",
        ".npy",
        ".npz",
        ".onnx",
        ".ot",
        ".parquet",
        ".pb",
        ".pickle",
        ".pkl",
        ".pt",
        ".pth",
        ".rar",
        ".safetensors",
        ".so",
        ".dylib",
        ".dll",
        ".pyd",
        ".tar",
        ".tflite",
        ".tgz",
        ".wasm",
        ".xz",
        ".zip",
        ".zst",
        ".whl",
        ".sqlite",
        ".lance",
        ".orc",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".tiff",
        ".tif",
        ".webp",
        ".ico",
        ".mp3",
        ".mp4",
        ".wav",
        ".flac",
        ".ogg",
        ".webm",
        ".avi",
        ".mov",
        ".pdf",
    ]
)


def should_be_lfs(path: str, size: int, sample: bytes) -> bool:
    """True when a file should be uploaded through LFS rather than inline in the commit."""
    if size == 0:
        return False
    name = PurePosixPath(path).name.lower()
    suffixes = [s for s in PurePosixPath(name).suffixes]
    if any(s in LFS_SUFFIXES for s in suffixes) or ".tar." in name:
        return True
    if size >= LFS_SIZE_THRESHOLD:
        return True
    return b"\0" in sample


def load_secret(root: Path) -> bytes:
    """The per-root signing key, created once (0600) so signed URLs survive a restart."""
    path = root / "server-secret"
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        key = secrets.token_bytes(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key.hex())
        return key


def sign(secret: bytes, repo_type: str, repo_id: str, oid: str, size: int) -> str:
    msg = f"{repo_type}\0{repo_id}\0{oid}\0{size}".encode()
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()


def verify(secret: bytes, repo_type: str, repo_id: str, oid: str, size: int, signature: str) -> bool:
    return hmac.compare_digest(sign(secret, repo_type, repo_id, oid, size), signature or "")


class LfsRoutes(HubBase):
    """The LFS handlers (a mixin of ``app.HubApp``)."""

    def lfs_batch(self, ctx: Ctx, repo_type: str, repo_id: str, body: payloads.LfsBatch) -> Response:
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
                sig = sign(self.secret, repo_type, repo_id, oid, size)
                url = repo_url(ctx.base, repo_type, repo_id)
                href = f"{url}.git/info/lfs/objects/upload/{oid}/{size}?sig={sig}"
                item["actions"] = {"upload": {"href": href, "header": {}, "expires_in": 3600}}
            objects.append(item)
        return JSONResponse(
            {"transfer": "basic", "objects": objects, "hash_algo": "sha256"},
            media_type="application/vnd.git-lfs+json",
        )

    async def lfs_put(
        self, request: Request, repo_type: str, repo_id: str, oid: str, size_s: str
    ) -> Response:
        """Receive one LFS object: check the signed URL, stream to disk, verify sha256 and size."""
        if not _OID_RE.match(oid) or not size_s.isdigit():
            raise StoreError(400, "Invalid LFS object id or size", "BadRequest")
        size = int(size_s)
        if not verify(self.secret, repo_type, repo_id, oid, size, request.query_params.get("sig", "")):
            raise StoreError(403, "Invalid or missing upload signature", "Forbidden")
        digest = hashlib.sha256()
        received = 0
        with self.store.scratch_file("upload-") as tmp:  # never swept while this upload lives
            with open(tmp, "wb") as fh:
                async for chunk in request.stream():
                    received += len(chunk)
                    if received > size:
                        raise StoreError(
                            400, f"Upload larger than announced ({size} bytes)", "ChecksumMismatch"
                        )
                    digest.update(chunk)
                    fh.write(chunk)
            if received != size or digest.hexdigest() != oid:
                raise StoreError(400, "Uploaded content does not match its sha256/size", "ChecksumMismatch")
            await run_in_threadpool(self.store.adopt_upload, tmp, oid, repo_type, repo_id)
        return Response(status_code=200)
