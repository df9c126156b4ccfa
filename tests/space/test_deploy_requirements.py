"""``space deploy --out DIR --no-vendor`` writes an ``app.py`` that imports ``upskill_hub``: its
``requirements.txt`` must install it (issue 48 item 13); the vendored copy needs no such line."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from upskill_hub.errors import UpskillError
from upskill_hub.space import deploy
from upskill_hub.space.deploy import SELF_REQUIREMENT_ENV, write_space_files


def _requirements(folder: Path) -> dict[str, Requirement]:
    lines = (folder / "requirements.txt").read_text().splitlines()
    reqs = [Requirement(line) for line in lines if line and not line.startswith("#")]
    return {r.name.lower(): r for r in reqs}


def test_no_vendor_lists_upskill_hub_at_this_version(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(SELF_REQUIREMENT_ENV, raising=False)
    out = write_space_files(tmp_path / "space", vendor=False)
    assert (
        "import upskill_hub" in (out / "app.py").read_text()
        or "from upskill_hub" in (out / "app.py").read_text()
    )
    assert not (out / "upskill_hub").exists()
    req = _requirements(out)["upskill-hub"]
    assert str(req.specifier) == f"=={importlib.metadata.version('upskill-hub')}" and req.url is None


def test_vendored_space_does_not_install_another_upskill_hub(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(SELF_REQUIREMENT_ENV, raising=False)
    out = write_space_files(tmp_path / "space", vendor=True)
    assert "upskill-hub" not in _requirements(out) and (out / "upskill_hub" / "space" / "ui.py").is_file()


def test_an_install_from_git_is_pinned_to_its_commit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(SELF_REQUIREMENT_ENV, raising=False)
    real = importlib.metadata.distribution("upskill-hub")
    origin = {"url": "https://github.com/me/upskill-hub", "vcs_info": {"vcs": "git", "commit_id": "a" * 40}}

    class FromGit:
        version = real.version

        def read_text(self, name: str) -> str | None:
            return json.dumps(origin) if name == "direct_url.json" else real.read_text(name)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: FromGit())
    assert deploy.self_requirement() == f"upskill-hub @ git+https://github.com/me/upskill-hub@{'a' * 40}"


def test_the_user_can_name_the_requirement(tmp_path: Path, monkeypatch) -> None:
    line = "upskill-hub @ git+https://github.com/me/upskill-hub@v0.1.0"
    monkeypatch.setenv(SELF_REQUIREMENT_ENV, line)
    out = write_space_files(tmp_path / "space", vendor=False)
    assert _requirements(out)["upskill-hub"].url == "git+https://github.com/me/upskill-hub@v0.1.0"
    monkeypatch.setenv(SELF_REQUIREMENT_ENV, "upskill-hub @@ nope")
    with pytest.raises(UpskillError, match=f"^{SELF_REQUIREMENT_ENV}="):
        write_space_files(tmp_path / "space2", vendor=False)
    assert not (tmp_path / "space2").exists()  # refused before anything was written
