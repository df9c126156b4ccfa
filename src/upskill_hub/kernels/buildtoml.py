"""Read and validate kernel-builder ``build.toml`` files (edition 5).

kernel-builder rejects a build.toml with an unknown key or a bad kernel name, but only deep
inside a Nix build that cannot run here. We check the same schema up front (mirroring
``kernels-data/src/config/v5.rs``, which uses serde's ``deny_unknown_fields``) and report
every problem at once, one line each, so a project is known to be buildable by the Nix
flake before anyone tries. Where kernel-builder is lenient we are too, with a warning:
legacy files without an edition (see :mod:`.legacy`), backends listed without a
``[kernel.*]`` section, and CUDA capabilities or ROCm archs it does not build, which it
drops (only an empty set after dropping fails, as in its ``kernel.cmake``). Files are read
with ``tomlkit``, and :mod:`.scaffold` writes new ones with it so that ``init`` produces the
same formatting a human would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from upskill_hub._util import boundedread
from upskill_hub._util.problems import Problem
from upskill_hub.errors import UpskillError
from upskill_hub.kernels.legacy import V4, legacy_format, legacy_message, read_toml_text, upgraded_view

BUILD_TOML = "build.toml"
EDITION = 5

#: ``^[a-z][-a-z0-9]*[a-z0-9]$`` (kernels-data ``KernelName``).
NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")
#: ``[kernel.<name>]`` section names become CMake targets and C identifiers.
SECTION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")

#: Backends kernel-builder knows (kernels-data ``Backend``).
BACKENDS = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")
#: Backends a ``[kernel.*]`` section may name (kernels-data ``Kernel`` variants).
KERNEL_BACKENDS = ("cpu", "cuda", "metal", "rocm", "xpu")
#: Values of ``depends`` (kernels-data ``Dependency``).
DEPENDENCIES = (
    "torch",
    "cutlass_2_10",
    "cutlass_3_5",
    "cutlass_3_6",
    "cutlass_3_8",
    "cutlass_3_9",
    "cutlass_4_0",
    "cutlass_4_4",
    "cutlass_4_5",
    "sycl_tla",
    "metal-cpp",
)
#: CUDA capabilities kernel-builder builds (``kernel-builder/src/cuda_supported_archs.json``).
CUDA_CAPABILITIES = ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "11.0", "12.0")
#: ROCm archs kernel-builder builds (``preamble.cmake`` HIP_SUPPORTED_ARCHS); others are dropped.
ROCM_ARCHS = (
    "gfx906", "gfx908", "gfx90a", "gfx942", "gfx950",
    "gfx1030", "gfx1100", "gfx1101", "gfx1200", "gfx1201",
)  # fmt: skip
#: What a capability looks like (``9.0``, ``9.0a``, ``10.0f``, ``8.0+PTX``), supported or not.
CAPABILITY_RE = re.compile(r"^\d+\.\d+[af]?(\+PTX)?$")
#: What a ROCm arch looks like (``gfx90a``, ``gfx1100``), supported or not.
ROCM_ARCH_RE = re.compile(r"^gfx[0-9]+[a-z0-9]*$")
#: Folder holding the Python package, per framework.
EXT_DIRS = {"torch": "torch-ext", "torch-noarch": "torch-ext", "tvm-ffi": "tvm-ffi-ext"}
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")

_STR_LIST = "list of strings"

# Allowed keys per table and the kind of value each holds. Kinds: "str", "int", "strs",
# "table" (checked separately), "edition", "backends", "deps", "kdeps" (kernel-depends).
_GENERAL = {
    "name": "str",
    "version": "int",
    "edition": "edition",
    "license": "str",
    "upstream": "str",
    "source": "str",
    "backends": "backends",
    "cuda": "table",
    "hub": "table",
    "kernel-depends": "kdeps",
    "neuron": "table",
    "python-depends": "strs",
    "tpu": "table",
    "xpu": "table",
}
_GENERAL_REQUIRED = ("name", "version", "edition", "license", "backends")
_GENERAL_SUB = {
    "cuda": {"minver": "str", "maxver": "str", "kernel-depends": "kdeps", "python-depends": "strs"},
    "hub": {"repo-id": "str", "branch": "str"},
    "neuron": {"kernel-depends": "kdeps", "python-depends": "strs"},
    "tpu": {"python-depends": "strs"},
    "xpu": {"kernel-depends": "kdeps", "python-depends": "strs"},
}
_FRAMEWORK_KEYS = {
    "torch": {
        "include": "strs",
        "minver": "str",
        "maxver": "str",
        "pyext": "strs",
        "src": "strs",
        "stable-abi": "any",
        "cxx-flags": "strs",
    },
    # kernels-data's TorchNoarch has no kebab-case rename: these keys use underscores.
    "torch-noarch": {"pyext": "strs", "cuda_capabilities": "strs", "rocm_archs": "strs"},
    "tvm-ffi": {"include": "strs", "pyext": "strs", "src": "strs", "cxx-flags": "strs"},
}
_KERNEL_COMMON = {"backend": "str", "cxx-flags": "strs", "depends": "deps", "include": "strs", "src": "strs"}
_KERNEL_KEYS = {
    "cpu": dict(_KERNEL_COMMON),
    "cuda": {**_KERNEL_COMMON, "cuda-capabilities": "strs", "cuda-flags": "strs", "cuda-minver": "str"},
    "metal": dict(_KERNEL_COMMON),
    "rocm": {**_KERNEL_COMMON, "rocm-archs": "strs", "hip-flags": "strs"},
    "xpu": {**_KERNEL_COMMON, "sycl-flags": "strs"},
}


@dataclass
class KernelSection:
    """One ``[kernel.<name>]`` table: sources compiled for one backend."""

    name: str
    backend: str
    src: list[str]
    depends: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)
    cxx_flags: list[str] = field(default_factory=list)
    cuda_capabilities: list[str] = field(default_factory=list)
    cuda_flags: list[str] = field(default_factory=list)


@dataclass
class BuildConfig:
    """The parts of a valid build.toml that upskill-hub's builders, check and push use."""

    root: Path
    name: str
    version: int
    license: str
    backends: list[str]
    framework: str  # "torch" | "torch-noarch" | "tvm-ffi"
    torch_src: list[str] = field(default_factory=list)
    torch_include: list[str] = field(default_factory=list)
    torch_cxx_flags: list[str] = field(default_factory=list)
    pyext: list[str] = field(default_factory=list)
    kernels: dict[str, KernelSection] = field(default_factory=dict)
    python_depends: list[str] = field(default_factory=list)
    repo_id: str | None = None
    upstream: str | None = None
    source: str | None = None
    noarch_cuda_capabilities: list[str] = field(default_factory=list)
    #: Warnings found while loading (legacy format, dropped capabilities...), for builders to show.
    warnings: list[Problem] = field(default_factory=list)

    @property
    def python_name(self) -> str:
        """The package name: kernel name with dashes replaced by underscores."""
        return self.name.replace("-", "_")

    @property
    def is_noarch(self) -> bool:
        return self.framework == "torch-noarch"

    @property
    def ext_dir(self) -> Path:
        """``torch-ext/`` or, for ``[tvm-ffi]`` kernels, ``tvm-ffi-ext/``."""
        return self.root / EXT_DIRS[self.framework]

    @property
    def package_dir(self) -> Path:
        """``<ext_dir>/<python_name>/``: the Python package every variant ships."""
        return self.ext_dir / self.python_name

    def kernels_for(self, backend: str) -> list[KernelSection]:
        return [k for k in self.kernels.values() if k.backend == backend]


