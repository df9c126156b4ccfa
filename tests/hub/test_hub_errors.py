"""One mapper turns Hub failures into one-line errors, for dataset repos and kernel repos alike."""

from __future__ import annotations

import pytest
from huggingface_hub import HfApi

from upskill_hub.errors import HubError
from upskill_hub.hub.client import hub_errors


@pytest.mark.parametrize("repo_type, kind", [("dataset", "dataset repo"), ("kernel", "kernel repo")])
def test_a_missing_repo_names_its_kind(hub_server, hub_repo_id, repo_type, kind):
    with pytest.raises(HubError) as exc, hub_errors(hub_repo_id, action="read", kind=kind):
        HfApi().list_repo_refs(hub_repo_id, repo_type=repo_type)
    assert str(exc.value).startswith(f"cannot read {hub_repo_id}: {kind} not found")
    assert "\n" not in str(exc.value)


def test_the_prefix_says_what_the_failure_left_behind(hub_server, hub_repo_id):
    expected = r": upload failed, nothing was committed: dataset repo not found"
    prefix = "upload failed, nothing was committed: "
    with pytest.raises(HubError, match=expected), hub_errors(hub_repo_id, action="push to", prefix=prefix):
        HfApi().list_repo_files(hub_repo_id, repo_type="dataset")
