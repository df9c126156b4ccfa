"""Build the variant(s) of the current machine without Nix.

kernel-builder builds every Hub variant inside Nix, which cannot fetch anything here. This
builder compiles the one arch variant the installed torch can load (e.g.
``torch213-cxx11-cpu-x86_64-linux``; a ``cu<XY>`` variant where CUDA torch and ``nvcc``
exist) with the compiler and the include/library flags of ``torch.utils.cpp_extension``,
and produces noarch variants by copying the Python package. The output folder has
kernel-builder's layout (see :mod:`upskill_hub.kernels.layout`), so ``kernels`` loads it
unchanged. Each variant is written to a temporary sibling and swapped in only after it
compiled, linked and imported, so a failed build leaves the previous ``build/`` intact.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub._util.fsutil import atomic_replace_dir
from upskill_hub.errors import UpskillError
from upskill_hub.kernels import layout
from upskill_hub.kernels.buildtoml import BuildConfig, load_build, valid_capability
from upskill_hub.kernels.variants import glibc_policy, local_arch_variant, local_backends, nvcc_version

Progress = Callable[[str], None]

_CXX_EXT = {".cpp", ".cc", ".cxx", ".c"}
_CUDA_EXT = {".cu"}
_HEADER_EXT = {".h", ".hpp", ".cuh", ".hh", ".inl"}
#: ``file:line:col: error: msg`` (gcc/clang) and ``file(line): error: msg`` (nvcc).
_ERROR_LINE = re.compile(
    r"(^.*?(?::\d+(?::\d+)?|\(\d+\)):\s*(?:fatal )?error\b.*$)|(^.*undefined reference.*$)", re.M
)
_REGISTRATION_H = """\
// Written by upskill-hub's local builder: the registration macros kernel-builder provides.
#pragma once

#include <Python.h>

#define _UPSKILL_CONCAT(A, B) A##B
#define CONCAT(A, B) _UPSKILL_CONCAT(A, B)
#define _UPSKILL_STRINGIFY(A) #A
#define STRINGIFY(A) _UPSKILL_STRINGIFY(A)

// TORCH_LIBRARY with a NAME that may itself be a macro (TORCH_EXTENSION_NAME).
#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)
#define TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)

// A Python module whose import runs the static op registrations above.
#define REGISTER_EXTENSION(NAME)                                                   \\
  PyMODINIT_FUNC CONCAT(PyInit_, NAME)() {                                         \\
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, STRINGIFY(NAME),    \\
                                        nullptr, 0, nullptr};                      \\
    return PyModule_Create(&module);                                               \\
  }
"""

_SMOKE = r"""
import importlib.util, json, sys
from pathlib import Path
import torch
path = Path(sys.argv[1])
meta = json.loads((path / "metadata.json").read_text())
spec = importlib.util.spec_from_file_location(meta["id"], path / "__init__.py",
                                              submodule_search_locations=[str(path)])
