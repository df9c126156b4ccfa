"""RMSNorm side by side: the kernels_examples/rmsnorm kernel against eager PyTorch,
``torch.nn.functional.rms_norm`` and ``torch.compile``, in one process.

Per dtype and (rows x hidden) it prints the median time of each implementation, the
kernel's speed over ``torch.compile`` (compile time / kernel time: above 1 the kernel
is faster), the bytes the kernel must move (read x, read the weight, write out) over its
time, that bandwidth as a share of the copy peak measured in the same run (a large
device-to-device copy, bytes read plus written; the datasheet figure beside it on known
cards), and the largest error of each implementation in output ulps against a float64
reference (a correctly rounded result is within 0.5 ulp).

Fair by construction:
  * ``torch.compile`` is compiled per shape (``dynamic=False``, ``fullgraph=True``, the
    compile caches reset before each shape), so no shape is served by a dynamic-shape
    graph or falls back to eager at the recompile limit;
  * every implementation is timed the same way: on CUDA ``triton.testing.do_bench``
    (median; the L2 cache is flushed before every call) or, without Triton, CUDA events
    around single calls after an L2 flush; on CPU the median of ``perf_counter`` samples;
  * inputs are random (never zeros), the same for every implementation.

Which kernel is measured:
  --repo OWNER/NAME [--version N]  kernels.get_kernel (the Hub or HF_ENDPOINT)
  --local PATH                     kernels.get_local_kernel (e.g. a built project)
  (default)                        the CPU backend compiled from kernels_examples/rmsnorm
                                   with torch.utils.cpp_extension (cached)

  python benchmarks/rmsnorm.py --sizes 1x4096 128x4096          # CPU, CI-sized
  python benchmarks/rmsnorm.py --repo user/rmsnorm --trust-remote-code --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "kernels_examples" / "rmsnorm"
EPS = 1e-6

#: Datasheet HBM bandwidth in GB/s, matched against torch.cuda.get_device_name(): shown
#: beside the measured copy peak, never instead of it.
DATASHEET_GBPS = [
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

#: The sizes of the README's table; kernels_examples/rmsnorm/benchmarks/benchmark_rmsnorm.py
#: holds the same ones as `kernels benchmark` workloads (a test keeps them equal).
DEFAULT_SIZES = [
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

#: Mantissa bits of each dtype, for ulps (bf16 7, fp16 10, fp32 23).
MANTISSA_BITS = {torch.bfloat16: 7, torch.float16: 10, torch.float32: 23}
#: Smallest normal exponent (frexp convention) of each dtype: below it ulps stop shrinking.
MIN_EXPONENT = {torch.bfloat16: -125, torch.float16: -13, torch.float32: -125}

COLUMNS = [
    "dtype", "rows", "hidden", "kernel_us", "eager_us", "f_rms_norm_us", "compile_us",
    "kernel_vs_compile", "kernel_vs_eager", "kernel_gbps", "pct_of_copy", "pct_of_datasheet",
    "kernel_max_ulp", "compile_max_ulp", "f_rms_norm_max_ulp",
]


def eager_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """The usual PyTorch module code (Llama-style RMSNorm), in fp32 then cast back."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * weight.float()).to(x.dtype)


