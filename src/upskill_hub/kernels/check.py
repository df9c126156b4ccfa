"""``kernels check``: everything that would stop a kernel project from building or loading.

One ``Problem`` per finding (``path: field: problem``): the build.toml schema (see
:mod:`.buildtoml`), the project layout, and for each folder in ``build/`` the variant
name, ``metadata.json`` (our own field checks, then the real parser ``kernels`` uses),
the files ``kernels`` imports, and the ABI of every shared object with the PyPI
``kernel-abi-check`` (the library kernel-builder's ``check-abi`` uses).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from upskill_hub._util.boundedread import read_json_file
from upskill_hub._util.fsutil import FileRefused, read_capped
from upskill_hub._util.problems import Problem
from upskill_hub.kernels import layout
from upskill_hub.kernels.buildtoml import NAME_RE, BuildConfig, config_from_table, validate_build_toml
from upskill_hub.kernels.variants import explain_bad_variant, parse_variant_name

#: kernel-builder's defaults for ``check-abi``.
DEFAULT_MANYLINUX = "manylinux_2_28"
PYTHON_ABI = "3.9"
REQUIRED_METADATA = {
    "name": str,
    "id": str,
    "version": int,
    "license": str,
    "python-depends": list,
    "backend": dict,
}
_ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_ABI_LINES = 5


def _text_or_empty(path: Path) -> str:
    """A source file's text for a pattern check: capped, never blocking; unreadable is empty."""
    try:
        return read_capped(path).decode("utf-8", errors="replace")
    except FileRefused:
        return ""


def check_layout(root: Path, cfg: BuildConfig | None) -> list[Problem]:
    """Files a kernel-builder project needs beside build.toml."""
    problems = []
    if not (root / "flake.nix").is_file():
        problems.append(
            Problem("flake.nix", "file", "missing: the Nix builder needs it (see `kernels init`)", "warning")
        )
    if not (root / "tests").is_dir():
        problems.append(
            Problem("tests", "folder", "missing: `kernels verify` runs the project's tests", "warning")
        )
    if cfg is not None and cfg.framework == "torch":
        binding = root / "torch-ext" / "torch_binding.cpp"
        if binding.is_file() and "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME" not in _text_or_empty(binding):
            problems.append(
                Problem(
                    "torch-ext/torch_binding.cpp",
                    "registration",
                    "ops must be registered with TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) so each build "
                    "gets its own namespace",
                )
            )
    return problems


def check_metadata(rel: str, meta: Any, variant: str, cfg: BuildConfig | None) -> list[Problem]:
    """Field-level checks of one variant's metadata.json against its name and build.toml."""
    problems: list[Problem] = []
    if not isinstance(meta, dict):
        return [Problem(rel, "metadata", "must be a JSON object")]
    for key, typ in REQUIRED_METADATA.items():
        value = meta.get(key)
        if key not in meta:
            problems.append(Problem(rel, key, "missing required field"))
        elif not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            problems.append(Problem(rel, key, f"must be a {typ.__name__}"))
    name = meta.get("name")
    if isinstance(name, str) and not NAME_RE.match(name):
        problems.append(Problem(rel, "name", f"invalid kernel name {name!r}"))
    if isinstance(meta.get("id"), str) and not _ID_RE.match(meta["id"]):
        problems.append(
            Problem(rel, "id", f"{meta['id']!r} is not a valid Python module / op namespace name")
        )
    backend = meta.get("backend")
    info = parse_variant_name(variant)
    if isinstance(backend, dict):
        btype = backend.get("type")
        if not isinstance(btype, str):
            problems.append(Problem(rel, "backend.type", 'missing (e.g. "cpu" or "cuda")'))
        elif info is not None and info.backend != "universal" and btype != info.backend:
            problems.append(
                Problem(rel, "backend.type", f"{btype!r} does not match variant {variant} ({info.backend})")
            )
        if "archs" in backend and not (
            isinstance(backend["archs"], list) and all(isinstance(a, str) for a in backend["archs"])
        ):
            problems.append(Problem(rel, "backend.archs", "must be a list of strings"))
    if isinstance(meta.get("python-depends"), list) and not all(
        isinstance(d, str) for d in meta["python-depends"]
    ):
        problems.append(Problem(rel, "python-depends", "must be a list of strings"))
    if cfg is not None:
        if isinstance(name, str) and name != cfg.name:
            problems.append(
                Problem(rel, "name", f"{name!r} differs from build.toml general.name {cfg.name!r}")
            )
        version = meta.get("version")
        if isinstance(version, int) and version != cfg.version:
            problems.append(
                Problem(
                    rel,
                    "version",
                    f"{version} differs from build.toml general.version {cfg.version}: rebuild",
                )
            )
    if not problems:
        try:
            from kernels._rust import Metadata  # the parser get_kernel uses
        except ImportError:
            return problems
        try:
            Metadata.from_bytes(json.dumps(meta).encode())
        except ValueError as exc:
            problems.append(Problem(rel, "metadata", f"rejected by kernels: {str(exc).splitlines()[0]}"))
    return problems