mod = importlib.util.module_from_spec(spec)
sys.modules[meta["id"]] = mod
spec.loader.exec_module(mod)
"""


class BuildError(UpskillError):
    """A failed build: one-line message, plus the compiler's error lines in ``details``.

    ``step`` names what failed without the compiler's words, so a front end that prints
    ``details`` can end with a line that does not repeat them.
    """

    def __init__(self, message: str, details: list[str] | None = None, step: str | None = None) -> None:
        super().__init__(message)
        self.details = details or []
        self.step = step or message

    def summary(self) -> str:
        """One line for after ``details`` were shown: what failed, not the compiler text again."""
        return f"{self.step} failed (compiler output above)" if self.details else str(self)


@dataclass
class BuiltVariant:
    """One variant folder the builder wrote."""

    variant: str
    path: Path
    seconds: float
    files: list[str] = field(default_factory=list)


def compiler_error_lines(output: str, limit: int = 12) -> list[str]:
    """The lines of compiler output that say what is wrong (not the include-stack wall)."""
    lines = [m.group(0).strip() for m in _ERROR_LINE.finditer(output)]
    if not lines:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()][-limit:]
    seen: list[str] = []
    for ln in lines:
        if ln not in seen:
            seen.append(ln)
    return seen[:limit]


def _cxx() -> str:
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        raise BuildError("no C++ compiler found: install g++ (or set CXX) to build locally")
    return cxx


def _tool_version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = [ln for ln in out.splitlines() if ln.strip()]
    if not lines:
        return "unknown"
    return lines[-1] if "nvcc" in tool else lines[0]


def _cuda_home() -> Path:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        return Path(home)
    nvcc = shutil.which("nvcc")
    if nvcc and (Path(nvcc).resolve().parent.parent / "include" / "cuda_runtime.h").is_file():
        return Path(nvcc).resolve().parent.parent
    return Path("/usr/local/cuda")  # e.g. when nvcc on PATH is a wrapper script


def _stub_cuda_cmake_macros(gen_dir: Path) -> None:
    """Let CUDA sources compile against a CPU-only torch (``check --nvcc``).

    The CPU wheel ships ``c10/cuda`` headers but not the CMake-generated
    ``c10/cuda/impl/cuda_cmake_macros.h`` they include; an empty stand-in is enough to
    compile. A CUDA torch has the real file, and then no stub is written.
    """
    rel = Path("c10/cuda/impl/cuda_cmake_macros.h")
    if any((Path(p) / rel).is_file() for p in torch_cpp_paths()[0]):
        return
    stub = gen_dir / rel
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text("#pragma once\n")


_PATHS_SCRIPT = (
    "import json; from torch.utils import cpp_extension as c; "
    "print(json.dumps([c.include_paths(), c.library_paths()]))"
)


@functools.cache
def torch_cpp_paths() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """torch's C++ include and library folders, asked of a fresh interpreter.

    ``torch.utils.cpp_extension`` imports setuptools, whose distutils override fails in a
    process that already loaded the stdlib's distutils (a build tool earlier in the same
    process can): a child process always starts clean, and costs about a second once.
    """
    proc = subprocess.run([sys.executable, "-c", _PATHS_SCRIPT], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BuildError(f"cannot read torch's C++ include paths: {tail}")
    includes, libs = json.loads(proc.stdout.strip().splitlines()[-1])
    return tuple(includes), tuple(libs)


def _torch_flags() -> tuple[list[str], list[str]]:
    include_paths, library_paths = torch_cpp_paths()
    includes = [f"-I{p}" for p in include_paths]
    libdirs = [f"-L{p}" for p in library_paths]
    return includes, libdirs


def _include_flags(cfg: BuildConfig, srcs: list[str], gen_dir: Path) -> list[str]:
    root = cfg.root
    dirs: list[Path] = [root, cfg.ext_dir]
    dirs += [root / inc for inc in cfg.torch_include]
    for sec in cfg.kernels.values():
        dirs += [root / inc for inc in sec.include]
    dirs += [(root / s).parent for s in srcs]
    dirs.append(gen_dir)
    seen: list[str] = []
    for d in dirs:
        flag = f"-I{d}"
        if d.is_dir() and flag not in seen:
            seen.append(flag)
    return seen


def _run(cmd: list[str], what: str, cancel: threading.Event | None = None) -> None:
    """Run one compiler command; on failure raise ``BuildError`` with its error lines.

    With ``cancel``, a failure elsewhere (set by another compile job) stops this one
    early, so a broken file reports in seconds instead of after every other file compiled.
    """
    # Own session: killing the group also stops the driver's children (cc1plus, cicc).
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    while True:
        try:
            out, err = proc.communicate(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            if cancel is not None and cancel.is_set():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise _Cancelled() from None
        except BaseException:  # Ctrl-C: do not leave compilers running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
    if proc.returncode != 0:
        details = compiler_error_lines((err or "") + (out or ""))
        first = details[0] if details else f"exit status {proc.returncode}"
        if cancel is not None:
            cancel.set()
        raise BuildError(f"{what} failed: {first}", details, step=what)


class _Cancelled(Exception):
    """A compile job stopped because another one failed."""


def _cuda_gencode(caps: list[str]) -> list[str]:
    flags = []
    for cap in caps:
        ptx = cap.endswith("+PTX")
        base = cap.removesuffix("+PTX")
        suffix = base[-1] if base[-1] in "af" else ""
        num = base.rstrip("af").replace(".", "")
        flags += ["-gencode", f"arch=compute_{num}{suffix},code=sm_{num}{suffix}"]
        if ptx:
            flags += ["-gencode", f"arch=compute_{num}{suffix},code=compute_{num}{suffix}"]
    return flags


def compile_sources(
    cfg: BuildConfig,
    backend: str,
    op_id: str,
    work: Path,
    *,
    progress: Progress,
    jobs: int,
    cuda_capabilities: list[str] | None = None,
) -> list[Path]:
    """Compile the binding and the ``backend`` kernel sources to objects in ``work``."""
    gen_dir = work / "include"
    gen_dir.mkdir(parents=True, exist_ok=True)
    (gen_dir / "registration.h").write_text(_REGISTRATION_H)
    sections = cfg.kernels_for(backend)
    srcs = list(cfg.torch_src) + [s for sec in sections for s in sec.src]
    torch_inc, _ = _torch_flags()
    py_inc = f"-I{sysconfig.get_paths()['include']}"
    defines = [
        f"-DTORCH_EXTENSION_NAME={op_id}",
        f"-D{backend.upper()}_KERNEL",
        "-DPy_LIMITED_API=0x03090000",
        "-D_GLIBCXX_USE_CXX11_ABI=1",
    ]
    incs = _include_flags(cfg, srcs, gen_dir) + torch_inc + [py_inc]
    if backend == "cuda":
        incs.append(f"-I{_cuda_home() / 'include'}")
        _stub_cuda_cmake_macros(gen_dir)
    cxx_flags = list(cfg.torch_cxx_flags) + [f for sec in sections for f in sec.cxx_flags]
    caps = cuda_capabilities or sorted({c for sec in sections for c in sec.cuda_capabilities}) or ["9.0"]
    cuda_flags = [f for sec in sections for f in sec.cuda_flags]

    commands: list[tuple[str, list[str], Path]] = []
    for i, rel in enumerate(srcs):
        src = cfg.root / rel
        obj = work / f"{i:03d}_{src.stem}.o"
        if src.suffix in _HEADER_EXT:
            continue
        if src.suffix in _CXX_EXT:
            cmd = [_cxx(), "-c", str(src), "-o", str(obj), "-O3", "-std=c++20", "-fPIC", "-fno-gnu-unique"]
            cmd += defines + incs + cxx_flags
        elif src.suffix in _CUDA_EXT:
            nvcc = shutil.which("nvcc")
            if nvcc is None:
                raise BuildError(f"{rel}: nvcc is not installed: CUDA sources need the CUDA toolkit")
            cmd = [nvcc, "-c", str(src), "-o", str(obj), "-O3", "-std=c++20", "--expt-relaxed-constexpr"]
            cmd += ["-Xcompiler", "-fPIC", "-Xcompiler", "-fno-gnu-unique", "-ccbin", _cxx()]
            cmd += _cuda_gencode(caps) + defines + incs + cuda_flags
            cmd += [f"-Xcompiler={f}" for f in cxx_flags]
        else:
            raise BuildError(f"{rel}: cannot compile files of type {src.suffix or '(none)'!r}")
        commands.append((rel, cmd, obj))

    cancel = threading.Event()

    def one(item: tuple[str, list[str], Path]) -> Path | None:
        rel, cmd, obj = item
        if cancel.is_set():
            return None
        progress(f"compiling {rel}")
        start = time.monotonic()
        try:
            _run(cmd, f"compiling {rel}", cancel)
        except _Cancelled:
            return None
        progress(f"compiled {rel} ({time.monotonic() - start:.1f}s)")
        return obj

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(one, c) for c in commands]
        failures = [f.exception() for f in futures if f.exception() is not None]
    if failures:
        raise failures[0]
    return [f.result() for f in futures]


def link(objects: list[Path], out: Path, backend: str, progress: Progress) -> None:
    """Link the objects into a Python extension against the installed torch libraries."""
    _, libdirs = _torch_flags()
    libs = ["-lc10", "-ltorch", "-ltorch_cpu"]
    if backend == "cuda":
        libs += ["-lc10_cuda", "-ltorch_cuda", "-lcudart"]
        libdirs += [f"-L{_cuda_home() / 'lib64'}"]
    progress(f"linking {out.name}")
    _run([_cxx(), "-shared", "-o", str(out), *map(str, objects), *libdirs, *libs], f"linking {out.name}")


def smoke_import(variant_dir: Path) -> None:
    """Import the built variant in a fresh interpreter, the way ``kernels`` does.

    Linking a shared object succeeds even with undefined symbols; importing it is what
    proves the build usable, so the build fails here rather than on a user's machine.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _SMOKE, str(variant_dir)], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        raise BuildError(f"the built variant does not import: {last}", lines[-12:], step="importing the built variant")


