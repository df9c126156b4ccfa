"""Benchmark a kernel against eager PyTorch and torch.compile; print speedup and bandwidth.

Usage (from a kernel project, after building):

    python bench_op.py --repo my-org/rmsnorm --version 1          # a published kernel
    python bench_op.py --local .                                   # this project (its build/)

The op benchmarked is RMSNorm (``rms_norm(x, weight, eps)``); adapt ``reference`` and
``bytes_moved`` for other ops. On a CPU-only machine it times with perf_counter instead of
CUDA events, so the table still prints.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

PEAK_GBPS = {"H100": 3350.0, "H200": 4800.0, "A100": 2039.0, "L4": 300.0, "T4": 320.0, "A10": 600.0}


def reference(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    var = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(var + eps) * w.float()).to(x.dtype)


def time_ms(fn, warmup: int = 10, iters: int = 100) -> float:
    """Mean milliseconds per call, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    if torch.cuda.is_available():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) * 1e3 / iters


def peak_gbps() -> float | None:
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name()
    return next((v for k, v in PEAK_GBPS.items() if k in name), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repo")
    ap.add_argument("--version", type=int, default=1)
    ap.add_argument("--local", type=Path)
    ap.add_argument("--dtype", default="bfloat16")
    args = ap.parse_args()

    from kernels import get_kernel, get_local_kernel

    kernel = (
        get_local_kernel(args.local) if args.local else get_kernel(args.repo, version=args.version)
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = getattr(torch, args.dtype)
    compiled = torch.compile(reference)
    peak = peak_gbps()

    print(
        f"{'rows x hidden':>16} {'eager ms':>9} {'compile ms':>10} {'kernel ms':>9} "
        f"{'vs eager':>8} {'vs compile':>10} {'GB/s':>8} {'% peak':>7}"
    )
    for rows, hidden in [(128, 4096), (1024, 4096), (8192, 4096), (4096, 8192), (16384, 8192)]:
        x = torch.randn(rows, hidden, dtype=dtype, device=device)
        w = torch.randn(hidden, dtype=dtype, device=device)
        torch.testing.assert_close(kernel.rms_norm(x, w, 1e-6), reference(x, w), atol=2e-2, rtol=2e-2)
        eager = time_ms(lambda x=x, w=w: reference(x, w))
        comp = time_ms(lambda x=x, w=w: compiled(x, w))
        kern = time_ms(lambda x=x, w=w: kernel.rms_norm(x, w, 1e-6))
        bytes_moved = 2 * x.numel() * x.element_size() + w.numel() * w.element_size()
        gbps = bytes_moved / (kern * 1e-3) / 1e9
        pct = f"{100 * gbps / peak:6.1f}%" if peak else "    n/a"
        print(
            f"{rows:>7} x {hidden:<6} {eager:9.4f} {comp:10.4f} {kern:9.4f} "
            f"{eager / kern:7.2f}x {comp / kern:9.2f}x {gbps:8.1f} {pct}"
        )


if __name__ == "__main__":
    main()
