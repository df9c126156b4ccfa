"""RMSNorm (root-mean-square layer norm) as a Hub kernel.

``rms_norm(x, weight, eps)`` computes ``x * rsqrt(mean(x**2, -1) + eps) * weight``
over the last dimension, accumulating in fp32 for fp32/fp16/bf16 inputs. The
work is done by the compiled op of the variant that was loaded (CUDA kernel
or vectorised CPU kernel); this module validates arguments so that misuse
fails with one clear message instead of a C++ stack trace.
"""

from __future__ import annotations

import torch

from . import layers
from ._ops import add_op_namespace_prefix, ops

__all__ = ["SUPPORTED_DTYPES", "layers", "rms_norm", "rms_norm_"]

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _check_args(x: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise TypeError("rms_norm: x and weight must be torch.Tensor")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"rms_norm: x must be float32, float16 or bfloat16, got {x.dtype}")
    if weight.dtype != x.dtype:
        raise TypeError(
            f"rms_norm: weight dtype {weight.dtype} differs from x dtype {x.dtype}; "
            "cast one of them (e.g. weight.to(x.dtype))"
        )
    if x.dim() < 1 or x.shape[-1] == 0:
        raise ValueError(f"rms_norm: x must have a non-empty last dimension, got shape {tuple(x.shape)}")
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(
            f"rms_norm: weight must have shape ({x.shape[-1]},) to match x's last dimension, "
            f"got {tuple(weight.shape)}"
        )
    if weight.device != x.device:
        raise ValueError(f"rms_norm: x is on {x.device} but weight is on {weight.device}")
    eps = float(eps)
    if not (eps >= 0.0 and eps != float("inf")):
        raise ValueError(f"rms_norm: eps must be a finite number >= 0, got {eps}")


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """RMS-normalise ``x`` over its last dimension and scale by ``weight``.

    Any number of leading dimensions is accepted. A non-contiguous ``x`` is
    copied to a contiguous tensor first (the kernel reads whole rows with
    wide loads). ``out``, if given, must be a contiguous tensor of ``x``'s
    shape, dtype and device; it may be ``x`` itself.
    """
    _check_args(x, weight, eps)
    x = x.contiguous()
    weight = weight.contiguous()
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    else:
        if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
            raise ValueError(
                f"rms_norm: out must match x (shape {tuple(x.shape)}, {x.dtype}, {x.device}), got "
                f"shape {tuple(out.shape)}, {out.dtype}, {out.device}"
            )
        if not out.is_contiguous():
            raise ValueError("rms_norm: out must be contiguous")
    if x.numel() > 0:
        ops.rms_norm(out, x, weight, float(eps))
    return out


def rms_norm_(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """In-place :func:`rms_norm`: overwrites and returns ``x`` (which must be contiguous)."""
    _check_args(x, weight, eps)
    if not x.is_contiguous():
        raise ValueError("rms_norm_: x must be contiguous to be normalised in place; use rms_norm(x, ...)")
    return rms_norm(x, weight, eps, out=x)


# Shape/dtype propagation for torch.compile and meta tensors: the op only
# writes into `out`, so there is nothing to compute.
@torch.library.register_fake(add_op_namespace_prefix("rms_norm"))
def _rms_norm_fake(out: torch.Tensor, input: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    return None