#: kernel-builder's list of accepted ``python-depends`` names, vendored with its source and
#: date in the file itself (``_source``, ``_date``): ``kernels`` refuses to load others.
VENDORED_PYTHON_DEPENDS = "data/python_depends.json"


def python_depends_table() -> dict[str, Any]:
    """``{"general": {name: ...}, "backends": {backend: {name: ...}}}`` as kernel-builder accepts.

    The installed ``kernels`` package's own copy wins when it ships one (it is what will
    load the kernel); otherwise the vendored copy is used, so the check never goes silent.
    """
    for pkg, name in (("kernels", "python_depends.json"), ("upskill_hub.kernels", VENDORED_PYTHON_DEPENDS)):
        try:
            text = resources.files(pkg).joinpath(name).read_text()
        except (ModuleNotFoundError, FileNotFoundError, OSError):
            continue
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("general"), dict):
            return data
    raise AssertionError("the vendored python_depends.json is missing")  # pragma: no cover - packaged


def _known_python_depends(backend: str | None = None) -> set[str]:
    """Names accepted in ``python-depends``: the general ones, plus ``backend``'s own."""
    data = python_depends_table()
    names = set(data.get("general", {}))
    backends = data.get("backends", {})
    if backend is None:
        return names
    return names | set(backends.get(backend, {}))


