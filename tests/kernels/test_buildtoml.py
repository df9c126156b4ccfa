"""build.toml (edition 5): the schema check catches what kernel-builder would reject."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit
from kernel_helpers import EXAMPLES, error_lines, run_cli

from upskill_hub.errors import UpskillError
from upskill_hub.kernels.buildtoml import load_build, validate_build_toml
from upskill_hub.kernels.scaffold import init_project, render_build_toml


@pytest.fixture
def project(tmp_path: Path) -> Path:
    init_project("my-op", tmp_path / "my-op", backends=["cpu", "cuda"])
    return tmp_path / "my-op"


def edit(project: Path, fn) -> None:
    doc = tomlkit.parse((project / "build.toml").read_text())
    fn(doc)
    (project / "build.toml").write_text(tomlkit.dumps(doc))


def messages(project: Path) -> list[str]:
    return [str(p) for p in validate_build_toml(project)[0] if p.severity == "error"]


def test_scaffold_and_examples_are_valid(project: Path) -> None:
    assert messages(project) == []
    cfg = load_build(project)
    assert (cfg.name, cfg.version, cfg.framework, cfg.python_name) == ("my-op", 1, "torch", "my_op")
    assert [k.backend for k in cfg.kernels.values()] == ["cpu", "cuda"]
    for example in ("rmsnorm", "silu-and-mul"):
        if (EXAMPLES / example / "build.toml").exists():
            assert messages(EXAMPLES / example) == [], example


def test_render_is_edition_5_toml() -> None:
    doc = tomlkit.parse(render_build_toml(name="a-b", backends=["cpu"], repo_id="me/a-b"))
    assert doc["general"]["edition"] == 5
    assert doc["general"]["hub"]["repo-id"] == "me/a-b"
    assert doc["kernel"]["a_b_cpu"]["src"] == ["a_b_cpu/a_b.cpp"]


def test_unknown_key(project: Path) -> None:
    edit(project, lambda d: d["general"].add("colour", "blue"))
    edit(project, lambda d: d["kernel"]["my_op_cpu"].add("cuda-capabilities", ["9.0"]))
    msgs = messages(project)
    assert any(m.startswith("build.toml: general.colour: unknown key") for m in msgs), msgs
    assert any(m.startswith("build.toml: kernel.my_op_cpu.cuda-capabilities: unknown key") for m in msgs), (
        msgs
    )


@pytest.mark.parametrize("name", ["My_Kernel", "1relu", "relu-", "x", "rélu"])
def test_bad_name(project: Path, name: str) -> None:
    edit(project, lambda d: d["general"].__setitem__("name", name))
    msgs = messages(project)
    assert any(m.startswith("build.toml: general.name: invalid kernel name") for m in msgs), msgs


def test_missing_source_file(project: Path) -> None:
    (project / "my_op_cpu" / "my_op.cpp").unlink()
    assert messages(project) == [
        "build.toml: kernel.my_op_cpu.src[0]: source file 'my_op_cpu/my_op.cpp' does not exist"
    ]


@pytest.mark.parametrize("cap", ["sm_90", "9", "9.0b", "nine"])
def test_bad_capability(project: Path, cap: str) -> None:
    edit(project, lambda d: d["kernel"]["my_op_cuda"].__setitem__("cuda-capabilities", ["9.0", cap]))
    msgs = messages(project)
    assert len(msgs) == 1 and msgs[0].startswith(
        f"build.toml: kernel.my_op_cuda.cuda-capabilities: invalid CUDA capability '{cap}'"
    ), msgs


@pytest.mark.parametrize("cap", ["9.0a", "10.0f", "8.0+PTX", "12.0"])
def test_good_capability(project: Path, cap: str) -> None:
    edit(project, lambda d: d["kernel"]["my_op_cuda"].__setitem__("cuda-capabilities", [cap]))
    assert messages(project) == []


def test_backend_edition_and_framework(project: Path) -> None:
    edit(project, lambda d: d["general"].__setitem__("backends", ["cpu", "cuda", "tensorcore"]))
    edit(project, lambda d: d["general"].__setitem__("edition", 4))
    edit(project, lambda d: d.add("tvm-ffi", {"src": []}))
    msgs = "\n".join(messages(project))
    assert "general.backends: unknown backend 'tensorcore'" in msgs
    assert "general.edition: unsupported build edition 4" in msgs
    assert "exactly one of [torch], [torch-noarch] or [tvm-ffi]" in msgs


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text("[general\nname = 1")
    msgs = messages(tmp_path)
    assert len(msgs) == 1 and msgs[0].startswith("build.toml: invalid TOML")
    with pytest.raises(UpskillError, match="not a directory"):
        load_build(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UpskillError, match="build.toml.*not found"):
        load_build(tmp_path / "empty")


def test_load_build_raises_first_problem_as_one_line(project: Path) -> None:
    edit(project, lambda d: d["general"].add("colour", "blue"))
    (project / "my_op_cpu" / "my_op.cpp").unlink()
    with pytest.raises(UpskillError) as exc:
        load_build(project)
    assert "\n" not in str(exc.value)
    assert "general.colour: unknown key" in str(exc.value) and "1 more problem" in str(exc.value)


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (lambda p: edit(p, lambda d: d["general"].add("colour", "blue")), "general.colour: unknown key"),
        (
            lambda p: edit(p, lambda d: d["general"].__setitem__("name", "Bad_Name")),
            "general.name: invalid kernel name",
        ),
        (lambda p: (p / "my_op_cpu" / "my_op.cpp").unlink(), "kernel.my_op_cpu.src[0]: source file"),
        (
            lambda p: edit(p, lambda d: d["kernel"]["my_op_cuda"].__setitem__("cuda-capabilities", ["9.9"])),
            "kernel.my_op_cuda.cuda-capabilities: empty set of capabilities",
        ),
        (
            lambda p: edit(p, lambda d: d["kernel"]["my_op_cuda"].__setitem__("cuda-capabilities", ["sm_90"])),
            "kernel.my_op_cuda.cuda-capabilities: invalid CUDA capability 'sm_90'",
        ),
    ],
    ids=["unknown-key", "bad-name", "missing-source", "capability-9.9-only", "capability-sm_90"],
)
def test_cli_check_reports_one_line_per_problem(project: Path, breakage, expected: str) -> None:
    breakage(project)
    proc = run_cli("kernels", "check", str(project))
    assert proc.returncode == 1
    lines = error_lines(proc.stderr)
    assert any(ln.startswith("build.toml: ") and expected in ln for ln in lines), proc.stderr
    assert "Traceback" not in proc.stderr
    # build refuses the same project with one Error line and writes nothing
    proc = run_cli("kernels", "build", str(project), "--builder", "local")
    assert proc.returncode == 1
    assert error_lines(proc.stderr)[-1].startswith("Error: ") and expected in proc.stderr
    assert not (project / "build").exists()


def test_kernel_builders_own_parser_has_the_last_word(project: Path) -> None:
    # our schema only knows upstream is a string; kernels-data also parses it as a git URL
    edit(project, lambda d: d["general"].add("upstream", "not a url"))
    assert messages(project) == [
        "build.toml: rejected by kernel-builder's parser: invalid git URL `not a url`"
    ]
    edit(project, lambda d: d["general"].__setitem__("upstream", "https://github.com/me/my-op"))
    assert messages(project) == []
