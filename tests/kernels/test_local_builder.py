"""Local builder: refuses what it cannot build, shows compiler errors readably, and a
failed build leaves the previous build/ untouched (no half-written variant)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kernel_helpers import error_lines, run_cli

from upskill_hub.errors import UpskillError
from upskill_hub.kernels.builders.local import BuildError, build_local, compiler_error_lines
from upskill_hub.kernels.scaffold import init_project
from upskill_hub.kernels.variants import local_arch_variant


@pytest.fixture
def cpu_project(tmp_path: Path) -> Path:
    init_project("my-op", tmp_path / "my-op", backends=["cpu"])
    return tmp_path / "my-op"


def test_compiler_error_lines_pick_the_errors() -> None:
    out = (
        "In file included from /x/torch/include/ATen/ATen.h:1,\n"
        "                 from k.cpp:3:\n"
        "k.cpp: In function 'void f()':\n"
        "k.cpp:12:5: error: 'foo' was not declared in this scope\n"
        "   12 |     foo();\n"
        "      |     ^~~\n"
        'k.cu(40): error: identifier "bar" is undefined\n'
        "k.cpp:12:5: error: 'foo' was not declared in this scope\n"
    )
    assert compiler_error_lines(out) == [
        "k.cpp:12:5: error: 'foo' was not declared in this scope",
        'k.cu(40): error: identifier "bar" is undefined',
    ]


def test_failed_build_keeps_previous_build_and_shows_the_error(cpu_project: Path) -> None:
    variant = local_arch_variant("cpu")
    previous = cpu_project / "build" / variant
    previous.mkdir(parents=True)
    (previous / "metadata.json").write_text(json.dumps({"previous": True}))
    src = cpu_project / "my_op_cpu" / "my_op.cpp"
    src.write_text('#include "no_such_header.h"\n' + src.read_text())

    with pytest.raises(BuildError) as exc:
        build_local(cpu_project)
    assert "my_op.cpp:1:10: fatal error: no_such_header.h" in str(exc.value)
    assert json.loads((previous / "metadata.json").read_text()) == {"previous": True}
    assert sorted(p.name for p in (cpu_project / "build").iterdir()) == [variant]  # no temp dirs left

    proc = run_cli("kernels", "build", str(cpu_project), "--builder", "local")
    assert proc.returncode == 1
    lines = error_lines(proc.stderr)
    assert lines[-1] == "Error: compiling my_op_cpu/my_op.cpp failed (compiler output above)"
    assert any("fatal error: no_such_header.h" in ln for ln in lines[:-1])  # the compiler's line, shown
    assert proc.stderr.count("fatal error: no_such_header.h") == 1  # ... once
    assert len(lines) < 15 and "Traceback" not in proc.stderr


def test_refuses_variants_it_cannot_build(cpu_project: Path) -> None:
    with pytest.raises(UpskillError, match="cannot build variant 'torch213-cxx11-cu130-x86_64-linux'"):
        build_local(cpu_project, variant="torch213-cxx11-cu130-x86_64-linux")
    text = (cpu_project / "build.toml").read_text().replace('backends = ["cpu"]', 'backends = ["metal"]')
    text = text.replace('backend = "cpu"', 'backend = "metal"')
    (cpu_project / "build.toml").write_text(text)
    with pytest.raises(UpskillError, match="cannot build any of the backends metal"):
        build_local(cpu_project)
    assert not (cpu_project / "build").exists()


def test_nix_builder_needs_nix(cpu_project: Path) -> None:
    if shutil.which("nix"):
        pytest.skip("nix is installed here")
    proc = run_cli("kernels", "build", str(cpu_project), "--builder", "nix")
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == [
        "Error: Nix is not installed: install it (https://nixos.org/download) to build all variants with "
        "kernel-builder, or use --builder local to build this machine's variant"
    ]


def test_noarch_build_layout(noarch_project: Path) -> None:
    built = build_local(noarch_project)
    assert [b.variant for b in built] == ["torch-cpu", "torch-cuda"]
    for b in built:
        assert sorted(p.name for p in b.path.iterdir()) == ["__init__.py", "_ops.py", "metadata.json"]
        meta = json.loads((b.path / "metadata.json").read_text())
        backend = b.variant.split("-", 1)[1]
        assert meta["backend"] == {"type": backend}
        assert meta["id"].startswith(f"_tiny_noarch_{backend}_")
        assert meta["provenance"]["kernel-builder"]["version"].startswith("upskill-hub-local-builder")
    # loads through kernels exactly like kernel-builder's output
    proc = run_cli("kernels", "check", str(noarch_project))
    assert proc.returncode == 0, proc.stderr


def test_local_builder_reads_legacy_and_tvm_ffi_projects_like_kernel_builder(noarch_project: Path, tmp_path: Path):
    # legacy (no edition): built, with kernel-builder's warning passed on
    text = (noarch_project / "build.toml").read_text()
    (noarch_project / "build.toml").write_text(text.replace("edition = 5\n", ""))
    messages: list[str] = []
    built = build_local(noarch_project, progress=messages.append, variant="torch-cpu")
    assert [b.variant for b in built] == ["torch-cpu"]
    assert any(m.startswith("warning: build.toml: general.edition: legacy format") for m in messages), messages
    # legacy v3 (no framework table): refused until `kernels update`, as kernel-builder does
    (noarch_project / "build.toml").write_text(text.replace("edition = 5\n", "").replace("[torch-noarch]\n", ""))
    with pytest.raises(UpskillError, match="legacy v3 format.*kernels update"):
        build_local(noarch_project)
    # tvm-ffi: refused with a clear line (the local builder only knows torch bindings)
    from kernelbuilder_shapes import write_project

    proc = run_cli("kernels", "build", str(write_project(tmp_path, "relu-tvm-ffi")))
    assert proc.returncode == 1
    assert error_lines(proc.stderr)[-1].endswith("the local builder supports [torch] and [torch-noarch] kernels, "
                                                 "not [tvm-ffi]")
