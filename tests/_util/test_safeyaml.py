"""Bounded YAML: ordinary documents load as with safe_load; bombs, depth and cycles are refused."""

from __future__ import annotations

import pytest
import yaml

from upskill_hub._util import safeyaml


def test_ordinary_yaml_loads_like_safe_load() -> None:
    text = "a: 1\nb: [x, y]\nc: {d: e}\nshared: &s [1, 2]\nagain: *s\n"
    assert safeyaml.load(text) == yaml.safe_load(text)
    assert safeyaml.load("") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("&a [*a]", "refers to itself"),
        ("a: " + "[" * 100 + "]" * 100, "deeper than 64"),
        ("x: " + "y" * 2_000_001, "longer than"),
        ("!!python/object:os.system {}", "could not determine a constructor"),
    ],
)
def test_hostile_yaml_is_refused(text: str, message: str) -> None:
    with pytest.raises(yaml.YAMLError, match=message):
        safeyaml.load(text)


def test_alias_bomb_is_refused_from_the_node_graph() -> None:
    levels = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    with pytest.raises(safeyaml.YAMLLimitError, match="alias bomb"):
        safeyaml.load("\n".join(levels))
    # Few levels stay under the limit and load (aliases are legitimate YAML).
    assert len(safeyaml.load("\n".join(levels[:3]))["l2"]) == 9


def test_many_plain_keys_are_not_called_an_alias_bomb() -> None:
    """Issue 29 class 7: 60,000 plain keys were reported as an "alias bomb"."""
    with pytest.raises(safeyaml.YAMLLimitError) as exc:
        safeyaml.load("\n".join(f"k{i}: v" for i in range(60_000)))
    assert "alias" not in str(exc.value) and "more than 100000 nodes" in str(exc.value)
