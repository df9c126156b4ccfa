"""``kernels init``: a new kernel project in kernel-builder layout, ready to build and test.

The scaffold is the smallest project that exercises the whole path: an edition-5
build.toml (written with tomlkit), the torch binding that registers one op under the
build's unique namespace, one kernel source per backend, a Python wrapper, tests that
run against the kernel as ``kernels`` loads it, a benchmark and the Nix flake. It is
written to a temporary folder and renamed into place, so a failure leaves nothing.
"""

from __future__ import annotations

from pathlib import Path

import tomlkit

from upskill_hub._util.fsutil import atomic_replace_dir, claim_folder
from upskill_hub.errors import UpskillError
from upskill_hub.kernels.buildtoml import EDITION, NAME_RE

SUPPORTED_INIT_BACKENDS = ("cpu", "cuda")

FLAKE_NIX = """\
{
  description = "Kernel built with kernel-builder";

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    { self, kernel-builder, ... }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
    };
}
"""

BINDING_H = """\
#pragma once

#include <ATen/core/Tensor.h>

// out = input + 1 (the scaffold's op: replace it with your kernel).
void {pkg}(at::Tensor &out, at::Tensor const &input);
"""

BINDING_CPP = """\
// Registers the ops under the build's unique namespace (TORCH_EXTENSION_NAME,
// e.g. _{pkg}_cpu_1a2b3c4d5e), so several builds can be loaded in one process.
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {{
  ops.def("{pkg}(Tensor! out, Tensor input) -> ()");
#if defined(CPU_KERNEL)
  ops.impl("{pkg}", c10::kCPU, &{pkg});
#elif defined(CUDA_KERNEL)
  ops.impl("{pkg}", c10::kCUDA, &{pkg});
#endif
}}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""

KERNEL_CPU = """\
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

#include "torch_binding.h"

void {pkg}(at::Tensor &out, at::Tensor const &input) {{
  TORCH_CHECK(input.device().is_cpu(), "{pkg}: input must be a CPU tensor");
  TORCH_CHECK(out.sizes() == input.sizes() && out.dtype() == input.dtype(),
              "{pkg}: out must match the input's shape and dtype");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "{pkg}: tensors must be contiguous");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "{pkg}", [&] {{
    const scalar_t *in = input.data_ptr<scalar_t>();
    scalar_t *o = out.data_ptr<scalar_t>();
    const int64_t n = input.numel();
    for (int64_t i = 0; i < n; ++i) {{
      o[i] = static_cast<scalar_t>(static_cast<float>(in[i]) + 1.0f);
    }}
  }});
}}
"""

KERNEL_CUDA = """\
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "torch_binding.h"

template <typename scalar_t>
__global__ void {pkg}_kernel(scalar_t *__restrict__ out, const scalar_t *__restrict__ in, int64_t n) {{
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)blockDim.x * gridDim.x) {{
    out[i] = static_cast<scalar_t>(static_cast<float>(in[i]) + 1.0f);
  }}
}}

void {pkg}(at::Tensor &out, at::Tensor const &input) {{
  TORCH_CHECK(input.is_cuda(), "{pkg}: input must be a CUDA tensor");
  TORCH_CHECK(out.sizes() == input.sizes() && out.dtype() == input.dtype(),
              "{pkg}: out must match the input's shape and dtype");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "{pkg}: tensors must be contiguous");
  const c10::cuda::OptionalCUDAGuard guard(input.device());
  const int64_t n = input.numel();
  if (n == 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "{pkg}", [&] {{
    {pkg}_kernel<scalar_t><<<blocks, threads, 0, stream>>>(out.data_ptr<scalar_t>(),
                                                            input.data_ptr<scalar_t>(), n);
  }});
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}}
"""

INIT_PY = '''\
"""{name}: a kernel built with kernel-builder; load it with `kernels.get_kernel`."""

from typing import Optional

import torch

from ._ops import ops

__all__ = ["{pkg}"]


def {pkg}(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Return ``x + 1`` computed by the kernel (any shape; made contiguous first)."""
    x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    ops.{pkg}(out, x)
    return out
'''

NOARCH_INIT_PY = '''\
"""{name}: a pure-PyTorch (noarch) kernel; load it with `kernels.get_kernel`."""

import torch