def valid_capability(cap: str) -> bool:
    """True for a capability kernel-builder builds: ``9.0``, ``9.0a``, ``10.0f``, ``8.0+PTX``."""
    base = cap[: -len("+PTX")] if cap.endswith("+PTX") else cap
    if base.endswith(("a", "f")):
        base = base[:-1]
    return base in CUDA_CAPABILITIES


def supported_capabilities(caps: list[str]) -> list[str]:
    """The capabilities kernel-builder keeps (its loose intersection with the supported set)."""
    return [c for c in caps if isinstance(c, str) and valid_capability(c)]


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file into plain Python values; a syntax error is an ``UpskillError``."""
    text = read_toml_text(path)
    try:
        return boundedread.parse_toml_text(text, path).unwrap()
    except boundedread.FileRefused as exc:
        problem = exc.problem
        if problem.startswith("is not valid TOML ("):
            problem = "invalid TOML: " + problem.removeprefix("is not valid TOML (").removesuffix(")")
        raise UpskillError(f"{path}: {problem}") from None


class _Checker:
    """Collects problems while walking the parsed TOML."""

    def __init__(self, root: Path, rel: str) -> None:
        self.root = root
        self.rel = rel
        self.problems: list[Problem] = []

    def add(self, fld: str, message: str, severity: str = "error") -> None:
        self.problems.append(Problem(self.rel, fld, message, severity))

    def keys(self, table: Any, allowed: dict[str, str], where: str) -> dict[str, Any]:
        if not isinstance(table, dict):
            self.add(where, "must be a table")
            return {}
        for key in table:
            if key not in allowed:
                hint = ", ".join(sorted(allowed))
                self.add(f"{where}.{key}" if where else key, f"unknown key (allowed: {hint})")
        for key, kind in allowed.items():
            if key in table:
                self.value(table[key], kind, f"{where}.{key}" if where else key)
        return table

    def value(self, value: Any, kind: str, where: str) -> None:
        if kind == "str" and not isinstance(value, str):
            self.add(where, "must be a string")
        elif kind == "int" and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            self.add(where, "must be a non-negative integer")
        elif kind in ("strs", "deps") and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            self.add(where, f"must be a {_STR_LIST}")
        elif kind == "deps":
            for dep in value:
                if dep not in DEPENDENCIES:
                    self.add(where, f"unknown dependency {dep!r} (known: {', '.join(DEPENDENCIES)})")
        elif kind == "edition" and value != EDITION:
            self.add(where, f"unsupported build edition {value!r}: this tool reads edition {EDITION}")
        elif kind == "backends":
            if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
                self.add(where, "must be a non-empty list of backend names")
                return
            for backend in value:
                if backend not in BACKENDS:
                    self.add(where, f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
        elif kind == "kdeps":
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                self.add(where, "must be a list of tables with repo-id and version or revision")
                return
            for dep in value:
                if not isinstance(dep.get("repo-id"), str):
                    self.add(where, "each entry needs a string repo-id")
                if ("version" in dep) == ("revision" in dep):
                    self.add(where, "each entry needs exactly one of version or revision")

    def targets(self, values: Any, where: str, kind: str) -> None:
        """Check a capability or arch list the way kernel-builder treats it.

        Malformed entries are errors. Well-formed ones it does not build are dropped with a
        warning, as kernel-builder drops them; nothing left after dropping is an error, the
        build's own "empty set" failure.
        """
        if not isinstance(values, list):
            return
        cuda = kind == "cuda"
        pattern, supported = (CAPABILITY_RE, CUDA_CAPABILITIES) if cuda else (ROCM_ARCH_RE, ROCM_ARCHS)
        noun = "CUDA capability" if cuda else "ROCm arch"
        keep = valid_capability if cuda else (lambda a: a in ROCM_ARCHS)
        kept, dropped = [], []
        for value in values:
            if not isinstance(value, str):
                continue
            if not pattern.match(value):
                self.add(where, f"invalid {noun} {value!r} (supported: {', '.join(supported)})")
            elif keep(value):
                kept.append(value)
            else:
                dropped.append(value)
        if dropped:
            what = "capabilities" if cuda else "architectures"
            self.add(
                where,
                f"dropping unsupported {what} {', '.join(dropped)}: kernel-builder does not build them "
                f"(supported: {', '.join(supported)})",
                "warning",
            )
            if not kept:
                self.add(where, f"empty set of {what} after dropping unsupported ones: nothing would be built")

    def path_exists(self, rel_path: Any, where: str, want_dir: bool = False) -> None:
        if not isinstance(rel_path, str):
            return
        if rel_path.startswith("/") or ".." in Path(rel_path).parts:
            self.add(where, f"{rel_path!r} must be a path inside the project")
            return
        target = self.root / rel_path
        if want_dir and not target.is_dir():
            self.add(where, f"directory {rel_path!r} does not exist")
        elif not want_dir and not target.is_file():
            self.add(where, f"source file {rel_path!r} does not exist")


def validate_build_toml(root: Path) -> tuple[list[Problem], dict[str, Any] | None]:
    """Check ``root/build.toml`` against the edition-5 schema; return (problems, parsed table).

    Problems cover unknown keys, wrong types, the kernel name, backends, capabilities,
    ROCm archs, dependencies, and that every listed source and include path exists.
    """
    root = Path(root)
    path = root / BUILD_TOML
    rel = BUILD_TOML
    chk = _Checker(root, rel)
    try:
        data = read_toml(path)
    except UpskillError as exc:
        chk.add("build.toml", str(exc).split(": ", 1)[-1])
        return chk.problems, None
    legacy = legacy_format(data)
    if legacy is not None:
        chk.add("general.edition", legacy_message(legacy, str(root)), "warning" if legacy == V4 else "error")
        data = upgraded_view(data)

    frameworks = [f for f in FRAMEWORKS if f in data]
    chk.keys(data, {"general": "table", "kernel": "table", **{f: "table" for f in FRAMEWORKS}}, "")
    if "general" not in data:
        chk.add("general", "missing [general] table")
    if len(frameworks) != 1:
        chk.add(
            "torch",
            "exactly one of [torch], [torch-noarch] or [tvm-ffi] is required"
            + (f" (found {', '.join(frameworks)})" if frameworks else ""),
        )

    general = chk.keys(data.get("general", {}), _GENERAL, "general")
    for key in _GENERAL_REQUIRED:
        if "general" in data and key not in general:
            chk.add(f"general.{key}", "missing required key")
    name = general.get("name")
    if isinstance(name, str) and not NAME_RE.match(name):
        chk.add(
            "general.name",
            f"invalid kernel name {name!r}: use lowercase letters, digits and dashes, "
            "start with a letter, end with a letter or digit, at least 2 characters",
        )
    for sub, allowed in _GENERAL_SUB.items():
        if sub in general:
            chk.keys(general[sub], allowed, f"general.{sub}")
    hub = general.get("hub") if isinstance(general.get("hub"), dict) else {}
    repo_id = hub.get("repo-id")
    if isinstance(repo_id, str) and not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id):
        chk.add("general.hub.repo-id", f"{repo_id!r} is not of the form OWNER/NAME")
    where_deps = [("general.python-depends", general.get("python-depends"), None)]
    for sub in ("cuda", "neuron", "tpu", "xpu"):
        if isinstance(general.get(sub), dict):
            where_deps.append((f"general.{sub}.python-depends", general[sub].get("python-depends"), sub))
    for where, pydeps, backend in where_deps:
        if not isinstance(pydeps, list):
            continue
        known_pydeps = _known_python_depends(backend)
        for dep in pydeps:
            if isinstance(dep, str) and dep not in known_pydeps:
                scope = f"for {backend} " if backend else ""
                chk.add(
                    where,
                    f"{dep!r} is not a dependency kernel-builder accepts {scope}"
                    f"(accepted: {', '.join(sorted(known_pydeps))}); `kernels` refuses to load the kernel",
                )

    backends = [b for b in general.get("backends", []) or [] if isinstance(b, str)]
    framework = frameworks[0] if len(frameworks) == 1 else None
    if framework is not None:
        fw = chk.keys(data[framework], _FRAMEWORK_KEYS[framework], framework)
        for i, src in enumerate(fw.get("src", []) if isinstance(fw.get("src"), list) else []):
            chk.path_exists(src, f"{framework}.src[{i}]")
        for i, inc in enumerate(fw.get("include", []) if isinstance(fw.get("include"), list) else []):
            chk.path_exists(inc, f"{framework}.include[{i}]", want_dir=True)
        chk.targets(fw.get("cuda_capabilities"), f"{framework}.cuda_capabilities", "cuda")
        chk.targets(fw.get("rocm_archs"), f"{framework}.rocm_archs", "rocm")
        if framework == "torch-noarch" and data.get("kernel"):
            chk.add("kernel", "a [torch-noarch] kernel has no compiled [kernel.*] sections")
        if framework == "torch" and "src" not in fw:
            chk.add("torch.src", "missing: list the binding sources (torch-ext/torch_binding.cpp, .h)")

    kernels = data.get("kernel", {})
    if not isinstance(kernels, dict):
        kernels = {}
    for kname, section in kernels.items():
        where = f"kernel.{kname}"
        if not SECTION_RE.match(kname):
            chk.add(where, f"invalid kernel section name {kname!r}: use letters, digits, '_' and '-'")
        if not isinstance(section, dict):
            chk.add(where, "must be a table")
            continue
        backend = section.get("backend")
        if backend not in KERNEL_BACKENDS:
            chk.add(
                f"{where}.backend",
                f"{'missing' if backend is None else repr(backend) + ' is not a valid kernel backend'}"
                f" (one of: {', '.join(KERNEL_BACKENDS)})",
            )
            continue
        if backends and backend not in backends:
            chk.add(f"{where}.backend", f"{backend!r} is not listed in general.backends")
        chk.keys(section, _KERNEL_KEYS[backend], where)
        for key in ("src", "depends"):
            if key not in section:
                chk.add(f"{where}.{key}", "missing required key")
        srcs = section.get("src") if isinstance(section.get("src"), list) else []
        if "src" in section and not srcs:
            chk.add(f"{where}.src", "must list at least one source file")
        for i, src in enumerate(srcs):
            chk.path_exists(src, f"{where}.src[{i}]")
        for i, inc in enumerate(
            section.get("include", []) if isinstance(section.get("include"), list) else []
        ):
            chk.path_exists(inc, f"{where}.include[{i}]", want_dir=True)
        chk.targets(section.get("cuda-capabilities"), f"{where}.cuda-capabilities", "cuda")
        chk.targets(section.get("rocm-archs"), f"{where}.rocm-archs", "rocm")

    if framework in ("torch", "tvm-ffi"):
        compiled = {s.get("backend") for s in kernels.values() if isinstance(s, dict)}
        for backend in backends:
            if backend in KERNEL_BACKENDS and backend not in compiled:
                # kernel-builder builds such a variant with the binding alone (its CI does).
                chk.add(
                    "general.backends",
                    f"backend {backend!r} has no [kernel.*] section: its variant holds only the binding",
                    "warning",
                )

    if isinstance(name, str) and NAME_RE.match(name):
        ext = EXT_DIRS.get(framework or "torch", "torch-ext")
        pkg = f"{ext}/{name.replace('-', '_')}"
        if not (root / pkg / "__init__.py").is_file():
            chk.add("general.name", f"package {pkg}/__init__.py does not exist")
    if legacy is None and not [p for p in chk.problems if p.severity == "error"]:
        _cross_check_with_kernels_parser(root, chk)
    return chk.problems, data


def _cross_check_with_kernels_parser(root: Path, chk: _Checker) -> None:
    """Second opinion from kernel-builder's own build.toml parser (kernels-data, in ``kernels``).

    Our schema mirrors it, but if the two ever disagree the real parser wins: a file it
    rejects would fail in the Nix build, so that is reported too.
    """
    try:
        from kernels._rust import Build
    except (ImportError, AttributeError):
        return
    try:
        Build.open(str(root))
    except ValueError as exc:
        detail = str(exc).splitlines()[0].split(": ")[-1]
        chk.add("build.toml", f"rejected by kernel-builder's parser: {detail}")


def load_build(root: Path) -> BuildConfig:
    """Validate and load a project's build.toml; the first problem becomes an ``UpskillError``."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise UpskillError(f"{root}: not a directory (expected a kernel project)")
    problems, data = validate_build_toml(root)
    errors = [p for p in problems if p.severity == "error"]
    if errors or data is None:
        more = (
            f" (and {len(errors) - 1} more problem(s); run `upskill-hub kernels check`)"
            if len(errors) > 1
            else ""
        )
        raise UpskillError(f"{root / errors[0].path}: {errors[0].field}: {errors[0].message}{more}")
    cfg = config_from_table(root, data)
    cfg.warnings = [p for p in problems if p.severity == "warning"]
    return cfg