def _build_info(backend: str) -> dict[str, str]:
    import platform

    import torch

    info = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "compiler": _tool_version(_cxx()) if backend != "noarch" else "none (noarch)",
        "built-at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if backend != "noarch":
        info["manylinux"] = glibc_policy()
    if backend == "cuda":
        info["nvcc"] = nvcc_version() or "unknown"
    return info


def plan_variants(cfg: BuildConfig, variant: str | None) -> dict[str, str]:
    """Map each variant to build to its backend; refuse a variant this machine cannot build."""
    if cfg.is_noarch:
        available = {f"torch-{layout.NOARCH_SUFFIX.get(b, b)}": b for b in cfg.backends}
    elif cfg.framework != "torch":
        raise UpskillError(
            f"{cfg.root}: the local builder supports [torch] and [torch-noarch] kernels, not [{cfg.framework}]"
        )
    else:
        available = {}
        for backend in local_backends():
            if backend in cfg.backends:
                available[local_arch_variant(backend)] = backend
    if variant is not None:
        if variant not in available:
            can = ", ".join(sorted(available)) or "none"
            raise UpskillError(
                f"cannot build variant {variant!r} with the local builder on this machine "
                f"(it can build: {can}); use --builder nix for other variants"
            )
        return {variant: available[variant]}
    if not available:
        raise UpskillError(
            f"{cfg.root}: this machine cannot build any of the backends {', '.join(cfg.backends)} locally "
            f"(it builds {', '.join(local_backends())}); use --builder nix"
        )
    return available


