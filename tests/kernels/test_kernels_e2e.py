"""End to end on this CPU machine, through the local Hub and the unmodified `kernels`:
build -> check clean -> push -> a NEW process loads it with get_kernel and it matches
the PyTorch reference; `kernels verify` runs the project's own tests against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_helpers import EXAMPLES, error_lines, run_cli

from upskill_hub.kernels.variants import local_arch_variant

pytestmark = pytest.mark.slow

RMSNORM_CHECK = r"""
import json, sys
from pathlib import Path
import torch
from kernels import get_kernel

repo, trust = sys.argv[1], sys.argv[2] == "1"
k = get_kernel(repo, version=1, trust_remote_code=trust)

def ref(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)

g = torch.Generator().manual_seed(0)
checked = 0
for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1.6e-2)):
    for shape in [(1, 1), (3, 7), (5, 4097), (2, 3, 129), (17,), (4, 1023)]:
        x = torch.randn(shape, generator=g).to(dtype)
        w = (1 + 0.1 * torch.randn(shape[-1], generator=g)).to(dtype)
        torch.testing.assert_close(k.rms_norm(x, w, 1e-6), ref(x, w, 1e-6), rtol=tol, atol=tol)
        checked += 1
    base = torch.randn(64, 96, generator=g).to(dtype)
    x = base.t()
    assert not x.is_contiguous()
    w = torch.randn(64, generator=g).to(dtype)
    torch.testing.assert_close(k.rms_norm(x, w), ref(x, w, 1e-6), rtol=tol, atol=tol)
    checked += 1
print(json.dumps({"variant": Path(k.__file__).parent.name, "module": k.__name__, "checked": checked}))
"""

SILU_CHECK = r"""
import json, sys
from pathlib import Path
import torch
import torch.nn.functional as F
from kernels import get_kernel

repo, trust = sys.argv[1], sys.argv[2] == "1"
k = get_kernel(repo, version=1, trust_remote_code=trust)
for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1.6e-2)):
    for shape in [(1, 2), (3, 14), (2, 5, 258)]:
        x = torch.randn(shape).to(dtype)
        d = shape[-1] // 2
        want = (F.silu(x[..., :d].float()) * x[..., d:].float()).to(dtype)
        torch.testing.assert_close(k.silu_and_mul(x), want, rtol=tol, atol=tol)
    x = torch.randn(8, 6).t().to(dtype)
    want = (F.silu(x[..., :4].float()) * x[..., 4:].float()).to(dtype)
    torch.testing.assert_close(k.silu_and_mul(x), want, rtol=tol, atol=tol)
print(json.dumps({"variant": Path(k.__file__).parent.name, "module": k.__name__}))
"""


def copy_example(name: str, dest_root: Path) -> Path:
    src = EXAMPLES / name
    if not (src / "build.toml").is_file():
        pytest.skip(f"kernels_examples/{name} is not there")
    dest = dest_root / name
    shutil.copytree(
        src, dest, ignore=shutil.ignore_patterns("build", "__pycache__", ".pytest_cache", "result")
    )
    return dest


def load_in_new_process(script: str, repo: str, trust: bool) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script, repo, "1" if trust else "0"],
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ),
    )


def build_check_push(project: Path, repo: str) -> None:
    proc = run_cli("kernels", "build", str(project), "--builder", "local")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_cli("kernels", "check", str(project))
    assert proc.returncode == 0, proc.stderr
    assert not [ln for ln in error_lines(proc.stderr) if not ln.startswith(("warning:", "note:"))], proc.stderr
    proc = run_cli("kernels", "push", str(project), "--repo", repo)
    assert proc.returncode == 0, proc.stderr
    assert f"{repo}@v1" in proc.stdout


def test_rmsnorm_build_check_push_load(hub_server, tmp_path: Path) -> None:
    project = copy_example("rmsnorm", tmp_path)
    build_check_push(project, "user/rmsnorm")
    variant = local_arch_variant("cpu")
    meta = json.loads((project / "build" / variant / "metadata.json").read_text())
    assert meta["upskill-hub-build"]["builder"] == "local"

    proc = load_in_new_process(RMSNORM_CHECK, "user/rmsnorm", trust=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["variant"] == variant and out["module"] == meta["id"] and out["checked"] == 14

    # `user` is not a trusted kernel publisher: without trust_remote_code the load is refused.
    proc = load_in_new_process(RMSNORM_CHECK, "user/rmsnorm", trust=False)
    assert proc.returncode != 0 and "not from a trusted publisher" in proc.stderr

    # verify: fresh process, get_kernel, then the project's tests (pushed to the repo) on it.
    proc = run_cli("kernels", "verify", "user/rmsnorm", "--version", "1", "--trust-remote-code")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"variant {variant}" in proc.stdout and "rms_norm" in proc.stdout
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_noarch_build_check_push_load_from_trusted_publisher(hub_server, tmp_path: Path) -> None:
    from upskill_hub.localhub.testing import TEST_TRUSTED_ORG

    project = copy_example("silu-and-mul", tmp_path)
    repo = f"{TEST_TRUSTED_ORG}/silu-and-mul"
    build_check_push(project, repo)
    proc = load_in_new_process(SILU_CHECK, repo, trust=False)  # trusted publisher: no flag needed
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["variant"] == "torch-cpu"
    proc = run_cli("kernels", "verify", repo, "--version", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout


def test_init_build_test_roundtrip(tmp_path: Path) -> None:
    """`kernels init` -> `kernels build --builder local` -> the op works via get_local_kernel."""
    project = tmp_path / "add-one"
    proc = run_cli("kernels", "init", "add-one", "--backends", "cpu,cuda", "-o", str(project))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("kernels", "build", str(project), "--builder", "local")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_cli("kernels", "check", str(project))
    assert proc.returncode == 0, proc.stderr
    # the scaffold's own tests, against build/ through kernels.get_local_kernel
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNEL_")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(project / "tests"),
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=project,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "7 passed" in proc.stdout


def test_verify_fails_when_the_published_kernel_is_wrong(
    hub_server, hub_repo_id: str, tmp_path: Path
) -> None:
    """A kernel that loads but computes the wrong thing fails verify (its tests run against it)."""
    project = tmp_path / "off-by-one"
    proc = run_cli("kernels", "init", "off-by-one", "--backends", "noarch", "-o", str(project))
    assert proc.returncode == 0, proc.stderr
    init = project / "torch-ext" / "off_by_one" / "__init__.py"
    init.write_text(init.read_text().replace("return x + 1", "return x + 2"))
    assert run_cli("kernels", "build", str(project)).returncode == 0
    assert run_cli("kernels", "push", str(project), "--repo", hub_repo_id).returncode == 0

    proc = run_cli("kernels", "verify", hub_repo_id, "--trust-remote-code", "--no-tests")
    assert proc.returncode == 0 and "variant torch-cpu" in proc.stdout and "off_by_one" in proc.stdout
    proc = run_cli("kernels", "verify", hub_repo_id, "--trust-remote-code", "--project", str(project))
    assert proc.returncode == 1
    last = error_lines(proc.stderr)[-1]
    assert last.startswith(f"Error: {hub_repo_id}: the kernel's tests failed (") and "7 failed" in last
