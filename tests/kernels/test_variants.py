"""Variant names: strict parsing, and the local variant is the one `kernels` picks."""

from __future__ import annotations

import pytest

from upskill_hub.kernels.variants import cuda_token, local_arch_variant, parse_variant_name, torch_prefix


@pytest.mark.parametrize(
    ("name", "noarch", "backend"),
    [
        ("torch213-cxx11-cpu-x86_64-linux", False, "cpu"),
        ("torch213-cxx11-cu130-x86_64-linux", False, "cuda"),
        ("torch29-cxx11-rocm63-x86_64-linux", False, "rocm"),
        ("torch28-metal-aarch64-darwin", False, "metal"),
        ("torch-stable-abi211-cu128-x86_64-linux", False, "cuda"),
        ("torch-cpu", True, "cpu"),
        ("torch-cuda", True, "cuda"),
        ("torch-universal", True, "universal"),
    ],
)
def test_valid_names(name: str, noarch: bool, backend: str) -> None:
    info = parse_variant_name(name)
    assert info is not None and (info.noarch, info.backend) == (noarch, backend)


@pytest.mark.parametrize(
    "name",
    [
        "torch213-cpu-x86_64-linux",  # Linux builds carry the cxx11 tag
        "torch213-cxx11-cpu-x86_64",
        "torch213-cxx11-gpu-x86_64-linux",
        "torch-tensorcore",
        "my-build",
        "torch213-cxx11-cpu-x86_64-linux-extra",
        "build",
    ],
)
def test_invalid_names(name: str) -> None:
    assert parse_variant_name(name) is None


def test_prefix_and_cuda_token() -> None:
    assert torch_prefix("2.13.0+cpu", True, "linux") == "torch213-cxx11"
    assert torch_prefix("2.8.1", None, "darwin") == "torch28"
    assert cuda_token("13.0") == "cu130" and cuda_token("12.8") == "cu128"


def test_local_cpu_variant_is_what_kernels_selects() -> None:
    import torch
    from kernels.variants import parse_variant, resolve_variant

    name = local_arch_variant("cpu")
    major, minor = torch.__version__.split(".")[:2]
    assert name.startswith(f"torch{major}{minor}-cxx11-cpu-")
    chosen, _ = resolve_variant([parse_variant(name), parse_variant("torch-cpu")], backend="cpu")
    assert chosen is not None and chosen.variant_str == name
