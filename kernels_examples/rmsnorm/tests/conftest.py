"""Fixtures that give the tests the kernel module to check, wherever it comes from.

The same tests run against three sources, chosen by environment variables
(the contract `upskill-hub kernels verify` relies on):

* ``KERNEL_REPO_ID=owner/name``: ``kernels.get_kernel(repo_id, ...)`` from the
  Hub (or ``HF_ENDPOINT``), with ``KERNEL_VERSION`` (default: ``version`` in
  build.toml) or ``KERNEL_REVISION``, and ``trust_remote_code`` from
  ``KERNEL_TRUST_REMOTE_CODE`` (``1``/``true``; default false).
* ``KERNEL_LOCAL_PATH=/path``: ``kernels.get_local_kernel(path)``; the path is a
  project with ``build/``, a ``build/`` folder, or one variant folder.
* neither: the CPU backend is compiled from this source tree with
  ``torch.utils.cpp_extension`` (cached by a hash of the sources) and loaded
  the way kernel-builder lays it out, for a quick check while developing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest
import torch

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = "rmsnorm"
CPU_SOURCES = ["torch-ext/torch_binding.cpp", "rmsnorm_cpu/rmsnorm_cpu.cpp"]
HEADERS = ["torch-ext/torch_binding.h", "torch-ext/registration.h"]


def _build_toml_version() -> int:
    import tomllib

    with open(PROJECT / "build.toml", "rb") as fh:
        return int(tomllib.load(fh)["general"]["version"])


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes"}


def _source_digest() -> str:
    """Hash of what gets compiled (Python files are re-copied on every load)."""
    h = hashlib.sha256()
    for rel in CPU_SOURCES + HEADERS:
        h.update(rel.encode())
        h.update((PROJECT / rel).read_bytes())
    h.update(torch.__version__.encode())
    return h.hexdigest()[:10]


def build_from_source() -> ModuleType:
    """Compile the CPU variant from source and import it as kernel-builder would."""
    from torch.utils.cpp_extension import load

    digest = _source_digest()
    namespace = f"_{PACKAGE}_{digest}"
    root = Path(os.environ.get("KERNEL_SOURCE_BUILD_DIR", Path(tempfile.gettempdir()) / "kernel-src-builds"))
    pkg_dir = root / namespace / PACKAGE
    pkg_dir.mkdir(parents=True, exist_ok=True)
    for src in (PROJECT / "torch-ext" / PACKAGE).glob("*.py"):
        shutil.copy2(src, pkg_dir / src.name)
    load(
        name=namespace,
        sources=[str(PROJECT / s) for s in CPU_SOURCES],
        extra_cflags=["-O3", "-DCPU_KERNEL"],
        extra_include_paths=[str(PROJECT / "torch-ext")],
        build_directory=str(pkg_dir),
        is_python_module=False,
        verbose=False,
    )
    (pkg_dir / "_ops.py").write_text(
        "import torch\n"
        f"from . import {namespace}  # noqa: F401  (loads the library, registers the ops)\n"
        f"ops = torch.ops.{namespace}\n\n\n"
        "def add_op_namespace_prefix(op_name: str) -> str:\n"
        f'    return f"{namespace}::{{op_name}}"\n'
    )
    module_name = f"{PACKAGE}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(
        module_name, pkg_dir / "__init__.py", submodule_search_locations=[str(pkg_dir)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_kernel() -> ModuleType:
    repo_id = os.environ.get("KERNEL_REPO_ID")
    local_path = os.environ.get("KERNEL_LOCAL_PATH")
    if repo_id:
        import kernels

        revision = os.environ.get("KERNEL_REVISION") or None
        version = None if revision else int(os.environ.get("KERNEL_VERSION") or _build_toml_version())
        return kernels.get_kernel(
            repo_id,
            version=version,
            revision=revision,
            trust_remote_code=_truthy(os.environ.get("KERNEL_TRUST_REMOTE_CODE")),
        )
    if local_path:
        import kernels

        return kernels.get_local_kernel(Path(local_path))
    return build_from_source()


@pytest.fixture(scope="session")
def kernel() -> ModuleType:
    return load_kernel()


@pytest.fixture(scope="session")
def device() -> torch.device:
    """CUDA when this torch has a GPU (the loaded variant is then the CUDA one), else CPU."""
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
