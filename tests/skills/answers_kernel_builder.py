"""Hand-written answers for the shipped ``kernel-builder-cuda-kernels`` test cases.

``GOOD`` is what an agent that read the skill should write; ``GENERIC`` is the plausible,
reasonable-looking answer of a model that did not (older build.toml formats, pybind11,
wall-clock timing, ``torch.hub``). A useful test case passes the first and fails the second:
that is what makes a measured lift mean something.
"""

GOOD: dict[str, str] = {
    "build-toml-h100": """```toml
[general]
name = "fused-rmsnorm"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.fused_rmsnorm_cuda]
backend = "cuda"
depends = ["torch"]
src = ["kernel_src/rmsnorm.cu"]
cuda-capabilities = ["9.0"]
```""",
    "capabilities-mixed-fleet": """A100 is compute capability 8.0, L4 (Ada) is 8.9 and T4 is 7.5,
so in the kernel section:

```toml
[kernel.my_kernel]
backend = "cuda"
depends = ["torch"]
src = ["my_kernel_cuda/kernel.cu"]
cuda-capabilities = ["7.5", "8.0", "8.9"]
```
Remember bf16 intrinsics need >= 8.0: on the T4 convert to float.""",
    "torch-binding-cpp": """```cpp
#include <torch/library.h>
#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor! out, Tensor input, Tensor weight, float eps) -> ()");
  ops.impl("rms_norm", torch::kCUDA, &rms_norm);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
```""",
    "python-package-init": """```python
import torch
from ._ops import ops


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    ops.rms_norm(out, x, weight, eps)
    return out
```""",
    "vectorized-bf16-loads": """```cpp
const uint4* x4 = reinterpret_cast<const uint4*>(x + (size_t)row * hidden);
float acc = 0.f;
for (int i = threadIdx.x; i < hidden / 8; i += blockDim.x) {
  uint4 v = x4[i];  // 128-bit load: 8 bf16 values
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v);
  #pragma unroll
  for (int k = 0; k < 4; ++k) {
    float2 f = __bfloat1622float2(p[k]);
    acc += f.x * f.x + f.y * f.y;
  }
}
```""",
    "warp-shuffle-reduction": """```cpp
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? partial[lane] : 0.f;
  if (warp == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  if (threadIdx.x == 0) partial[0] = v;
  __syncthreads();
  return partial[0];
}
// in the kernel:
const float inv = rsqrtf(block_sum(acc) / hidden + eps);
```""",
    "benchmark-method": """Time with CUDA events after a warmup, and compare with eager PyTorch
and torch.compile:

```python
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(10):  # warmup
    fn()
torch.cuda.synchronize(); start.record()
for _ in range(100):
    fn()
end.record(); torch.cuda.synchronize()
ms = start.elapsed_time(end) / 100
gbps = (2 * x.numel() * x.element_size()) / (ms * 1e-3) / 1e9
print(f"{gbps:.0f} GB/s = {gbps / 3350:.0%} of the H100's 3.35 TB/s")
```
Report speedup vs eager and vs torch.compile at several sizes.""",
    "variant-layout": """```
build/
└── torch213-cxx11-cu130-x86_64-linux/
    ├── __init__.py
    ├── _ops.py
    ├── _rmsnorm_cuda_3f9a2c1.abi3.so
    └── metadata.json
```
Each variant folder needs the package `__init__.py`, the generated `_ops.py`, the compiled
module and `metadata.json` (name, id, version, license, python-depends, backend).""",
    "nix-build-all-variants": """```nix
{
  inputs.kernel-builder.url = "github:huggingface/kernels";
  outputs = { self, kernel-builder }:
    kernel-builder.lib.genKernelFlakeOutputs { inherit self; path = ./.; };
}
```
Then `nix flake update` and `nix run .#build-and-copy -L`; it writes every variant to build/.""",
    "load-from-hub": """```python
import torch
from kernels import get_kernel

rmsnorm = get_kernel("my-org/rmsnorm", version=1)
x = torch.randn(8, 4096, dtype=torch.bfloat16, device="cuda")
w = torch.ones(4096, dtype=torch.bfloat16, device="cuda")
y = rmsnorm.rms_norm(x, w, eps=1e-6)
```""",
    "upskill-hub-workflow": """```bash
upskill-hub kernels init fused-gelu --backends cuda,cpu
upskill-hub kernels build fused-gelu --builder local
upskill-hub kernels check fused-gelu
upskill-hub kernels push fused-gelu --repo my-org/fused-gelu
upskill-hub kernels verify my-org/fused-gelu
```""",
    "publish-branch": """Builds for major version N go to branch `v<N>` of the kernel repo, so with
`version = 2` in build.toml they are pushed to branch v2 (`upskill-hub kernels push . --repo
my-org/rmsnorm --version 2`). Users pinned with `get_kernel("my-org/rmsnorm", version=1)` keep
getting the v1 branch; new users ask for version=2.""",
}

GENERIC: dict[str, str] = {
    "build-toml-h100": """```toml
[general]
name = "fused_rmsnorm"
backends = ["cuda"]

[general.cuda]
capabilities = ["9.0"]

[torch]
src = ["kernel_src/rmsnorm.cu"]
```""",
    "capabilities-mixed-fleet": """Compile for each architecture with nvcc flags:
-gencode arch=compute_80,code=sm_80 -gencode arch=compute_89,code=sm_89
-gencode arch=compute_75,code=sm_75""",
    "torch-binding-cpp": """```cpp
#include <torch/extension.h>

torch::Tensor rms_norm(torch::Tensor out, torch::Tensor input, torch::Tensor weight, double eps);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("rms_norm", &rms_norm, "RMSNorm (CUDA)");
}
```""",
    "python-package-init": """```python
import torch
from torch.utils.cpp_extension import load_inline  # noqa: F401

def rms_norm(x, weight, eps=1e-6):
    out = torch.empty_like(x)
    torch.ops.fused_rmsnorm.rms_norm(out, x, weight, eps)
    return out
```""",
    "vectorized-bf16-loads": """```cpp
float acc = 0.f;
for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
  float v = __bfloat162float(x[row * hidden + i]);
  acc += v * v;
}
```""",
    "warp-shuffle-reduction": """```cpp
__shared__ float s[256];
s[threadIdx.x] = acc;
__syncthreads();
for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
  if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
  __syncthreads();
}
float inv = 1.0f / sqrtf(s[0] / hidden + eps);
```""",
    "benchmark-method": """```python
import time
t0 = time.time()
for _ in range(100):
    out = my_rmsnorm(x, w)
print((time.time() - t0) / 100)
```
Compare the time with the PyTorch implementation.""",
    "variant-layout": """The build folder contains the compiled extension, e.g.
build/lib.linux-x86_64-cpython-311/rmsnorm.so,
and you can install it with pip install -e .""",
    "nix-build-all-variants": """Write a flake.nix with a devShell containing cudatoolkit and python
with torch,
then run `nix build` to produce the package.""",
    "load-from-hub": """```python
import torch
rmsnorm = torch.hub.load("my-org/rmsnorm", "rms_norm")
y = rmsnorm(torch.randn(8, 4096, dtype=torch.bfloat16, device="cuda"))
```""",
    "upskill-hub-workflow": """```bash
pip install upskill-hub
upskill-hub init fused-gelu
python setup.py build_ext --inplace
huggingface-cli upload my-org/fused-gelu .
```""",
    "publish-branch": """Create a new repository such as my-org/rmsnorm-2 and upload the new files there;
keep the old repo for existing users.""",
}
