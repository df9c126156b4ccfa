"""upskill-hub as an installed tool: what the wheel holds, and that it works with no clone around.

The sdist and the wheel are built once per module by the real build (``python -m build``:
the wheel from the sdist, so the sdist is checked complete too). The slow test installs the
wheel into a new venv (no editable install, no repository on ``sys.path``, run from a
temporary folder) and uses it as a user would: the README's install lines, ``--version``,
``skills validate``, the demo to its lift line, ``space run``, and the wheel a Job gets.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from upskill_hub import __version__
from upskill_hub._util.netutil import free_port
from upskill_hub.shipped import PACKAGE_DATA, SHIPPED

REPO = Path(__file__).resolve().parents[1]
WHEEL = f"upskill_hub-{__version__}-py3-none-any.whl"
SDIST = f"upskill_hub-{__version__}.tar.gz"
DIST_INFO = f"upskill_hub-{__version__}.dist-info"
#: The README line's placeholder for where the repository is hosted; the test clones this one.
GIT_URL = "https://github.com/OWNER/upskill-hub"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _run(args: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{shlex.join(map(str, args))} -> {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dist/`` with the sdist and the wheel of this checkout."""
    out = tmp_path_factory.mktemp("build") / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], timeout=600)
    assert sorted(p.name for p in out.iterdir()) == [WHEEL, SDIST]
    return out


def expected_wheel_files() -> set[str]:
    """What the wheel must hold: the package's files and the shipped folders, as git sees them."""
    listed = _run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "src/upskill_hub", *SHIPPED],
        cwd=REPO,
    ).stdout.splitlines()
    out = {f"{DIST_INFO}/{name}" for name in ("METADATA", "WHEEL", "entry_points.txt", "RECORD")}
    for rel in listed:
        if not (REPO / rel).is_file():
            continue  # deleted in the work tree
        if rel.startswith("src/upskill_hub/"):
            out.add(rel.removeprefix("src/"))
        else:
            out.add(f"upskill_hub/{PACKAGE_DATA}/{rel}")
    return out


def test_the_wheel_holds_the_package_and_the_shipped_files_and_nothing_else(dist: Path) -> None:
    names = set(zipfile.ZipFile(dist / WHEEL).namelist())
    expected = expected_wheel_files()
    assert names == expected, f"missing: {sorted(expected - names)}; unexpected: {sorted(names - expected)}"
    # What the demo reads is among them.
    assert f"upskill_hub/{PACKAGE_DATA}/skills/hub-kernels/SKILL.md" in names
    assert f"upskill_hub/{PACKAGE_DATA}/kernels_examples/rmsnorm/build.toml" in names


def test_twine_accepts_both_artifacts(dist: Path) -> None:
    out = _run([sys.executable, "-m", "twine", "check", "--strict", str(dist / WHEEL), str(dist / SDIST)]).stdout
    assert out.count("PASSED") == 2


