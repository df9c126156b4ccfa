"""Small kernel projects in the shapes kernel-builder's own examples and CI use.

Written for these tests (nothing is fetched): each project is a build.toml plus empty-ish
source files where build.toml points, in one of the shapes found in
huggingface/kernels ``examples/kernels`` and kernels-community: edition 5, the legacy
pre-edition formats, ``[tvm-ffi]`` with ``tvm-ffi-ext/``, noarch with an empty
``[kernel]``, backends listed without a ``[kernel.*]`` section, capabilities kernel-builder
drops, and the intentionally invalid project its CI expects to fail.
"""

from __future__ import annotations

from pathlib import Path

_BINDING = {
    "torch-ext/torch_binding.cpp": "// binding\nTORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {}\n",
    "torch-ext/torch_binding.h": "#pragma once\n",
}
_TORCH_SRC = '[torch]\nsrc = [\n    "torch-ext/torch_binding.cpp",\n    "torch-ext/torch_binding.h",\n]\n'


def _general(name: str, backends: list[str], *, edition: bool = True, extra: str = "") -> str:
    listed = ", ".join(f'"{b}"' for b in backends)
    ed = "edition = 5\n" if edition else ""
    return (
        f'[general]\nname = "{name}"\nversion = 1\n{ed}license = "Apache-2.0"\nbackends = [{listed}]\n{extra}\n'
        f'[general.hub]\nrepo-id = "kernels-test/{name}"\n\n'
    )


def _pkg(name: str, ext: str = "torch-ext") -> dict[str, str]:
    return {f"{ext}/{name.replace('-', '_')}/__init__.py": "from ._ops import ops\n"}


#: name -> (files, whether kernel-builder builds it)
PROJECTS: dict[str, tuple[dict[str, str], bool]] = {
    # edition 5, several backends, all with kernels
    "relu": (
        {
            "build.toml": _general("relu", ["cpu", "cuda", "rocm"])
            + _TORCH_SRC
            + '\n[kernel.relu]\nbackend = "cuda"\ndepends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\n'
            + '\n[kernel.relu_rocm]\nbackend = "rocm"\ndepends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\n'
            + '\n[kernel.relu_cpu]\nbackend = "cpu"\ndepends = ["torch"]\nsrc = ["relu_cpu/relu_cpu.cpp"]\n',
            "relu_cuda/relu.cu": "// cuda\n",
            "relu_cpu/relu_cpu.cpp": "// cpu\n",
            **_BINDING,
            **_pkg("relu"),
        },
        True,
    ),
    # legacy (no edition) + capabilities/archs outside the supported sets, with comments
    "relu-archs-subset": (
        {
            "build.toml": _general("relu-archs-subset", ["cuda", "rocm"], edition=False)
            + _TORCH_SRC
            + "\n# 5.0 and gfx940 are dropped by kernel-builder: CI checks the intersection.\n"
            + '[kernel.relu]\nbackend = "cuda"\ndepends = ["torch"]\n'
            + 'cuda-capabilities = ["5.0", "7.5", "8.0", "9.0"]  # 5.0 is too old\nsrc = ["relu_cuda/relu.cu"]\n'
            + '\n[kernel.relu_rocm]\nbackend = "rocm"\ndepends = ["torch"]\n'
            + 'rocm-archs = ["gfx90a", "gfx940", "gfx942"]\nsrc = ["relu_cuda/relu.cu"]\n',
            "relu_cuda/relu.cu": "// cuda\n",
            **_BINDING,
            **_pkg("relu-archs-subset"),
        },
        True,
    ),
    # backends listed without a [kernel.*] section, per-backend stable ABI table
    "relu-torch-stable-abi": (
        {
            "build.toml": _general("relu-torch-stable-abi", ["cpu", "cuda", "metal"])
            + _TORCH_SRC
            + '\n[torch.stable-abi]\ncpu = "2.11"\ncuda = "2.11"\nmetal = "2.11"\n'
            + '\n[kernel.relu_cpu]\nbackend = "cpu"\ndepends = ["torch"]\nsrc = ["relu_cpu/relu_cpu.cpp"]\n'
            + '\n[kernel.relu]\nbackend = "cuda"\ndepends = ["torch"]\nsrc = ["relu_cuda/relu.cu"]\n',
            "relu_cuda/relu.cu": "// cuda\n",
            "relu_cpu/relu_cpu.cpp": "// cpu\n",
            **_BINDING,
            **_pkg("relu-torch-stable-abi"),
        },
        True,
    ),
    # tvm-ffi: the package lives in tvm-ffi-ext/, kernels may depend on nothing
    "relu-tvm-ffi": (
        {
            "build.toml": _general("relu-tvm-ffi", ["cpu", "cuda"])
            + '[tvm-ffi]\nsrc = ["tvm-ffi-ext/tvm_ffi_binding.cpp"]\n'
            + '\n[kernel.relu_cuda]\nbackend = "cuda"\ndepends = []\nsrc = ["relu_cuda/relu.cu", "util.hh"]\n'
            + '\n[kernel.relu_cpu]\nbackend = "cpu"\ndepends = []\nsrc = ["relu_cpu/relu_cpu.cpp", "util.hh"]\n',
            "tvm-ffi-ext/tvm_ffi_binding.cpp": "// tvm-ffi binding\n",
            "relu_cuda/relu.cu": "// cuda\n",
            "relu_cpu/relu_cpu.cpp": "// cpu\n",
            "util.hh": "#pragma once\n",
            **_pkg("relu-tvm-ffi", "tvm-ffi-ext"),
        },
        True,
    ),
    # noarch with an empty [kernel] table
    "silu-and-mul": (
        {
            "build.toml": _general("silu-and-mul", ["cpu", "cuda"]) + "[torch-noarch]\n\n[kernel]\n",
            **_pkg("silu-and-mul"),
        },
        True,
    ),
    # kernel-builder's CI expects this one to fail: "empty set of capabilities"
    "relu-invalid-capability": (
        {
            "build.toml": _general("relu-invalid-capability", ["cpu", "cuda", "rocm"])
            + _TORCH_SRC
            + '\n[kernel.relu_rocm]\nbackend = "rocm"\ndepends = ["torch"]\nrocm-archs = [ "gfx99999" ]\n'
            + 'src = ["relu_cuda/relu.cu"]\n'
            + '\n[kernel.relu]\nbackend = "cuda"\ndepends = ["torch"]\ncuda-capabilities = [ "99999.0" ]\n'
            + 'src = ["relu_cuda/relu.cu"]\n',
            "relu_cuda/relu.cu": "// cuda\n",
            **_BINDING,
            **_pkg("relu-invalid-capability"),
        },
        False,
    ),
}

#: A kernels-community style v3 file: no version, no framework table (noarch), a comment.
LEGACY_V3 = """# activation kernels
[general]
name = "activation"
license = "Apache-2.0"  # SPDX
backends = ["cuda"]
"""


def write_project(root: Path, name: str) -> Path:
    """Write project ``name`` from :data:`PROJECTS` into ``root/name``."""
    files, _ = PROJECTS[name]
    dest = root / name
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (dest / "flake.nix").write_text("{ }\n")
    (dest / "tests").mkdir(exist_ok=True)
    return dest
