"""The skills we ship are spec-valid, and their test cases measure something.

A test case is only useful if a good answer passes it and a generic answer fails it;
otherwise the lift an eval reports is noise. For every case of every shipped skill, a
hand-written good answer (``answers_*.GOOD``) must pass all its assertions and a plausible
answer without the skill (``answers_*.GENERIC``) must fail at least one, judged by the real
assertion evaluator the eval engine uses.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from upskill_hub.cli.app import app
from upskill_hub.lift.grading.assertions import check_sync
from upskill_hub.skill import load_skill


def _load_answers(stem: str) -> ModuleType:
    """Load a sibling answers module by path (works under any pytest import mode)."""
    spec = importlib.util.spec_from_file_location(stem, Path(__file__).with_name(f"{stem}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


answers_kernel_builder = _load_answers("answers_kernel_builder")
answers_hf_dataset_card = _load_answers("answers_hf_dataset_card")
answers_hub_kernels = _load_answers("answers_hub_kernels")

SKILLS_DIR = Path(__file__).resolve().parents[2] / "skills"
ANSWERS = {
    "kernel-builder-cuda-kernels": answers_kernel_builder,
    "hf-dataset-card": answers_hf_dataset_card,
    "hub-kernels": answers_hub_kernels,
}
MIN_CASES = {"kernel-builder-cuda-kernels": 8, "hf-dataset-card": 4, "hub-kernels": 12}


def _skill(name: str):
    res = load_skill(SKILLS_DIR / name, strict=True)
    assert res.ok, [str(p) for p in res.problems]
    assert res.skill is not None
    return res.skill


def _params():
    for name in ANSWERS:
        for case in _skill(name).meta.cases:
            yield pytest.param(name, case, id=f"{name}:{case.id}")


def test_every_shipped_skill_has_answers() -> None:
    shipped = sorted(p.name for p in SKILLS_DIR.iterdir() if (p / "SKILL.md").is_file())
    assert shipped == sorted(ANSWERS)


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_skill_is_spec_valid_and_well_formed(name: str) -> None:
    res = load_skill(SKILLS_DIR / name, strict=True)
    assert res.problems == [], [str(p) for p in res.problems]
    skill = res.skill
    assert skill is not None and skill.name == name
    assert skill.license == "Apache-2.0"
    assert 0 < len(skill.description) <= 1024
    assert skill.body.count("\n") < 500
    # Every references/ or scripts/ file the body points to exists, and every reference is used.
    mentioned = set(re.findall(r"`((?:references|scripts)/[\w./-]+)`", skill.body))
    assert mentioned <= set(skill.files), mentioned - set(skill.files)
    for rel in skill.resources()["references"]:
        assert rel in skill.body, f"{rel} is never pointed to from SKILL.md"


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_cases_are_enough_with_a_holdout(name: str) -> None:
    cases = _skill(name).meta.cases
    assert len(cases) >= MIN_CASES[name]
    holdout = [c for c in cases if c.split == "holdout"]
    assert 1 <= len(holdout) <= len(cases) // 2
    types = {a.type for c in cases for a in c.asserts}
    assert len(types) >= 3, types  # not only substring checks
    mod = ANSWERS[name]
    assert set(mod.GOOD) == {c.id for c in cases} == set(mod.GENERIC)


@pytest.mark.parametrize(("name", "case"), list(_params()))
def test_good_answer_passes_generic_answer_fails(name: str, case) -> None:
    mod = ANSWERS[name]
    good = [check_sync(a, mod.GOOD[case.id]) for a in case.asserts]
    assert all(r.passed for r in good), [r.evidence for r in good if not r.passed]
    generic = [check_sync(a, mod.GENERIC[case.id]) for a in case.asserts]
    assert not all(r.passed for r in generic), "the generic answer passes: the case measures nothing"


def test_kernel_skill_teaches_what_its_cases_check() -> None:
    """Each fact a case asserts is in the skill's text (SKILL.md or references), so a model
    reading the skill can pass it; otherwise a failure would measure the model, not the skill."""
    skill = _skill("kernel-builder-cuda-kernels")
    text = "\n".join(data.decode() for rel, data in skill.files.items() if rel.endswith(".md"))
    for needle in [
        'cuda-capabilities = ["9.0"]',
        "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME",
        "REGISTER_EXTENSION",
        "from ._ops import ops",
        "__nv_bfloat162",
        "uint4",
        "__shfl_xor_sync(0xffffffff",
        "rsqrtf",
        "torch.cuda.Event",
        "elapsed_time",
        "warmup",
        "3.35 TB/s",
        "torch213-cxx11-cu130-x86_64-linux",
        "metadata.json",
        "genKernelFlakeOutputs",
        "nix run .#build-and-copy",
        "github:huggingface/kernels",
        'get_kernel("my-org/rmsnorm", version=1)',
        "upskill-hub kernels init",
        "--backends cuda,cpu",
        "--builder local",
        "kernels push",
        "branch `v<N>`",
        '"7.5"',
        '"8.0"',
        '"8.9"',
    ]:
        assert needle in text, needle


def test_cli_validates_all_shipped_skills_strictly() -> None:
    paths = [str(p) for p in sorted(SKILLS_DIR.iterdir()) if p.is_dir()]
    result = CliRunner().invoke(app, ["skills", "validate", *paths, "--strict"])
    assert result.exit_code == 0, result.output


# ----------------------------------------------------------------------------- wired to `kernels`
def _toml_blocks(text: str) -> list[str]:
    return [b for b in re.findall(r"```toml\n(.*?)```", text, re.DOTALL) if "[general]" in b]


def _project_from_build_toml(root: Path, toml_text: str) -> Path:
    """A project holding ``toml_text`` and every file it lists, plus the skill's binding."""
    import tomlkit

    data = tomlkit.parse(toml_text).unwrap()
    root.mkdir(parents=True)
    (root / "build.toml").write_text(toml_text)
    files = list(data.get("torch", {}).get("src", []))
    for k in data.get("kernel", {}).values():
        files += k.get("src", [])
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("// placeholder\n")
    skill_text = (SKILLS_DIR / "kernel-builder-cuda-kernels" / "SKILL.md").read_text()
    binding = re.search(r"```cpp\n(.*?)```", skill_text, re.DOTALL).group(1)
    (root / "torch-ext").mkdir(exist_ok=True)
    (root / "torch-ext" / "torch_binding.cpp").write_text(binding)
    pkg = root / "torch-ext" / data["general"]["name"].replace("-", "_")
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("from ._ops import ops\n")
    (root / "flake.nix").write_text("{}\n")
    (root / "tests").mkdir()
    return root


