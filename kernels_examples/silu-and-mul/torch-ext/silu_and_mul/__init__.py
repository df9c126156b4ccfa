"""silu_and_mul: the SwiGLU gate ``silu(x[..., :d]) * x[..., d:]`` as a Hub kernel.

A noarch kernel: pure PyTorch, registered as a torch custom op under the
variant's unique namespace so it composes with ``torch.compile`` and so that
several versions can be loaded side by side. It runs wherever torch runs
(CPU, CUDA, ROCm, XPU, MPS). Intermediate math is done in fp32 for fp16/bf16
inputs and rounded once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import layers
from ._ops import add_op_namespace_prefix, ops

__all__ = ["SUPPORTED_DTYPES", "layers", "ops", "silu_and_mul"]

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@torch.library.custom_op(add_op_namespace_prefix("silu_and_mul"), mutates_args={"out"})
def _silu_and_mul(out: torch.Tensor, x: torch.Tensor) -> None:
    d = x.shape[-1] // 2
    gate, up = x[..., :d], x[..., d:]
    if x.dtype == torch.float32:
        torch.mul(F.silu(gate), up, out=out)
    else:
        out.copy_(F.silu(gate.float()) * up.float())


@_silu_and_mul.register_fake
def _silu_and_mul_fake(out: torch.Tensor, x: torch.Tensor) -> None:
    return None


def silu_and_mul(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``silu(x[..., :d]) * x[..., d:]`` where ``x.shape[-1] == 2 * d``.

    ``out``, if given, must have shape ``x.shape[:-1] + (d,)`` and ``x``'s dtype
    and device. Any strides are accepted for ``x`` and ``out``.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError("silu_and_mul: x must be a torch.Tensor")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"silu_and_mul: x must be float32, float16 or bfloat16, got {x.dtype}")
    if x.dim() < 1 or x.shape[-1] == 0 or x.shape[-1] % 2:
        raise ValueError(
            f"silu_and_mul: x's last dimension must be even and non-zero (gate and up halves), "
            f"got shape {tuple(x.shape)}"
        )
    out_shape = (*x.shape[:-1], x.shape[-1] // 2)
    if out is None:
        out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    elif tuple(out.shape) != out_shape or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(
            f"silu_and_mul: out must have shape {out_shape}, dtype {x.dtype} and device {x.device}, "
            f"got shape {tuple(out.shape)}, {out.dtype}, {out.device}"
        )
    ops.silu_and_mul(out, x)
    return out
