"""The local Hub through the `datasets` and `kernels` clients (unmodified, via HF_ENDPOINT)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.localhub.testing import TEST_TRUSTED_ORG


def test_dataset_push_to_hub_and_load_dataset(hub_server, hub_repo_id):
    import datasets

    rows = {"name": ["a", "b", "c"], "score": [1.0, 0.5, 0.25]}
    datasets.Dataset.from_dict(rows).push_to_hub(hub_repo_id)

    from huggingface_hub import HfApi

    files = HfApi().list_repo_files(hub_repo_id, repo_type="dataset")
    parquet = [f for f in files if f.endswith(".parquet")]
    assert parquet and "README.md" in files
    sibling_lfs = {s.rfilename: s.lfs for s in HfApi().dataset_info(hub_repo_id).siblings}
    assert all(sibling_lfs[p] is not None for p in parquet)  # datasets needs parquet as LFS

    loaded = datasets.load_dataset(hub_repo_id, split="train")
    assert loaded.to_dict() == rows

    # A second push of another config keeps the first one.
    datasets.Dataset.from_dict({"x": [1, 2]}).push_to_hub(hub_repo_id, config_name="other")
    assert datasets.load_dataset(hub_repo_id, "other", split="train").to_dict() == {"x": [1, 2]}
    assert datasets.load_dataset(hub_repo_id, "default", split="train").num_rows == 3


def _kernel_variant(root: Path, name: str) -> None:
    variant = root / "build" / "torch-cpu"
    variant.mkdir(parents=True)
    (variant / "__init__.py").write_text(
        "from ._ops import ops\n\ndef hello():\n    return 'hi from kernel'\n"
    )
    (variant / "_ops.py").write_text("ops = None\n")
    (variant / "metadata.json").write_text(
        json.dumps(
            {
                "name": name,
                "id": f"_{name}_local",
                "version": 1,
                "license": "Apache-2.0",
                "python-depends": [],
                "backend": {"type": "cpu"},
            }
        )
    )



def _publish_kernel(api, repo_id: str, src: Path, name: str) -> None:
    """A kernel repo holding one CPU variant of ``name`` on branch v1, as `kernels push` lays it out."""
    api.create_repo(repo_id, repo_type="kernel")
    _kernel_variant(src, name)
    api.create_branch(repo_id, branch="v1", repo_type="kernel")
    api.upload_folder(folder_path=src, repo_id=repo_id, repo_type="kernel", revision="v1")

def test_kernel_repo_readable_and_publisher_trust(hub_server, tmp_path):
    """A kernel repo (type `kernel`, branch v1) is readable, and the org overview drives trust."""
    from huggingface_hub import HfApi, snapshot_download

    api = HfApi()
    repo_id = f"{TEST_TRUSTED_ORG}/relu-{tmp_path.name[-6:]}"
    _publish_kernel(api, repo_id, tmp_path / "k", "relu")

    refs = api.list_repo_refs(repo_id, repo_type="kernel")
    assert "v1" in {b.name for b in refs.branches}
    variants = [e.path for e in api.list_repo_tree(repo_id, "build", repo_type="kernel", revision="v1")]
    assert variants == ["build/torch-cpu"]
    local = Path(
        snapshot_download(repo_id, repo_type="kernel", revision="v1", allow_patterns="build/torch-cpu/*")
    )
    assert json.loads((local / "build/torch-cpu/metadata.json").read_text())["name"] == "relu"

    assert api.get_organization_overview(TEST_TRUSTED_ORG).trustedKernelPublisher is True
    assert api.get_organization_overview("random-org").trustedKernelPublisher is False


@pytest.mark.slow
def test_kernels_get_kernel_from_local_hub(hub_server, tmp_path):
    """`kernels.get_kernel` (trust check via org overview, refs, tree, download) loads from the local Hub."""
    from huggingface_hub import HfApi
    from kernels import get_kernel
    from kernels.hf_hub import _check_trust_remote_code

    api = HfApi()
    repo_id = f"{TEST_TRUSTED_ORG}/hello-{tmp_path.name[-6:].strip('_')}"
    _publish_kernel(api, repo_id, tmp_path / "k", "hello")

    _check_trust_remote_code(repo_id, local_files_only=False, trust_remote_code=False)
    with pytest.raises(ValueError, match="not from a trusted publisher"):
        _check_trust_remote_code("random-org/relu", local_files_only=False, trust_remote_code=False)

    kernel = get_kernel(repo_id, version=1)
    assert kernel.hello() == "hi from kernel"
