"""Issue 28 finding 9: ``kernels check`` knows kernel-builder's python-depends list and
names each file once in its error lines."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from upskill_hub._util.problems import Problem
from upskill_hub.kernels.buildtoml import VENDORED_PYTHON_DEPENDS, validate_build_toml

BUILD = """\
[general]
name = "relu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda"]
python-depends = [{deps}]

[general.cuda]
python-depends = [{cuda_deps}]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu]
backend = "cpu"
src = ["relu_cpu/relu.cpp"]
"""


def _project(tmp_path: Path, deps: str, cuda_deps: str = "") -> Path:
    (tmp_path / "build.toml").write_text(BUILD.format(deps=deps, cuda_deps=cuda_deps))
    (tmp_path / "torch-ext" / "relu").mkdir(parents=True, exist_ok=True)
    (tmp_path / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    (tmp_path / "torch-ext" / "relu" / "__init__.py").write_text("")
    (tmp_path / "relu_cpu").mkdir(exist_ok=True)
    (tmp_path / "relu_cpu" / "relu.cpp").write_text("// kernel\n")
    return tmp_path


def _dep_errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if "python-depends" in p.field and p.severity == "error"]


def test_finding_9_unknown_python_depends_is_an_error(tmp_path: Path):
    problems, _ = validate_build_toml(_project(tmp_path, '"einops", "numpyy"'))
    (err,) = _dep_errors(problems)
    assert err.field == "general.python-depends" and "'numpyy'" in err.message and "einops" in err.message


def test_finding_9_backend_python_depends_use_the_backend_list(tmp_path: Path):
    ok, _ = validate_build_toml(_project(tmp_path, '"einops"', '"nvidia-cutlass-dsl"'))
    assert not _dep_errors(ok)
    bad, _ = validate_build_toml(_project(tmp_path, '"nvidia-cutlass-dsl"'))  # cuda-only, in general
    (err,) = _dep_errors(bad)
    assert "'nvidia-cutlass-dsl'" in err.message


def test_finding_9_vendored_list_names_its_source_and_date():
    data = json.loads(resources.files("upskill_hub.kernels").joinpath(VENDORED_PYTHON_DEPENDS).read_text())
    assert data["_source"].startswith("https://github.com/huggingface/kernels/") and data["_date"]
    assert "einops" in data["general"] and "nvidia-cutlass-dsl" in data["backends"]["cuda"]


def test_finding_9_error_labels_name_each_file_once(tmp_path: Path):
    (tmp_path / "build.toml").write_text("[general\nname = 1\n")
    problems, data = validate_build_toml(tmp_path)
    assert data is None and problems
    line = str(problems[0])
    assert line.startswith("build.toml: ") and "build.toml: build.toml" not in line
    assert str(Problem("skills/x", "name", "bad")) == "skills/x: name: bad"
