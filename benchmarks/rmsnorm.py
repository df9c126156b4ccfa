"""RMSNorm: the kernels_examples/rmsnorm kernel vs PyTorch eager and torch.compile.

Prints, per (tokens x hidden) size, the time of each implementation, the
kernel's speedup over eager and over torch.compile, and the kernel's achieved
memory bandwidth (bytes it must move: read x + weight, write out) as a
fraction of the device's peak.

Peak bandwidth: on CUDA, the datasheet figure for the device (H100 SXM
3.35 TB/s, H200 4.8 TB/s, ...; override with --peak-gbps); on CPU the
machine's measured copy bandwidth (a large tensor copy with all threads,
STREAM-copy style), since no datasheet figure applies to a VM's share of a
socket.

Which kernel is measured:
  --repo OWNER/NAME [--version N]  kernels.get_kernel (Hub or HF_ENDPOINT)
  --local PATH                     kernels.get_local_kernel (e.g. a built project)
  (default)                        CPU backend compiled from kernels_examples/rmsnorm
                                   with torch.utils.cpp_extension (cached)

  python benchmarks/rmsnorm.py                     # CPU, source build
  python benchmarks/rmsnorm.py --repo user/rmsnorm --version 1 --trust-remote-code
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "kernels_examples" / "rmsnorm"

# Datasheet HBM bandwidth in GB/s, matched against torch.cuda.get_device_name().
CUDA_PEAK_GBPS = [
    ("H200", 4800.0),
    ("H100 NVL", 3900.0),
    ("H100 PCIe", 2000.0),
    ("H100", 3350.0),
    ("H800", 3350.0),
    ("B200", 8000.0),
    ("GH200", 4000.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100", 1555.0),
    ("A10G", 600.0),
    ("L40S", 864.0),
    ("L4", 300.0),
    ("T4", 320.0),
]

DEFAULT_SIZES = [
    (1, 4096),
    (16, 4096),
    (128, 4096),
    (1024, 4096),
    (4096, 4096),
    (1, 8192),
    (512, 8192),
    (2048, 8192),
    (4096, 8192),
]


def load_kernel(args: argparse.Namespace) -> ModuleType:
    if args.repo:
        import kernels

        return kernels.get_kernel(args.repo, version=args.version, trust_remote_code=args.trust_remote_code)
    if args.local:
        import kernels

        return kernels.get_local_kernel(Path(args.local))
    # The project's test fixtures know how to build the CPU variant from source.
    conftest_path = PROJECT / "tests" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_rmsnorm_project_conftest", conftest_path)
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    print("building the CPU variant from source (cached after the first run)...", file=sys.stderr)
    return conftest.build_from_source()


def eager_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """The usual PyTorch implementation (as in Llama-style RMSNorm modules)."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * weight.float()).to(x.dtype)


def peak_gbps(device: torch.device, override: float | None) -> tuple[float, str]:
    if override:
        return override, "given"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, gbps in CUDA_PEAK_GBPS:
            if key in name:
                return gbps, f"{name} datasheet"
        raise SystemExit(f"unknown peak bandwidth for {name!r}: pass --peak-gbps")
    return measure_cpu_copy_gbps(), "measured copy"


def measure_cpu_copy_gbps(nbytes: int = 512 * 2**20, repeats: int = 5) -> float:
    src = torch.ones(nbytes // 4, dtype=torch.float32)
    dst = torch.empty_like(src)
    dst.copy_(src)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - start)
    return 2 * nbytes / best / 1e9


def time_ms(fn: Callable[[], object], device: torch.device, budget_s: float, min_iters: int = 5) -> float:
    """Median time of one call in ms, after warm-up, within about budget_s."""
    for _ in range(3):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize(device)
        iters = max(min_iters, min(2000, int(budget_s * 1e3 / max(start.elapsed_time(end), 1e-3))))
        # Time batches of calls: one kernel is often shorter than event resolution.
        batch = max(1, iters // 10)
        samples = []
        for _ in range(10):
            start.record()
            for _ in range(batch):
                fn()
            end.record()
            torch.cuda.synchronize(device)
            samples.append(start.elapsed_time(end) / batch)
        return statistics.median(samples)
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    iters = max(min_iters, min(1000, int(budget_s / max(once, 1e-6))))
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3


def parse_size(text: str) -> tuple[int, int]:
    tokens, hidden = text.lower().split("x")
    return int(tokens), int(hidden)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", help="Hub kernel repo (kernels.get_kernel)")
    p.add_argument("--version", type=int, default=1)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--local", help="local kernel path (kernels.get_local_kernel)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument(
        "--sizes", nargs="*", type=parse_size, help="TOKENSxHIDDEN ... (default: 1x4096 ... 4096x8192)"
    )
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--budget", type=float, default=0.3, help="seconds of timing per case and impl")
    p.add_argument("--peak-gbps", type=float, help="peak memory bandwidth to compare against")
    args = p.parse_args(argv)

    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    sizes = args.sizes or DEFAULT_SIZES
    kernel = load_kernel(args)
    peak, peak_src = peak_gbps(device, args.peak_gbps)
    compiled = None if args.no_compile else torch.compile(eager_rms_norm, dynamic=True)
    eps = 1e-6

    if device.type == "cuda":
        dev_name = torch.cuda.get_device_name(device)
    else:
        dev_name = f"CPU x{torch.get_num_threads()} threads"
    print(f"device: {dev_name}; dtype: {args.dtype}; torch {torch.__version__}")
    print(f"peak bandwidth: {peak:.1f} GB/s ({peak_src}); kernel: {getattr(kernel, '__name__', kernel)}")
    header = (
        f"{'tokens x hidden':>16} {'eager ms':>10} {'compile ms':>11} {'kernel ms':>10} "
        f"{'vs eager':>9} {'vs compile':>11} {'kernel GB/s':>12} {'% peak':>7} {'max err':>9}"
    )
    print(header)
    print("-" * len(header))
    for tokens, hidden in sizes:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(tokens, hidden, generator=g).to(device=device, dtype=dtype)
        w = (1 + 0.1 * torch.randn(hidden, generator=g)).to(device=device, dtype=dtype)
        out = torch.empty_like(x)

        expected = eager_rms_norm(x, w, eps)
        got = kernel.rms_norm(x, w, eps, out=out)
        err = (got.float() - expected.float()).abs().max().item()

        t_eager = time_ms(lambda x=x, w=w: eager_rms_norm(x, w, eps), device, args.budget)
        t_comp = float("nan")
        if compiled is not None:
            t_comp = time_ms(lambda x=x, w=w: compiled(x, w, eps), device, args.budget)
        t_kern = time_ms(
            lambda x=x, w=w, out=out: kernel.rms_norm(x, w, eps, out=out), device, args.budget
        )

        moved = (2 * x.numel() + w.numel()) * x.element_size()
        gbps = moved / (t_kern * 1e-3) / 1e9
        print(
            f"{f'{tokens} x {hidden}':>16} {t_eager:>10.4f} {t_comp:>11.4f} {t_kern:>10.4f} "
            f"{t_eager / t_kern:>8.2f}x {t_comp / t_kern:>10.2f}x {gbps:>12.1f} {gbps / peak:>6.0%} "
            f"{err:>9.2e}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
