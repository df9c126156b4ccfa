"""The rmsnorm benchmarks: the side-by-side script runs in its CI-sized form on CPU with every
column filled, and the `kernels benchmark` workloads cover the same shapes and verify."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("kernels")

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "kernels_examples" / "rmsnorm"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def side_by_side() -> ModuleType:
    return _load(ROOT / "benchmarks" / "rmsnorm.py", "_rmsnorm_side_by_side")


@pytest.fixture(scope="module")
def workloads() -> ModuleType:
    return _load(PROJECT / "benchmarks" / "benchmark_rmsnorm.py", "_rmsnorm_workloads")


def test_workloads_cover_the_benchmark_table(side_by_side, workloads):
    names = {n.removeprefix("benchmark_") for n in dir(workloads.RMSNormBenchmark) if n.startswith("benchmark_")}
    expected = {f"{d}_{r}x{h}" for d in ("bf16", "fp32") for r, h in side_by_side.DEFAULT_SIZES}
    assert names == expected
    assert workloads.SIZES == side_by_side.DEFAULT_SIZES


#: Runs in a fresh interpreter: building the CPU variant imports torch.utils.cpp_extension,
#: which must not share a process with tests that load distutils (see test_nvcc_compile.py).
WORKLOAD_CHECK = """
import importlib.util, sys, torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
workloads = load(sys.argv[1], "workloads")
bench = workloads.RMSNormBenchmark()
bench.kernel = load(sys.argv[2], "project_conftest").build_from_source()
for name in sys.argv[3:]:
    torch.manual_seed(bench.seed)
    getattr(bench, f"setup_{name}")()
    getattr(bench, f"benchmark_{name}")()
    expected = getattr(bench, f"verify_{name}")()
    assert expected.dtype == bench.out.dtype and expected.shape == bench.out.shape, name
    torch.testing.assert_close(bench.out, expected, rtol=1.6e-2, atol=1e-2)
    print("ok", name, tuple(bench.out.shape), bench.out.dtype)
"""


def test_workload_outputs_match_their_references():
    names = ["bf16_1x4096", "fp32_128x4096", "bf16_128x8192"]
    res = subprocess.run(
        [sys.executable, "-c", WORKLOAD_CHECK, str(PROJECT / "benchmarks" / "benchmark_rmsnorm.py"),
         str(PROJECT / "tests" / "conftest.py"), *names],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert [line.split()[1] for line in res.stdout.splitlines() if line.startswith("ok ")] == names


def test_ulps_measure_distance_in_the_output_dtype(side_by_side):
    ref = torch.tensor([1.0, 1.0, 3.0], dtype=torch.float64)
    # bf16 has 7 mantissa bits: one ulp at 1.0 is 2**-7, at 3.0 it is 2**-6.
    out = torch.tensor([1.0, 1.0 + 2**-7, 3.0 + 2**-6], dtype=torch.bfloat16)
    assert side_by_side.max_ulps(out, ref) == pytest.approx(1.0)
    assert side_by_side.max_ulps(torch.tensor([1.0], dtype=torch.bfloat16), ref[:1]) == 0.0
    assert side_by_side.max_ulps(torch.tensor([float("nan")], dtype=torch.bfloat16), ref[:1]) == math.inf


@pytest.mark.slow
def test_ci_sized_run_on_cpu_fills_every_column(tmp_path):
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "rmsnorm.py"), "--device", "cpu", "--sizes", "1x4096", "128x4096",
         "--budget", "0.02", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["copy_peak_gbps"] > 0 and report["timing"] == "perf_counter median"
    assert [(r["dtype"], r["rows"], r["hidden"]) for r in report["rows"]] == [
        ("bfloat16", 1, 4096), ("bfloat16", 128, 4096), ("float32", 1, 4096), ("float32", 128, 4096)
    ]
    for row in report["rows"]:
        assert set(report["columns"]) <= set(row)
        for column in ("kernel_us", "eager_us", "f_rms_norm_us", "compile_us", "kernel_vs_compile", "kernel_gbps",
                       "pct_of_copy"):
            assert row[column] > 0, column
        assert row["pct_of_datasheet"] is None  # no datasheet figure for a CPU
        if row["dtype"] == "bfloat16":  # computed in fp32, rounded once
            assert row["kernel_max_ulp"] <= 0.501 and row["compile_max_ulp"] <= 0.501
    # The table names both ceilings' sources and every implementation.
    assert "kernel us" in res.stdout and "compile us" in res.stdout and "F.rms us" in res.stdout
    assert "copy peak (measured now)" in res.stdout


def test_bad_size_is_one_line(side_by_side, capsys):
    with pytest.raises(SystemExit) as exc:
        side_by_side.main(["--sizes", "12x"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("size '12x' is not ROWSxHIDDEN, e.g. 128x4096")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
def test_launch_choice_follows_the_measured_sweep(tmp_path):
    """The host-side choice of rmsnorm.cu, read through the C ABI the sweep uses (no GPU needed:
    without one the multiprocessor count falls back to an H100's 132)."""
    paths = _load(ROOT / "benchmarks" / "rmsnorm_paths.py", "_rmsnorm_paths")
    dll = paths.build_library("sm_90", tmp_path)
    assert (tmp_path / "ptxas.txt").read_text().count("0 bytes spill stores") >= 30

    def choice(rows: int, hidden: int, dtype: int) -> tuple[str, int]:
        threads = ctypes.c_int(0)
        path = dll.rmsnorm_cuda_default_path(rows, hidden, dtype, ctypes.byref(threads))
        return paths.PATHS.get(path, "auto"), threads.value

    bf16, fp32 = 2, 0
    assert choice(16384, 8192, bf16) == ("cached", 256)  # 4 packs a thread, weight read late
    assert choice(16384, 4096, bf16) == ("cached", 128)
    assert choice(1024, 4096, bf16) == ("cached", 256)  # half the card's slots: twice the threads
    assert choice(128, 4096, bf16) == ("cached+w", 512)  # short batch: weight with the row
    assert choice(16384, 8192, fp32) == ("cached", 512)
    assert choice(16384, 65536, fp32) == ("stream", 1024)  # too long for registers
    assert choice(4, 4097, bf16)[0] == "scalar"  # not a whole number of 16-byte packs
    assert choice(0, 4096, bf16) == ("auto", 0)
    # A block size that is no multiple of a warp is refused (cudaErrorInvalidValue = 1) before
    # anything is launched (host buffers: a launch would fail with another error).
    buf = torch.empty(4096, dtype=torch.bfloat16)
    ptr = buf.data_ptr()
    assert dll.rmsnorm_cuda_forward_path(ptr, ptr, ptr, 1, 4096, 1e-6, bf16, 2, 100, None) == 1
    assert dll.rmsnorm_cuda_forward_path(ptr, ptr, ptr, 1, 4096, 1e-6, bf16, 2, 1056, None) == 1
