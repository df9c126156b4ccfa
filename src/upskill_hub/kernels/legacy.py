"""build.toml files written before editions existed, and their upgrade to edition 5.

kernel-builder (``kernels-data/src/config/compat.rs``) reads a build.toml without
``general.edition`` as one of two older schemas:

* **v4**: the edition-5 schema minus ``edition``: ``version``, ``license`` and a framework
  table (``[torch]``, ``[torch-noarch]`` or ``[tvm-ffi]``) are all present. kernel-builder
  upgrades it in memory with a warning and builds it.
* **v3**: older still: ``version`` may be missing (it means 1) and no framework table means
  a noarch torch kernel. kernel-builder refuses to build it until it is migrated.

Many published projects (most of kernels-community) are in these formats, so ``kernels
check`` reads them the way kernel-builder does and ``kernels update`` rewrites them with
``tomlkit``, changing only what the upgrade needs so comments and layout stay.
:mod:`.buildtoml` builds on this module, so the bounded read both use lives here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tomlkit

from upskill_hub._util import boundedread
from upskill_hub._util.fsutil import write_text_atomic
from upskill_hub.errors import UpskillError

EDITION = 5
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")
V3 = "v3"
V4 = "v4"


def legacy_format(data: dict[str, Any]) -> str | None:
    """``"v4"`` or ``"v3"`` for a pre-edition build.toml, ``None`` when it names an edition.

    Mirrors kernel-builder's probe: no ``general.edition`` means legacy; v4 is the stricter
    reading (version, license and a framework table), anything else is v3.
    """
    general = data.get("general")
    if not isinstance(general, dict) or "edition" in general:
        return None
    has_framework = any(f in data for f in FRAMEWORKS)
    if has_framework and "version" in general and "license" in general:
        return V4
    return V3


def legacy_message(kind: str, project: str) -> str:
    """The warning (v4) or error (v3) text naming the upgrade command."""
    cmd = f"`upskill-hub kernels update {project}`"
    if kind == V4:
        return f"legacy format (no general.edition), read as edition 5 as kernel-builder does; run {cmd} to rewrite it"
    return (
        "legacy v3 format (no general.edition, and no version or framework table): kernel-builder "
        f"no longer builds it; run {cmd} to migrate it to edition 5"
    )


def upgraded_view(data: dict[str, Any]) -> dict[str, Any]:
    """A legacy table as kernel-builder reads it: edition 5, version 1 by default, noarch by default.

    Only the in-memory view changes; ``kernels update`` writes the same upgrade to disk.
    """
    general = dict(data["general"])
    general.setdefault("version", 1)
    general["edition"] = EDITION
    view = {**data, "general": general}
    if not any(f in view for f in FRAMEWORKS):
        view["torch-noarch"] = {}
    return view


def _insert_after(table: Any, after: str | None, key: str, value: Any) -> None:
    """Add ``key`` right after ``after`` in a tomlkit table, so the file reads naturally."""
    container = getattr(table, "value", None)
    if after is not None and after in table and hasattr(container, "_insert_after"):
        # tomlkit has no public "insert after": its container method keeps comments in place.
        container._insert_after(after, key, value)
    else:
        table[key] = value


def upgrade_document(doc: tomlkit.TOMLDocument) -> list[str]:
    """Turn a legacy document into edition 5 in place; return what changed, one line each.

    Raises ``UpskillError`` when the upgrade needs a fact the file does not hold (the
    license, as kernel-builder's migration does).
    """
    general = doc.get("general")
    if not isinstance(general, dict):
        raise UpskillError("general: missing [general] table; cannot upgrade")
    if "edition" in general:
        return []
    if "license" not in general:
        raise UpskillError(
            'general.license: edition 5 requires a license and it cannot be guessed; add e.g. license = "Apache-2.0"'
        )
    changes = []
    if "version" not in general:
        _insert_after(general, "name", "version", 1)
        changes.append("general.version = 1 (the legacy default)")
    _insert_after(general, "version", "edition", EDITION)
    changes.append(f"general.edition = {EDITION}")
    if not any(f in doc for f in FRAMEWORKS):
        doc.add("torch-noarch", tomlkit.table())
        changes.append("[torch-noarch] added (in the legacy format no framework table meant noarch)")
    return changes


def read_toml_text(path: Path) -> str:
    """A project's build.toml text; a missing or unreadable file is an ``UpskillError``.

    Read with :func:`boundedread.read_toml_text`: a FIFO, a device, a binary file or one over
    ``UPSKILL_MAX_TOML_KB`` is refused in one line instead of hanging or raising.
    """
    if not os.path.lexists(path):
        raise UpskillError(f"{path}: not found (a kernel project needs a build.toml)")
    return boundedread.read_toml_text(path)


def update_project(root: Path) -> list[str]:
    """Rewrite ``root/build.toml`` as edition 5; return the changes (empty: already edition 5).

    The file is replaced atomically and only after the upgraded text parses again.
    """
    path = Path(root) / "build.toml"
    text = read_toml_text(path)
    try:
        doc = boundedread.parse_toml_text(text, path)  # bounded: size, nesting, recursion
    except boundedread.FileRefused as exc:
        raise UpskillError(str(exc)) from None
    general = doc.get("general")
    if isinstance(general, dict) and "edition" in general:
        if general["edition"] != EDITION:
            raise UpskillError(f"{path}: general.edition is {general['edition']!r}; this tool knows edition {EDITION}")
        return []
    try:
        changes = upgrade_document(doc)
    except UpskillError as exc:
        raise UpskillError(f"{path}: {exc}") from None
    new_text = tomlkit.dumps(doc)
    tomlkit.parse(new_text)  # never write a file we could not read back
    write_text_atomic(path, new_text, mode=path.stat().st_mode & 0o777)
    return changes
