"""``.ci/setup`` installs the CPU build of torch even where pip reaches only the public index.

PyPI's Linux torch wheel is the CUDA build (gigabytes of GPU libraries); the CPU build lives on
PyTorch's own index as ``<version>+cpu``. The test plays both indexes with tiny stand-in wheels
in PEP 503 folders, hides this machine's pip configuration (its local wheel folder holds a CPU
torch and would hide the defect) and reads pip's resolution report: which file would be installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "install-torch"


def _wheel(index: Path, version: str) -> None:
    """A minimal, installable ``torch`` wheel at ``version`` listed in the simple index ``index``."""
    files = index / "files"
    files.mkdir(parents=True, exist_ok=True)
    name = f"torch-{version}-py3-none-any.whl"
    info = f"torch-{version}.dist-info"
    with zipfile.ZipFile(files / name, "w") as zf:
        zf.writestr("torch/__init__.py", "")
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    page = index / "simple" / "torch"
    page.mkdir(parents=True, exist_ok=True)
    (page / "index.html").write_text(f'<html><body><a href="../../files/{name}">{name}</a></body></html>')


def _resolve(tmp: Path, cpu_index: str) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, str]]]:
    report = tmp / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,  # no local wheel folder, no extra indexes: a stranger's machine
        PIP_INDEX_URL=(tmp / "pypi" / "simple").as_uri(),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PYTHON=sys.executable,
        TORCH_CPU_INDEX=cpu_index,
    )
    args = ["--dry-run", "--ignore-installed", "--no-deps", "--report", str(report)]
    proc = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300)
    picked = []
    if report.exists():
        data = json.loads(report.read_text())
        picked = [(i["metadata"]["version"], i["download_info"]["url"]) for i in data["install"]]
    return proc, picked


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS wheels on PyPI are CPU builds already")
def test_the_cpu_build_is_chosen_over_the_public_cuda_wheel(tmp_path: Path) -> None:
    _wheel(tmp_path / "pypi", "2.13.0")  # PyPI's Linux wheel: the CUDA build
    _wheel(tmp_path / "cpu", "2.13.0+cpu")
    proc, picked = _resolve(tmp_path, (tmp_path / "cpu" / "simple").as_uri())
    assert proc.returncode == 0, proc.stderr
    assert picked == [("2.13.0+cpu", (tmp_path / "cpu" / "files" / "torch-2.13.0+cpu-py3-none-any.whl").as_uri())]
    assert proc.stderr == ""


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS wheels on PyPI are CPU builds already")
def test_an_unreachable_cpu_index_falls_back_in_one_line(tmp_path: Path) -> None:
    _wheel(tmp_path / "pypi", "2.13.0")
    proc, picked = _resolve(tmp_path, "http://127.0.0.1:9/whl/cpu")  # port 9: nothing listens
    assert proc.returncode == 0, proc.stderr
    assert [v for v, _ in picked] == ["2.13.0"]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    # Names the variable and its value, says what happens instead and how to avoid it; no cut pip output.
    assert "TORCH_CPU_INDEX=http://127.0.0.1:9/whl/cpu cannot be reached" in lines[0]
    assert "installing torch==2.13.0 from your default pip index instead" in lines[0]
    assert "CUDA build" in lines[0]
    assert "set TORCH_CPU_INDEX to" in lines[0] and "from versions" not in lines[0]


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS wheels on PyPI are CPU builds already")
def test_a_cpu_index_without_the_version_says_so_whole(tmp_path: Path) -> None:
    _wheel(tmp_path / "pypi", "2.13.0")
    _wheel(tmp_path / "cpu", "2.12.0+cpu")  # reachable, but an older release only
    proc, picked = _resolve(tmp_path, (tmp_path / "cpu" / "simple").as_uri())
    assert proc.returncode == 0, proc.stderr
    assert [v for v, _ in picked] == ["2.13.0"]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "have no torch==2.13.0+cpu" in lines[0] and "TORCH_CPU_INDEX=file://" in lines[0]
    assert "from versions" not in lines[0] and lines[0].endswith("to get the CPU build")
