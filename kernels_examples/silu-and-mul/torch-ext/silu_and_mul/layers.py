"""Layers for ``kernels.kernelize``: a drop-in forward for SwiGLU activation modules
(vLLM-style ``SiluAndMul`` taking the concatenated gate/up projection)."""

from __future__ import annotations

import torch
from torch import nn


class SiluAndMul(nn.Module):
    """``forward(x) = silu(x[..., :d]) * x[..., d:]``; stateless."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from . import silu_and_mul

        return silu_and_mul(x)


__all__ = ["SiluAndMul"]