def reference64(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def max_ulps(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Largest |out - ref| in units of the last place of ``out``'s dtype at ``ref``."""
    _, exponent = torch.frexp(ref)
    exponent = exponent.clamp_min(MIN_EXPONENT[out.dtype])
    ulp = torch.ldexp(torch.ones_like(ref), exponent - 1 - MANTISSA_BITS[out.dtype])
    err = (out.double() - ref).abs() / ulp
    if not bool(torch.isfinite(out).all()):
        return math.inf
    return float(err.max()) if err.numel() else 0.0


def load_kernel(args: argparse.Namespace) -> ModuleType:
    if args.repo:
        import kernels

        return kernels.get_kernel(args.repo, version=args.version, trust_remote_code=args.trust_remote_code)
    if args.local:
        import kernels

        return kernels.get_local_kernel(Path(args.local))
    # The project's test fixtures know how to build the CPU variant from source.
    spec = importlib.util.spec_from_file_location("_rmsnorm_project_conftest", PROJECT / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    print("building the CPU variant from source (cached after the first run)...", file=sys.stderr)
    return conftest.build_from_source()


class Timer:
    """Median time of one call, the same method for every implementation on a device."""

    def __init__(self, device: torch.device, budget_s: float) -> None:
        self.device = device
        self.budget_s = budget_s
        self.do_bench = None
        if device.type == "cuda":
            try:
                from triton.testing import do_bench
            except ImportError:  # CUDA events below
                do_bench = None
            self.do_bench = do_bench
            self._flush = torch.empty(256 * 2**20, dtype=torch.int8, device=device)

    @property
    def method(self) -> str:
        if self.device.type != "cuda":
            return "perf_counter median"
        return "triton.testing.do_bench median" if self.do_bench else "CUDA events median, L2 flushed"

    def us(self, fn: Callable[[], object]) -> float:
        if self.device.type == "cuda":
            if self.do_bench is not None:
                rep = max(25, int(self.budget_s * 1000))
                return float(self.do_bench(fn, warmup=25, rep=rep, return_mode="median")) * 1e3
            return self._events_us(fn)
        for _ in range(3):
            fn()
        samples = []
        deadline = time.perf_counter() + self.budget_s
        while len(samples) < 5 or (time.perf_counter() < deadline and len(samples) < 2000):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples) * 1e6

    def _events_us(self, fn: Callable[[], object]) -> float:
        for _ in range(5):
            fn()
        torch.cuda.synchronize(self.device)
        samples = []
        for _ in range(100):
            self._flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3)
        return statistics.median(samples)


def copy_peak_gbps(device: torch.device, timer: Timer) -> float:
    """A large copy's bytes read plus written per second: the bandwidth a memory-bound op can reach."""
    nbytes = 2**30 if device.type == "cuda" else 2**28
    src = torch.ones(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return 2 * nbytes / (timer.us(lambda: dst.copy_(src)) * 1e-6) / 1e9


def datasheet_gbps(device: torch.device) -> tuple[float | None, str]:
    if device.type != "cuda":
        return None, "CPU"
    name = torch.cuda.get_device_name(device)
    for key, gbps in DATASHEET_GBPS:
        if key in name:
            return gbps, name
    return None, name


def compiled_for_shape() -> Callable[..., torch.Tensor]:
    """A fresh static-shape compile: reset first, so earlier shapes count toward no limit."""
    torch._dynamo.reset()
    return torch.compile(eager_rms_norm, dynamic=False, fullgraph=True)


def measure(kernel: ModuleType, device: torch.device, dtype: torch.dtype, rows: int, hidden: int,
            timer: Timer, copy_peak: float, datasheet: float | None, use_compile: bool) -> dict:
    g = torch.Generator().manual_seed(rows * 100003 + hidden)
    x = torch.randn(rows, hidden, generator=g).to(device=device, dtype=dtype)
    w = (1 + 0.1 * torch.randn(hidden, generator=g)).to(device=device, dtype=dtype)
    ref = reference64(x, w)
    out = torch.empty_like(x)
    row: dict = {"dtype": str(dtype).removeprefix("torch."), "rows": rows, "hidden": hidden}
    row["kernel_max_ulp"] = max_ulps(kernel.rms_norm(x, w, EPS, out=out), ref)
    row["f_rms_norm_max_ulp"] = max_ulps(F.rms_norm(x, (hidden,), w, EPS), ref)
    row["kernel_us"] = timer.us(lambda: kernel.rms_norm(x, w, EPS, out=out))
    row["eager_us"] = timer.us(lambda: eager_rms_norm(x, w))
    row["f_rms_norm_us"] = timer.us(lambda: F.rms_norm(x, (hidden,), w, EPS))
    row["compile_us"] = row["compile_max_ulp"] = None
    if use_compile:
        compiled = compiled_for_shape()
        row["compile_max_ulp"] = max_ulps(compiled(x, w), ref)
        row["compile_us"] = timer.us(lambda: compiled(x, w))
    row["kernel_vs_eager"] = row["eager_us"] / row["kernel_us"]
    row["kernel_vs_compile"] = row["compile_us"] / row["kernel_us"] if row["compile_us"] else None
    moved = (2 * x.numel() + w.numel()) * x.element_size()
    row["kernel_gbps"] = moved / (row["kernel_us"] * 1e-6) / 1e9
    row["pct_of_copy"] = 100 * row["kernel_gbps"] / copy_peak
    row["pct_of_datasheet"] = 100 * row["kernel_gbps"] / datasheet if datasheet else None
    return row


def _fmt(value: object, spec: str, suffix: str = "") -> str:
    if value is None:
        return format("-", spec.rstrip("f").split(".")[0] + "s") + (" " if suffix else "")
    return format(value, spec) + suffix


def table(rows: list[dict]) -> str:
    head = (f"{'dtype':>8} {'rows x hidden':>13} {'kernel us':>10} {'eager us':>9} {'F.rms us':>9} "
            f"{'compile us':>10} {'kern/comp':>9} {'kern/eager':>10} {'GB/s':>7} {'%copy':>6} "
            f"{'%sheet':>6} {'ulp k':>6} {'ulp c':>6} {'ulp F':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        shape = f"{r['rows']}x{r['hidden']}"
        lines.append(
            f"{r['dtype']:>8} {shape:>13} {r['kernel_us']:>10.1f} {r['eager_us']:>9.1f} "
            f"{r['f_rms_norm_us']:>9.1f} {_fmt(r['compile_us'], '>10.1f')} "
            f"{_fmt(r['kernel_vs_compile'], '>8.2f', 'x')} {r['kernel_vs_eager']:>9.2f}x {r['kernel_gbps']:>7.0f} "
            f"{r['pct_of_copy']:>6.1f} {_fmt(r['pct_of_datasheet'], '>6.1f')} {r['kernel_max_ulp']:>6.2f} "
            f"{_fmt(r['compile_max_ulp'], '>6.2f')} {r['f_rms_norm_max_ulp']:>6.2f}"
        )
    return "\n".join(lines)


def parse_size(text: str) -> tuple[int, int]:
    try:
        rows, hidden = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r} is not ROWSxHIDDEN, e.g. 128x4096") from None
    if rows < 1 or hidden < 1:
        raise argparse.ArgumentTypeError(f"size {text!r} must have at least one row and one column")
    return rows, hidden


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", help="Hub kernel repo (kernels.get_kernel)")
    p.add_argument("--version", type=int, default=1)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--local", help="local kernel path (kernels.get_local_kernel)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"],
                   choices=["bfloat16", "float16", "float32"])
    p.add_argument("--sizes", nargs="+", type=parse_size, help="ROWSxHIDDEN ... (default: the README table's nine, 1x4096 ... 16384x8192)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--budget", type=float, default=0.1, help="seconds of timing per implementation and case")
    p.add_argument("--json", nargs="?", const="-", metavar="PATH",
                   help="also write the figures as JSON to PATH; with no PATH, print JSON instead of the table")
    args = p.parse_args(argv)

    device = torch.device(args.device)
    kernel = load_kernel(args)
    timer = Timer(device, args.budget)
    peak = copy_peak_gbps(device, timer)
    sheet, name = datasheet_gbps(device)
    if device.type == "cpu":
        name = f"CPU x{torch.get_num_threads()} threads"
    rows = []
    for dtype_name in args.dtypes:
        for n, h in args.sizes or DEFAULT_SIZES:
            rows.append(measure(kernel, device, getattr(torch, dtype_name), n, h, timer, peak, sheet,
                                not args.no_compile))
    report = {
        "device": name,
        "torch": torch.__version__,
        "timing": timer.method,
        "copy_peak_gbps": peak,
        "datasheet_gbps": sheet,
        "columns": COLUMNS,
        "rows": rows,
    }
    if args.json == "-":
        print(json.dumps(report, indent=1))
        return 0
    if args.json is not None:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    sheet_text = f"; datasheet {sheet:.0f} GB/s" if sheet else ""
    print(f"device: {name}; torch {torch.__version__}; timing: {timer.method}")
    print(f"copy peak (measured now): {peak:.0f} GB/s{sheet_text}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
