"""init scaffold, the repo card, nvcc flags, and verify's refusal paths."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernel_helpers import EXAMPLES, error_lines, run_cli

from upskill_hub.errors import UpskillError
from upskill_hub.kernels.builders.local import _cuda_gencode
from upskill_hub.kernels.buildtoml import load_build, validate_build_toml
from upskill_hub.kernels.card import exported_functions, render_card
from upskill_hub.kernels.scaffold import init_project


@pytest.mark.parametrize("backends", [["cpu"], ["cuda"], ["cpu", "cuda"], ["noarch"]])
def test_init_writes_a_valid_project(tmp_path: Path, backends: list[str]) -> None:
    files = init_project("my-op", tmp_path / "p", backends=backends)
    assert {"build.toml", "flake.nix", "tests/conftest.py", "torch-ext/my_op/__init__.py"} <= set(files)
    assert [p for p in validate_build_toml(tmp_path / "p")[0] if p.severity == "error"] == []
    assert "genKernelFlakeOutputs" in (tmp_path / "p" / "flake.nix").read_text()
    cfg = load_build(tmp_path / "p")
    assert cfg.is_noarch == (backends == ["noarch"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Bad_Name"], "invalid kernel name 'Bad_Name'"),
        (["ok-name", "--backends", "cpu,tpu"], "unsupported backend 'tpu'"),
        (["ok-name", "--backends", "noarch,cpu"], "noarch is a pure-PyTorch kernel"),
    ],
)
def test_init_refuses_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    proc = run_cli("kernels", "init", *args, "-o", str(tmp_path / "out"))
    assert proc.returncode == 1
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and message in lines[0]
    assert not (tmp_path / "out").exists()


def test_init_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "mine.txt").write_text("keep")
    with pytest.raises(UpskillError, match="already exists and is not empty"):
        init_project("my-op", tmp_path / "p", backends=["cpu"])
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["mine.txt"]


def test_card_lists_functions_variants_and_loading(tmp_path: Path) -> None:
    if not (EXAMPLES / "rmsnorm" / "build.toml").is_file():
        pytest.skip("kernels_examples/rmsnorm is not there")
    cfg = load_build(EXAMPLES / "rmsnorm")
    names = [f.name for f in exported_functions(cfg.package_dir / "__init__.py")]
    assert names == ["rms_norm", "rms_norm_"]  # __all__ order; constants and modules skipped
    meta = {"backend": {"type": "cpu"}, "upskill-hub-build": {"manylinux": "manylinux_2_36"}}
    card = render_card(
        cfg,
        repo_id="me/rmsnorm",
        version=1,
        variants={"torch213-cxx11-cpu-x86_64-linux": meta},
        benchmarks=["benchmarks/benchmark_rmsnorm.py"],
    )
    assert card.startswith("---\nlibrary_name: kernels\nlicense: apache-2.0\n")
    assert 'get_kernel("me/rmsnorm", version=1, trust_remote_code=True)' in card
    assert "- `rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float=1e-06" in card
    assert "- `rms_norm_(" in card
    assert "| `torch213-cxx11-cpu-x86_64-linux` | cpu |" in card
    assert "y = kernel.rms_norm(x, weight)" in card
    assert "needs glibc >= 2.36" in card and "benchmarks/benchmark_rmsnorm.py" in card


def test_cuda_gencode_flags() -> None:
    assert _cuda_gencode(["9.0"]) == ["-gencode", "arch=compute_90,code=sm_90"]
    assert _cuda_gencode(["9.0a", "8.0+PTX"]) == [
        "-gencode", "arch=compute_90a,code=sm_90a",
        "-gencode", "arch=compute_80,code=sm_80",
        "-gencode", "arch=compute_80,code=compute_80",
    ]  # fmt: skip


def test_verify_unknown_repo_is_one_line(hub_server, hub_repo_id: str) -> None:
    proc = run_cli("kernels", "verify", hub_repo_id, "--version", "1", "--trust-remote-code")
    assert proc.returncode == 1
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"Error: {hub_repo_id}: kernels.get_kernel failed:"), (
        proc.stderr
    )


@pytest.mark.slow
def test_check_nvcc_compiles_cuda_for_sm90(tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    init_project("my-op", tmp_path / "p", backends=["cuda"])
    proc = run_cli("kernels", "check", str(tmp_path / "p"), "--nvcc", "9.0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "nvcc compiled 2 source(s) for 9.0" in proc.stdout
