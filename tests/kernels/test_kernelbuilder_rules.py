"""``kernels check``, ``kernels update`` and the builder follow kernel-builder's own rules.

The projects are written in the shapes of kernel-builder's examples (kernelbuilder_shapes),
and kernel-builder's own build.toml parser (kernels-data, shipped in ``kernels``) is asked
for its verdict beside ours where it has one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import tomlkit
from kernel_helpers import error_lines, run_cli
from kernelbuilder_shapes import LEGACY_V3, PROJECTS, write_project

from upskill_hub.errors import UpskillError
from upskill_hub.kernels.buildtoml import load_build, validate_build_toml
from upskill_hub.kernels.legacy import update_project


def problems(project: Path, severity: str) -> list[str]:
    return [str(p) for p in validate_build_toml(project)[0] if p.severity == severity]


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_check_agrees_with_kernel_builder_ci(tmp_path: Path, name: str) -> None:
    project = write_project(tmp_path, name)
    builds = PROJECTS[name][1]
    proc = run_cli("kernels", "check", str(project))
    assert proc.returncode == (0 if builds else 1), proc.stderr
    lines = error_lines(proc.stderr)
    assert "Traceback" not in proc.stderr
    if builds:
        assert proc.stdout.strip() == f"✓ {project}: build.toml and 0 built variant(s) OK"
        assert all(ln.startswith("warning: ") for ln in lines), lines
    else:
        assert proc.stdout == "" and lines[-1].startswith("Error: ")


def test_legacy_file_is_read_with_a_warning_naming_the_upgrade(tmp_path: Path) -> None:
    project = write_project(tmp_path, "relu-archs-subset")
    assert problems(project, "error") == []
    (warning,) = [w for w in problems(project, "warning") if "general.edition" in w]
    assert f"upskill-hub kernels update {project}" in warning
    cfg = load_build(project)
    assert cfg.version == 1 and any("legacy format" in str(w) for w in cfg.warnings)


def test_update_rewrites_to_edition_5_keeping_comments(tmp_path: Path) -> None:
    from kernels._rust import Build  # kernel-builder's parser

    project = write_project(tmp_path, "relu-archs-subset")
    before = (project / "build.toml").read_text()
    os.chmod(project / "build.toml", 0o640)
    proc = run_cli("kernels", "update", str(project))
    assert proc.returncode == 0, proc.stderr
    assert "upgraded to edition 5: general.edition = 5" in proc.stdout
    after = (project / "build.toml").read_text()
    # only the edition line was added: comments and layout stay byte for byte
    assert after.replace("edition = 5\n", "", 1) == before
    assert "# 5.0 is too old" in after and "# 5.0 and gfx940 are dropped" in after
    assert tomlkit.parse(after)["general"]["edition"] == 5
    assert stat.S_IMODE((project / "build.toml").stat().st_mode) == 0o640
    assert not [w for w in problems(project, "warning") if "general.edition" in w]
    Build.open(str(project))  # kernel-builder reads the result as edition 5
    proc = run_cli("kernels", "update", str(project))
    assert proc.returncode == 0 and "already edition 5: nothing changed" in proc.stdout
    assert (project / "build.toml").read_text() == after


def test_v3_file_is_an_error_until_migrated(tmp_path: Path) -> None:
    project = tmp_path / "activation"
    (project / "torch-ext" / "activation").mkdir(parents=True)
    (project / "torch-ext" / "activation" / "__init__.py").write_text("")
    (project / "build.toml").write_text(LEGACY_V3)
    errors = problems(project, "error")
    assert len(errors) == 1 and "legacy v3 format" in errors[0] and "kernels update" in errors[0], errors
    with pytest.raises(UpskillError, match="legacy v3"):
        load_build(project)
    changes = update_project(project)
    assert changes == [
        "general.version = 1 (the legacy default)",
        "general.edition = 5",
        "[torch-noarch] added (in the legacy format no framework table meant noarch)",
    ]
    text = (project / "build.toml").read_text()
    assert text.startswith("# activation kernels\n") and '# SPDX' in text
    assert problems(project, "error") == []
    assert load_build(project).framework == "torch-noarch"


def test_update_without_license_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text(LEGACY_V3.replace('license = "Apache-2.0"  # SPDX\n', ""))
    before = (tmp_path / "build.toml").read_bytes()
    proc = run_cli("kernels", "update", str(tmp_path))
    assert proc.returncode == 1
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "general.license" in lines[0], lines
    assert (tmp_path / "build.toml").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build.toml"]  # no temp file left behind


def test_tvm_ffi_package_lives_in_tvm_ffi_ext(tmp_path: Path) -> None:
    project = write_project(tmp_path, "relu-tvm-ffi")
    assert problems(project, "error") == []
    cfg = load_build(project)
    assert cfg.package_dir == project.resolve() / "tvm-ffi-ext" / "relu_tvm_ffi"
    (cfg.package_dir / "__init__.py").unlink()
    assert problems(project, "error") == [
        "build.toml: general.name: package tvm-ffi-ext/relu_tvm_ffi/__init__.py does not exist"
    ]


def test_backend_without_kernel_section_is_a_warning(tmp_path: Path) -> None:
    project = write_project(tmp_path, "relu-torch-stable-abi")
    assert problems(project, "error") == []
    assert problems(project, "warning") == [
        "build.toml: general.backends: backend 'metal' has no [kernel.*] section: its variant holds only the binding"
    ]


def test_unsupported_capabilities_are_dropped_with_a_warning(tmp_path: Path) -> None:
    project = write_project(tmp_path, "relu-archs-subset")
    warnings = problems(project, "warning")
    assert any(w.startswith("build.toml: kernel.relu.cuda-capabilities: dropping unsupported capabilities 5.0")
               for w in warnings), warnings
    assert any("kernel.relu_rocm.rocm-archs: dropping unsupported architectures gfx940" in w for w in warnings)
    cfg = load_build(project)
    assert cfg.kernels["relu"].cuda_capabilities == ["7.5", "8.0", "9.0"]  # what the builder compiles


def test_nothing_left_after_dropping_is_the_ci_failure(tmp_path: Path) -> None:
    project = write_project(tmp_path, "relu-invalid-capability")
    assert problems(project, "error") == [
        "build.toml: kernel.relu_rocm.rocm-archs: empty set of architectures after dropping unsupported ones: "
        "nothing would be built",
        "build.toml: kernel.relu.cuda-capabilities: empty set of capabilities after dropping unsupported ones: "
        "nothing would be built",
    ]


def _fake_tool(bin_dir: Path, name: str, fail: bool) -> None:
    """A compiler stand-in: writes the -o file, or fails with one nvcc-style error line."""
    body = (
        'echo \'relu_cuda/relu.cu(3): error: identifier "undefined_thing" is undefined\' >&2; exit 1'
        if fail
        else 'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then shift; : > "$1"; fi; shift; done'
    )
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.mark.parametrize("fail", [False, True], ids=["compiles", "fails"])
def test_check_nvcc_ends_with_one_verdict(tmp_path: Path, fail: bool) -> None:
    project = write_project(tmp_path, "relu")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_tool(bin_dir, "nvcc", fail)
    _fake_tool(bin_dir, "c++", False)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CXX": str(bin_dir / "c++"),
           "CUDA_HOME": str(tmp_path)}
    proc = run_cli("kernels", "check", str(project), "--nvcc", "9.0", env=env)
    lines = error_lines(proc.stderr)
    if not fail:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == (
            f"✓ {project}: build.toml and 0 built variant(s) OK; nvcc compiled 2 source(s) for 9.0"
        )
        return
    assert proc.returncode == 1
    assert proc.stdout == ""  # no ✓ before the failure
    compiler = 'relu_cuda/relu.cu(3): error: identifier "undefined_thing" is undefined'
    assert proc.stderr.count("undefined_thing") == 1, proc.stderr  # the compiler's words, once
    assert lines[-2:] == [compiler, "Error: nvcc (9.0): compiling relu_cuda/relu.cu failed (compiler output above)"]
