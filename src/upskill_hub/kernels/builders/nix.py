"""Build every Hub variant with kernel-builder's Nix flake.

This is the reference build: ``nix run .#build-and-copy -L`` in a project whose
``flake.nix`` calls ``kernel-builder.lib.genKernelFlakeOutputs`` builds all variants in a
pinned toolchain and copies them to ``build/``. We only check the preconditions, stream
the log, and turn a failure into one line; ``--variant`` builds one variant with
``nix build .#redistributable.<variant>`` and copies it in atomically.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from upskill_hub._util.fsutil import atomic_replace_dir
from upskill_hub.errors import UpskillError
from upskill_hub.kernels.buildtoml import load_build
from upskill_hub.kernels.variants import explain_bad_variant, parse_variant_name

Progress = Callable[[str], None]


def nix_executable() -> str:
    """Path of ``nix``; a clear error when Nix is not installed."""
    nix = shutil.which("nix")
    if nix is None:
        raise UpskillError(
            "Nix is not installed: install it (https://nixos.org/download) to build all variants with "
            "kernel-builder, or use --builder local to build this machine's variant"
        )
    return nix


def _stream(cmd: list[str], cwd: Path, progress: Progress) -> None:
    tail: list[str] = []
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        progress(line)
        tail = (tail + [line])[-50:]
    if proc.wait() != 0:
        errors = [ln for ln in tail if "error" in ln.lower()]
        last = (errors or tail or [f"exit status {proc.returncode}"])[-1]
        raise UpskillError(f"`{' '.join(cmd[1:])}` failed: {last.strip()}")


def build_nix(root: Path, *, variant: str | None = None, progress: Progress | None = None) -> list[str]:
    """Run kernel-builder's flake in ``root``; return the variant folders now in ``build/``."""
    report = progress or (lambda _msg: None)
    cfg = load_build(root)
    if not (cfg.root / "flake.nix").is_file():
        raise UpskillError(
            f"{cfg.root}: no flake.nix (create one with `upskill-hub kernels init` as a template)"
        )
    nix = nix_executable()
    flags = ["--extra-experimental-features", "nix-command flakes"]
    if variant is None:
        _stream([nix, *flags, "run", ".#build-and-copy", "-L"], cfg.root, report)
    else:
        if parse_variant_name(variant) is None:
            raise UpskillError(explain_bad_variant(variant))
        link = cfg.root / f".result-{variant}"
        _stream(
            [nix, *flags, "build", f".#redistributable.{variant}", "-L", "--out-link", str(link)],
            cfg.root,
            report,
        )
        try:
            source = link.resolve() / variant if (link.resolve() / variant).is_dir() else link.resolve()
            atomic_replace_dir(
                cfg.root / "build" / variant, lambda tmp: shutil.copytree(source, tmp, dirs_exist_ok=True)
            )
        finally:
            link.unlink(missing_ok=True)
    build = cfg.root / "build"
    return (
        sorted(p.name for p in build.iterdir() if p.is_dir() and not p.name.startswith("."))
        if build.is_dir()
        else []
    )
