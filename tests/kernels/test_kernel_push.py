"""kernels push: one commit on v<N> through the real huggingface_hub against the local Hub;
bad input is refused with one line and nothing reaches the Hub."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kernel_helpers import error_lines, fake_variant, run_cli

from upskill_hub.errors import HubError, UpskillError
from upskill_hub.kernels.builders.local import build_local
from upskill_hub.kernels.push import push_kernel


@pytest.fixture
def built_noarch(noarch_project: Path) -> Path:
    build_local(noarch_project, smoke=False)
    (noarch_project / "benchmarks" / "extra_benchmark.py").write_text("print('fast')\n")
    return noarch_project


def _writes(hub_server) -> list:
    return [r for r in hub_server.requests if r.method in ("POST", "PUT", "DELETE")]


def test_push_one_commit_with_card(hub_server, hub_repo_id: str, built_noarch: Path) -> None:
    from huggingface_hub import HfApi

    api = HfApi()
    res = push_kernel(built_noarch, hub_repo_id)
    assert res.branch == "v1" and res.variants == ["torch-cpu", "torch-cuda"]
    files = set(api.list_repo_files(hub_repo_id, repo_type="kernel", revision="v1"))
    for variant in ("torch-cpu", "torch-cuda"):
        assert {f"build/{variant}/{f}" for f in ("__init__.py", "_ops.py", "metadata.json")} <= files
    assert {"README.md", "benchmarks/extra_benchmark.py", "tests/conftest.py"} <= files
    commits = api.list_repo_commits(hub_repo_id, repo_type="kernel", revision="v1")
    pushes = [c for c in commits if c.title.startswith("Upload tiny-noarch v1")]
    assert len(pushes) == 1  # everything in ONE commit
    card = Path(api.hf_hub_download(hub_repo_id, "README.md", repo_type="kernel", revision="v1")).read_text()
    assert card.startswith("---\nlibrary_name: kernels\nlicense: apache-2.0\n")
    assert "`tiny_noarch(x: torch.Tensor)`" in card
    assert "`torch-cpu`" in card and "`torch-cuda`" in card
    assert f'get_kernel("{hub_repo_id}", version=1, trust_remote_code=True)' in card


def test_repush_removes_stale_files_of_replaced_variants_only(
    hub_server, hub_repo_id: str, built_noarch: Path
):
    from huggingface_hub import HfApi

    api = HfApi()
    (built_noarch / "build" / "torch-cpu" / "old_helper.py").write_text("x = 1\n")
    push_kernel(built_noarch, hub_repo_id)
    # Rebuild only torch-cpu (old_helper.py disappears); torch-cuda is no longer in build/.
    shutil.rmtree(built_noarch / "build")
    build_local(built_noarch, variant="torch-cpu", smoke=False)
    res = push_kernel(built_noarch, hub_repo_id)
    assert res.deleted == ["build/torch-cpu/old_helper.py"]
    files = set(api.list_repo_files(hub_repo_id, repo_type="kernel", revision="v1"))
    assert "build/torch-cpu/old_helper.py" not in files
    assert "build/torch-cuda/metadata.json" in files  # a variant not being pushed is kept


def test_version_branch_from_build_toml_and_mismatch(
    hub_server, hub_repo_id: str, built_noarch: Path
) -> None:
    with pytest.raises(UpskillError, match="version 1 but the push targets v2"):
        push_kernel(built_noarch, hub_repo_id, version=2)


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda p: None, "no build variants to push"),
        (lambda p: (p / "build").mkdir(), "no build variants to push"),
        (
            lambda p: fake_variant(p, "torch213-cpu-linux", {"name": "tiny-noarch"}),
            "build/torch213-cpu-linux: 'torch213-cpu-linux' is not a build variant name",
        ),
        (lambda p: fake_variant(p, "torch-cpu", None), "build/torch-cpu: metadata.json is missing"),
        (
            lambda p: fake_variant(p, "torch-cpu", {"name": "tiny-noarch", "version": 1}),
            "build/torch-cpu/metadata.json: id: missing required field",
        ),
    ],
    ids=["no-build-dir", "empty-build", "wrong-variant-name", "no-metadata", "incomplete-metadata"],
)
def test_bad_input_uploads_nothing(
    hub_server, hub_repo_id: str, noarch_project: Path, setup, expected
) -> None:
    from huggingface_hub import HfApi

    setup(noarch_project)
    hub_server.clear_requests()
    proc = run_cli("kernels", "push", str(noarch_project), "--repo", hub_repo_id)
    assert proc.returncode == 1
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("Error: ") and expected in lines[0], proc.stderr
    assert _writes(hub_server) == []
    assert not HfApi().repo_exists(hub_repo_id, repo_type="kernel")


def test_bad_variant_next_to_good_ones_uploads_nothing(
    hub_server, hub_repo_id: str, built_noarch: Path
) -> None:
    from huggingface_hub import HfApi

    meta = json.loads((built_noarch / "build" / "torch-cpu" / "metadata.json").read_text())
    fake_variant(built_noarch, "torch-gpu-fast", meta)
    hub_server.clear_requests()
    with pytest.raises(UpskillError, match="torch-gpu-fast.*not a build variant name"):
        push_kernel(built_noarch, hub_repo_id)
    assert _writes(hub_server) == []
    assert not HfApi().repo_exists(hub_repo_id, repo_type="kernel")


def test_failed_commit_leaves_no_branch(hub_server, hub_repo_id: str, built_noarch: Path) -> None:
    from huggingface_hub import HfApi

    hub_server.inject_faults(method="POST", path_regex=r"/commit/", status=500, count=20)
    with pytest.raises(HubError, match="nothing was committed") as exc:
        push_kernel(built_noarch, hub_repo_id)
    assert (exc.value.repo_id, exc.value.status) == (hub_repo_id, 500)
    hub_server.clear_faults()
    refs = HfApi().list_repo_refs(hub_repo_id, repo_type="kernel")
    assert "v1" not in {b.name for b in refs.branches}


def test_create_pr_targets_existing_branch_only(hub_server, hub_repo_id: str, built_noarch: Path) -> None:
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(hub_repo_id, repo_type="kernel")
    with pytest.raises(UpskillError, match="no branch v1: a pull request needs an existing branch"):
        push_kernel(built_noarch, hub_repo_id, create_pr=True)
    first = push_kernel(built_noarch, hub_repo_id)
    (built_noarch / "build" / "torch-cpu" / "extra.py").write_text("y = 2\n")
    res = push_kernel(built_noarch, hub_repo_id, create_pr=True)
    assert res.pr_url and "/discussions/" in res.pr_url
    # the branch itself is unchanged until the PR is merged
    assert (
        api.list_repo_commits(hub_repo_id, repo_type="kernel", revision="v1")[0].commit_id == first.commit_oid
    )
    refs = api.list_repo_refs(hub_repo_id, repo_type="kernel", include_pull_requests=True)
    pr_files = api.list_repo_files(hub_repo_id, repo_type="kernel", revision=refs.pull_requests[0].ref)
    assert "build/torch-cpu/extra.py" in pr_files


def test_repo_defaults_to_build_toml_hub_repo_id(hub_server, hub_repo_id: str, built_noarch: Path) -> None:
    with pytest.raises(UpskillError, match="no --repo given and build.toml has no general.hub.repo-id"):
        push_kernel(built_noarch, None)
    toml = built_noarch / "build.toml"
    toml.write_text(
        toml.read_text().replace(
            "[torch-noarch]", f'[general.hub]\nrepo-id = "{hub_repo_id}"\n\n[torch-noarch]'
        )
    )
    assert push_kernel(built_noarch, None).repo_id == hub_repo_id


def test_push_agent_and_quiet_formats(hub_server, hub_repo_id: str, built_noarch: Path) -> None:
    proc = run_cli("kernels", "push", str(built_noarch), "--repo", hub_repo_id, "--format", "agent")
    assert proc.returncode == 0, proc.stderr
    fields = dict(kv.split("=", 1) for kv in proc.stdout.strip().split(" "))
    assert fields["repo"] == hub_repo_id and fields["branch"] == "v1" and "torch-cpu" in fields["variants"]
    proc = run_cli("kernels", "push", str(built_noarch), "--repo", hub_repo_id, "--format", "quiet")
    assert (proc.returncode, proc.stdout) == (0, f"{hub_repo_id}\n"), proc.stderr
    proc = run_cli("kernels", "check", str(built_noarch), "--format", "quiet")
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