def config_from_table(root: Path, data: dict[str, Any]) -> BuildConfig:
    """Turn an already validated build.toml table into a ``BuildConfig``."""
    general = data["general"]
    framework = next(f for f in FRAMEWORKS if f in data)
    fw = data[framework]
    kernels = {
        kname: KernelSection(
            name=kname,
            backend=sec["backend"],
            src=list(sec.get("src", [])),
            depends=list(sec.get("depends", [])),
            include=list(sec.get("include", [])),
            cxx_flags=list(sec.get("cxx-flags", [])),
            cuda_capabilities=supported_capabilities(list(sec.get("cuda-capabilities", []))),
            cuda_flags=list(sec.get("cuda-flags", [])),
        )
        for kname, sec in data.get("kernel", {}).items()
    }
    return BuildConfig(
        root=Path(root),
        name=general["name"],
        version=int(general["version"]),
        license=general["license"],
        backends=list(general["backends"]),
        framework=framework,
        torch_src=[str(s) for s in fw.get("src", [])],
        torch_include=list(fw.get("include", [])),
        torch_cxx_flags=list(fw.get("cxx-flags", [])),
        pyext=list(fw.get("pyext", [])),
        kernels=kernels,
        python_depends=list(general.get("python-depends", [])),
        repo_id=(general.get("hub") or {}).get("repo-id"),
        upstream=general.get("upstream"),
        source=general.get("source"),
        noarch_cuda_capabilities=supported_capabilities(list(fw.get("cuda_capabilities", []))),
    )
