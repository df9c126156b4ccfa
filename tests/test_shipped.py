"""The shipped skills and kernel example are found from a clone (editable install) as from a wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskill_hub.errors import UpskillError
from upskill_hub.shipped import SHIPPED, shipped_path, shipped_skill

REPO = Path(__file__).resolve().parents[1]


def test_in_a_clone_the_shipped_folders_are_the_repositorys():
    for rel in SHIPPED:
        assert shipped_path(rel) == REPO / rel
    assert (shipped_skill("hub-kernels") / "SKILL.md").is_file()
    assert (shipped_path("kernels_examples/rmsnorm") / "build.toml").is_file()


@pytest.mark.parametrize("rel", ["pyproject.toml", "../etc", "skillsx", "kernels_examples/silu-and-mul", "skills/../pyproject.toml"])
def test_only_what_the_wheel_ships_can_be_asked_for(rel):
    with pytest.raises(UpskillError, match="is not among the files upskill-hub ships"):
        shipped_path(rel)


def test_a_shipped_skill_that_does_not_exist_is_one_line():
    with pytest.raises(UpskillError, match="shipped skills/no-such-skill is missing"):
        shipped_skill("no-such-skill")
