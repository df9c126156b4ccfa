"""The example projects' build.toml files follow kernel-builder edition 5 and name real files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomlkit

EXAMPLES = Path(__file__).resolve().parents[2] / "kernels_examples"
NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]$")
BACKENDS = {"cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu"}
GENERAL_KEYS = {
    "name", "version", "edition", "license", "upstream", "source", "minver", "backends",
    "cuda", "hub", "kernel-depends", "neuron", "python-depends", "tpu", "xpu",
}
TORCH_KEYS = {"include", "minver", "maxver", "pyext", "src", "stable-abi", "cxx-flags"}
KERNEL_KEYS = {
    "cpu": {"backend", "cxx-flags", "depends", "include", "src"},
    "cuda": {"backend", "cuda-capabilities", "cuda-flags", "cuda-minver", "cxx-flags", "depends", "include", "src"},
}
CUDA_CAPS = {"7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "9.0a", "10.0", "10.0a", "12.0"}


def load(name: str) -> dict:
    return tomlkit.parse((EXAMPLES / name / "build.toml").read_text()).unwrap()


@pytest.mark.parametrize("name", ["rmsnorm", "silu-and-mul"])
def test_general_section(name):
    cfg = load(name)
    general = cfg["general"]
    assert set(general) <= GENERAL_KEYS
    assert general["name"] == name and NAME_RE.match(name)
    assert general["edition"] == 5
    assert isinstance(general["version"], int) and general["version"] >= 1
    assert general["license"] == "Apache-2.0"
    assert set(general["backends"]) <= BACKENDS and general["backends"]
    # The Python package is the name with dashes as underscores.
    assert (EXAMPLES / name / "torch-ext" / name.replace("-", "_") / "__init__.py").is_file()
    assert (EXAMPLES / name / "flake.nix").is_file()
    assert (EXAMPLES / name / "tests" / "conftest.py").is_file()


def test_rmsnorm_torch_and_kernels_sections():
    cfg = load("rmsnorm")
    assert set(cfg) == {"general", "torch", "kernel"}
    assert set(cfg["torch"]) <= TORCH_KEYS
    for rel in cfg["torch"]["src"]:
        assert (EXAMPLES / "rmsnorm" / rel).is_file(), rel
    backends = set()
    for kname, kernel in cfg["kernel"].items():
        assert re.match(r"^[a-z0-9_]+$", kname)
        backend = kernel["backend"]
        backends.add(backend)
        assert set(kernel) <= KERNEL_KEYS[backend], kname
        assert kernel["depends"] == ["torch"]
        for rel in kernel["src"]:
            assert (EXAMPLES / "rmsnorm" / rel).is_file(), rel
    assert backends == set(cfg["general"]["backends"]) == {"cpu", "cuda"}
    caps = cfg["kernel"]["rmsnorm_cuda"]["cuda-capabilities"]
    assert "9.0" in caps and set(caps) <= CUDA_CAPS


def test_silu_and_mul_is_noarch():
    cfg = load("silu-and-mul")
    assert set(cfg) == {"general", "torch-noarch"}
    assert "kernel" not in cfg and "torch" not in cfg
    pkg = EXAMPLES / "silu-and-mul" / "torch-ext" / "silu_and_mul"
    # noarch: Python only.
    assert not [p for p in pkg.parent.rglob("*") if p.suffix in {".cpp", ".cu", ".h"}]
    assert "from ._ops import" in (pkg / "__init__.py").read_text()


def test_flakes_use_kernel_builder():
    top = (EXAMPLES.parent / "flake.nix").read_text()
    assert 'kernel-builder.url = "github:huggingface/kernels"' in top
    for name in ["rmsnorm", "silu-and-mul"]:
        assert f"./kernels_examples/{name}" in top
        flake = (EXAMPLES / name / "flake.nix").read_text()
        assert 'kernel-builder.url = "github:huggingface/kernels"' in flake
        assert re.search(r"genKernelFlakeOutputs\s*\{\s*inherit self;\s*path = \./\.;", flake)
