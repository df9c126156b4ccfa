"""Workloads for `kernels benchmark <repo> --version 1` (kernels.benchmark.Benchmark).

Each workload times ``rms_norm`` on one (tokens x hidden) bf16 size and
verifies it against the eager PyTorch formula, which the runner also times
as the reference. For the full table (vs torch.compile, bandwidth as a
fraction of peak) see benchmarks/rmsnorm.py in the upskill-hub repository.
"""

import torch
from kernels.benchmark import Benchmark


def _eager(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


class RMSNormBenchmark(Benchmark):
    seed = 0
    eps = 1e-6

    def _make(self, tokens: int, hidden: int) -> None:
        self.x = torch.randn(tokens, hidden, device=self.device, dtype=torch.bfloat16)
        self.weight = (1 + 0.1 * torch.randn(hidden, device=self.device)).to(torch.bfloat16)
        self.out = torch.empty_like(self.x)

    def setup_decode(self) -> None:
        self._make(16, 4096)

    def benchmark_decode(self) -> None:
        self.kernel.rms_norm(self.x, self.weight, self.eps, out=self.out)

    def verify_decode(self) -> torch.Tensor:
        return _eager(self.x, self.weight, self.eps)

    def setup_prefill(self) -> None:
        self._make(1024, 4096)

    def benchmark_prefill(self) -> None:
        self.kernel.rms_norm(self.x, self.weight, self.eps, out=self.out)

    def verify_prefill(self) -> torch.Tensor:
        return _eager(self.x, self.weight, self.eps)

    def setup_large(self) -> None:
        self._make(4096, 8192)

    def benchmark_large(self) -> None:
        self.kernel.rms_norm(self.x, self.weight, self.eps, out=self.out)

    def verify_large(self) -> torch.Tensor:
        return _eager(self.x, self.weight, self.eps)
