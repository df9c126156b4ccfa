"""Workloads for `kernels benchmark <repo> --version 1` (kernels.benchmark.Benchmark)."""

import torch
import torch.nn.functional as F
from kernels.benchmark import Benchmark


class SiluAndMulBenchmark(Benchmark):
    seed = 0

    def _make(self, tokens: int, d: int) -> None:
        self.x = torch.randn(tokens, 2 * d, device=self.device, dtype=torch.bfloat16)
        self.out = torch.empty(tokens, d, device=self.device, dtype=torch.bfloat16)

    def _reference(self) -> torch.Tensor:
        d = self.x.shape[-1] // 2
        return (F.silu(self.x[:, :d].float()) * self.x[:, d:].float()).to(self.x.dtype)

    def setup_decode(self) -> None:
        self._make(16, 11008)

    def benchmark_decode(self) -> None:
        self.kernel.silu_and_mul(self.x, out=self.out)

    def verify_decode(self) -> torch.Tensor:
        return self._reference()

    def setup_prefill(self) -> None:
        self._make(1024, 11008)

    def benchmark_prefill(self) -> None:
        self.kernel.silu_and_mul(self.x, out=self.out)

    def verify_prefill(self) -> torch.Tensor:
        return self._reference()
