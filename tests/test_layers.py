"""The package's floors, enforced: ``.importlinter`` holds the contracts, this test runs them.

No upward import, no client-side import in the local Hub, and the run folder's types below
its I/O below the runner. A new import that breaks a floor fails here, naming the chain.
"""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "upskill_hub"


def floors() -> list[str]:
    """The modules and packages named by the floors contract, every floor together."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    lines = config["importlinter:contract:floors"]["layers"].splitlines()
    return [m.strip() for line in lines for m in re.split(r"[|:]", line) if m.strip()]


def package_modules() -> list[str]:
    """Every module of upskill_hub, dotted (packages by their ``__init__``)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out.append(".".join(parts))
    return out


def unlayered(modules: list[str], layers: list[str]) -> list[str]:
    """The modules no floor contains (the root package itself needs none)."""
    return [
        m for m in modules if m != "upskill_hub" and not any(m == f or m.startswith(f + ".") for f in layers)
    ]


def test_the_import_contracts_are_kept(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True, no_logo=True) == 0


def test_an_upward_import_breaks_a_layers_contract(monkeypatch, tmp_path):
    """The same kind of contract on a two-floor package with an upward import is reported broken."""
    pkg = tmp_path / "floors_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "top.py").write_text("from floors_demo import bottom\n")
    (pkg / "bottom.py").write_text("from floors_demo import top\n")
    config = tmp_path / ".importlinter"
    config.write_text(
        "[importlinter]\nroot_package = floors_demo\n\n"
        "[importlinter:contract:one]\nname = demo\ntype = layers\nlayers =\n    floors_demo.top\n    floors_demo.bottom\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1


def test_every_module_belongs_to_a_floor():
    """A module in no floor is checked by no contract: any import from it would pass."""
    modules = package_modules()
    assert "upskill_hub.jobs.run" in modules and "upskill_hub._util.fsutil" in modules
    assert unlayered(modules, floors()) == []


def test_a_module_in_no_floor_is_reported():
    layers = floors()
    assert unlayered(["upskill_hub.cli.app", "upskill_hub.newthing", "upskill_hub.hubble"], layers) == [
        "upskill_hub.newthing",
        "upskill_hub.hubble",
    ]