def test_build_toml_the_skill_teaches_passes_kernels_check(tmp_path: Path) -> None:
    """Every complete build.toml in the skill, and the good answer's, pass `kernels check`'s
    edition-5 schema: the skill teaches what this project's kernel tooling accepts."""
    from upskill_hub.kernels.check import check_project

    skill = _skill("kernel-builder-cuda-kernels")
    blocks = []
    for rel, data in skill.files.items():
        if rel.endswith(".md"):
            blocks += _toml_blocks(data.decode())
    blocks += _toml_blocks(answers_kernel_builder.GOOD["build-toml-h100"])
    assert len(blocks) >= 3
    for i, block in enumerate(blocks):
        root = _project_from_build_toml(tmp_path / f"p{i}", block)
        errors = [str(p) for p in check_project(root) if p.severity == "error"]
        assert errors == [], (block, errors)
    # And the generic answer's old-style build.toml is rejected by the same check.
    root = _project_from_build_toml(
        tmp_path / "generic",
        answers_kernel_builder.GENERIC["build-toml-h100"].split("```toml\n")[1].split("```")[0],
    )
    assert any(p.severity == "error" for p in check_project(root))


def test_layout_the_skill_teaches_matches_kernels_init(tmp_path: Path) -> None:
    """`upskill-hub kernels init` creates the files the skill's layout section names."""
    project = tmp_path / "rmsnorm"
    result = CliRunner().invoke(
        app, ["kernels", "init", "rmsnorm", "--backends", "cuda,cpu", "-o", str(project)]
    )
    assert result.exit_code == 0, result.output
    body = _skill("kernel-builder-cuda-kernels").body
    for rel in [
        "build.toml",
        "flake.nix",
        "torch-ext/torch_binding.cpp",
        "torch-ext/torch_binding.h",
        "torch-ext/rmsnorm/__init__.py",
        "rmsnorm_cuda",
        "rmsnorm_cpu",
        "tests",
        "benchmarks",
    ]:
        assert (project / rel).exists(), rel
        assert rel.split("/")[-1] in body, rel
