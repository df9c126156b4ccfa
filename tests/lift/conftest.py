"""Fixtures for lift eval tests: the eval kit's skill folder and an isolated response cache."""

from _evalkit import _isolated_cache, skill_dir  # noqa: F401 (fixtures, found by name)