from ._ops import add_op_namespace_prefix

__all__ = ["{pkg}"]


@torch.library.custom_op(add_op_namespace_prefix("{pkg}"), mutates_args=())
def _{pkg}_op(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@_{pkg}_op.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def {pkg}(x: torch.Tensor) -> torch.Tensor:
    """Return ``x + 1`` (registered as a torch custom op under the build's namespace)."""
    return _{pkg}_op(x)
'''

CONFTEST = '''\
"""Load the kernel under test the way users do: through `kernels`.

KERNEL_REPO_ID (+ KERNEL_VERSION or KERNEL_REVISION) loads it from the Hub with
`kernels.get_kernel` (KERNEL_TRUST_REMOTE_CODE=1 to allow untrusted publishers);
otherwise KERNEL_LOCAL_PATH, or this project's build/ folder, with
`kernels.get_local_kernel`. `upskill-hub kernels verify` sets these variables.
"""

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def kernel():
    from kernels import get_kernel, get_local_kernel

    repo_id = os.environ.get("KERNEL_REPO_ID")
    if repo_id:
        revision = os.environ.get("KERNEL_REVISION")
        version = None if revision else int(os.environ.get("KERNEL_VERSION", "1"))
        trust = os.environ.get("KERNEL_TRUST_REMOTE_CODE", "").lower() in ("1", "true", "yes")
        return get_kernel(repo_id, version=version, revision=revision, trust_remote_code=trust)
    path = Path(os.environ.get("KERNEL_LOCAL_PATH") or Path(__file__).resolve().parent.parent)
    return get_local_kernel(path)
'''

TEST_PY = """\
import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(7,), (3, 129), (2, 5, 33)])
def test_{pkg}_matches_reference(kernel, dtype, shape):
    x = torch.randn(shape, dtype=dtype)
    torch.testing.assert_close(kernel.{pkg}(x), x + 1)


def test_{pkg}_non_contiguous(kernel):
    x = torch.randn(16, 12).t()
    torch.testing.assert_close(kernel.{pkg}(x), x + 1)
"""

BENCHMARK_PY = '''\
"""Time the kernel against eager PyTorch; prints one line per size."""

import time

import torch
from kernels import get_local_kernel
from pathlib import Path


def bench(fn, x, reps=50):
    fn(x)
    start = time.perf_counter()
    for _ in range(reps):
        fn(x)
    return (time.perf_counter() - start) / reps


if __name__ == "__main__":
    kernel = get_local_kernel(Path(__file__).resolve().parent.parent)
    for n in (1 << 10, 1 << 16, 1 << 20):
        x = torch.randn(n)
        t_kernel, t_torch = bench(kernel.{pkg}, x), bench(lambda t: t + 1, x)
        print(f"n={{n:>8}}  kernel {{t_kernel * 1e6:8.1f}} us  torch {{t_torch * 1e6:8.1f}} us  "
              f"speedup {{t_torch / t_kernel:5.2f}}x")
'''

README = """\
# {name}

A kernel in [kernel-builder](https://github.com/huggingface/kernels) layout, created with
`upskill-hub kernels init`.

```bash
upskill-hub kernels build . --builder local   # this machine's variant (or --builder nix: all)
upskill-hub kernels check .
pytest tests                                  # runs against build/ via kernels.get_local_kernel
upskill-hub kernels push . --repo OWNER/{name}
upskill-hub kernels verify OWNER/{name} --version {version}
```
"""

GITIGNORE = "build/\nresult\n__pycache__/\n*.pyc\n"


def _parse_backends(backends: list[str]) -> list[str]:
    seen: list[str] = []
    for backend in backends:
        b = backend.strip().lower()
        if b not in SUPPORTED_INIT_BACKENDS and b != "noarch":
            raise UpskillError(
                f"unsupported backend {backend!r} for init (choose from: cpu, cuda, or noarch for pure PyTorch)"
            )
        if b not in seen:
            seen.append(b)
    if not seen:
        raise UpskillError("--backends must name at least one backend (cpu, cuda or noarch)")
    if "noarch" in seen and len(seen) > 1:
        raise UpskillError("noarch is a pure-PyTorch kernel: do not combine it with cpu/cuda")
    return seen


def render_build_toml(
    *,
    name: str,
    backends: list[str],
    license: str = "Apache-2.0",
    version: int = 1,
    repo_id: str | None = None,
    noarch: bool = False,
) -> str:
    """Write a kernel-builder edition-5 build.toml for a new project with ``tomlkit``.

    One ``[kernel.<pkg>_<backend>]`` section per compiled backend, sources under
    ``<pkg>_<backend>/``, matching the layout ``kernel-builder init`` produces.
    """
    pkg = name.replace("-", "_")
    doc = tomlkit.document()
    general = tomlkit.table()
    general.add("name", name)
    general.add("version", version)
    general.add("edition", EDITION)
    general.add("license", license)
    arr = tomlkit.array()
    arr.extend(backends)
    general.add("backends", arr)
    if repo_id:
        hub = tomlkit.table()
        hub.add("repo-id", repo_id)
        general.add("hub", hub)
    doc.add("general", general)
    if noarch:
        doc.add("torch-noarch", tomlkit.table())
        return tomlkit.dumps(doc)
    torch = tomlkit.table()
    src = tomlkit.array()
    src.extend(["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"])
    src.multiline(True)
    torch.add("src", src)
    doc.add("torch", torch)
    kernel = tomlkit.table(is_super_table=True)
    for backend in backends:
        sec = tomlkit.table()
        sec.add("backend", backend)
        deps = tomlkit.array()
        deps.append("torch")
        sec.add("depends", deps)
        srcs = tomlkit.array()
        ext = "cu" if backend == "cuda" else "cpp"
        srcs.append(f"{pkg}_{backend}/{pkg}.{ext}")
        sec.add("src", srcs)
        if backend == "cuda":
            caps = tomlkit.array()
            caps.extend(["8.0", "8.9", "9.0"])
            sec.add("cuda-capabilities", caps)
        kernel.add(f"{pkg}_{backend}", sec)
    doc.add("kernel", kernel)
    return tomlkit.dumps(doc)


def init_project(
    name: str, dest: Path, *, backends: list[str], license: str = "Apache-2.0", repo_id: str | None = None
) -> list[str]:
    """Create the project folder ``dest`` for kernel ``name``; return the files written."""
    if not NAME_RE.match(name):
        raise UpskillError(
            f"invalid kernel name {name!r}: use lowercase letters, digits and dashes, start with a letter, "
            "end with a letter or digit"
        )
    chosen = _parse_backends(backends)
    dest = Path(dest)
    # Only a new or empty folder: the project is swapped in whole, so nothing of the user's may be there.
    claim_folder(dest, option="--output", maker="kernels init", then="choose another --output folder")
    pkg = name.replace("-", "_")
    noarch = chosen == ["noarch"]
    build_backends = ["cpu", "cuda"] if noarch else chosen
    files: dict[str, str] = {
        "build.toml": render_build_toml(
            name=name, backends=build_backends, license=license, repo_id=repo_id, noarch=noarch
        ),
        "flake.nix": FLAKE_NIX,
        "README.md": README.format(name=name, version=1),
        ".gitignore": GITIGNORE,
        "tests/__init__.py": "",
        "tests/conftest.py": CONFTEST,
        f"tests/test_{pkg}.py": TEST_PY.format(pkg=pkg),
        f"benchmarks/benchmark_{pkg}.py": BENCHMARK_PY.format(pkg=pkg),
    }
    if noarch:
        files[f"torch-ext/{pkg}/__init__.py"] = NOARCH_INIT_PY.format(name=name, pkg=pkg)
    else:
        files[f"torch-ext/{pkg}/__init__.py"] = INIT_PY.format(name=name, pkg=pkg)
        files["torch-ext/torch_binding.cpp"] = BINDING_CPP.format(pkg=pkg)
        files["torch-ext/torch_binding.h"] = BINDING_H.format(pkg=pkg)
        if "cpu" in chosen:
            files[f"{pkg}_cpu/{pkg}.cpp"] = KERNEL_CPU.format(pkg=pkg)
        if "cuda" in chosen:
            files[f"{pkg}_cuda/{pkg}.cu"] = KERNEL_CUDA.format(pkg=pkg)

    def fill(tmp: Path) -> None:
        for rel, text in files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    atomic_replace_dir(dest, fill)
    return sorted(files)
