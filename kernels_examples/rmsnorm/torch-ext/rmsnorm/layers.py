"""Layers for ``kernels.kernelize``: drop-in forwards for RMSNorm modules.

``kernelize`` replaces a module's ``forward`` with the ``forward`` of a layer
class here and calls it with the original module as ``self``, so the layer
only relies on attributes that common RMSNorm modules have: ``weight`` and
``variance_epsilon`` (Llama-style) or ``eps``.
"""

from __future__ import annotations

import torch
from torch import nn


class RMSNorm(nn.Module):
    """Llama-style RMSNorm forward backed by this kernel."""

    weight: torch.Tensor
    variance_epsilon: float

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        from . import rms_norm

        eps = getattr(self, "variance_epsilon", None)
        if eps is None:
            eps = getattr(self, "eps", 1e-6)
        weight = self.weight
        if weight.dtype != hidden_states.dtype:
            weight = weight.to(hidden_states.dtype)
        return rms_norm(hidden_states, weight, eps)


__all__ = ["RMSNorm"]