def check_abi(rel_dir: str, so_path: Path, manylinux: str) -> list[Problem]:
    """ABI problems of one shared object (manylinux symbol versions, Python stable ABI)."""
    try:
        import kernel_abi_check
    except ImportError:
        return [
            Problem(
                rel_dir,
                "abi",
                "kernel-abi-check is not installed: pip install 'upskill-hub[kernels]'",
                "warning",
            )
        ]
    rel = f"{rel_dir}/{so_path.name}"
    try:
        obj = kernel_abi_check.ObjectFile(str(so_path))
        fmt = obj.format()
    except (OSError, ValueError) as exc:
        return [Problem(rel, "abi", f"cannot read shared object: {exc}")]
    problems = []
    if str(fmt).endswith("ELF"):
        bad = obj.check_manylinux(manylinux)
        for v in bad[:_MAX_ABI_LINES]:
            problems.append(
                Problem(rel, "abi", f"symbol {v.name} needs {v.dep} {v.version}, newer than {manylinux}")
            )
        if len(bad) > _MAX_ABI_LINES:
            problems.append(
                Problem(rel, "abi", f"{len(bad) - _MAX_ABI_LINES} more symbols newer than {manylinux}")
            )
    for v in obj.check_python_abi(PYTHON_ABI)[:_MAX_ABI_LINES]:
        added = getattr(v, "version_added", None)
        detail = f"was added in Python {added}" if added else "is not part of the stable ABI (abi3)"
        problems.append(
            Problem(rel, "abi", f"Python symbol {v.name} {detail}; variants must be abi3 for {PYTHON_ABI}")
        )
    return problems


def check_variant(vdir: Path, cfg: BuildConfig | None, manylinux: str | None) -> list[Problem]:
    """Name, metadata, files and ABI of one ``build/<variant>/`` folder."""
    variant = vdir.name
    rel = f"build/{variant}"
    info = parse_variant_name(variant)
    if info is None:
        return [Problem(rel, "variant", explain_bad_variant(variant))]
    meta_path = vdir / layout.METADATA
    if not os.path.lexists(meta_path):
        return [
            Problem(
                rel, "metadata.json", "missing: every variant needs metadata.json (kernels cannot load it)"
            )
        ]
    try:
        meta = read_json_file(meta_path)  # a FIFO, a huge or deeply nested file: one problem, not a hang
    except FileRefused as exc:
        return [Problem(f"{rel}/metadata.json", "metadata", exc.problem)]
    problems = check_metadata(f"{rel}/metadata.json", meta, variant, cfg)
    pkg = meta.get("name", "").replace("-", "_") if isinstance(meta.get("name"), str) else ""
    if not (vdir / "__init__.py").is_file() and not (vdir / pkg / "__init__.py").is_file():
        problems.append(Problem(rel, "__init__.py", "missing: kernels imports the variant's __init__.py"))
    sos = sorted(p for p in vdir.rglob("*") if p.suffix in (".so", ".pyd") and p.is_file())
    if not info.noarch and not sos:
        problems.append(Problem(rel, "files", "an arch variant needs its compiled extension (.so)"))
    if info.noarch and sos:
        problems.append(Problem(rel, "files", "a noarch variant must not contain compiled code (.so)"))
    build_info = meta.get("upskill-hub-build") if isinstance(meta.get("upskill-hub-build"), dict) else {}
    policy = manylinux or build_info.get("manylinux") or DEFAULT_MANYLINUX
    for so in sos:
        problems += check_abi(rel, so, policy)
    if policy != DEFAULT_MANYLINUX and sos and manylinux is None:
        strict = [p for so in sos for p in check_abi(rel, so, DEFAULT_MANYLINUX) if "newer than" in p.message]
        if strict:
            problems.append(
                Problem(
                    rel,
                    "abi",
                    f"local build targets {policy} (this machine's glibc), not {DEFAULT_MANYLINUX}: "
                    "use --builder nix for a portable build",
                    "warning",
                )
            )
    if cfg is not None and isinstance(meta.get("id"), str) and build_info.get("builder") == "local":
        try:
            current = layout.source_hash(cfg)
        except (OSError, FileRefused):
            current = None
        if current and not meta["id"].endswith(current):
            problems.append(
                Problem(rel, "id", "built from older sources than the project's: rebuild", "warning")
            )
    return problems


def check_project(root: Path, *, manylinux: str | None = None) -> list[Problem]:
    """All problems of the kernel project at ``root`` (build.toml, layout, built variants)."""
    root = Path(root)
    if not root.is_dir():
        return [Problem(str(root), "project", "not a directory")]
    problems, data = validate_build_toml(root)
    cfg = None
    if data is not None and not [p for p in problems if p.severity == "error"]:
        cfg = config_from_table(root.resolve(), data)
    problems += check_layout(root, cfg)
    build_dir = root / "build"
    if build_dir.is_dir():
        for vdir in sorted(p for p in build_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            problems += check_variant(vdir, cfg, manylinux)
    return problems


def has_errors(problems: list[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)