def install_lines() -> tuple[list[str], list[str]]:
    """The README's install block: (published-version lines, the other command lines)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- install-lines:", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    published, now, section = [], [], ""
    for line in block.splitlines():
        if line.startswith("#"):
            section = line
        elif line.strip():
            (published if "published" in section else now).append(line.strip())
    return published, now


def test_the_readme_names_published_and_unpublished_installs() -> None:
    published, now = install_lines()
    assert any(line.startswith("pipx install") for line in published)
    assert any(line.startswith("uvx upskill-hub") for line in published)
    assert any("git+" in line for line in now) and any(WHEEL in line for line in now)
    # The GitHub Actions example (docs/guide/regressions.md) installs something that exists today.
    workflow = (REPO / "docs" / "guide" / "regressions.md").read_text(encoding="utf-8").split("actions/setup-python", 1)[1]
    run_line = next(line for line in workflow.splitlines() if line.strip().startswith("- run: pip install"))
    assert f"git+{GIT_URL}" in run_line


def test_the_readme_installs_cpu_torch_first_and_builds_the_wheel_it_installs() -> None:
    """Copied in order, the lines install the CPU torch before the `local` extra pulls the CUDA
    one, and build dist/ before installing from it (issue 48: both were only in prose)."""
    _, now = install_lines()
    torch = now.index(f"pip install torch==2.13.0 --index-url {CPU_INDEX}")
    build = now.index("python -m build")
    installs = [i for i, line in enumerate(now) if "[local" in line]
    first_wheel = min(i for i, line in enumerate(now) if f"./dist/{WHEEL}" in line)
    first_local = min(installs)
    assert torch < first_local and build < first_wheel


def _wait_answering(url: str, proc: subprocess.Popen, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"space run exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - loopback
                return resp.status
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {timeout:.0f} s")


@pytest.mark.slow
def test_the_installed_wheel_works_from_any_folder(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    bindir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "HF_", "UPSKILL_"))}
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}", UV_SYSTEM_CERTS="1", PYTHONDONTWRITEBYTECODE="1")
    env["UPSKILL_WHEEL_CACHE"] = str(tmp_path / "wheel-cache")
    # As .ci/setup does: a current pip, then the CPU torch, so the `local` extra finds it satisfied.
    _run([str(bindir / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"], env=env, timeout=300)
    _run([str(bindir / "python"), "-m", "pip", "install", "-q", "torch==2.13.0"], env=env, timeout=900)

    # The README's install lines, one by one, from the folder that holds dist/.
    published, lines = install_lines()
    for line in lines:
        if line == "python -m build":
            continue  # the dist fixture ran it on the repository (this folder is not a clone)
        # The CPU torch is installed above from this machine's indexes (it may have no network).
        line = line.replace(f" --index-url {CPU_INDEX}", "")
        args = shlex.split(line.replace(GIT_URL, REPO.as_uri()))
        if args[0] == "pip":
            args = [str(bindir / "python"), "-m", "pip", *args[1:]]
        elif args[0] == "uvx":
            args = [str(Path(sys.executable).parent / "uvx"), *args[1:]]
        elif args[0] == "upskill-hub":
            args = [str(bindir / "upskill-hub"), *args[1:]]
        # A clean folder (not the repository) for each line, with dist/ beside it.
        proc = _run(args, cwd=dist.parent, env=env, timeout=1200)
        if args[-1] == "--help":
            assert "upskill-hub" in proc.stdout
        if "demo" in args:
            # The demo's last lines: the measured lift, then "All done."
            assert re.search(r"Measured:.*hub-kernels lifts \S+ by", proc.stdout.replace("\n", " ")), proc.stdout[-2000:]
            assert "All done." in proc.stdout

    # The git line ran after the wheel line: reinstall the wheel, then check it is what runs.
    _run([str(bindir / "python"), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", str(dist / WHEEL)], env=env)
    where = tmp_path / "elsewhere"
    where.mkdir()
    py = str(bindir / "python")
    found = _run([py, "-c", "import upskill_hub; print(upskill_hub.__file__)"], cwd=where, env=env).stdout.strip()
    assert found.startswith(str(venv)) and str(REPO) not in found
    assert _run([str(bindir / "upskill-hub"), "--version"], cwd=where, env=env).stdout.strip() == f"upskill-hub {__version__}"
    shipped = _run([py, "-c", "from upskill_hub.shipped import shipped_skill; print(shipped_skill('hub-kernels'))"], cwd=where, env=env).stdout.strip()
    assert shipped.startswith(str(venv))
    _run([str(bindir / "upskill-hub"), "skills", "validate", shipped], cwd=where, env=env)

    # The wheel a Job gets from this install holds the same files, byte for byte.
    repacked = _run([py, "-c", "from upskill_hub.selfwheel import own_wheel; print(own_wheel().path)"], cwd=where, env=env).stdout.strip()
    with zipfile.ZipFile(repacked) as got, zipfile.ZipFile(dist / WHEEL) as built:
        assert sorted(got.namelist()) == sorted(built.namelist())
        for name in built.namelist():
            if not name.endswith("/RECORD"):
                assert got.read(name) == built.read(name), name

    # `space run` answers.
    port = free_port()
    log = (tmp_path / "space.log").open("w")
    space = subprocess.Popen([str(bindir / "upskill-hub"), "space", "run", "--port", str(port)], cwd=where, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        assert _wait_answering(f"http://127.0.0.1:{port}/", space, timeout=180) == 200
    finally:
        space.terminate()
        space.wait(timeout=30)
        log.close()
