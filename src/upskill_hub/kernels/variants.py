"""Build-variant names: parse them strictly and name the variant this machine builds.

``kernels.get_kernel`` lists ``build/`` in a repo and silently skips folder names it cannot
parse, so a typo in a variant name is an upload that never loads. We validate names more
strictly than the loader (known backends, known OS/CPU, the ``cxx11`` tag kernel-builder
writes on Linux) and compute the exact name of the local variant from the installed torch
the same way kernel-builder's ``build-variants.cmake`` does.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from dataclasses import dataclass

#: ``torch213-cxx11-cpu-x86_64-linux``, ``torch-stable-abi211-cu128-x86_64-linux``, ``torch28-metal-aarch64-darwin``.
ARCH_VARIANT_RE = re.compile(
    r"^(?P<framework>torch\d\d+(?:-cxx11|-cxx98)?|torch-stable-abi\d\d+|tvm-ffi\d\d+)"
    r"-(?P<backend>cpu|metal|cu\d{3,4}|rocm\d{2,3}|xpu\d{5,7}|cann\d{2,4}|neuron|tpu)"
    r"-(?P<cpu>x86_64|aarch64)-(?P<os>linux|darwin|windows)$"
)
#: ``torch-cpu``, ``torch-cuda`` … and the legacy ``torch-universal``.
NOARCH_BACKENDS = ("cpu", "cuda", "rocm", "metal", "xpu", "npu", "neuron", "tpu", "universal")
NOARCH_VARIANT_RE = re.compile(rf"^torch-(?P<backend>{'|'.join(NOARCH_BACKENDS)})$")


@dataclass(frozen=True)
class VariantInfo:
    """What a variant name says: noarch or not, and which backend (``cpu``, ``cuda``…)."""

    name: str
    noarch: bool
    backend: str  # metadata backend type: cpu, cuda, rocm, metal, xpu, …


def _backend_family(token: str) -> str:
    for prefix, family in (("cu", "cuda"), ("rocm", "rocm"), ("xpu", "xpu"), ("cann", "cann")):
        if token.startswith(prefix) and token[len(prefix) :].isdigit():
            return family
    return token


def parse_variant_name(name: str) -> VariantInfo | None:
    """Return what ``name`` encodes, or ``None`` when it is not a valid variant name."""
    m = NOARCH_VARIANT_RE.match(name)
    if m:
        backend = m.group("backend")
        return VariantInfo(name, True, {"npu": "cann"}.get(backend, backend))
    m = ARCH_VARIANT_RE.match(name)
    if not m:
        return None
    if m.group("os") == "linux" and m.group("framework").startswith("torch2") and "-cxx" not in name:
        # kernel-builder always tags Linux Torch builds with the C++ ABI (cxx11).
        return None
    return VariantInfo(name, False, _backend_family(m.group("backend")))


def explain_bad_variant(name: str) -> str:
    """One line saying what a valid variant name looks like."""
    return (
        f"{name!r} is not a build variant name (expected e.g. torch213-cxx11-cpu-x86_64-linux, "
        "torch213-cxx11-cu130-x86_64-linux or a noarch torch-cpu / torch-cuda)"
    )


def _machine() -> tuple[str, str]:
    cpu = platform.machine()
    os_name = platform.system().lower()
    if os_name == "darwin" and cpu == "arm64":
        cpu = "aarch64"
    if cpu in ("AMD64", "amd64"):
        cpu = "x86_64"
    return cpu, os_name


def torch_prefix(torch_version: str, cxx11_abi: bool | None, os_name: str) -> str:
    """``torch213-cxx11`` for torch 2.13 on Linux, ``torch213`` elsewhere (build-variants.cmake)."""
    major, minor = torch_version.split("+")[0].split(".")[:2]
    prefix = f"torch{major}{minor}"
    if os_name == "linux":
        prefix += "-cxx11" if cxx11_abi in (True, None) else "-cxx98"
    return prefix


def cuda_token(cuda_version: str) -> str:
    """``13.0`` -> ``cu130``."""
    parts = cuda_version.split(".")
    return f"cu{parts[0]}{parts[1] if len(parts) > 1 else '0'}"


def nvcc_version() -> str | None:
    """The CUDA version of the ``nvcc`` on PATH (``13.0``), or ``None`` when there is none."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+)\.(\d+)", out)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def local_arch_variant(backend: str) -> str:
    """The arch variant name the installed torch builds for ``backend`` on this machine."""
    import torch

    cpu, os_name = _machine()
    prefix = torch_prefix(torch.__version__, torch.compiled_with_cxx11_abi(), os_name)
    if backend == "cpu":
        token = "cpu"
    elif backend == "cuda":
        if torch.version.cuda is None:
            raise ValueError("the installed torch has no CUDA support")
        token = cuda_token(torch.version.cuda)
    else:
        raise ValueError(f"local builds of the {backend!r} backend are not supported")
    return f"{prefix}-{token}-{cpu}-{os_name}"


def local_backends() -> list[str]:
    """Compiled backends this machine can build: always ``cpu``; ``cuda`` with CUDA torch + nvcc."""
    import torch

    found = ["cpu"]
    if torch.version.cuda is not None and nvcc_version() is not None:
        found.append("cuda")
    return found


def glibc_policy() -> str:
    """``manylinux_<major>_<minor>`` of this machine's glibc: what a local build can promise."""
    lib, ver = platform.libc_ver()
    if lib == "glibc" and ver:
        major, minor = ver.split(".")[:2]
        return f"manylinux_{major}_{minor}"
    return "manylinux_2_28"
