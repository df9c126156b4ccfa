"""Which files go through Git LFS, and signed upload URLs for the LFS objects.

``preupload`` tells the client per file whether to send it inline (base64 in the commit)
or through the LFS batch API. The Hub decides from ``.gitattributes``; we apply the same
kind of rules directly: binary and data formats, anything >= 10 MB, and anything whose
first bytes contain NUL. ``datasets.push_to_hub`` needs parquet to be LFS.

The LFS ``PUT`` carries no Authorization header (the client treats the href as a presigned
URL), so the batch endpoint — which does check the write token — hands out an href signed
with an HMAC over (repo, oid, size) using a per-root secret.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path, PurePosixPath

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
