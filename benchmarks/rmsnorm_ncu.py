"""The rmsnorm kernel and torch.compile's Triton kernel on one shape, launched for Nsight Compute.

ncu times each kernel alone (no launch or event overhead around it), which separates what a
kernel costs from what its launch path costs. Our kernel runs through the C ABI at three
configurations (cached/256, cached with the weight prefetched/128, cached/128), compile's
kernel is compiled for the shape; each runs twice inside the profiled range, after warm-up.
Needs a CUDA GPU, nvcc, Triton and ncu:

  ncu --clock-control none --profile-from-start off \\
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size,\\
launch__registers_per_thread python benchmarks/rmsnorm_ncu.py 1024 4096
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rmsnorm import eager_rms_norm  # noqa: E402
from rmsnorm_paths import DTYPES, PATHS, build_library, launcher  # noqa: E402

CONFIGS = [("cached", 256), ("cached+w", 128), ("cached", 128)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows", type=int)
    p.add_argument("hidden", type=int)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("rmsnorm_ncu.py needs a CUDA GPU")
    major, minor = torch.cuda.get_device_capability()
    dll = build_library(f"sm_{major}{minor}", Path(tempfile.mkdtemp(prefix="rmsnorm-ncu-")))
    x = torch.randn(args.rows, args.hidden, device="cuda").to(torch.bfloat16)
    w = (1 + 0.1 * torch.randn(args.hidden, device="cuda")).to(torch.bfloat16)
    out = torch.empty_like(x)
    call = launcher(dll, out, x, w, DTYPES[torch.bfloat16])
    codes = {name: code for code, name in PATHS.items()}
    compiled = torch.compile(eager_rms_norm, dynamic=False, fullgraph=True)

    def once() -> None:
        compiled(x, w)
        for name, threads in CONFIGS:
            if call(codes[name], threads) != 0:
                raise SystemExit(f"{name}/{threads} cannot run {args.rows}x{args.hidden}")

    for _ in range(3):
        once()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for _ in range(2):
        once()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
