"""The wheel a Job installs: built from this checkout, cached by content, errors in one line.

The repack of an installed wheel (no source tree) is checked byte for byte against the real
build in ``tests/test_packaging.py`` (it needs a wheel install in a fresh venv).
"""

from __future__ import annotations

import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from upskill_hub import __version__
from upskill_hub.errors import UpskillError
from upskill_hub.selfwheel import _build_from_source, _key, file_sha256, installed_from, own_wheel

REPO = Path(__file__).resolve().parents[1]


def test_an_editable_install_builds_its_wheel_once_and_then_finds_it_in_the_cache(tmp_path):
    first = own_wheel(tmp_path / "cache")
    assert first.filename == f"upskill_hub-{__version__}-py3-none-any.whl" and first.version == __version__
    assert first.sha256 == file_sha256(first.path)
    names = set(zipfile.ZipFile(first.path).namelist())
    assert {"upskill_hub/selfwheel.py", "upskill_hub/_shipped/skills/hub-kernels/SKILL.md"} <= names
    # The module that built it is the one in this checkout, byte for byte.
    assert zipfile.ZipFile(first.path).read("upskill_hub/selfwheel.py") == (REPO / "src/upskill_hub/selfwheel.py").read_bytes()
    stamp = first.path.stat().st_mtime_ns
    again = own_wheel(tmp_path / "cache")
    assert again == first and again.path.stat().st_mtime_ns == stamp  # not rebuilt


def test_the_cache_key_follows_the_contents(tmp_path):
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    before = _key([("pkg/a.py", a)])
    assert _key([("pkg/a.py", a)]) == before
    a.write_text("x = 2\n")
    assert _key([("pkg/a.py", a)]) != before


def test_an_editable_install_was_not_installed_from_a_wheel():
    assert installed_from() == (__version__, None, None)


def test_without_an_installed_distribution_there_is_no_wheel_one_line(monkeypatch, tmp_path):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(UpskillError, match="not installed as a package .* pass --image") as err:
        own_wheel(tmp_path)
    assert "\n" not in str(err.value)


def test_a_source_tree_that_does_not_build_is_one_line(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pyproject.toml").write_text("[project\n")  # not TOML
    with pytest.raises(UpskillError, match="could not build upskill-hub's wheel from") as err:
        _build_from_source(tmp_path / "src", tmp_path / "out")
    assert "\n" not in str(err.value)
