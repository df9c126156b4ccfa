"""``.ci/install-agent-clis`` (run by ``.ci/setup``): the four pinned agent CLIs, or one line without npm.

The pins here and in the real-CLI tests' conftest are the same versions: a bump of one without
the other would test a CLI that CI does not install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "install-agent-clis"


def test_without_npm_it_says_so_in_one_line_and_installs_nothing(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / ".ci" / "install-agent-clis")
    bin_dir = tmp_path / "bin"  # a PATH with no npm on it
    bin_dir.mkdir()
    for tool in ("dirname",):
        os.symlink(shutil.which(tool), bin_dir / tool)
    bash = shutil.which("bash")
    done = subprocess.run([bash, str(repo / ".ci" / "install-agent-clis")], env={"PATH": str(bin_dir)},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("npm not found") and "bash .ci/install-agent-clis" in lines[0]
    assert done.stderr == ""
    assert not (repo / ".ci" / "agent-clis").exists()


def test_the_pins_are_the_ones_the_tests_name():
    from importlib import util

    spec = util.spec_from_file_location("real_cli_kit", ROOT / "tests/lift/harness/real_cli/_real_cli_kit.py")
    assert spec is not None and spec.loader is not None
    kit = util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    pinned = re.findall(r'"((?:@[\w-]+/)?[\w-]+@[\d.]+)"', SCRIPT.read_text())
    assert sorted(pinned) == sorted(kit.PACKAGES.values())