def build_local(
    root: Path,
    *,
    variant: str | None = None,
    progress: Progress | None = None,
    jobs: int | None = None,
    smoke: bool = True,
) -> list[BuiltVariant]:
    """Build ``root``'s variants for this machine into ``root/build/<variant>/``.

    ``variant`` picks one; by default every variant this machine can build is built.
    """
    report = progress or (lambda _msg: None)
    cfg = load_build(root)
    for warning in cfg.warnings:  # legacy format, dropped capabilities: kernel-builder warns too
        report(f"warning: {warning}")
    plan = plan_variants(cfg, variant)
    uid = layout.source_hash(cfg)
    jobs = jobs or min(4, os.cpu_count() or 1)
    built = []
    for name, backend in plan.items():
        start = time.monotonic()
        report(f"building {name}")
        files: list[str] = []

        def fill(tmp: Path, name: str = name, backend: str = backend, files: list[str] = files) -> None:
            op_id = layout.ops_id(cfg, backend, uid)
            if cfg.is_noarch:
                files.extend(layout.copy_package(cfg, tmp))
                (tmp / "_ops.py").write_text(layout.NOARCH_OPS_PY.format(name=cfg.python_name, uid=uid))
                archs = cfg.noarch_cuda_capabilities if backend == "cuda" else None
            else:
                archs = sorted({c for s in cfg.kernels_for(backend) for c in s.cuda_capabilities}) or None
                with tempfile.TemporaryDirectory(prefix="upskill-kbuild-") as work:
                    objects = compile_sources(cfg, backend, op_id, Path(work), progress=report, jobs=jobs)
                    link(objects, tmp / f"{op_id}.abi3.so", backend, report)
                files.extend(layout.copy_package(cfg, tmp))
                (tmp / "_ops.py").write_text(layout.ARCH_OPS_PY.format(ops=op_id))
            meta = layout.build_metadata(
                cfg,
                op_id=op_id,
                backend=backend,
                archs=archs,
                builder="local",
                build_info=_build_info("noarch" if cfg.is_noarch else backend),
            )
            layout.write_metadata(tmp, meta)
            if smoke and (not cfg.is_noarch or backend == "cpu"):
                report(f"importing {name} to check it loads")
                smoke_import(tmp)
            for junk in tmp.rglob("__pycache__"):
                shutil.rmtree(junk, ignore_errors=True)
            tmp.chmod(0o755)  # mkdtemp makes it private; a build output is meant to be shared

        atomic_replace_dir(cfg.root / "build" / name, fill)
        seconds = time.monotonic() - start
        report(f"built {name} in {seconds:.1f}s")
        built.append(BuiltVariant(name, cfg.root / "build" / name, seconds, sorted(files)))
    return built


def compile_cuda_check(root: Path, capabilities: list[str], progress: Progress | None = None) -> list[str]:
    """Compile the project's CUDA sources with ``nvcc`` for ``capabilities`` (no GPU, no link).

    Proves the CUDA kernels build for e.g. sm_90 on a machine whose torch is CPU-only;
    returns the compiled source paths.
    """
    cfg = load_build(root)
    bad = [c for c in capabilities if not valid_capability(c)]
    if bad or not capabilities:
        raise UpskillError(f"invalid CUDA capability {', '.join(bad) or '(none)'}: use e.g. 9.0 or 8.0,9.0")
    if not cfg.kernels_for("cuda"):
        raise UpskillError(f"{cfg.root}: build.toml has no [kernel.*] section with backend = 'cuda'")
    if shutil.which("nvcc") is None:
        raise UpskillError("nvcc is not installed: install the CUDA toolkit to compile CUDA sources")
    report = progress or (lambda _msg: None)
    with tempfile.TemporaryDirectory(prefix="upskill-nvcc-") as work:
        op_id = layout.ops_id(cfg, "cuda", layout.source_hash(cfg))
        objs = compile_sources(
            cfg,
            "cuda",
            op_id,
            Path(work),
            progress=report,
            jobs=min(2, os.cpu_count() or 1),
            cuda_capabilities=capabilities,
        )
        return [o.name for o in objs]
