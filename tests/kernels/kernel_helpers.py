"""Helpers for the kernels tests: small projects on disk and the CLI run as users run it.

A plain module (tests/ has no packages, and a package named ``kernels`` would shadow the
``kernels`` library), imported by the test files as ``kernel_helpers``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "kernels_examples"


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: int = 1800
) -> subprocess.CompletedProcess:
    """Run ``upskill-hub`` in a fresh interpreter (its main() turns errors into one line)."""
    return subprocess.run(
        [sys.executable, "-m", "upskill_hub.cli.app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
    )


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip()]


def write_noarch_project(root: Path, name: str = "tiny-noarch", version: int = 1) -> Path:
    """A minimal valid torch-noarch project (nothing to compile)."""
    from upskill_hub.kernels.scaffold import init_project

    init_project(name, root, backends=["noarch"])
    text = (root / "build.toml").read_text().replace("version = 1", f"version = {version}")
    (root / "build.toml").write_text(text)
    return root


def fake_variant(
    project: Path, variant: str, meta: dict | None = None, files: dict[str, str] | None = None
) -> Path:
    """A hand-made build/<variant>/ folder (for bad-input tests; no compiler needed)."""
    vdir = project / "build" / variant
    vdir.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {"__init__.py": "", "_ops.py": ""}).items():
        (vdir / rel).write_text(text)
    if meta is not None:
        (vdir / "metadata.json").write_text(json.dumps(meta))
    return vdir
