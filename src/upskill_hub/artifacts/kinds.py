"""What kind of file a changed file is, from its first bytes and its name.

The kind picks the reader that renders it (see :mod:`~upskill_hub.artifacts.formats`).
Content wins over the name where it can: a PDF is ``%PDF-``, images have their magic
numbers, a file with a NUL byte in its first 8 KB is not text. The office formats are all
zips, so among zips the name's suffix tells a spreadsheet from a document or a deck; any
other zip (or a zip bomb named ``.txt``) is binary.
"""

from __future__ import annotations

KINDS = ("text", "xlsx", "docx", "pptx", "pdf", "image", "binary", "symlink")
#: Bytes of the head looked at (the caller reads them).
HEAD_BYTES = 8192

_ZIP_SUFFIXES = {".xlsx": "xlsx", ".xlsm": "xlsx", ".docx": "docx", ".pptx": "pptx"}
_IMAGE_MAGIC = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",
    b"MM\x00*",
)


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    return name[name.rfind(".") :] if "." in name else ""


def sniff(path: str, head: bytes) -> str:
    """The kind of the file ``path`` whose first bytes are ``head`` (one of :data:`KINDS`)."""
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _ZIP_SUFFIXES.get(_suffix(path), "binary")
    if any(head.startswith(m) for m in _IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
        return "image"
    if b"\0" in head:
        return "binary"
    return "text"


def guess_from_name(path: str) -> str:
    """The kind a file's name suggests (for deleted files, whose bytes are gone)."""
    suffix = _suffix(path)
    if suffix in _ZIP_SUFFIXES:
        return _ZIP_SUFFIXES[suffix]
    if suffix == ".pdf":
        return "pdf"
    if suffix in (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp"):
        return "image"
    return "text" if suffix in ("", ".txt", ".md", ".csv", ".json", ".py", ".html", ".yaml", ".yml") else "binary"
