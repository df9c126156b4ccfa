"""kernels check on built variants: names, metadata.json fields (ours and the parser
`kernels` uses), files, ABI (kernel-abi-check on a real compiled object)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_helpers import error_lines, fake_variant, run_cli

from upskill_hub.kernels.builders.local import build_local
from upskill_hub.kernels.check import check_abi, check_project

GOOD_META = {
    "name": "tiny-noarch",
    "id": "_tiny_noarch_cpu_abc",
    "version": 1,
    "license": "Apache-2.0",
    "python-depends": [],
    "backend": {"type": "cpu"},
}


def errors(project: Path) -> list[str]:
    return [str(p) for p in check_project(project) if p.severity == "error"]


def test_built_noarch_project_is_clean(noarch_project: Path) -> None:
    build_local(noarch_project, smoke=False)
    assert errors(noarch_project) == []
    proc = run_cli("kernels", "check", str(noarch_project))
    assert proc.returncode == 0 and "2 built variant(s) OK" in proc.stdout


@pytest.mark.parametrize(
    ("variant", "meta", "expected"),
    [
        (
            "torch213-cpu-linux",
            GOOD_META,
            "build/torch213-cpu-linux: variant: 'torch213-cpu-linux' is not a build",
        ),
        ("torch-cpu", None, "build/torch-cpu: metadata.json: missing"),
        (
            "torch-cpu",
            {k: v for k, v in GOOD_META.items() if k != "license"},
            "metadata.json: license: missing",
        ),
        (
            "torch-cpu",
            {**GOOD_META, "python-depends": "einops"},
            "metadata.json: python-depends: must be a list",
        ),
        (
            "torch-cpu",
            {**GOOD_META, "backend": {"type": "cuda"}},
            "backend.type: 'cuda' does not match variant",
        ),
        ("torch-cpu", {**GOOD_META, "name": "other"}, "name: 'other' differs from build.toml"),
        ("torch-cpu", {**GOOD_META, "version": 3}, "version: 3 differs from build.toml general.version 1"),
        ("torch-cpu", {**GOOD_META, "id": "not an id"}, "id: 'not an id' is not a valid"),
        ("torch-cpu", {**GOOD_META, "backend": {"type": "tpu-9000"}}, "backend.type"),
    ],
)
def test_bad_variants(noarch_project: Path, variant: str, meta: dict | None, expected: str) -> None:
    fake_variant(noarch_project, variant, meta)
    found = errors(noarch_project)
    assert any(expected in e for e in found), found


def test_cli_check_prints_one_line_per_problem(noarch_project: Path) -> None:
    fake_variant(noarch_project, "torch213-cpu-linux", GOOD_META)
    fake_variant(noarch_project, "torch-cpu", None)
    proc = run_cli("kernels", "check", str(noarch_project))
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == [
        "build/torch-cpu: metadata.json: missing: every variant needs metadata.json (kernels cannot load it)",
        "build/torch213-cpu-linux: variant: 'torch213-cpu-linux' is not a build variant name (expected e.g. "
        "torch213-cxx11-cpu-x86_64-linux, torch213-cxx11-cu130-x86_64-linux or a noarch torch-cpu / torch-cuda)",
        f"Error: {noarch_project}: 2 problem(s), listed above",
    ]
    assert proc.stdout == ""  # no ✓ line when there are problems: one verdict, last


def test_kernels_own_parser_is_consulted(noarch_project: Path) -> None:
    # passes our field checks, but kernels' Rust parser rejects the backend type
    fake_variant(noarch_project, "torch-universal", {**GOOD_META, "backend": {"type": "quantum"}})
    assert any("rejected by kernels" in e for e in errors(noarch_project))


def test_arch_variant_needs_compiled_code(noarch_project: Path) -> None:
    fake_variant(noarch_project, "torch213-cxx11-cpu-x86_64-linux", GOOD_META)
    assert any("needs its compiled extension" in e for e in errors(noarch_project))


@pytest.fixture(scope="module")
def shared_object(tmp_path_factory) -> Path:
    """A tiny real shared object that uses a glibc 2.32+ symbol and a non-abi3 Python symbol."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("so")
    src = d / "m.c"
    src.write_text(
        "#include <sys/single_threaded.h>\n"
        "extern void _PyObject_Dump(void*);\n"
        "int f(void) { if (!__libc_single_threaded) _PyObject_Dump(0); return 1; }\n"
    )
    out = d / "m.abi3.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def test_abi_check_reports_symbols(shared_object: Path) -> None:
    probs = [str(p) for p in check_abi("build/v", shared_object, "manylinux_2_28")]
    assert any("__libc_single_threaded needs GLIBC 2.32, newer than manylinux_2_28" in p for p in probs), (
        probs
    )
    assert any("_PyObject_Dump" in p and "abi3" in p for p in probs), probs
    assert not any("needs GLIBC" in str(p) for p in check_abi("build/v", shared_object, "manylinux_2_36"))
