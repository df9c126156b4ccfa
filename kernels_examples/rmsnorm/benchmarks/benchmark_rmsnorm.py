"""Workloads for `kernels benchmark <repo> --version 1` (kernels.benchmark.Benchmark).

One workload per dtype and (rows x hidden) size, the same sizes as the side-by-side table
in the project's README (benchmarks/rmsnorm.py in the upskill-hub repository, which adds
F.rms_norm, a per-shape torch.compile and the measured copy bandwidth). Each workload
times ``rms_norm`` into a preallocated output and is verified against the eager PyTorch
formula, which the runner also times as the reference. Workload names read
``<dtype>_<rows>x<hidden>``, e.g. ``bf16_16384x8192``.
"""

import torch
from kernels.benchmark import Benchmark

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
SIZES = [
    (1, 4096),
    (128, 4096),
    (1024, 4096),
    (4096, 4096),
    (16384, 4096),
    (128, 8192),
    (2048, 8192),
    (4096, 8192),
    (16384, 8192),
]


def _eager(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


class RMSNormBenchmark(Benchmark):
    seed = 0
    eps = 1e-6

    def _make(self, dtype: torch.dtype, rows: int, hidden: int) -> None:
        self.x = torch.randn(rows, hidden, device=self.device, dtype=torch.float32).to(dtype)
        self.weight = (1 + 0.1 * torch.randn(hidden, device=self.device)).to(dtype)
        self.out = torch.empty_like(self.x)

    def _run(self) -> None:
        self.kernel.rms_norm(self.x, self.weight, self.eps, out=self.out)

    def _reference(self) -> torch.Tensor:
        return _eager(self.x, self.weight, self.eps)


def _add_workload(dtype_name: str, rows: int, hidden: int) -> None:
    """Give RMSNormBenchmark the setup_/benchmark_/verify_ trio the runner looks for by name."""
    name = f"{dtype_name}_{rows}x{hidden}"
    dtype = DTYPES[dtype_name]

    def setup(self: RMSNormBenchmark) -> None:
        self._make(dtype, rows, hidden)

    setattr(RMSNormBenchmark, f"setup_{name}", setup)
    setattr(RMSNormBenchmark, f"benchmark_{name}", RMSNormBenchmark._run)
    setattr(RMSNormBenchmark, f"verify_{name}", RMSNormBenchmark._reference)


for _dtype_name in DTYPES:
    for _rows, _hidden in SIZES:
        _add_workload(_dtype_name, _rows, _hidden)
