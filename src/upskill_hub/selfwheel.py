"""The wheel of the running upskill-hub, so that remote machines run exactly this code.

Why: a sharded eval's Jobs must run the launcher's code, published or not (a development
version never reaches PyPI). The launcher puts this wheel in the run's Job bundle; each Job
installs it; the Job prints the sha256 of the wheel it was installed from and the launcher
checks it (:func:`installed_from`).

Two ways to get it, cached by content (``<user cache>/upskill-hub/wheels/<key>/``, the key a
hash of every file that goes in), so a launch rebuilds only after the code changed:

* **an editable install** (a clone, ``pip install -e .``): the project's own build
  (``pip wheel`` on the source tree, hatchling through ``pyproject.toml``);
* **an installed wheel** (``pip``/``pipx``/``uvx``): the files the installer recorded in
  ``RECORD`` are packed again (``wheel.wheelfile.WheelFile``), minus what the installer
  added (``INSTALLER``, ``REQUESTED``, ``direct_url.json``, bytecode, launch scripts).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from upskill_hub.errors import UpskillError
from upskill_hub.shipped import SHIPPED

DIST_NAME = "upskill-hub"
#: Files an installer writes into ``.dist-info``; a wheel never carries them.
INSTALLER_FILES = frozenset({"INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json", "uv_build.json"})
_SKIP_DIRS = frozenset({"__pycache__", ".git", "build", "result", ".ruff_cache", ".pytest_cache"})


@dataclass(frozen=True)
class OwnWheel:
    """A wheel of the running upskill-hub."""

    path: Path
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        return self.path.name


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(os.environ.get("UPSKILL_WHEEL_CACHE") or Path(user_cache_dir("upskill-hub")) / "wheels")


def _distribution() -> metadata.Distribution:
    try:
        return metadata.distribution(DIST_NAME)
    except metadata.PackageNotFoundError:
        raise UpskillError(
            "upskill-hub is not installed as a package (imported from a path?), so there is no wheel to send "
            "to the Jobs: pip install it, or pass --image with an image that has it"
        ) from None


def _direct_url(dist: metadata.Distribution) -> dict:
    text = dist.read_text("direct_url.json")
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _file_url_path(url: str) -> Path | None:
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def editable_source(dist: metadata.Distribution) -> Path | None:
    """The project folder of an editable install (PEP 610 ``dir_info.editable``), else ``None``."""
    info = _direct_url(dist)
    if not (info.get("dir_info") or {}).get("editable"):
        return None
    path = _file_url_path(str(info.get("url") or ""))
    return path if path is not None and (path / "pyproject.toml").is_file() else None


def installed_from() -> tuple[str, str | None, str | None]:
    """``(version, wheel file name, its sha256)`` of the wheel this upskill-hub was installed from.

    Read from the install's own record (PEP 610 ``direct_url.json``), so a Job reports what it
    really runs; name and hash are ``None`` when it was not installed from a wheel file on disk.
    """
    try:
        dist = metadata.distribution(DIST_NAME)
    except metadata.PackageNotFoundError:
        from upskill_hub import __version__

        return __version__, None, None
    path = _file_url_path(str(_direct_url(dist).get("url") or ""))
    if path is None or path.suffix != ".whl" or not path.is_file():
        return dist.version, None, None
    return dist.version, path.name, file_sha256(path)


def _walk(folder: Path) -> list[Path]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        out += [Path(root) / f for f in sorted(files) if not f.endswith((".pyc", ".pyo"))]
    return out


def _key(items: list[tuple[str, Path]]) -> str:
    h = hashlib.sha256()
    for name, path in sorted(items):
        h.update(name.encode() + b"\0" + file_sha256(path).encode() + b"\n")
    return h.hexdigest()[:24]


def _cached(folder: Path) -> Path | None:
    found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    return found[0] if len(found) == 1 else None


def _publish(built: Path, folder: Path) -> Path:
    """Move a finished wheel into its cache folder (atomic per file; concurrent launches agree)."""
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / built.name
    os.replace(built, dest)
    return dest


def _source_items(src: Path) -> list[tuple[str, Path]]:
    items = [(n, src / n) for n in ("pyproject.toml", "README.md") if (src / n).is_file()]
    for top in ("src/upskill_hub", *SHIPPED):
        items += [(p.relative_to(src).as_posix(), p) for p in _walk(src / top)]
    return items


def _build_from_source(src: Path, out: Path) -> Path:
    """``pip wheel`` the project at ``src`` (its own build backend) into ``out``."""
    import importlib.util

    if importlib.util.find_spec("pip") is None:
        raise UpskillError(
            f"building upskill-hub's wheel from {src} needs pip in this environment ({sys.executable})"
        )
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wheels = sorted(out.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        lines = [ln for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip() and "WARNING" not in ln]
        why = lines[-1].strip() if lines else f"exit {proc.returncode}"
        raise UpskillError(f"could not build upskill-hub's wheel from {src}: {why}")
    return wheels[0]


def _record_items(dist: metadata.Distribution) -> tuple[list[tuple[str, Path]], str]:
    """The installed files that came from the wheel, and the wheel's tag."""
    items: list[tuple[str, Path]] = []
    tag = ""
    for rel in dist.files or []:
        parts = Path(rel).parts
        if not parts or parts[0] == ".." or Path(rel).is_absolute() or "__pycache__" in parts:
            continue
        if rel.suffix in (".pyc", ".pyo"):
            continue
        if parts[0].endswith(".dist-info") and len(parts) == 2 and parts[1] in INSTALLER_FILES:
            continue
        path = Path(dist.locate_file(rel))
        if not path.is_file():
            raise UpskillError(f"upskill-hub's installed file {rel} is missing; reinstall it")
        items.append((Path(rel).as_posix(), path))
        if parts[0].endswith(".dist-info") and parts[-1] == "WHEEL":
            tags = HeaderParser().parsestr(path.read_text(encoding="utf-8")).get_all("Tag") or []
            tag = tags[0] if tags else ""
    if not items or not tag:
        raise UpskillError("upskill-hub's install records no wheel files (RECORD/WHEEL); reinstall it")
    return items, tag


def _pack(items: list[tuple[str, Path]], version: str, tag: str, out: Path) -> Path:
    from wheel.wheelfile import WheelFile

    path = out / f"upskill_hub-{version}-{tag}.whl"
    with WheelFile(path, "w") as wf:
        for name, src in sorted(items):
            wf.write(str(src), arcname=name)
    return path


def own_wheel(cache_dir: Path | None = None) -> OwnWheel:
    """The wheel of the running upskill-hub, built (or found in the cache) as the module docstring says."""
    dist = _distribution()
    src = editable_source(dist)
    if src is not None:
        items = _source_items(src)
        key = "src-" + _key(items)
    else:
        items, tag = _record_items(dist)
        key = "rec-" + _key(items)
    folder = (cache_dir or default_cache_dir()) / key
    found = _cached(folder)
    if found is None:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=".build-", dir=folder.parent) as tmp:
                built = _build_from_source(src, Path(tmp)) if src is not None else _pack(items, dist.version, tag, Path(tmp))
                found = _publish(built, folder)
        except OSError as exc:
            raise UpskillError(f"cannot write upskill-hub's wheel into {folder}: {exc.strerror or exc}") from None
    return OwnWheel(found, dist.version, file_sha256(found))

